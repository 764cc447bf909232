// Micro-benchmarks of per-IP politeness across worker processes
// (frontier/ip_slots.h; docs/CLUSTER.md, "Per-IP politeness across workers
// and nodes"): what one request's pass through the gate costs with the
// per-process gate alone, with the machine's table of address slots behind
// it, and with a node's permit required (a cluster, when the lease is valid:
// no Redis round trip). Threads stand in for worker processes: each has its
// own handle on one file, so each is a distinct holder.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontier/ip_gate.h"
#include "frontier/ip_slots.h"

namespace crawld::frontier {
namespace {

int64_t NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

std::string TablePath() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/crawld-ipslots-bench-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    return std::string(dir != nullptr ? dir : "/tmp") + "/ip-slots";
  }();
  return path;
}

std::vector<std::string> Addresses(int thread, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back("10." + std::to_string(thread) + "." +
                  std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  return out;
}

// The gate of one process alone (per_ip before issue 14): Enter starts at
// once, Leave sets the gap (0 here).
void BM_GateAlone(benchmark::State& state) {
  IpGate gate(IpGate::Options{});
  const auto ips = Addresses(0, 1024);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& ip = ips[i++ & 1023];
    const int64_t now = NowUs();
    gate.Enter(ip, now, [] {});
    gate.Leave(ip, now, 0);
  }
}
BENCHMARK(BM_GateAlone);

// The same with the machine's table behind the gate: a bucket lock in
// Enter and one in Leave. Threads: worker processes on distinct addresses.
void BM_GateWithTable(benchmark::State& state) {
  auto table =
      std::move(IpSlotTable::OpenOrCreate(TablePath(), IpSlotTable::Options{}))
          .value();
  IpGate::Options go;
  go.shared = table.get();
  IpGate gate(go);
  const auto ips = Addresses(state.thread_index(), 1024);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& ip = ips[i++ & 1023];
    const int64_t now = NowUs();
    gate.Enter(ip, now, [] {});
    gate.Leave(ip, now, 0);
  }
}
BENCHMARK(BM_GateWithTable)->Threads(1)->Threads(2)->Threads(4);

// A node's request when its permit (lease) is valid: Acquire with the
// permit rule and ReleaseSlot, what cluster/ip_leases.h does per request
// without a round trip to Redis.
void BM_TableWithPermit(benchmark::State& state) {
  auto table = std::move(IpSlotTable::Create(TablePath() + ".permit",
                                             IpSlotTable::Options{}))
                   .value();
  IpSlotTable::PermitRule rule;
  rule.min_left_us = 1'000'000;
  const auto ips = Addresses(0, 1024);
  int64_t next = 0;
  const int64_t now0 = NowUs();
  for (const auto& ip : ips) {
    (void)table->Acquire(ip, now0, &rule);  // kAsk
    table->GrantPermit(ip, now0, now0, now0 + 3'600'000'000, false, rule,
                       &next);
  }
  size_t i = 0;
  for (auto _ : state) {
    const std::string& ip = ips[i++ & 1023];
    const int64_t now = NowUs();
    auto a = table->Acquire(ip, now, &rule);
    if (a.verdict != IpSlotTable::Verdict::kAcquired) {
      state.SkipWithError("not acquired");
      break;
    }
    (void)table->ReleaseSlot(ip, now, now, rule);
  }
}
BENCHMARK(BM_TableWithPermit);

}  // namespace
}  // namespace crawld::frontier

BENCHMARK_MAIN();
