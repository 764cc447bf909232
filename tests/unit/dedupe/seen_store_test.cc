// Tests of the LevelDB-backed URL-seen store (dedupe/dedupe.h,
// UrlSeenStore): exact answers behind the Bloom filter, restart after Close
// and after a kill, a damaged Bloom file, per-host scans and erasure, and
// I/O errors reported as Status.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "dedupe_test.XXXXXX");
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Options SmallOptions(const std::string& dir) {
  Options o;
  o.dir = dir;
  o.expected_urls = 10'000;
  o.bloom_fp_rate = 0.01;
  o.batch_size = 64;
  o.hot_cache_entries = 256;
  o.cache_bytes = 1 << 20;
  o.write_buffer_bytes = 64 << 10;  // small: forces table files early
  return o;
}

std::unique_ptr<UrlSeenStore> MustOpen(const Options& o) {
  auto r = UrlSeenStore::Open(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

bool MustInsert(UrlSeenStore& s, uint64_t host, uint64_t fp) {
  Result<bool> r = s.InsertIfNew(host, fp);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && *r;
}

bool MustContain(UrlSeenStore& s, uint64_t host, uint64_t fp) {
  Result<bool> r = s.Contains(host, fp);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && *r;
}

std::vector<std::pair<uint64_t, uint64_t>> RandomKeys(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  for (size_t i = 0; i < n; ++i) keys.emplace_back(rng() % 50, rng());
  return keys;
}

TEST(UrlSeenStore, InsertThenSeen) {
  TempDir dir;
  auto s = MustOpen(SmallOptions(dir.path()));
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(MustInsert(*s, 1, 42));
  EXPECT_FALSE(MustInsert(*s, 1, 42));
  EXPECT_TRUE(MustContain(*s, 1, 42));
  // The same fingerprint under another host is another key.
  EXPECT_FALSE(MustContain(*s, 2, 42));
  EXPECT_TRUE(MustInsert(*s, 2, 42));
  // Extreme values are ordinary keys.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(MustInsert(*s, 0, 0));
  EXPECT_TRUE(MustInsert(*s, kMax, kMax));
  EXPECT_FALSE(MustInsert(*s, 0, 0));
  EXPECT_FALSE(MustInsert(*s, kMax, kMax));
  EXPECT_EQ(s->size(), 4u);
}

// A Bloom filter overfilled 20x says "maybe" to almost everything; the
// exact store behind it must still answer every query as the model does.
TEST(UrlSeenStore, NoFalseDropsAgainstModel) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.expected_urls = 500;
  o.bloom_fp_rate = 0.2;
  o.batch_size = 7;
  o.hot_cache_entries = 16;
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  std::set<std::pair<uint64_t, uint64_t>> model;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t host = rng() % 5;
    const uint64_t fp = rng() % 4'000;  // many repeats
    if (rng() % 3 == 0) {
      ASSERT_EQ(MustContain(*s, host, fp), model.count({host, fp}) == 1)
          << "op " << i;
    } else {
      ASSERT_EQ(MustInsert(*s, host, fp), model.insert({host, fp}).second)
          << "op " << i;
    }
    if (i % 5'000 == 4'999) {
      ASSERT_TRUE(s->Flush().ok());
    }
  }
  EXPECT_EQ(s->size(), model.size());
  // The exact store was consulted, and corrected the filter.
  EXPECT_GT(s->store_reads(), 0u);
  EXPECT_GT(s->bloom_false_positives(), 100u);
}

TEST(UrlSeenStore, RestartKeepsEverythingAndLoadsBloom) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(3'000, 1);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Flush().ok());
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->bloom_loaded());
  EXPECT_EQ(s->size(), keys.size());
  for (const auto& [h, f] : keys) ASSERT_FALSE(MustInsert(*s, h, f));
  // Nothing was read from LevelDB for a Bloom "no"; a fresh key is new.
  EXPECT_TRUE(MustInsert(*s, 1, 0xabcdef));
}

// With sync, LevelDB writes and the Bloom file (and its directory) are
// fsynced; the observable contract is the same.
TEST(UrlSeenStore, SyncModeRoundTrip) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.sync = true;
  o.batch_size = 10;
  const auto keys = RandomKeys(50, 9);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->bloom_loaded());
  for (const auto& [h, f] : keys) ASSERT_FALSE(MustInsert(*s, h, f));
}

// The destructor closes: what was inserted without an explicit Flush
// survives a normal shutdown too.
TEST(UrlSeenStore, DestructorCloses) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(100, 2);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  for (const auto& [h, f] : keys) ASSERT_TRUE(MustContain(*s, h, f));
}

// A real kill: a child process inserts, flushes, inserts more (some of it
// written by automatic batches after the Bloom file was saved), then
// SIGKILLs itself. Everything flushed is there after reopening, and the
// now stale Bloom file is detected and rebuilt rather than trusted.
TEST(UrlSeenStore, KillAfterFlushKeepsFlushed) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.batch_size = 100;
  const auto flushed = RandomKeys(1'000, 3);
  const auto after = RandomKeys(1'000, 4);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);  // bounded even if something hangs
    auto r = UrlSeenStore::Open(o);
    if (!r.ok()) ::_exit(2);
    UrlSeenStore& s = **r;
    for (const auto& [h, f] : flushed) {
      if (!s.InsertIfNew(h, f).ok()) ::_exit(3);
    }
    if (!s.Flush().ok()) ::_exit(4);
    for (const auto& [h, f] : after) {
      if (!s.InsertIfNew(h, f).ok()) ::_exit(5);
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(6);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child status " << status;

  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->bloom_loaded());
  for (const auto& [h, f] : flushed) ASSERT_TRUE(MustContain(*s, h, f));
  // Batches are written before the 101st, 201st, ... insert: 900 of the
  // 1000 later keys reached LevelDB, the last 100 were still buffered.
  for (size_t i = 0; i < 900; ++i) {
    ASSERT_TRUE(MustContain(*s, after[i].first, after[i].second)) << i;
  }
  EXPECT_EQ(s->size(), 1'900u);
  for (const auto& [h, f] : flushed) ASSERT_FALSE(MustInsert(*s, h, f));
}

void DamageAndReopen(const std::function<void(const fs::path&)>& damage) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(2'000, 5);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Close().ok());
  }
  const fs::path bloom = fs::path(dir.path()) / "seen.bloom";
  ASSERT_TRUE(fs::exists(bloom));
  damage(bloom);
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->bloom_loaded());
  EXPECT_EQ(s->size(), keys.size());
  for (const auto& [h, f] : keys) ASSERT_FALSE(MustInsert(*s, h, f));
  // And the rebuilt filter is saved again for the next start.
  ASSERT_TRUE(s->Close().ok());
  auto again = MustOpen(o);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->bloom_loaded());
}

void FlipByte(const fs::path& p, std::streamoff at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(at);
  f.write(&c, 1);
}

TEST(UrlSeenStore, CorruptBloomBitsAreRebuilt) {
  DamageAndReopen([](const fs::path& p) {
    FlipByte(p, static_cast<std::streamoff>(fs::file_size(p) / 2));
  });
}

TEST(UrlSeenStore, CorruptBloomHeaderIsRebuilt) {
  DamageAndReopen([](const fs::path& p) { FlipByte(p, 20); });
}

TEST(UrlSeenStore, TruncatedBloomIsRebuilt) {
  DamageAndReopen(
      [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 8); });
}

TEST(UrlSeenStore, MissingBloomIsRebuilt) {
  DamageAndReopen([](const fs::path& p) { fs::remove(p); });
}

TEST(UrlSeenStore, OtherGeometryRebuildsBloom) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(500, 6);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
  }
  o.expected_urls *= 4;
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->bloom_loaded());
  for (const auto& [h, f] : keys) ASSERT_TRUE(MustContain(*s, h, f));
}

TEST(UrlSeenStore, ForEachOfHostAndEraseHost) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  std::set<uint64_t> of_mid;
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    std::mt19937_64 rng(7);
    // Neighbouring host hashes, and the extremes of the key space.
    for (uint64_t host : {uint64_t{0}, uint64_t{6}, uint64_t{8}, kMax}) {
      for (int i = 0; i < 100; ++i) MustInsert(*s, host, rng());
    }
    for (int i = 0; i < 150; ++i) {
      const uint64_t fp = rng();
      MustInsert(*s, 7, fp);
      of_mid.insert(fp);
    }
    of_mid.insert(0);
    of_mid.insert(kMax);
    MustInsert(*s, 7, 0);
    MustInsert(*s, 7, kMax);  // still buffered: the scan must see it
    ASSERT_GT(s->pending(), 0u);

    std::vector<uint64_t> seen;
    ASSERT_TRUE(s->ForEachOfHost(7, [&](uint64_t fp) {
                   seen.push_back(fp);
                   return true;
                 }).ok());
    EXPECT_EQ(seen, std::vector<uint64_t>(of_mid.begin(), of_mid.end()));

    size_t visited = 0;
    ASSERT_TRUE(
        s->ForEachOfHost(7, [&](uint64_t) { return ++visited < 3; }).ok());
    EXPECT_EQ(visited, 3u);

    size_t none = 0;
    ASSERT_TRUE(s->ForEachOfHost(5, [&](uint64_t) {
                   ++none;
                   return true;
                 }).ok());
    EXPECT_EQ(none, 0u);

    Result<uint64_t> erased = s->EraseHost(7);
    ASSERT_TRUE(erased.ok()) << erased.status().ToString();
    EXPECT_EQ(*erased, of_mid.size());
    EXPECT_EQ(s->size(), 400u);
    for (uint64_t fp : of_mid) ASSERT_FALSE(MustContain(*s, 7, fp));
    Result<uint64_t> again = s->EraseHost(7);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, 0u);
    // Other hosts, neighbours in key order included, are untouched.
    for (uint64_t host : {uint64_t{0}, uint64_t{6}, uint64_t{8}, kMax}) {
      size_t n = 0;
      ASSERT_TRUE(s->ForEachOfHost(host, [&](uint64_t) {
                     ++n;
                     return true;
                   }).ok());
      EXPECT_EQ(n, 100u) << host;
    }
    // An erased fingerprint is new again.
    EXPECT_TRUE(MustInsert(*s, 7, 0));
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->size(), 401u);
  EXPECT_TRUE(MustContain(*s, 7, 0));
  EXPECT_FALSE(MustContain(*s, 7, kMax));
}

TEST(UrlSeenStore, EmptyDirIsInvalidArgument) {
  Options o;
  auto r = UrlSeenStore::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
}

// A path under a regular file can be neither created nor written, even by
// root (which chmod cannot stop).
TEST(UrlSeenStore, UnwritableDirIsIOError) {
  TempDir dir;
  const std::string file = dir.path() + "/plain-file";
  std::ofstream(file) << "x";
  auto r = UrlSeenStore::Open(SmallOptions(file + "/seen"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
  auto r2 = UrlSeenStore::Open(SmallOptions(file));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), Status::Code::kIOError);
}

TEST(UrlSeenStore, ReadOnlyDirIsIOError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes through mode 0555";
  TempDir dir;
  const std::string ro = dir.path() + "/ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  auto r = UrlSeenStore::Open(SmallOptions(ro));
  fs::permissions(ro, fs::perms::owner_all);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
}

TEST(UrlSeenStore, SecondOpenOfSameDirIsIOError) {
  TempDir dir;
  auto first = MustOpen(SmallOptions(dir.path()));
  ASSERT_NE(first, nullptr);
  auto second = UrlSeenStore::Open(SmallOptions(dir.path()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kIOError);
}

// The Bloom file cannot be written (a directory squats its temporary
// name): Flush reports it, loses nothing, and works once the cause is gone.
TEST(UrlSeenStore, BloomSaveFailureIsStatusAndLosesNothing) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(300, 8);
  const fs::path squatter = fs::path(dir.path()) / "seen.bloom.tmp";
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    fs::create_directory(squatter);
    Status st = s->Flush();
    EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
    EXPECT_EQ(s->pending(), 0u);  // the fingerprints themselves were written
    st = s->Close();
    EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
    Result<bool> after = s->InsertIfNew(1, 1);
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.status().code(), Status::Code::kFailedPrecondition);
    EXPECT_TRUE(s->Close().ok());  // idempotent
  }
  fs::remove(squatter);
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->bloom_loaded());
  for (const auto& [h, f] : keys) ASSERT_TRUE(MustContain(*s, h, f));
  EXPECT_TRUE(s->Flush().ok());
}

}  // namespace
}  // namespace crawld::dedupe
