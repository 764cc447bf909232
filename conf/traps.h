// conf/traps.h: the trap rules of [traps], heuristics against endless URL
// spaces, besides the frontier's credit scheduling. Each verdict names the
// heuristic so the worker can count it ("trap_<name>") and log the URL.
//
// Shape checks look at one URL: a path segment repeated too often
// (/a/b/a/b/a/b/), a date-like URL far from today (calendar pages that link
// to the next month forever), too many query parameters. Budget checks
// count what was admitted: URLs per host, distinct queries per host and
// path (faceted search, sort/filter combinations).
#ifndef CRAWLD_CONF_TRAPS_H_
#define CRAWLD_CONF_TRAPS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "url/url.h"

namespace crawld::conf {

class TrapGuard {
 public:
  struct Options {
    uint64_t host_budget = 0;  // 0 = unlimited
    int max_path_repeats = 0;  // 0 = no check
    bool calendar = false;
    int current_year = 2026;  // the window's centre
    int calendar_years_back = 30;
    int calendar_years_ahead = 2;
    uint32_t max_query_variants = 0;  // 0 = unlimited
    int max_query_params = 0;         // 0 = unlimited
  };

  explicit TrapGuard(const Options& options) : options_(options) {}

  // "" when the URL looks fine, else "path_repeats", "calendar" or
  // "query_params". Pure: no state changes.
  std::string_view CheckShape(const url::Url& u) const;

  // Counts a URL that is about to be queued for `host_key`. "" when it is
  // within the budgets (and counted), else "host_budget" or
  // "query_variants" (and not counted).
  std::string_view Admit(std::string_view host_key, const url::Url& u);

  // The year a date-like URL names, or 0. Exposed for tests.
  static int DateYear(const url::Url& u);

  // --- the counters are crawl state: checkpointed, restored ---
  // URLs admitted for `host_key` so far (count).
  [[nodiscard]] uint64_t Admitted(std::string_view host_key) const;
  // The counters changed since the last ClearDirty(): hosts with their
  // admitted count, and xxh3(host key + '\n' + path) with its variants.
  void ForEachDirty(
      const std::function<void(const std::string& host_key, uint64_t)>& host,
      const std::function<void(uint64_t key, uint32_t variants)>& path) const;
  void ClearDirty();
  // Sets a counter from a checkpoint (not dirty).
  void RestoreHost(std::string_view host_key, uint64_t admitted);
  void RestoreVariants(uint64_t key, uint32_t variants);

 private:
  struct HostCount {
    uint64_t admitted = 0;
    bool dirty = false;
  };
  struct PathCount {
    uint32_t variants = 0;
    bool dirty = false;
  };
  static uint64_t HostHash(std::string_view host_key);

  Options options_;
  // Keyed by XXH3 of the host key (issue 16): one entry per host the crawl
  // ever admitted a URL of, which is every host its links name, so no key
  // string is kept: 62 bytes a host instead of 184 (bench/conf_bench
  // BM_TrapGuardHostCounts). Two hosts sharing a hash would share a
  // budget; at 64 bits that does not happen.
  std::unordered_map<uint64_t, HostCount> per_host_;
  std::unordered_map<uint64_t, PathCount> per_path_;  // xxh3(host+path)
  // Keys whose counter changed since ClearDirty(), each once.
  std::vector<std::string> dirty_hosts_;
  std::vector<uint64_t> dirty_paths_;
  std::string path_key_;  // Admit's scratch: host key + '\n' + path
};

}  // namespace crawld::conf

#endif  // CRAWLD_CONF_TRAPS_H_
