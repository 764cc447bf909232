// daemon/membership.h: a node's supervisor in the crawl's membership
// (docs/CLUSTER.md, "Membership").
//
// ClusterLink runs the node's heartbeat (cluster::Membership, on the
// supervisor's loop, never blocking) and, from the views Redis gives back,
// decides each supervisor tick what the node's workers do:
//   - which ring they use: once the crawl has its quorum (cluster.nodes live
//     nodes, or another live node already fetching), the workers of the live
//     nodes, at the view's epoch;
//   - whether they may fetch: only when every live node reported that its
//     workers switched to that epoch and handed over what moved (so the old
//     owner of a host has stopped before the new one starts), and while the
//     node's lease holds;
//   - how long they may fetch without news (the lease, handed to them);
//   - when the crawl ends: every live node idle with the summed exchange
//     counters still for ten views (about two seconds), or max_pages summed
//     over the live nodes; then the done key tells every node.
#ifndef CRAWLD_DAEMON_MEMBERSHIP_H_
#define CRAWLD_DAEMON_MEMBERSHIP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "conf/conf.h"
#include "daemon/event_log.h"

struct uv_loop_s;

namespace crawld::daemon {

// Lives on the supervisor's loop. Not copyable.
class ClusterLink {
 public:
  struct Options {
    conf::ClusterConfig cluster;  // redis, name, nodes, node_id, TTL
    uint64_t max_pages = 0;       // crawl.max_pages (0 = none)
    int workers_per_node = 1;     // global worker id = node x this + i
    // False for a node leaving the crawl (its workers only drain): it reads
    // the view (to stop with the others) but never joins it. A member joins
    // once Local::ready.
    bool member = true;
    EventLog* log = nullptr;  // membership events; not owned, may be null
  };

  // What the node's workers do, from their reports.
  struct Local {
    // Every worker of the node runs and has handed over what it no longer
    // owns (its start-up handover): the node may join the view.
    bool ready = false;
    // The newest epoch every ring worker of the node switched to, with its
    // handover acknowledged (0: none yet).
    int64_t acked_epoch = 0;
    bool going = false;  // every ring worker fetches at acked_epoch
    bool idle = false;   // every worker idle in fresh reports
    uint64_t sent = 0, received = 0, pages = 0;  // summed over the workers
  };

  struct Decision {
    bool ring = false;  // the quorum is met: the workers use this ring
    int64_t epoch = 0;
    std::vector<int> live, gone;  // global worker ids, ascending
    bool may_go = false;          // every live node switched to `epoch`
    // The lease on control::MonotonicMs()'s clock; 0 while the node holds
    // none (Redis out of reach longer than the lease, or not joined yet).
    uint64_t lease_until_ms = 0;
    std::string stop;  // the crawl-wide stop reason, or ""
  };

  // Starts the heartbeat. Fails only on bad options.
  // REQUIRES: the loop outlives the result.
  [[nodiscard]] static Result<std::unique_ptr<ClusterLink>> Start(
      uv_loop_s* loop, const Options& options);
  ~ClusterLink();
  ClusterLink(const ClusterLink&) = delete;
  ClusterLink& operator=(const ClusterLink&) = delete;

  // Publishes `local` with the next heartbeat and returns what the workers
  // do now (from the latest view).
  Decision Tick(const Local& local);

  // Leaves the view (deletes the node's heartbeat) at the end of the
  // crawl; `done` runs once Redis answered or after a second, from the
  // loop, and may destroy this object.
  void Leave(std::function<void()> done);

 private:
  explicit ClusterLink(const Options& options);
  void OnView(const cluster::MembershipView& view);
  // "done", "max_pages" or "" from a fresh view.
  std::string EndVerdict(const cluster::MembershipView& view);

  Options opt_;
  std::unique_ptr<cluster::Membership> membership_;
  cluster::MembershipView view_;
  bool have_view_ = false;
  bool fresh_ = false;   // a view came since the last Tick
  bool quorum_ = false;  // met once: from then on the view is the ring
  bool joined_ = false;  // Join() called
  int quiet_views_ = 0;
  uint64_t last_sent_ = UINT64_MAX, last_received_ = UINT64_MAX;
  int64_t logged_epoch_ = -1;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_MEMBERSHIP_H_
