// The recrawl schedule (recrawl/recrawl.h): filling it with captures and
// taking the due ones out, and the resident memory while it holds 1 M URLs
// (issue 17: "memory stays flat while the schedule holds 1 M URLs"). The
// schedule is on disk; what a worker keeps in memory for it is LevelDB's
// block cache and memtable, whatever the number of URLs.
//
// BM_ScheduleFill1M and BM_ScheduleDue1M are left out of CI's smoke run
// (names with 1M); run them from a Release build:
//   build/release/bench/recrawl_bench --benchmark_filter=1M
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "recrawl/recrawl.h"

namespace crawld::recrawl {
namespace {

// Resident set of the process now (MB), from /proc/self/statm.
double RssMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "recrawl_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

std::string TempDir() {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "crawld-recrawl-bench-XXXXXX")
          .string();
  return mkdtemp(tmpl.data());
}

Capture Sample(uint64_t i) {
  Capture c;
  c.url = "http://host" + std::to_string(i % 5000) + ".example/section/page-" +
          std::to_string(i) + ".html";
  c.host_key = "http://host" + std::to_string(i % 5000) + ".example:80";
  c.seed_host = "host0.example";
  c.etag = "\"" + std::to_string(i) + "-5f3a\"";
  c.last_modified = "Wed, 21 Oct 2026 07:28:00 GMT";
  c.payload_digest = "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  c.record_id = "<urn:uuid:12345678-1234-4234-9234-1234567890ab>";
  c.record_date = "2026-11-27T07:00:00.123456Z";
  c.record_uri = c.url;
  c.fetched_us = 1'800'000'000'000'000;
  c.interval_us = 86'400'000'000;
  // Spread over a day, not in insertion order.
  c.due_us =
      c.fetched_us + static_cast<int64_t>((i * 7919) % 86'400) * 1'000'000;
  return c;
}

// Puts `n` captures into a fresh schedule; the RSS growth over the fill,
// over its last 90% (flat: LevelDB's memtable and block cache are bounded,
// the captures go to disk) and the bytes on disk are counters.
void Fill(benchmark::State& state, uint64_t n) {
  for (auto _ : state) {
    state.PauseTiming();
    const std::string dir = TempDir();
    const double rss_before = RssMb();
    state.ResumeTiming();
    {
      auto s = Schedule::Open(dir, Options{});
      Check(s.status());
      double rss_tenth = 0, rss_half = 0;
      for (uint64_t i = 0; i < n; ++i) {
        if (i == n / 10) rss_tenth = RssMb();
        if (i == n / 2) rss_half = RssMb();
        Check((*s)->Put(i + 1, Sample(i)));
      }
      state.PauseTiming();
      const double rss_end = RssMb();
      state.counters["rss_growth_mb"] = rss_end - rss_before;
      state.counters["rss_growth_last90pct_mb"] = rss_end - rss_tenth;
      state.counters["rss_growth_last50pct_mb"] = rss_end - rss_half;
    }
    uint64_t bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      if (f.is_regular_file()) bytes += f.file_size();
    }
    state.counters["disk_mb"] = static_cast<double>(bytes) / 1e6;
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_ScheduleFill2k(benchmark::State& state) { Fill(state, 2'000); }
void BM_ScheduleFill1M(benchmark::State& state) { Fill(state, 1'000'000); }

// Takes out, 1000 at a time as ReleaseDue does, an hour's worth of due
// URLs of a schedule holding `n`, leasing each one interval ahead.
void Due(benchmark::State& state, uint64_t n) {
  const std::string dir = TempDir();
  auto s = Schedule::Open(dir, Options{});
  Check(s.status());
  for (uint64_t i = 0; i < n; ++i) Check((*s)->Put(i + 1, Sample(i)));
  const double rss_full = RssMb();
  const int64_t now = Sample(0).fetched_us + 3'600'000'000;
  uint64_t taken = 0;
  for (auto _ : state) {
    std::vector<std::pair<uint64_t, Capture>> due;
    Check((*s)->ForEachDue(now, [&](uint64_t fp, Capture c) {
      due.emplace_back(fp, std::move(c));
      return due.size() < 1000;
    }));
    for (auto& [fp, c] : due) {
      c.due_us += c.interval_us;
      Check((*s)->Put(fp, c));
    }
    taken += due.size();
    if (due.empty()) state.SkipWithError("nothing due: too many iterations");
  }
  state.SetItemsProcessed(static_cast<int64_t>(taken));
  state.counters["rss_mb"] = rss_full;
  s->reset();
  std::filesystem::remove_all(dir);
}

void BM_ScheduleDue2k(benchmark::State& state) { Due(state, 2'000); }
void BM_ScheduleDue1M(benchmark::State& state) { Due(state, 1'000'000); }

BENCHMARK(BM_ScheduleFill2k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScheduleFill1M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ScheduleDue2k)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ScheduleDue1M)->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace crawld::recrawl

BENCHMARK_MAIN();
