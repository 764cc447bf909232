#include "daemon/feed_json.h"

#include <charconv>
#include <string>
#include <system_error>
#include <utility>

#include "base/time.h"

namespace crawld::daemon {

Result<size_t> FeedLimit(const std::string* limit) {
  if (limit == nullptr) return size_t{100};
  // Digits only: strtoul also took " 5" and "+5".
  size_t v = 0;
  const char* end = limit->data() + limit->size();
  const auto [stop, ec] = std::from_chars(limit->data(), end, v);
  if (ec != std::errc() || stop != end || v == 0 || v > 1000) {
    return Status::InvalidArgument("limit must be 1 .. 1000");
  }
  return v;
}

Json FeedPageJson(const store::FeedPage& page) {
  Json entries = Json::array();
  for (const store::FeedEntry& e : page.entries) {
    Json flags = {{"noindex", e.flags.noindex}, {"revisit", e.revisit}};
    if (!e.flags.near_duplicate_of.empty()) {
      flags["near_duplicate_of"] = e.flags.near_duplicate_of;
    }
    entries.push_back({{"cursor", e.cursor},
                       {"id", std::to_string(e.id)},
                       {"url", e.url},
                       {"warc", e.warc_file},
                       {"offset", e.offset},
                       {"length", e.length},
                       {"digest", e.digest},
                       {"status", e.status},
                       {"mime", e.mime},
                       {"time", Iso8601Micros(e.fetch_time_us)},
                       {"flags", std::move(flags)}});
  }
  return {{"entries", std::move(entries)},
          {"next", page.next_cursor},
          {"watermark", std::to_string(page.watermark)}};
}

}  // namespace crawld::daemon
