// daemon/recovery.h: the worker's checkpoints and its recovery after a stop
// or a crash (docs/CHECKPOINT.md; docs/OPERATIONS.md, "After a crash").
//
// A checkpoint makes durable, in this order: the WARC written so far
// (flushed), the frontier's queues, the URL-seen store, then one atomic
// batch of checkpoint::CrawlState (counters, the WARC position, the URLs in
// flight, the recorded URLs still to skip, the unacknowledged outbox, the
// changed host records and trap counters); then the inbox log starts over.
//
// Recovery loads that state, puts the URLs in flight back at the head of
// their queues, resends the outbox, and replays the WARC records written
// after the checkpointed position: their URLs are not fetched again and
// their links (from the page's metadata record, or by parsing the body)
// and redirects are followed again, since the queue entries they made
// after the checkpoint were lost. Then the inbox log is replayed. So a
// crash at any moment loses no URL, and a URL is fetched at most once
// more.
#ifndef CRAWLD_DAEMON_RECOVERY_H_
#define CRAWLD_DAEMON_RECOVERY_H_

#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/crawl_state.h"
#include "conf/traps.h"
#include "daemon/crawl_path.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "daemon/peers.h"
#include "daemon/ports.h"
#include "dedupe/dedupe.h"
#include "frontier/frontier.h"
#include "store/store.h"

namespace crawld::daemon {

// The URL-seen store's host hash of a frontier host key
// (scheme://host:port): every caller must agree on it.
inline uint64_t SeenHostHash(std::string_view host_key) {
  return XXH3_64bits(host_key.data(), host_key.size());
}

// This worker's WARC files in `warc_dir` (the worker id is in the name),
// oldest first, as basenames.
[[nodiscard]] std::vector<std::string> OwnWarcFiles(const std::string& warc_dir,
                                                    const std::string& prefix,
                                                    int worker_id);

// On the worker's loop; every call blocks on disk I/O.
class Recovery {
 public:
  struct Options {
    std::string warc_dir;
    std::string warc_prefix;
    // Where the writer keeps each WARC's CDXJ index ("": none).
    std::string index_dir;
    int worker_id = 0;
    int workers = 1;  // the crawl's worker count, written into the state
  };
  // None owned; `peers` is null with one worker.
  struct Parts {
    checkpoint::Store* state = nullptr;
    dedupe::UrlSeenStore* seen = nullptr;
    frontier::Frontier* frontier = nullptr;
    store::WarcWriter* warc = nullptr;
    CrawlPath* path = nullptr;
    Documents* documents = nullptr;  // claims of replayed records settled
    HostTable* hosts = nullptr;
    conf::TrapGuard* traps = nullptr;
    Peers* peers = nullptr;
    CrawlStats* stats = nullptr;
    EventLog* log = nullptr;
    const Clock* clock = nullptr;
  };

  // Gives the host table its loader: the records of idle hosts leave memory
  // after a checkpoint and are read back from `state` (HostTable).
  Recovery(const Options& options, const Parts& parts);

  // Takes a checkpoint; `why` is logged ("start", "interval", "exit").
  // On an error the previous checkpoint stays valid.
  [[nodiscard]] Status Checkpoint(const char* why);

  // Restores the last checkpoint and replays what came after it. Returns
  // the worker count the checkpoint was taken with. Errors: the state's
  // (Corruption, FailedPrecondition for another layout).
  [[nodiscard]] Result<int> Recover();

  [[nodiscard]] uint64_t checkpoints() const { return checkpoints_; }

 private:
  [[nodiscard]] Status CollectChangedHosts(
      checkpoint::CrawlState* st, std::vector<std::string>* robots_dirty);
  // Settles the claims of the records from meta's settle position up to
  // its WARC position (Documents::OldestUnsettled).
  // Puts every queued URL into the seen store (after a checkpoint killed
  // between its queues and its seen store).
  [[nodiscard]] Status RepairSeen();
  void SettleBefore(const checkpoint::CrawlMeta& meta);
  uint64_t ReplayWarcs(const std::string& from_file, uint64_t from_offset,
                       uint64_t* truncated_files);

  Options options_;
  Parts parts_;
  uint64_t checkpoints_ = 0;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_RECOVERY_H_
