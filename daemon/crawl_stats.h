// daemon/crawl_stats.h: what a worker counts. Pages, bytes and robots.txt
// fetches as fields, and events by class ("http_4xx", "trap_calendar",
// "robots_disallowed", ...) in one map: the summary's counts, the admin
// API's counts and the events metric all read this one place.
#ifndef CRAWLD_DAEMON_CRAWL_STATS_H_
#define CRAWLD_DAEMON_CRAWL_STATS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace crawld::daemon {

// Owned by one worker loop; not thread-safe.
struct CrawlStats {
  uint64_t pages = 0;  // responses recorded (robots.txt excluded)
  uint64_t bytes = 0;  // body bytes received
  uint64_t robots_fetches = 0;
  std::map<std::string, uint64_t, std::less<>> counts;

  // Adds n to the count of `what` (no allocation once the name is known).
  void Count(std::string_view what, uint64_t n = 1) {
    auto it = counts.find(what);
    if (it == counts.end()) {
      counts.emplace(std::string(what), n);
    } else {
      it->second += n;
    }
  }
  [[nodiscard]] uint64_t count(std::string_view what) const {
    auto it = counts.find(what);
    return it == counts.end() ? 0 : it->second;
  }
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_CRAWL_STATS_H_
