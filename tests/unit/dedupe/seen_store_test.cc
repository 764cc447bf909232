// Tests of the LevelDB-backed URL-seen store (dedupe/dedupe.h,
// UrlSeenStore): exact answers from the in-memory pair table and, without
// it or over its budget, behind the Bloom filter; restart after Close and
// after a kill, a damaged Bloom file, per-host scans and erasure, and I/O
// errors reported as Status.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dedupe/dedupe.h"
#include "dedupe/pair_table.h"
#include "tests/unit/testing/temp_dir.h"

namespace crawld::dedupe {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

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

// The store without its exact table: every lookup goes through the Bloom
// filter, the hot cache and LevelDB.
Options BloomOnly(Options o) {
  o.exact_table_bytes = 0;
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

// Random inserts, lookups, host erasures, flushes and reopenings over a
// small key space (many repeats), checked op by op against a std::set.
void RunAgainstModel(const Options& o, std::unique_ptr<UrlSeenStore>* out) {
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  std::set<std::pair<uint64_t, uint64_t>> model;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t host = rng() % 5;
    const uint64_t fp = rng() % 4'000;
    const uint64_t op = rng() % 1000;
    if (op < 330) {
      ASSERT_EQ(MustContain(*s, host, fp), model.count({host, fp}) == 1)
          << "op " << i;
    } else if (op < 332) {
      Result<uint64_t> n = s->EraseHost(host);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      uint64_t expect = 0;
      for (auto it = model.lower_bound({host, 0});
           it != model.end() && it->first == host;) {
        it = model.erase(it);
        ++expect;
      }
      ASSERT_EQ(*n, expect) << "op " << i;
    } else if (op < 335) {
      ASSERT_TRUE(s->Flush().ok());
    } else {
      ASSERT_EQ(MustInsert(*s, host, fp), model.insert({host, fp}).second)
          << "op " << i;
    }
    if (i == 10'000) {  // a restart halfway
      ASSERT_TRUE(s->Close().ok());
      s.reset();
      s = MustOpen(o);
      ASSERT_NE(s, nullptr);
    }
    ASSERT_EQ(s->size(), model.size()) << "op " << i;
  }
  *out = std::move(s);
}

// A Bloom filter overfilled 20x says "maybe" to almost everything; the
// exact store behind it must still answer every query as the model does.
TEST(UrlSeenStore, NoFalseDropsAgainstModelBloomPath) {
  TempDir dir;
  Options o = BloomOnly(SmallOptions(dir.path()));
  o.expected_urls = 500;
  o.bloom_fp_rate = 0.2;
  o.batch_size = 7;
  o.hot_cache_entries = 16;
  std::unique_ptr<UrlSeenStore> s;
  RunAgainstModel(o, &s);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact_table_active());
  EXPECT_EQ(s->exact_table_bytes(), 0u);
  // The exact store was consulted, and corrected the filter.
  EXPECT_GT(s->store_reads(), 0u);
  EXPECT_GT(s->bloom_false_positives(), 100u);
}

// The same with the exact table: every answer from memory, none from
// LevelDB, and still exactly the model's.
TEST(UrlSeenStore, NoFalseDropsAgainstModelTablePath) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.expected_urls = 500;
  o.bloom_fp_rate = 0.2;
  o.batch_size = 7;
  std::unique_ptr<UrlSeenStore> s;
  RunAgainstModel(o, &s);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->exact_table_active());
  EXPECT_GT(s->exact_table_bytes(), 0u);
  EXPECT_EQ(s->store_reads(), 0u);
  EXPECT_GT(s->lookups(), 9'000u);
}

// Two pairs whose 64-bit table (and Bloom) keys are equal: a store that
// trusted a 64-bit mix of the pair would call the second one seen and drop
// a new URL. Equality is on the pair, in both paths and after a restart.
void CheckMixCollision(const Options& o) {
  const uint64_t h1 = 12345, f1 = 0x0123456789abcdefULL, h2 = 67890;
  const uint64_t f2 = f1 ^ internal::Mix(h1 ^ internal::kHostSeed) ^
                      internal::Mix(h2 ^ internal::kHostSeed);
  ASSERT_EQ(internal::PairKey(h1, f1), internal::PairKey(h2, f2));
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(MustInsert(*s, h1, f1));
    EXPECT_FALSE(MustContain(*s, h2, f2));
    EXPECT_TRUE(MustInsert(*s, h2, f2));
    EXPECT_FALSE(MustInsert(*s, h2, f2));
    Result<uint64_t> n = s->EraseHost(h1);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1u);
    EXPECT_FALSE(MustContain(*s, h1, f1));
    EXPECT_TRUE(MustContain(*s, h2, f2));
    EXPECT_TRUE(MustInsert(*s, h1, f1));
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(MustContain(*s, h1, f1));
  EXPECT_TRUE(MustContain(*s, h2, f2));
  EXPECT_FALSE(MustContain(*s, h1, f2));
  EXPECT_FALSE(MustContain(*s, h2, f1));
}

TEST(UrlSeenStore, EqualMixedKeysOfTwoHostsStayDistinctTablePath) {
  TempDir dir;
  CheckMixCollision(SmallOptions(dir.path()));
}

TEST(UrlSeenStore, EqualMixedKeysOfTwoHostsStayDistinctBloomPath) {
  TempDir dir;
  CheckMixCollision(BloomOnly(SmallOptions(dir.path())));
}

// A budget too small for the keys: the store drops the table during the
// run, keeps answering exactly from the Bloom filter and LevelDB, and a
// reopen with the same budget does not build it at all.
TEST(UrlSeenStore, OverBudgetFallsBackWithoutLosingAnything) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.exact_table_bytes = 128 << 10;  // about 8,000 pairs
  o.expected_urls = 30'000;
  std::set<std::pair<uint64_t, uint64_t>> model;
  std::mt19937_64 rng(21);
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->exact_table_active());
  bool dropped_at_some_point = false;
  for (int i = 0; i < 30'000; ++i) {
    const uint64_t host = rng() % 300;
    const uint64_t fp = rng() % 100;
    if (rng() % 4 == 0) {
      ASSERT_EQ(MustContain(*s, host, fp), model.count({host, fp}) == 1) << i;
    } else {
      ASSERT_EQ(MustInsert(*s, host, fp), model.insert({host, fp}).second) << i;
    }
    if (!s->exact_table_active() && !dropped_at_some_point) {
      dropped_at_some_point = true;
      EXPECT_GT(model.size(), 4'000u);
      EXPECT_EQ(s->exact_table_bytes(), 0u);
    }
    ASSERT_LE(s->exact_table_bytes(), o.exact_table_bytes);
  }
  EXPECT_TRUE(dropped_at_some_point);
  EXPECT_GT(s->store_reads(), 0u);
  ASSERT_TRUE(s->Close().ok());
  s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact_table_active());
  EXPECT_EQ(s->size(), model.size());
  for (const auto& [h, f] : model) ASSERT_TRUE(MustContain(*s, h, f));
  ASSERT_TRUE(s->Close().ok());
  // With room again, Open builds the table from LevelDB.
  o.exact_table_bytes = 64 << 20;
  s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->exact_table_active());
  const uint64_t reads = s->store_reads();
  for (const auto& [h, f] : model) ASSERT_FALSE(MustInsert(*s, h, f));
  EXPECT_TRUE(MustInsert(*s, 1'000, 1'000));
  EXPECT_EQ(s->store_reads(), reads);
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
  // The buffered tail is gone, and new again.
  for (size_t i = 900; i < after.size(); ++i) {
    ASSERT_FALSE(MustContain(*s, after[i].first, after[i].second)) << i;
  }
  EXPECT_EQ(s->size(), 1'900u);
  for (const auto& [h, f] : flushed) ASSERT_FALSE(MustInsert(*s, h, f));
}

void FlipByte(const fs::path& p, std::streamoff at);

// Close saves the exact table; the next Open takes it instead of scanning
// LevelDB, and it answers as the scan would.
TEST(UrlSeenStore, CloseSavesTableAndOpenLoadsIt) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(3'000, 16);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(s->exact_table_loaded());
    for (size_t i = 0; i < 2'000; ++i)
      MustInsert(*s, keys[i].first, keys[i].second);
    ASSERT_TRUE(s->Close().ok());
  }
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->exact_table_loaded());
    EXPECT_TRUE(s->exact_table_active());
    EXPECT_EQ(s->size(), 2'000u);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(MustInsert(*s, keys[i].first, keys[i].second), i >= 2'000) << i;
    }
    EXPECT_EQ(s->store_reads(), 0u);
    Result<uint64_t> n = s->EraseHost(keys[0].first);
    ASSERT_TRUE(n.ok());
    EXPECT_GT(*n, 0u);
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->exact_table_loaded());
  size_t kept = 0;
  for (const auto& [h, f] : keys) {
    const bool erased = h == keys[0].first;
    ASSERT_EQ(MustContain(*s, h, f), !erased);
    kept += !erased;
  }
  EXPECT_EQ(s->size(), kept);
}

// A damaged or stale seen.table is never trusted: Open scans LevelDB.
void DamageTableAndReopen(const std::function<void(const fs::path&)>& damage) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto keys = RandomKeys(2'000, 17);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Close().ok());
  }
  const fs::path table = fs::path(dir.path()) / "seen.table";
  ASSERT_TRUE(fs::exists(table));
  damage(table);
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact_table_loaded());
  EXPECT_TRUE(s->exact_table_active());
  EXPECT_EQ(s->size(), keys.size());
  for (const auto& [h, f] : keys) ASSERT_FALSE(MustInsert(*s, h, f));
  EXPECT_TRUE(MustInsert(*s, 99, 99));
  EXPECT_EQ(s->store_reads(), 0u);
}

TEST(UrlSeenStore, CorruptTableSlotsAreRescanned) {
  DamageTableAndReopen([](const fs::path& p) {
    FlipByte(p, static_cast<std::streamoff>(fs::file_size(p) / 2));
  });
}

TEST(UrlSeenStore, CorruptTableHeaderIsRescanned) {
  DamageTableAndReopen([](const fs::path& p) { FlipByte(p, 40); });
}

TEST(UrlSeenStore, TruncatedTableIsRescanned) {
  DamageTableAndReopen(
      [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 4); });
}

// A hostile seen.table whose header checksum is valid: absurd sizes must
// not be allocated, inconsistent counts must not be adopted (a table with
// no empty slot would make lookups loop forever).
void RewriteTableHeader(const fs::path& p, size_t field_offset,
                        uint64_t value) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  char h[80];
  f.read(h, sizeof(h));
  std::memcpy(h + field_offset, &value, sizeof(value));
  const uint64_t sum = XXH3_64bits(h, 72);  // header_sum covers bytes 0-71
  std::memcpy(h + 72, &sum, sizeof(sum));
  f.seekp(0);
  f.write(h, sizeof(h));
}

TEST(UrlSeenStore, HostileTableSizesAreRescanned) {
  DamageTableAndReopen([](const fs::path& p) {
    RewriteTableHeader(p, 32, uint64_t{1} << 40);  // slots
    RewriteTableHeader(p, 56, uint64_t{1} << 40);  // host slots
  });
}

TEST(UrlSeenStore, HostileTableCountsAreRescanned) {
  DamageTableAndReopen([](const fs::path& p) {
    RewriteTableHeader(p, 48, 0);  // hosts: every slot's id is then too big
  });
}

// Every slot claimed by host 1, with both checksums recomputed: no empty
// slot is left, which Adopt must refuse (the entry count disagrees).
TEST(UrlSeenStore, HostileFullTableIsRescanned) {
  DamageTableAndReopen([](const fs::path& p) {
    std::string bytes;
    {
      std::ifstream in(p, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(bytes.size(), 80u);
    uint64_t slots = 0;
    std::memcpy(&slots, bytes.data() + 32, sizeof(slots));
    ASSERT_LE(80 + slots * 12, bytes.size());
    const uint32_t one = 1;
    for (uint64_t i = 0; i < slots; ++i) {
      std::memcpy(bytes.data() + 80 + i * 12, &one, sizeof(one));
    }
    // data_sum covers everything after the 80-byte header, in file order.
    const uint64_t data_sum = XXH3_64bits(bytes.data() + 80, bytes.size() - 80);
    std::memcpy(bytes.data() + 64, &data_sum, sizeof(data_sum));
    const uint64_t header_sum = XXH3_64bits(bytes.data(), 72);
    std::memcpy(bytes.data() + 72, &header_sum, sizeof(header_sum));
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  });
}

// The file of an earlier Close, put back after later writes: its epoch no
// longer matches the database, so the keys written since are not lost.
TEST(UrlSeenStore, StaleTableIsRescanned) {
  TempDir dir;
  const Options o = SmallOptions(dir.path());
  const auto first = RandomKeys(500, 18);
  const auto later = RandomKeys(500, 19);
  const fs::path table = fs::path(dir.path()) / "seen.table";
  const fs::path old = fs::path(dir.path()) / "old.table";
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : first) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Close().ok());
  }
  fs::copy_file(table, old);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->exact_table_loaded());
    for (const auto& [h, f] : later) MustInsert(*s, h, f);
    ASSERT_TRUE(s->Close().ok());
  }
  fs::copy_file(old, table, fs::copy_options::overwrite_existing);
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact_table_loaded());
  for (const auto& [h, f] : first) ASSERT_TRUE(MustContain(*s, h, f));
  for (const auto& [h, f] : later) ASSERT_TRUE(MustContain(*s, h, f));
}

// A store filled to expected_urls under a budget that holds the table
// sized for expected_urls (and not twice that) gets its table back at
// Open, sized as in the run that filled it.
TEST(UrlSeenStore, ReopenAtExpectedSizeKeepsTable) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.expected_urls = 10'000;
  o.exact_table_bytes = 200'000;  // 14,286 slots of 12 bytes, and hosts
  const auto keys = RandomKeys(10'000, 15);
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    for (const auto& [h, f] : keys) MustInsert(*s, h, f);
    EXPECT_TRUE(s->exact_table_active());
    ASSERT_TRUE(s->Close().ok());
  }
  // Without the saved table: the scan path.
  ASSERT_TRUE(fs::remove(fs::path(dir.path()) / "seen.table"));
  {
    auto s = MustOpen(o);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(s->exact_table_loaded());
    EXPECT_TRUE(s->exact_table_active());
    EXPECT_LE(s->exact_table_bytes(), o.exact_table_bytes);
    for (const auto& [h, f] : keys) ASSERT_TRUE(MustContain(*s, h, f));
    EXPECT_EQ(s->store_reads(), 0u);
    ASSERT_TRUE(s->Close().ok());
  }
  // A saved table larger than a smaller budget is not loaded.
  o.exact_table_bytes = 100'000;
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact_table_loaded());
  EXPECT_FALSE(s->exact_table_active());
  for (const auto& [h, f] : keys) ASSERT_TRUE(MustContain(*s, h, f));
}

// As the worker runs it (no automatic batches): a kill after Flush and more
// inserts leaves exactly the flushed keys, whichever path answers.
void KillWithoutFlush(const Options& base) {
  TempDir dir;
  Options o = base;
  o.dir = dir.path();
  o.batch_size = 1'000'000;
  const auto flushed = RandomKeys(2'000, 13);
  std::vector<std::pair<uint64_t, uint64_t>> tail;
  for (const auto& [h, f] : RandomKeys(2'000, 14)) tail.emplace_back(h, ~f);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);
    auto r = UrlSeenStore::Open(o);
    if (!r.ok()) ::_exit(2);
    UrlSeenStore& s = **r;
    for (const auto& [h, f] : flushed) {
      if (!s.InsertIfNew(h, f).ok()) ::_exit(3);
    }
    if (!s.Flush().ok()) ::_exit(4);
    for (const auto& [h, f] : tail) {
      if (!s.InsertIfNew(h, f).ok()) ::_exit(5);
    }
    if (s.pending() != tail.size()) ::_exit(6);
    ::kill(::getpid(), SIGKILL);
    ::_exit(7);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child status " << status;
  auto s = MustOpen(o);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->exact_table_active(), o.exact_table_bytes > 0);
  EXPECT_EQ(s->size(), flushed.size());
  for (const auto& [h, f] : flushed) ASSERT_TRUE(MustContain(*s, h, f));
  for (const auto& [h, f] : tail) ASSERT_FALSE(MustContain(*s, h, f));
  for (const auto& [h, f] : tail) ASSERT_TRUE(MustInsert(*s, h, f));
  for (const auto& [h, f] : flushed) ASSERT_FALSE(MustInsert(*s, h, f));
}

TEST(UrlSeenStore, KillWithoutFlushKeepsOnlyFlushedTablePath) {
  KillWithoutFlush(SmallOptions(""));
}

TEST(UrlSeenStore, KillWithoutFlushKeepsOnlyFlushedBloomPath) {
  KillWithoutFlush(BloomOnly(SmallOptions("")));
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

void ForEachAndErase(bool table) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  if (!table) o = BloomOnly(o);
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
  EXPECT_EQ(s->exact_table_active(), table);
}

TEST(UrlSeenStore, ForEachOfHostAndEraseHostTablePath) {
  ForEachAndErase(true);
}

TEST(UrlSeenStore, ForEachOfHostAndEraseHostBloomPath) {
  ForEachAndErase(false);
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

// The table alone, against a model, with keys chosen to crowd the last
// slots so that probe runs wrap around the end of the array and deletions
// shift entries back across it.
TEST(PairTable, WrappingRunsAndBackwardShiftAgainstModel) {
  internal::PairTable t(4 << 20, 1'000);
  ASSERT_TRUE(t.Reserve(100));
  std::set<std::pair<uint64_t, uint64_t>> model;
  std::mt19937_64 rng(31);
  for (int i = 0; i < 60'000; ++i) {
    const uint64_t host = rng() % 4;
    // Mostly keys whose home is one of the last few slots, some anywhere.
    const uint64_t key =
        (rng() % 4 != 0) ? ~uint64_t{0} - (rng() % 3'000) * (uint64_t{1} << 48)
                         : rng() % 5'000 * 0x9e3779b97f4a7c15ULL;
    const auto pair = std::make_pair(host, key);
    switch (rng() % 3) {
      case 0:
        ASSERT_EQ(t.Contains(host, key), model.count(pair) == 1) << i;
        break;
      case 1:
        if (model.insert(pair).second) {
          ASSERT_TRUE(t.Add(host, key)) << i;
        }
        break;
      default:
        ASSERT_EQ(t.Erase(host, key), model.erase(pair) == 1) << i;
    }
    ASSERT_EQ(t.size(), model.size());
  }
  for (const auto& [h, k] : model) ASSERT_TRUE(t.Contains(h, k));
  EXPECT_LE(t.bytes(), size_t{4} << 20);
}

TEST(PairTable, RefusesToGrowPastBudgetAndStaysExact) {
  internal::PairTable t(100 << 10, 1'000'000);
  std::vector<uint64_t> added;
  std::mt19937_64 rng(32);
  for (;;) {
    const uint64_t k = rng();
    if (!t.Add(7, k)) break;
    added.push_back(k);
    ASSERT_LE(t.bytes(), size_t{100} << 10);
  }
  EXPECT_GT(added.size(), 3'000u);
  EXPECT_EQ(t.size(), added.size());
  for (uint64_t k : added) ASSERT_TRUE(t.Contains(7, k));
  EXPECT_FALSE(t.Contains(8, added[0]));
  t.Release();
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_FALSE(t.Contains(7, added[0]));
}

}  // namespace
}  // namespace crawld::dedupe

namespace crawld::dedupe {
namespace {

// A worker checkpoints the seen store together with its queues: a URL the
// queues could lose must not be remembered as seen (issue 13, the kill
// path). With flush_only, only Flush() makes fingerprints durable.
TEST(UrlSeenStore, FlushOnlyKeepsNothingThatWasNotFlushed) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.flush_only = true;
  o.batch_size = 4;  // many times over: still nothing written
  {
    auto s = MustOpen(o);
    for (uint64_t fp = 1; fp <= 100; ++fp) {
      ASSERT_TRUE(*s->InsertIfNew(7, fp));
    }
    ASSERT_TRUE(s->Flush().ok());
    for (uint64_t fp = 101; fp <= 300; ++fp) {
      ASSERT_TRUE(*s->InsertIfNew(7, fp));
      ASSERT_FALSE(*s->InsertIfNew(7, fp));  // seen while it runs
    }
    // Destroyed without a Flush: a stop whose checkpoint failed.
  }
  auto s = MustOpen(o);
  for (uint64_t fp = 1; fp <= 100; ++fp) {
    EXPECT_FALSE(*s->InsertIfNew(7, fp)) << fp;
  }
  for (uint64_t fp = 101; fp <= 300; ++fp) {
    EXPECT_TRUE(*s->InsertIfNew(7, fp)) << fp;
  }
}

// The checkpoint mark: set by BeginCheckpoint(), cleared by the Flush()
// after it, found by Open() when the process died in between (the queues
// were then written and this store's fingerprints were not).
TEST(UrlSeenStore, ACheckpointKilledBeforeItsFlushIsReportedAtOpen) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.flush_only = true;
  {
    auto s = MustOpen(o);
    EXPECT_FALSE(s->checkpoint_interrupted());
    ASSERT_TRUE(*s->InsertIfNew(7, 1));
    ASSERT_TRUE(s->BeginCheckpoint().ok());
    ASSERT_TRUE(s->Flush().ok());
    ASSERT_TRUE(*s->InsertIfNew(7, 2));
    ASSERT_TRUE(s->BeginCheckpoint().ok());
    // Killed here: no Flush().
  }
  {
    auto s = MustOpen(o);
    EXPECT_TRUE(s->checkpoint_interrupted());
    EXPECT_FALSE(*s->InsertIfNew(7, 1));  // flushed before
    EXPECT_TRUE(*s->InsertIfNew(7, 2));   // lost with the process
    // The next Flush() clears the mark, even with nothing new (a start
    // checkpoint right after the repair may have nothing to add).
    ASSERT_TRUE(s->Flush().ok());
  }
  {
    auto s = MustOpen(o);
    EXPECT_FALSE(s->checkpoint_interrupted());
    EXPECT_FALSE(*s->InsertIfNew(7, 2));
    ASSERT_TRUE(s->BeginCheckpoint().ok());
    ASSERT_TRUE(s->Flush().ok());  // nothing pending: the mark goes alone
  }
  auto s = MustOpen(o);
  EXPECT_FALSE(s->checkpoint_interrupted());
}

}  // namespace
}  // namespace crawld::dedupe
