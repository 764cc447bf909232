// report/ benchmarks: the cost of a crawl report per capture of the CDXJ
// index (store::ParseCdxjLine per line, then the per-host, per-MIME and
// per-status maps), the figure that says how long GET /api/reports/NAME
// keeps a pool thread busy on a big crawl.
//
// Input: a deterministic index of 20000 lines over 2000 hosts, written
// once into a temporary data directory with store::FormatCdxjLine.
// Run: build with -DCRAWLD_BENCHMARKS=ON in a Release tree, then
// bench/report_bench (items/s = index lines per second).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "report/report.h"
#include "store/store.h"

namespace {

namespace report = crawld::report;
namespace store = crawld::store;

constexpr int kLines = 20000;
constexpr int kHosts = 2000;

// A data directory holding one index file of kLines captures; removed at
// exit.
class Index {
 public:
  Index() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "report_bench-XXXXXX")
            .string();
    dir_ = ::mkdtemp(tmpl.data());
    std::filesystem::create_directories(dir_ + "/index");
    FILE* f = std::fopen((dir_ + "/index/b.warc.gz.cdxj").c_str(), "w");
    for (int i = 0; i < kLines; ++i) {
      store::CdxjEntry e;
      e.url = "http://h" + std::to_string((i * 7919) % kHosts) +
              ".example.test/p/" + std::to_string(i) + ".html";
      e.surt = store::Surt(e.url);
      e.timestamp = "20261122100000";
      e.mime = i % 10 == 0 ? "image/png" : "text/html";
      e.status = i % 50 == 0 ? 404 : 200;
      e.digest = "FYYVT6MIVFGE647PQKEMRQHAKS7D2TW4";
      e.length = 4000 + static_cast<uint64_t>(i % 1000);
      e.offset = static_cast<uint64_t>(i) * 5000;
      e.filename = "b.warc.gz";
      const std::string line = store::FormatCdxjLine(e);
      std::fwrite(line.data(), 1, line.size(), f);
    }
    std::fclose(f);
  }
  ~Index() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

const Index& TheIndex() {
  static const Index index;  // one per run, removed at exit
  return index;
}

void BM_Report(benchmark::State& state, const char* name) {
  report::Options o;
  o.data_dir = TheIndex().dir();
  for (auto _ : state) {
    auto t = report::Compute(name, o);
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(t->rows.size());
  }
  state.SetItemsProcessed(state.iterations() * kLines);
}

BENCHMARK_CAPTURE(BM_Report, hosts, "hosts")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Report, status, "status")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
