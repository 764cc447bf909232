// Fuzz target for the supervisor's merge of its workers' /metrics texts
// (daemon/supervisor_admin.h MergeMetrics): a worker's answer is input the
// supervisor did not write. Invariants: never crashes; the merged text is
// itself valid exposition, so merging it again as one source drops nothing
// and changes nothing (idempotent).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/supervisor_admin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Two workers: the input split at its first NUL (or all to worker 0).
  const size_t cut = in.find('\0');
  std::vector<crawld::daemon::MetricsSource> sources;
  sources.push_back({"0", std::string(in.substr(0, cut))});
  if (cut != std::string_view::npos) {
    sources.push_back({"1", std::string(in.substr(cut + 1))});
  }
  size_t dropped = 0;
  const std::string merged = crawld::daemon::MergeMetrics(sources, &dropped);
  size_t dropped_again = 0;
  const std::string again =
      crawld::daemon::MergeMetrics({{"", merged}}, &dropped_again);
  if (dropped_again != 0 || again != merged) abort();
  return 0;
}
