// Micro-benchmarks of the frontier scheduler (frontier/frontier.h): push,
// pop and complete over 10,000 hosts with a fake clock. Results and the
// command line: docs/bench/frontier.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawld::frontier {
namespace {

constexpr int kHosts = 10'000;

std::vector<std::string> HostKeys() {
  std::vector<std::string> keys;
  keys.reserve(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    keys.push_back("https://host-" + std::to_string(i) + ".example:443");
  }
  return keys;
}

Item MakeItem(const std::string& host, int i) {
  Item item;
  item.url = host + "/page/" + std::to_string(i);
  item.fingerprint = static_cast<uint64_t>(i);
  item.credit = 1.0 + (i % 7);
  return item;
}

// Push only: URLs/s appended, 10 per host.
void BM_Push(benchmark::State& state) {
  const auto keys = HostKeys();
  std::vector<Item> items;
  for (int i = 0; i < kHosts * 10; ++i)
    items.push_back(MakeItem(keys[i % kHosts], i));
  for (auto _ : state) {
    state.PauseTiming();
    auto f = std::make_unique<Frontier>(Options{});
    std::vector<Item> copy = items;
    state.ResumeTiming();
    for (size_t i = 0; i < copy.size(); ++i) {
      f->Push(keys[i % kHosts], std::move(copy[i]));
    }
    benchmark::DoNotOptimize(f->queued());
    state.PauseTiming();
    f.reset();  // destroy outside the timed region
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kHosts * 10);
}

// Steady state: every iteration is one Pop, one Complete and one Push of the
// same URL back, over 10,000 hosts with 10 URLs each, the clock jumping to
// NextReadyUs() whenever nothing is ready.
void BM_PopCompletePush(benchmark::State& state) {
  const auto keys = HostKeys();
  Options o;
  Frontier f(o);
  for (int i = 0; i < kHosts * 10; ++i)
    f.Push(keys[i % kHosts], MakeItem(keys[i % kHosts], i));
  int64_t now = 0;
  Completion done;
  done.response_time_us = 200'000;
  for (auto _ : state) {
    auto ready = f.Pop(now);
    if (!ready) {
      now = f.NextReadyUs();
      ready = f.Pop(now);
    }
    f.Complete(ready->host_key, now, done);
    f.Push(ready->host_key, std::move(ready->item));
    now += 10;  // 10 us between fetch starts, 100k fetches/s
  }
  state.SetItemsProcessed(state.iterations());
}

// Drain: a full frontier of 100,000 URLs emptied by Pop + Complete.
void BM_Drain(benchmark::State& state) {
  const auto keys = HostKeys();
  for (auto _ : state) {
    state.PauseTiming();
    auto f = std::make_unique<Frontier>(Options{});
    for (int i = 0; i < kHosts * 10; ++i)
      f->Push(keys[i % kHosts], MakeItem(keys[i % kHosts], i));
    state.ResumeTiming();
    int64_t now = 0;
    while (!f->Idle()) {
      auto ready = f->Pop(now);
      if (!ready) {
        now = f->NextReadyUs();
        continue;
      }
      f->Complete(ready->host_key, now, Completion{});
    }
    state.PauseTiming();
    f.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kHosts * 10);
}

BENCHMARK(BM_Push)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PopCompletePush);
BENCHMARK(BM_Drain)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace crawld::frontier

BENCHMARK_MAIN();
