// daemon/feed_json.h: the JSON of one page of the document feed, as
// GET /api/feed answers it (docs/API.md), in one place for the worker's
// endpoint and the supervisor's (which reads the node's feed itself).
#ifndef CRAWLD_DAEMON_FEED_JSON_H_
#define CRAWLD_DAEMON_FEED_JSON_H_

#include <cstddef>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "store/store.h"

namespace crawld::daemon {

// {"entries": [...], "next": cursor, "watermark": "N"}. The watermark is a
// decimal string so that JavaScript keeps it exact; `crawlctl feed` merges
// the feeds of several nodes by it (docs/STORE.md).
[[nodiscard]] Json FeedPageJson(const store::FeedPage& page);

// The entries a page of the feed may hold, from the "limit" query
// parameter (null when absent: 100): 1 .. 1000, else InvalidArgument with
// the message the endpoints answer 400 with.
[[nodiscard]] Result<size_t> FeedLimit(const std::string* limit);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_FEED_JSON_H_
