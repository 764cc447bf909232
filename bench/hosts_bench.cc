// bench/hosts_bench.cc: what a host record costs in memory, while it is in
// memory and after it left for the checkpoint store (issue 16:
// HostTable::EvictIdle), and what loading one back at the host's next page
// costs. Heap figures come from mallinfo2 (bytes in use), not RSS, which
// a freed record does not always lower.
//
//   build/bench/bench/hosts_bench --benchmark_filter=BM_HostRecords
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/crawl_state.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "frontier/frontier.h"

namespace crawld::daemon {
namespace {

constexpr int64_t kS = 1'000'000;

double HeapBytes() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd);
}

// About 600 bytes: a typical site's groups and a dozen rules.
std::string RobotsBody(int i) {
  std::string body = "# robots.txt for host " + std::to_string(i) + "\n";
  body += "User-agent: *\n";
  for (const char* path :
       {"/admin/", "/cart/", "/checkout/", "/search", "/login", "/account/",
        "/*?sessionid=", "/*.pdf$", "/tmp/", "/private/"}) {
    body += std::string("Disallow: ") + path + "\n";
  }
  body += "Allow: /search/help\nCrawl-delay: 1\n\n";
  body += "User-agent: BadBot\nDisallow: /\n\n";
  body +=
      "Sitemap: https://host" + std::to_string(i) + ".example/sitemap.xml\n";
  return body;
}

// One iteration loads one evicted record back; range(0) hosts.
void BM_HostRecords(benchmark::State& state) {
  const int hosts = static_cast<int>(state.range(0));
  char tmpl[] = "/tmp/crawld-hosts-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  auto store = checkpoint::Store::Open(dir + "/state", {}).value();
  auto frontier = frontier::Frontier::Open(frontier::Options()).value();
  CrawlStats stats;
  EventLog log;
  HostTable::Options o;
  o.idle_evict_us = 1 * kS;
  std::vector<std::string> keys;
  keys.reserve(hosts);
  for (int i = 0; i < hosts; ++i) {
    keys.push_back("https://host" + std::to_string(i) + ".example:443");
  }
  const double h0 = HeapBytes();
  auto table = std::make_unique<HostTable>(o, frontier.get(), &stats, &log);
  table->SetLoader([&store](std::string_view key) {
    return checkpoint::LoadRobotsCopy(*store, key);
  });
  for (int i = 0; i < hosts; ++i) {
    (void)table->CheckPage(keys[i], "/", 0);
    const std::string body = RobotsBody(i);
    RobotsFetch f;
    f.status = 200;
    f.body = &body;
    (void)table->OnRobotsFetched(keys[i], f, 0, 1'800'000'000 * kS);
  }
  const double h1 = HeapBytes();
  checkpoint::CrawlState st;
  table->TakeDirty([&st](const std::string& key,
                         const std::optional<checkpoint::RobotsCopy>& copy) {
    checkpoint::HostState h;
    h.robots = copy;
    st.hosts.emplace_back(key, std::move(h));
  });
  {
    checkpoint::Store::Batch batch;
    checkpoint::EncodeCrawlState(st, &batch);
    if (!store->Write(batch).ok()) state.SkipWithError("checkpoint failed");
  }
  st = checkpoint::CrawlState();
  const double h2 = HeapBytes();
  const size_t evicted = table->EvictIdle(10 * kS);
  const double h3 = HeapBytes();
  if (evicted != static_cast<size_t>(hosts)) {
    state.SkipWithError("not every record left");
  }

  int next = 0;
  int64_t now = 20 * kS;
  for (auto _ : state) {
    if (next == hosts) {  // every record is back: out they go again
      state.PauseTiming();
      now += 10 * kS;
      (void)table->EvictIdle(now);
      next = 0;
      state.ResumeTiming();
    }
    // The host's next page: its record comes back from the store.
    HostTable::Gate g = table->CheckPage(keys[next], "/admin/x", now);
    benchmark::DoNotOptimize(g);
    ++next;
  }
  // Bytes per host: the record in memory (with the frontier's own state
  // for the host, which stays), freed by eviction, and what stays.
  state.counters["in_memory_B"] = (h1 - h0) / hosts;
  state.counters["freed_B"] = (h2 - h3) / hosts;
  state.counters["stays_B"] = (h1 - h0 - (h2 - h3)) / hosts;
  table.reset();
  store.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
// A restart: range(0) hosts' checkpointed copies restored, with eviction
// on (range(1) = 1: restored as evicted, read back at each host's first
// page) or off (0: every record parsed and held). One iteration restores
// them all.
void BM_RestoreHosts(benchmark::State& state) {
  const int hosts = static_cast<int>(state.range(0));
  frontier::Options fo;
  auto frontier = frontier::Frontier::Open(fo).value();
  CrawlStats stats;
  EventLog log;
  HostTable::Options o;
  o.idle_evict_us = state.range(1) != 0 ? 600 * kS : 0;
  std::vector<std::string> keys;
  std::vector<checkpoint::RobotsCopy> copies;
  for (int i = 0; i < hosts; ++i) {
    keys.push_back("https://host" + std::to_string(i) + ".example:443");
    copies.push_back({1'900'000'000 * kS, true, RobotsBody(i)});
  }
  double heap = 0;
  for (auto _ : state) {
    const double h0 = HeapBytes();
    HostTable table(o, frontier.get(), &stats, &log);
    table.SetLoader([](std::string_view) {
      return Result<std::optional<checkpoint::RobotsCopy>>(
          std::optional<checkpoint::RobotsCopy>());
    });
    for (int i = 0; i < hosts; ++i) {
      (void)table.Restore(keys[i], copies[i], 0, 1'800'000'000 * kS);
    }
    heap = (HeapBytes() - h0) / hosts;
  }
  state.counters["heap_B_per_host"] = heap;
  state.counters["restore_per_host"] =
      benchmark::Counter(static_cast<double>(hosts),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_RestoreHosts)
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Unit(benchmark::kMillisecond);

// (1,000 for the smoke run under the sanitizers, where mallinfo2 is 0.)
BENCHMARK(BM_HostRecords)
    ->Arg(1000)
    ->Arg(100000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace crawld::daemon
BENCHMARK_MAIN();
