// Micro-benchmarks of the URL-seen set and document digest
// (dedupe/dedupe.h) at 10 million fingerprints. Results and the command
// line: docs/bench/frontier.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
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

BENCHMARK(BM_SeenSetFill10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_SeenSetContainsHalfHit);
BENCHMARK(BM_SeenSetInsertIfNewHalfHit)->Iterations(4'000'000);
BENCHMARK(BM_BloomFalsePositiveRate)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(2'000'000);
BENCHMARK(BM_DocumentDigest)->Arg(20 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace crawld::dedupe

BENCHMARK_MAIN();
