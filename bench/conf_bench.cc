// conf_bench: cost of loading and freezing a config. Not a hot path (the
// daemon parses once at start), measured so a regression such as a
// quadratic error report shows up. Inputs are built from the schema itself:
// ToToml(Defaults()) is conf/crawler.toml without its header comment.
//
// Counters: items/s = configs per second, bytes/s = TOML bytes per second.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <string>
#include <vector>

#include "conf/conf.h"
#include "conf/traps.h"
#include "url/url.h"

namespace {

using crawld::conf::Config;

void BM_ParseDefaultsFile(benchmark::State& state) {
  const std::string text = crawld::conf::ToToml(crawld::conf::Defaults());
  for (auto _ : state) {
    auto r = crawld::conf::ParseConfig(text, "crawler.toml");
    if (!r.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseDefaultsFile);

// A short file without comments: the per-key cost rather than the lexer.
void BM_ParseMinimalFile(benchmark::State& state) {
  const std::string text =
      "[crawl]\nuser_agent = \"bot/1 (+https://example.org/bot)\"\n"
      "max_depth = 5\n[fetch]\nmax_body_bytes = 1048576\n"
      "[dns]\nservers = [\"127.0.0.1:53\", \"[::1]:53\"]\n"
      "[network]\nallow_private = true\n";
  for (auto _ : state) {
    auto r = crawld::conf::ParseConfig(text, "min.toml");
    if (!r.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseMinimalFile);

// A file with many errors: building the report must stay cheap.
void BM_ParseFileWithErrors(benchmark::State& state) {
  std::string text = "[crawl]\n";
  for (int i = 0; i < 200; ++i) {
    text += "unknown_key_" + std::to_string(i) + " = 1\n";
  }
  for (auto _ : state) {
    auto r = crawld::conf::ParseConfig(text, "bad.toml");
    if (r.ok()) state.SkipWithError("parse unexpectedly succeeded");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseFileWithErrors);

void BM_ToToml(benchmark::State& state) {
  Config c = crawld::conf::Defaults();
  c.dns.servers = {"127.0.0.1:53", "[::1]:53"};
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = crawld::conf::ToToml(c);
    bytes += text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_ToToml);

}  // namespace

// The trap guard's shape checks and budget count, once per link the crawl
// meets (issue 16: they allocated about five times per link).
void BM_TrapGuardPerLink(benchmark::State& state) {
  crawld::conf::TrapGuard::Options o;
  o.host_budget = 1u << 30;
  o.max_path_repeats = 3;
  o.calendar = true;
  o.max_query_variants = 1u << 30;
  o.max_query_params = 10;
  crawld::conf::TrapGuard guard(o);
  std::vector<crawld::url::Url> urls;
  for (const char* u :
       {"http://host7.farm.test:8080/section/3/page-42.html",
        "http://host7.farm.test:8080/2026/05/archive/index.html",
        "https://www.example.com/blog/2024/05/post-title.html?x=1&y=2",
        "https://www.example.com/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r",
        "http://shop.example.org/search?q=shoes&sort=price&page=3",
        "http://h.example/cal?year=1990&month=02"}) {
    urls.push_back(crawld::url::Parse(u).value());
  }
  for (auto _ : state) {
    for (const crawld::url::Url& u : urls) {
      benchmark::DoNotOptimize(guard.CheckShape(u));
      benchmark::DoNotOptimize(guard.Admit("http://host7.farm.test:8080", u));
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * urls.size()));
}
BENCHMARK(BM_TrapGuardPerLink);

// The host budget's counters: one per host the crawl admitted a URL of
// (every host its links name). Heap bytes in use per host (mallinfo2;
// 0 under the sanitizers), range(0) hosts.
void BM_TrapGuardHostCounts(benchmark::State& state) {
  const int hosts = static_cast<int>(state.range(0));
  crawld::conf::TrapGuard::Options o;
  o.host_budget = 100000;
  std::vector<std::string> keys;
  for (int i = 0; i < hosts; ++i) {
    keys.push_back("https://host" + std::to_string(i) + ".example:443");
  }
  const crawld::url::Url u =
      crawld::url::Parse("https://host.example/a/page.html").value();
  double per_host = 0;
  for (auto _ : state) {
    const struct mallinfo2 before = mallinfo2();
    crawld::conf::TrapGuard guard(o);
    for (const std::string& key : keys) {
      benchmark::DoNotOptimize(guard.Admit(key, u));
    }
    guard.ClearDirty();  // as after a checkpoint
    const struct mallinfo2 after = mallinfo2();
    per_host = (static_cast<double>(after.uordblks + after.hblkhd) -
                static_cast<double>(before.uordblks + before.hblkhd)) /
               hosts;
  }
  state.counters["heap_B_per_host"] = per_host;
}
BENCHMARK(BM_TrapGuardHostCounts)->Arg(100000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
