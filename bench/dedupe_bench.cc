// Micro-benchmarks of dedupe/dedupe.h: the in-memory SeenSet and the
// LevelDB-backed UrlSeenStore at 10 million fingerprints, SimHash and
// NearDupIndex, the document digest. Results and the command line:
// docs/bench/dedupe.md (SeenSet's first figures: docs/bench/frontier.md).
//
// The store lives in a fresh directory under $TMPDIR (or /tmp), removed at
// exit; it needs about 0.4 GB of disk and 0.6 GB of memory.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

constexpr uint64_t kUrls = 10'000'000;

// Built once and shared by the lookup benchmarks (about 150 MB).
struct Filled {
  Filled() : seen(Options{}) {
    std::mt19937_64 rng(1);
    inserted.reserve(kUrls);
    for (uint64_t i = 0; i < kUrls; ++i) {
      inserted.push_back(rng());
      seen.InsertIfNew(inserted.back());
    }
  }
  SeenSet seen;
  std::vector<uint64_t> inserted;
};

Filled& Shared() {
  static Filled* filled = new Filled();  // never destroyed: a bench fixture
  return *filled;
}

// Fill an empty set (sized for 10M) with 10M new fingerprints.
void BM_SeenSetFill10M(benchmark::State& state) {
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    SeenSet seen(Options{});
    for (uint64_t i = 0; i < kUrls; ++i)
      benchmark::DoNotOptimize(seen.InsertIfNew(rng()));
  }
  state.SetItemsProcessed(state.iterations() * kUrls);
}

// Contains() on a set of 10M, half the lookups hitting.
void BM_SeenSetContainsHalfHit(benchmark::State& state) {
  Filled& f = Shared();
  std::mt19937_64 rng(3);
  uint64_t hits = 0;
  for (auto _ : state) {
    const uint64_t r = rng();
    const uint64_t fp = (r & 1) ? f.inserted[r % kUrls] : r;
    hits += f.seen.Contains(fp);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] = static_cast<double>(hits) / state.iterations();
}

// InsertIfNew() on a set of 10M (growing to at most 12M), half of the
// fingerprints already present.
void BM_SeenSetInsertIfNewHalfHit(benchmark::State& state) {
  Filled& f = Shared();
  std::mt19937_64 rng(4);
  uint64_t fresh = 0;
  for (auto _ : state) {
    const uint64_t r = rng();
    const uint64_t fp = (r & 1) ? f.inserted[r % kUrls] : r;
    fresh += f.seen.InsertIfNew(fp);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["new_ratio"] = static_cast<double>(fresh) / state.iterations();
}

// Measured Bloom false-positive rate at the design load against the target.
void BM_BloomFalsePositiveRate(benchmark::State& state) {
  const double target = 1.0 / static_cast<double>(state.range(0));
  Options o;
  o.expected_urls = 1'000'000;
  o.bloom_fp_rate = target;
  SeenSet seen(o);
  std::mt19937_64 rng(5);
  for (uint64_t i = 0; i < o.expected_urls; ++i) seen.InsertIfNew(rng());
  const uint64_t before = seen.bloom_false_positives();
  uint64_t probes = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(seen.Contains(rng()));
    ++probes;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["fp_rate"] =
      static_cast<double>(seen.bloom_false_positives() - before) / probes;
  state.counters["target"] = target;
  state.counters["bloom_fill"] = seen.bloom_fill();
  state.counters["k"] = seen.bloom_hashes();
}

void BM_DocumentDigest(benchmark::State& state) {
  std::string body(static_cast<size_t>(state.range(0)), 'x');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i * 31);
  for (auto _ : state) benchmark::DoNotOptimize(DocumentDigest(body));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// --- UrlSeenStore -------------------------------------------------------

std::string& BenchRoot() {
  static std::string* root = [] {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/dedupe_bench.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    return new std::string(tmpl);
  }();
  return *root;
}

Options StoreOptions(const std::string& name, uint64_t expected, double p) {
  Options o;
  o.dir = BenchRoot() + "/" + name;
  o.expected_urls = expected;
  o.bloom_fp_rate = p;
  return o;  // batch_size, caches: the defaults
}

// Peak resident set of the whole process so far (MB).
double PeakRssMb() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "dedupe_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

template <typename T>
T Check(Result<T> r) {
  Check(r.status());
  return std::move(r).value();
}

// 10 M fingerprints over 100,000 hosts (100 URLs per host on average, as a
// crawl has), random 64-bit host hashes and fingerprints.
struct FilledStore {
  std::unique_ptr<UrlSeenStore> store;
  std::vector<std::pair<uint64_t, uint64_t>> keys;
};

FilledStore* g_store = nullptr;  // the fill benchmark builds it

void FillStore(FilledStore& f) {
  f.store = Check(UrlSeenStore::Open(StoreOptions("seen10m", kUrls, 0.01)));
  std::mt19937_64 rng(6);
  std::vector<uint64_t> hosts(100'000);
  for (uint64_t& h : hosts) h = rng();
  f.keys.reserve(kUrls);
  for (uint64_t i = 0; i < kUrls; ++i) {
    f.keys.emplace_back(hosts[rng() % hosts.size()], rng());
    const auto& [h, fp] = f.keys.back();
    benchmark::DoNotOptimize(Check(f.store->InsertIfNew(h, fp)));
  }
  Check(f.store->Flush());
}

FilledStore& SharedStore() {
  if (g_store == nullptr) {
    g_store = new FilledStore();
    FillStore(*g_store);
  }
  return *g_store;
}

// 10 M InsertIfNew of new fingerprints into an empty store sized for 10 M,
// LevelDB batches and the final Flush included. Builds the store the next
// benchmarks read.
void BM_StoreFill10M(benchmark::State& state) {
  for (auto _ : state) {
    if (g_store != nullptr) state.SkipWithError("store already filled");
    g_store = new FilledStore();
    FillStore(*g_store);
  }
  state.SetItemsProcessed(state.iterations() * kUrls);
  state.counters["table_mb"] =
      static_cast<double>(g_store->store->exact_table_bytes()) / 1e6;
  state.counters["peak_rss_mb"] = PeakRssMb();
}

// Contains() on the 10 M store, half the lookups hitting (a uniformly
// random inserted key), half missing (fresh random keys).
void BM_StoreContainsHalfHit(benchmark::State& state) {
  FilledStore& f = SharedStore();
  std::mt19937_64 rng(7);
  uint64_t hits = 0;
  const uint64_t reads_before = f.store->store_reads();
  const uint64_t fps_before = f.store->bloom_false_positives();
  for (auto _ : state) {
    const uint64_t r = rng();
    const auto key =
        (r & 1) ? f.keys[(r >> 1) % kUrls] : std::make_pair(rng(), rng());
    hits += Check(f.store->Contains(key.first, key.second));
  }
  const double n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] = static_cast<double>(hits) / n;
  state.counters["reads_per_op"] =
      static_cast<double>(f.store->store_reads() - reads_before) / n;
  state.counters["bloom_fp"] =
      static_cast<double>(f.store->bloom_false_positives() - fps_before);
  state.counters["table"] = f.store->exact_table_active();
  state.counters["peak_rss_mb"] = PeakRssMb();
}

// As above, but the hits are skewed as links are (a few URLs, such as home
// and navigation pages, are found again and again): the hit is inserted key
// number floor(10M^u) - 1 with u uniform in [0, 1), a Zipf(1)-like law
// over the keys. Shows what the hot cache buys when the exact table is off
// (docs/bench/dedupe.md, the Bloom-only run); with the table it is as fast
// as the uniform case.
void BM_StoreContainsHalfHitZipf(benchmark::State& state) {
  FilledStore& f = SharedStore();
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double log_n = std::log(static_cast<double>(kUrls));
  uint64_t hits = 0;
  const uint64_t reads_before = f.store->store_reads();
  for (auto _ : state) {
    const uint64_t r = rng();
    std::pair<uint64_t, uint64_t> key(rng(), rng());
    if (r & 1) {
      const auto i = static_cast<uint64_t>(std::exp(u(rng) * log_n)) - 1;
      key = f.keys[std::min<uint64_t>(i, kUrls - 1)];
    }
    hits += Check(f.store->Contains(key.first, key.second));
  }
  const double n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] = static_cast<double>(hits) / n;
  state.counters["reads_per_op"] =
      static_cast<double>(f.store->store_reads() - reads_before) / n;
}

// InsertIfNew() on the 10 M store (growing by up to 1 M), half of the keys
// already present.
void BM_StoreInsertIfNewHalfHit(benchmark::State& state) {
  FilledStore& f = SharedStore();
  std::mt19937_64 rng(8);
  uint64_t fresh = 0;
  for (auto _ : state) {
    const uint64_t r = rng();
    const auto key =
        (r & 1) ? f.keys[(r >> 1) % kUrls] : std::make_pair(rng(), rng());
    fresh += Check(f.store->InsertIfNew(key.first, key.second));
  }
  Check(f.store->Flush());
  state.SetItemsProcessed(state.iterations());
  state.counters["new_ratio"] =
      static_cast<double>(fresh) / static_cast<double>(state.iterations());
  state.counters["table"] = f.store->exact_table_active();
  state.counters["table_mb"] =
      static_cast<double>(f.store->exact_table_bytes()) / 1e6;
  state.counters["peak_rss_mb"] = PeakRssMb();
}

// Close and reopen the 10 M store. Arg 1: Open loads the saved Bloom file
// and exact table (a restart after Close). Arg 0: both files deleted, one
// scan of LevelDB rebuilds both (a restart after a kill, where both are
// stale). Arg 3: only the table file deleted (a scan for the table). Arg 2:
// the table off (the Bloom-only store: Open just loads the Bloom file); it
// leaves the store open that way for BM_StoreContainsHalfHitNoTable.
void BM_StoreReopen(benchmark::State& state) {
  FilledStore& f = SharedStore();
  Options o = StoreOptions("seen10m", kUrls, 0.01);
  if (state.range(0) == 2) o.exact_table_bytes = 0;
  bool loaded = false;
  for (auto _ : state) {
    state.PauseTiming();
    Check(f.store->Close());
    f.store.reset();
    if (state.range(0) == 0) std::filesystem::remove(o.dir + "/seen.bloom");
    if (state.range(0) == 0 || state.range(0) == 3) {
      std::filesystem::remove(o.dir + "/seen.table");
    }
    state.ResumeTiming();
    f.store = Check(UrlSeenStore::Open(o));
    loaded = f.store->bloom_loaded();
  }
  state.counters["bloom_loaded"] = loaded;
  state.counters["size"] = static_cast<double>(f.store->size());
  state.counters["table"] = f.store->exact_table_active();
  state.counters["table_loaded"] = f.store->exact_table_loaded();
}

// BM_StoreContainsHalfHit without the exact table (the store as reopened
// by BM_StoreReopen/2): the Bloom filter, hot cache and LevelDB path.
void BM_StoreContainsHalfHitNoTable(benchmark::State& state) {
  FilledStore& f = SharedStore();
  if (f.store->exact_table_active()) {
    state.SkipWithError("run BM_StoreReopen/2 first");
    return;
  }
  BM_StoreContainsHalfHit(state);
}

// Measured Bloom false-positive rate of the store at its design load
// (1 M keys) against the target: fresh keys whose Bloom answer was "maybe"
// and LevelDB's "no".
void BM_StoreBloomFalsePositiveRate(benchmark::State& state) {
  const double target = 1.0 / static_cast<double>(state.range(0));
  Options o =
      StoreOptions("fp" + std::to_string(state.range(0)), 1'000'000, target);
  o.exact_table_bytes = 0;  // the filter is what is measured
  auto store = Check(UrlSeenStore::Open(o));
  std::mt19937_64 rng(9);
  for (int i = 0; i < 1'000'000; ++i) {
    benchmark::DoNotOptimize(Check(store->InsertIfNew(rng() % 10'000, rng())));
  }
  Check(store->Flush());
  const uint64_t before = store->bloom_false_positives();
  uint64_t probes = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Check(store->Contains(rng() % 10'000, rng())));
    ++probes;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["fp_rate"] =
      static_cast<double>(store->bloom_false_positives() - before) /
      static_cast<double>(probes);
  state.counters["target"] = target;
  state.counters["k"] = store->bloom_hashes();
}

// --- SimHash, NearDupIndex ----------------------------------------------

std::string Words(size_t n, std::mt19937_64& rng) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const int len = 3 + static_cast<int>(rng() % 7);
    for (int j = 0; j < len; ++j)
      s.push_back(static_cast<char>('a' + rng() % 26));
    s.push_back(' ');
  }
  return s;
}

void BM_SimHash500Words(benchmark::State& state) {
  std::mt19937_64 rng(10);
  const std::string text = Words(500, rng);
  for (auto _ : state) benchmark::DoNotOptimize(SimHash(text));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(text.size()));
}

// FindNear (k = 3) in an index of 1 M random simhashes; a quarter of the
// queries are a stored hash with 0..3 bits flipped.
void BM_NearDupFindNear1M(benchmark::State& state) {
  Options o;
  o.near_dup_max_entries = 1 << 20;
  NearDupIndex index(o);
  std::mt19937_64 rng(11);
  std::vector<uint64_t> stored(1 << 20);
  for (uint64_t& h : stored) {
    h = rng();
    index.Insert(h);
  }
  uint64_t found = 0;
  for (auto _ : state) {
    const uint64_t r = rng();
    uint64_t q = rng();
    if ((r & 3) == 0) {
      q = stored[(r >> 2) % stored.size()];
      for (uint64_t b = 0; b < ((r >> 40) & 3); ++b)
        q ^= uint64_t{1} << (rng() % 64);
    }
    found += index.FindNear(q).has_value();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["found_ratio"] =
      static_cast<double>(found) / static_cast<double>(state.iterations());
}

BENCHMARK(BM_SeenSetFill10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_SeenSetContainsHalfHit);
BENCHMARK(BM_SeenSetInsertIfNewHalfHit)->Iterations(4'000'000);
BENCHMARK(BM_BloomFalsePositiveRate)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(2'000'000);
BENCHMARK(BM_DocumentDigest)->Arg(20 << 10)->Arg(1 << 20);
BENCHMARK(BM_StoreFill10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_StoreContainsHalfHit)->Iterations(2'000'000);
BENCHMARK(BM_StoreContainsHalfHitZipf)->Iterations(2'000'000);
BENCHMARK(BM_StoreInsertIfNewHalfHit)->Iterations(2'000'000);
BENCHMARK(BM_StoreReopen)
    ->Arg(1)
    ->Arg(0)
    ->Arg(3)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_StoreContainsHalfHitNoTable)->Iterations(2'000'000);
BENCHMARK(BM_StoreBloomFalsePositiveRate)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(2'000'000);
BENCHMARK(BM_SimHash500Words);
BENCHMARK(BM_NearDupFindNear1M);

// --- Document claims (issue 14) ------------------------------------------
//
// What dedupe adds to each page: one Claim before its record is written
// and, for a body stored in full, one Settle after. Record ids and URIs as
// crawld writes them (47 + about 70 bytes). The table holds 8 M documents
// (file and text area sized as dedupe.max_documents = 8 M would); threads
// stand for the workers of a node sharing it (their processes lock the
// same buckets the same way).

// splitmix64's finalizer: digests are uniform, so are these.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string RecordIdFor(uint64_t i) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "<urn:uuid:%08llx-0000-4000-8000-%012llx>",
                static_cast<unsigned long long>(i >> 32),
                static_cast<unsigned long long>(i & 0xffffffffffffULL));
  return buf;
}

DocumentClaim ClaimFor(uint64_t i) {
  DocumentClaim c;
  c.record_id = RecordIdFor(i);
  c.target_uri = "http://www.example-host-" + std::to_string(i % 997) +
                 ".test/section/some-article-name-" + std::to_string(i) +
                 ".html";
  c.time_us = static_cast<int64_t>(i);
  return c;
}

ClaimTable* SharedClaimTable() {
  static ClaimTable* table = [] {
    Options o;
    o.claims_path = BenchRoot() + "/claims";
    o.max_documents = 8'000'000;
    o.claim_text_bytes = uint64_t{1} << 30;
    auto t = ClaimTable::Open(o);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    return t->release();  // a bench fixture, never destroyed
  }();
  return table;
}

constexpr uint64_t kPreclaimed = 1'000'000;

// Claim + Settle(stored) of a body nobody stored: a page's cost when its
// body is new. The first call fills the table with kPreclaimed claims.
void BM_ClaimTableNewBody(benchmark::State& state) {
  ClaimTable* t = SharedClaimTable();
  if (state.thread_index() == 0 && t->size() < kPreclaimed) {
    for (uint64_t i = 0; i < kPreclaimed; ++i) {
      const Digest128 d{Mix64(i), Mix64(i + (uint64_t{1} << 63))};
      (void)t->Claim(d, ClaimFor(i));
    }
  }
  uint64_t i =
      (uint64_t{1} << 40) + (uint64_t(state.thread_index()) << 32) + t->size();
  uint64_t claimed = 0;
  for (auto _ : state) {
    const Digest128 d{Mix64(i), Mix64(i + (uint64_t{1} << 63))};
    const DocumentClaim c = ClaimFor(i);
    claimed += t->Claim(d, c).outcome == ClaimOutcome::kClaimed;
    benchmark::DoNotOptimize(t->Settle(d, c.record_id, true));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["claimed_ratio"] = benchmark::Counter(
      static_cast<double>(claimed) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
  if (state.thread_index() == 0) {
    state.counters["table_docs"] = static_cast<double>(t->size());
    state.counters["file_bytes_per_doc"] =
        static_cast<double>(t->file_bytes() - t->text_capacity()) /
        static_cast<double>(t->capacity());
    state.counters["text_bytes_per_doc"] =
        static_cast<double>(t->text_used()) / static_cast<double>(t->size());
  }
}

// Claim of a body stored before: a page's cost when it is a duplicate.
void BM_ClaimTableDuplicate(benchmark::State& state) {
  ClaimTable* t = SharedClaimTable();
  std::mt19937_64 rng(20 + state.thread_index());
  uint64_t dup = 0;
  for (auto _ : state) {
    const uint64_t i = rng() % kPreclaimed;
    const Digest128 d{Mix64(i), Mix64(i + (uint64_t{1} << 63))};
    dup += t->Claim(d, ClaimFor(i + 7)).outcome == ClaimOutcome::kDuplicate;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["duplicate_ratio"] = benchmark::Counter(
      static_cast<double>(dup) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
}

// The same against Redis, when CRAWLD_BENCH_REDIS=host:port names one
// (loopback; the figure is mostly its round trip).
std::unique_ptr<DocumentClaims> RedisForBench(benchmark::State& state) {
  const char* addr = getenv("CRAWLD_BENCH_REDIS");
  if (addr == nullptr || std::strchr(addr, ':') == nullptr) {
    state.SkipWithError("set CRAWLD_BENCH_REDIS=host:port");
    return nullptr;
  }
  Options o;
  o.redis_host = std::string(addr, std::strchr(addr, ':'));
  o.redis_port = std::atoi(std::strchr(addr, ':') + 1);
  o.redis_prefix = "crawld:bench:";
  o.max_documents = uint64_t{1} << 32;
  return NewRedisClaims(o);
}

void BM_RedisClaimNewBody(benchmark::State& state) {
  auto claims = RedisForBench(state);
  if (claims == nullptr) return;
  uint64_t i = (uint64_t{3} << 40) + (uint64_t(state.thread_index()) << 32) +
               static_cast<uint64_t>(
                   std::chrono::steady_clock::now().time_since_epoch().count() &
                   0xffffff) *
                   4096;
  uint64_t claimed = 0;
  for (auto _ : state) {
    const Digest128 d{Mix64(i), Mix64(i + (uint64_t{1} << 63))};
    const DocumentClaim c = ClaimFor(i);
    claimed += claims->Claim(d, c).outcome == ClaimOutcome::kClaimed;
    benchmark::DoNotOptimize(claims->Settle(d, c.record_id, true));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["claimed_ratio"] = benchmark::Counter(
      static_cast<double>(claimed) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
}

void BM_RedisClaimDuplicate(benchmark::State& state) {
  auto claims = RedisForBench(state);
  if (claims == nullptr) return;
  const uint64_t base = uint64_t{5} << 40;
  if (state.thread_index() == 0) {
    for (uint64_t i = 0; i < 1000; ++i) {
      (void)claims->Claim({Mix64(base + i), Mix64(base + i + 1)},
                          ClaimFor(base + i));
    }
  }
  std::mt19937_64 rng(30 + state.thread_index());
  uint64_t dup = 0;
  for (auto _ : state) {
    const uint64_t i = base + rng() % 1000;
    dup += claims->Claim({Mix64(i), Mix64(i + 1)}, ClaimFor(i + 7)).outcome ==
           ClaimOutcome::kDuplicate;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["duplicate_ratio"] = benchmark::Counter(
      static_cast<double>(dup) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
}

BENCHMARK(BM_ClaimTableNewBody)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(500'000)
    ->UseRealTime();
BENCHMARK(BM_ClaimTableDuplicate)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_RedisClaimNewBody)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_RedisClaimDuplicate)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace crawld::dedupe

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (crawld::dedupe::g_store != nullptr)
    crawld::dedupe::g_store->store.reset();
  std::error_code ec;
  std::filesystem::remove_all(crawld::dedupe::BenchRoot(), ec);
  return 0;
}
