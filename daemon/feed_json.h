// daemon/feed_json.h: the JSON of one page of the document feed, as
// GET /api/feed answers it (docs/API.md), in one place for the worker's
// endpoint and the supervisor's (which reads the node's feed itself).
#ifndef CRAWLD_DAEMON_FEED_JSON_H_
#define CRAWLD_DAEMON_FEED_JSON_H_

#include "base/json.h"
#include "store/store.h"

namespace crawld::daemon {

// {"entries": [...], "next": cursor, "watermark": "N"}. The watermark is a
// decimal string so that JavaScript keeps it exact; `crawlctl feed` merges
// the feeds of several nodes by it (docs/STORE.md).
[[nodiscard]] Json FeedPageJson(const store::FeedPage& page);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_FEED_JSON_H_
