// checkpoint/crawl_state.h: the typed crawl state of one worker and its
// encoding in the checkpoint store. The key layout and every value's byte
// format are specified in docs/CHECKPOINT.md; this header and crawl_state.cc
// are the one encoder and the one decoder of that format.
//
// A worker's durable state has three parts, made durable in this order by
// one checkpoint (ARCHITECTURE.md, "State on disk"):
//   1. the frontier's queues (frontier/, its own manifest and segments);
//   2. the URL-seen store (dedupe/, its own LevelDB);
//   3. everything else, here, as ONE atomic batch: counters, the WARC
//      position, the URLs in flight, the recorded URLs still to skip, the
//      URLs sent to other workers and not yet acknowledged, and the host
//      records that changed since the last checkpoint (robots.txt copy,
//      trap budgets).
// Recovery reads the batch back with LoadCrawlState(), then replays the
// WARC records written after the checkpointed position.
#ifndef CRAWLD_CHECKPOINT_CRAWL_STATE_H_
#define CRAWLD_CHECKPOINT_CRAWL_STATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "checkpoint/checkpoint.h"

namespace crawld::checkpoint {

// The layout version written by this build (docs/CHECKPOINT.md). A store
// written by another layout version is refused on load, never misread.
inline constexpr uint32_t kCrawlStateVersion = 4;
// Layout 3: no sitemaps in the outbox (its routed URLs are pages); read.
inline constexpr uint32_t kCrawlStateVersionNoSitemaps = 3;
// Layout 2: also no settle position in `meta`; read.
inline constexpr uint32_t kCrawlStateVersionNoSettle = 2;

// A URL with what travels with it through the frontier.
struct UrlEntry {
  std::string host_key;   // "scheme://host:port", the politeness key
  std::string url;        // canonical absolute URL
  std::string seed_host;  // host of the seed it descends from
  uint16_t depth = 0;     // links from the seed (count)
  uint8_t redirects = 0;  // redirect hops that led here (count)
  uint8_t retries = 0;    // transient failures so far (count)
  double credit = 0;      // AOPIC credit (credit units)
};

// What a URL message to another worker carries (cluster/'s UrlMessage).
struct RoutedUrl {
  int to_worker = 0;
  bool seen_mark = false;  // a URL its previous owner fetched (rebalance)
  std::string url;
  std::string seed_host;
  uint16_t depth = 0;
  double credit = 0;
  uint8_t sitemap_kind = 0;  // cluster::UrlMessage::sitemap_kind
  std::string sitemap_of;    // cluster::UrlMessage::sitemap_of
  uint8_t changefreq = 0;    // cluster::UrlMessage::changefreq
  uint32_t lastmod_s = 0;    // cluster::UrlMessage::lastmod_s
};

// The scalar part of a checkpoint.
struct CrawlMeta {
  uint64_t pages = 0;           // responses recorded (robots.txt excluded)
  uint64_t bytes = 0;           // body bytes received
  uint64_t robots_fetches = 0;  // robots.txt fetches
  // The WARC file being written and its size when the checkpoint was
  // taken: records after this position are replayed on recovery.
  std::string warc_file;
  uint64_t warc_size = 0;
  int workers = 1;  // the crawl's worker count (a change means rebalance)
  // Where the oldest record before that position whose dedupe claim was
  // not settled yet begins ("" when none): recovery settles the claims of
  // the records from there to the position above, and does nothing else
  // with them. A checkpoint of layout 2 has none.
  std::string settle_file;
  uint64_t settle_offset = 0;
};

// A host's robots.txt as last fetched, so that a restart does not fetch
// every robots.txt again.
struct RobotsCopy {
  int64_t expires_unix_us = 0;  // wall clock: valid across restarts
  // true: a 2xx body (parsed again on load); false: "no rules" (4xx,
  // too many redirects).
  bool has_body = false;
  std::string body;
};

// The per-host part of the state that must survive a restart.
struct HostState {
  std::optional<RobotsCopy> robots;
  // URLs admitted for the host over the crawl ([traps] host_budget).
  uint64_t admitted_urls = 0;
};

// One checkpoint's contents. Host and query-variant entries are the ones
// that changed since the previous checkpoint; unchanged ones stay as they
// are in the store.
struct CrawlState {
  CrawlMeta meta;
  // Written empty by crawld now (the frontier's manifest holds the pages
  // in flight); read for checkpoints of earlier versions.
  std::vector<UrlEntry> in_flight;
  std::vector<uint64_t> done;  // URL fingerprints recorded, still queued
  std::vector<RoutedUrl> outbox;
  std::map<std::string, uint64_t, std::less<>> counts;
  std::vector<std::pair<std::string, HostState>> hosts;
  // xxh3(host key + '\n' + path) -> distinct queries admitted
  // ([traps] max_query_variants).
  std::vector<std::pair<uint64_t, uint32_t>> query_variants;
};

// Adds every key of `state` to `batch` (docs/CHECKPOINT.md): the caller
// writes the batch, after the frontier and the seen store are durable.
void EncodeCrawlState(const CrawlState& state, Store::Batch* batch);

// Reads the state back. Host records and query-variant counters are handed
// to the callbacks one by one (there may be millions), the rest is
// returned. A store with no checkpoint yet gives an empty CrawlState.
// Errors: Corruption for a value that does not decode, FailedPrecondition
// for another layout version, and the store's own I/O errors.
struct LoadCallbacks {
  std::function<void(std::string_view host_key, HostState&& host)> host;
  std::function<void(uint64_t key, uint32_t variants)> query_variants;
};
[[nodiscard]] Result<CrawlState> LoadCrawlState(const Store& store,
                                                const LoadCallbacks& on);

// One host's robots copy as the last checkpoint wrote it; nullopt when it
// has none. For a record that left memory (daemon/hosts.h, its Loader) and
// is needed again. Errors: Corruption for a value that does not decode,
// and the store's own I/O errors.
[[nodiscard]] Result<std::optional<RobotsCopy>> LoadRobotsCopy(
    const Store& store, std::string_view host_key);

// Only the scalar part (the worker count, before anything else is set up).
// A store with no checkpoint yet gives an empty CrawlMeta. Errors as for
// LoadCrawlState.
[[nodiscard]] Result<CrawlMeta> LoadCrawlMeta(const Store& store);

// The inbox log (docs/CHECKPOINT.md, "Inbox log"): the URLs other workers
// sent since the last checkpoint, appended as one frame per received batch
// before the batch is acknowledged. A frame is a fixed32 payload length, a
// fixed32 XXH32 of the payload, and the payload (a RoutedUrl list).
[[nodiscard]] std::string EncodeInboxFrame(const std::vector<RoutedUrl>& batch);
// Hands every URL of every intact frame of `log` to `out`, in order, and
// returns the number of frames. Reading stops at the first torn or damaged
// frame: an append cut by a kill was never acknowledged, so its sender
// still has it.
size_t DecodeInboxLog(std::string_view log,
                      const std::function<void(RoutedUrl&&)>& out);

}  // namespace crawld::checkpoint

#endif  // CRAWLD_CHECKPOINT_CRAWL_STATE_H_
