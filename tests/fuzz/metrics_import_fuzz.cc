// Fuzz target for metrics::Registry::Import (metrics/metrics.h): what the
// supervisor does with a worker's GET /api/metrics answer, an untrusted
// JSON text from another process. Replaces metrics_merge_fuzz, whose
// Prometheus text parser is gone.
//
// Invariants checked (abort on violation):
//  - Import never fails as a whole and keeps within max_series;
//  - every sample line of the rendered text carries the extra worker label
//    exactly once, and the text is HELP, TYPE and sample lines only;
//  - the registry's own Snapshot() imports into a fresh registry with no
//    series skipped and the same number of series.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/json.h"
#include "metrics/metrics.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

size_t Count(std::string_view s, std::string_view what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string_view::npos;
       p = s.find(what, p + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  crawld::json::Limits limits;
  limits.max_depth = 8;
  crawld::Result<crawld::Json> snap = crawld::json::Parse(input, limits);
  if (!snap.ok()) return 0;

  crawld::metrics::Registry::Options options;
  options.max_series = 200;
  crawld::metrics::Registry reg(options);
  reg.Import(*snap, {{"worker", "7"}});
  Check(reg.series_count() <= options.max_series);

  const std::string text = reg.Render();
  Check(text.empty() || text.back() == '\n');
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) continue;
    Check(!line.empty() && line[0] != '#');
    // The label value is written escaped, so a hostile label value cannot
    // forge a second worker label.
    Check(Count(line, "worker=\"7\"") == 1);
  }

  crawld::metrics::Registry again(options);
  Check(again.Import(reg.Snapshot()) == 0);
  Check(again.series_count() == reg.series_count());
  return 0;
}
