// Tests of the LevelDB-backed checkpoint store (checkpoint/checkpoint.h),
// on real directories under the system temp dir.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/testing/temp_dir.h"

namespace crawld::checkpoint {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::unique_ptr<Store> MustOpen(const std::string& dir, Options o = {}) {
  auto r = Store::Open(dir, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::optional<std::string> MustGet(const Store& s, std::string_view key) {
  auto r = s.Get(key);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::nullopt;
}

std::vector<std::pair<std::string, std::string>> Scan(const Store& s,
                                                      std::string_view prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  Status st = s.ScanPrefix(prefix, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(CheckpointStore, BatchAppliesPutsAndDeletesInOrder) {
  TempDir tmp;
  auto store = MustOpen(tmp.Sub("db"));
  ASSERT_TRUE(store);
  Store::Batch setup;
  setup.Put("gone", "x");
  ASSERT_TRUE(store->Write(setup).ok());

  Store::Batch b;
  b.Put("a", "1");
  b.Put("a", "2");  // later wins
  b.Put("b", "1");
  b.Delete("b");  // put then delete: absent
  b.Delete("gone");
  b.Delete("c");
  b.Put("c", std::string("\0bin\xff", 5));  // delete then put: present
  EXPECT_EQ(b.size(), 7u);
  ASSERT_TRUE(store->Write(b).ok());
  EXPECT_EQ(MustGet(*store, "a"), "2");
  EXPECT_EQ(MustGet(*store, "b"), std::nullopt);
  EXPECT_EQ(MustGet(*store, "gone"), std::nullopt);
  EXPECT_EQ(MustGet(*store, "c"), std::string("\0bin\xff", 5));
  EXPECT_EQ(b.size(), 7u);  // Write() leaves the batch alone
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.bytes(), 0u);
  ASSERT_TRUE(store->Write(b).ok());  // an empty batch is fine
}

// A scan resumed from a key (the recrawl sweep's cursor): only keys of the
// prefix at or after the start, in order; a start before the prefix is the
// whole prefix, one past it nothing.
TEST(CheckpointStore, ScanPrefixFromResumesWithinThePrefix) {
  TempDir tmp;
  auto store = MustOpen(tmp.Sub("db"));
  ASSERT_TRUE(store);
  Store::Batch b;
  for (const char* k : {"a9", "c1", "c2", "c3", "d0"}) b.Put(k, k);
  ASSERT_TRUE(store->Write(b).ok());
  auto from = [&](std::string_view start) {
    std::vector<std::string> out;
    Status st = store->ScanPrefixFrom(
        "c", start, [&](std::string_view k, std::string_view v) {
          EXPECT_EQ(k, v);
          out.emplace_back(k);
          return true;
        });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  };
  EXPECT_EQ(from("c2"), (std::vector<std::string>{"c2", "c3"}));
  EXPECT_EQ(from("c20"), (std::vector<std::string>{"c3"}));
  EXPECT_EQ(from("a"), (std::vector<std::string>{"c1", "c2", "c3"}));
  EXPECT_EQ(from("c4"), std::vector<std::string>{});
  EXPECT_EQ(from("e"), std::vector<std::string>{});
}

TEST(CheckpointStore, ReopenKeepsEverythingWritten) {
  TempDir tmp;
  const std::string dir = tmp.Sub("nested/state");  // parents created
  std::map<std::string, std::string> model;
  std::mt19937 rng(7);
  {
    auto store = MustOpen(dir);
    ASSERT_TRUE(store);
    for (int round = 0; round < 50; ++round) {
      Store::Batch b;
      for (int i = 0; i < 40; ++i) {
        std::string key = "k" + std::to_string(rng() % 500);
        if (rng() % 4 == 0) {
          b.Delete(key);
          model.erase(key);
        } else {
          std::string value(rng() % 3000, static_cast<char>('a' + rng() % 26));
          b.Put(key, value);
          model[key] = value;
        }
      }
      ASSERT_TRUE(store->Write(b).ok());
    }
  }
  auto store = MustOpen(dir);
  ASSERT_TRUE(store);
  auto all = Scan(*store, "");
  ASSERT_EQ(all.size(), model.size());
  auto it = model.begin();
  for (const auto& [k, v] : all) {
    EXPECT_EQ(k, it->first);
    EXPECT_EQ(v, it->second);
    ++it;
  }
}

TEST(CheckpointStore, PrefixScanIsInBytewiseOrderAndStopsAtPrefixEnd) {
  TempDir tmp;
  auto store = MustOpen(tmp.Sub("db"));
  ASSERT_TRUE(store);
  Store::Batch b;
  for (std::string k : {"host/b", "host/a", "host/", "hos", "host0",
                        "host/\xff", "host/a/x", "queue/1", "host/A"}) {
    b.Put(k, "v:" + k);
  }
  b.Put(std::string("host/\0", 6), "nul");
  ASSERT_TRUE(store->Write(b).ok());

  std::vector<std::string> keys;
  for (auto& [k, v] : Scan(*store, "host/")) {
    EXPECT_TRUE(v == "v:" + k || v == "nul");
    keys.push_back(k);
  }
  const std::vector<std::string> want = {"host/",    std::string("host/\0", 6),
                                         "host/A",   "host/a",
                                         "host/a/x", "host/b",
                                         "host/\xff"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(Scan(*store, "nothing").size(), 0u);
  EXPECT_EQ(Scan(*store, "").size(), 10u);
  EXPECT_EQ(Scan(*store, "host/\xff").size(), 1u);

  // The visitor can stop the scan.
  int seen = 0;
  ASSERT_TRUE(
      store
          ->ScanPrefix("host/", [&](std::string_view,
                                    std::string_view) { return ++seen < 3; })
          .ok());
  EXPECT_EQ(seen, 3);
}

TEST(CheckpointStore, SecondOpenOfALockedDirectoryFails) {
  TempDir tmp;
  auto first = MustOpen(tmp.Sub("db"));
  ASSERT_TRUE(first);
  auto second = Store::Open(tmp.Sub("db"), Options{});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kIOError)
      << second.status().ToString();
}

TEST(CheckpointStore, MissingDatabaseWithoutCreateIsNotFound) {
  TempDir tmp;
  Options o;
  o.create_if_missing = false;
  auto r = Store::Open(tmp.Sub("absent"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound)
      << r.status().ToString();
}

TEST(CheckpointStore, UnusableDirectoryIsAnErrorNotACrash) {
  TempDir tmp;
  std::ofstream(tmp.Sub("file")) << "not a directory";
  auto r = Store::Open(tmp.Sub("file/db"), Options{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
  EXPECT_EQ(Store::Open("", Options{}).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(CheckpointStore, CorruptedTableIsReportedAsCorruption) {
  TempDir tmp;
  const std::string dir = tmp.Sub("db");
  {
    Options o;
    o.write_buffer_bytes = 64 << 10;  // small memtable: tables get written
    auto store = MustOpen(dir, o);
    ASSERT_TRUE(store);
    for (int round = 0; round < 20; ++round) {
      Store::Batch b;
      for (int i = 0; i < 50; ++i) {
        b.Put("key" + std::to_string(round * 50 + i), std::string(500, 'v'));
      }
      ASSERT_TRUE(store->Write(b).ok());
    }
  }
  // Overwrite the middle of every table file with garbage.
  int damaged = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".ldb") continue;
    std::fstream f(entry.path(),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(entry.path()) / 2));
    f << std::string(64, '\x5a');
    ++damaged;
  }
  ASSERT_GT(damaged, 0);
  auto store = Store::Open(dir, Options{});
  if (!store.ok()) {  // paranoid checks may already refuse to open
    EXPECT_EQ(store.status().code(), Status::Code::kCorruption)
        << store.status().ToString();
    return;
  }
  Status st = (*store)->ScanPrefix(
      "", [](std::string_view, std::string_view) { return true; });
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
}

// A batch is all-or-nothing across a crash. A child process rewrites the
// same 16 keys with batch number n (16 KiB values, so one batch spans many
// write() calls and most of the child's time is spent inside Write()) until
// it is killed with SIGKILL at some point; after reopening, every key must
// carry the same n. (With Write() split into one write per key, this test
// failed in each of 3 runs.)
TEST(CheckpointStore, BatchIsAtomicAcrossSigkill) {
  constexpr int kKeys = 16;
  constexpr int kMaxBatches = 150;  // bounds disk use at ~40 MB
  constexpr size_t kValueBytes = 16 << 10;
  for (int trial = 0; trial < 6; ++trial) {
    TempDir tmp;
    const std::string dir = tmp.Sub("db");
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(ready[0]);
      Options o;
      o.sync = false;  // a process crash loses nothing written()
      auto r = Store::Open(dir, o);
      if (!r.ok()) _exit(3);
      std::unique_ptr<Store> store = std::move(r).value();
      for (int n = 1; n <= kMaxBatches; ++n) {
        Store::Batch b;
        for (int k = 0; k < kKeys; ++k) {
          std::string value = std::to_string(n) + ":";
          value.resize(kValueBytes + static_cast<size_t>(k) * 97,
                       static_cast<char>('a' + n % 26));
          b.Put("key" + std::to_string(k), value);
        }
        if (!store->Write(b).ok()) _exit(4);
        if (n == 1 && write(ready[1], "x", 1) != 1) _exit(5);
      }
      _exit(0);
    }
    close(ready[1]);
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1);  // batch 1 is in the log
    close(ready[0]);
    // Let the child get a varying distance into its writes.
    std::this_thread::sleep_for(std::chrono::milliseconds(trial * 7));
    kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) ||
                (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
        << "child failed with status " << wstatus;

    auto store = MustOpen(dir);
    ASSERT_TRUE(store);
    std::string first_n;
    for (int k = 0; k < kKeys; ++k) {
      auto v = MustGet(*store, "key" + std::to_string(k));
      ASSERT_TRUE(v.has_value()) << "key" << k << " lost";
      const std::string n = v->substr(0, v->find(':'));
      if (k == 0) first_n = n;
      ASSERT_EQ(n, first_n) << "torn batch at key" << k;
      ASSERT_EQ(v->size(), kValueBytes + static_cast<size_t>(k) * 97);
    }
    EXPECT_GE(std::stoi(first_n), 1);
  }
}

}  // namespace
}  // namespace crawld::checkpoint
