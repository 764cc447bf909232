// daemon/worker_impl.h (private to daemon/): the worker's one class,
// declared for its two files: worker.cc builds the components and runs the
// crawl; worker_link.cc is the supervisor's side of it (the control socket,
// cluster membership, leases, reloads, the status report).
#ifndef CRAWLD_DAEMON_WORKER_IMPL_H_
#define CRAWLD_DAEMON_WORKER_IMPL_H_

#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "cluster/ip_leases.h"
#include "conf/overrides.h"
#include "conf/rules.h"
#include "conf/traps.h"
#include "daemon/control.h"
#include "daemon/crawl_path.h"
#include "daemon/crawl_stats.h"
#include "daemon/documents.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "daemon/peers.h"
#include "daemon/ports.h"
#include "daemon/progress.h"
#include "daemon/recovery.h"
#include "daemon/worker.h"
#include "daemon/worker_api.h"
#include "dedupe/dedupe.h"
#include "frontier/frontier.h"
#include "frontier/ip_gate.h"
#include "frontier/ip_slots.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

// The seen test: in memory without checkpoints, else the LevelDB store.
class WorkerSeen final : public SeenTest {
 public:
  WorkerSeen(dedupe::SeenSet* memory, dedupe::UrlSeenStore* store,
             CrawlStats* stats, EventLog* log)
      : memory_(memory), store_(store), stats_(stats), log_(log) {}
  bool InsertIfNew(std::string_view host_key, uint64_t fp) override;

 private:
  dedupe::SeenSet* memory_;
  dedupe::UrlSeenStore* store_;
  CrawlStats* stats_;
  EventLog* log_;
};

class Worker::Impl final : public WorkerControl {
 public:
  explicit Impl(const WorkerOptions& options);
  ~Impl() override;

  Status Init();
  Result<CrawlSummary> Run();

  // WorkerControl (the admin API).
  std::string StateName() const override;
  void Pause() override;
  void Resume() override;
  void Stop(const std::string& reason) override { RequestStop(reason); }
  Status ReloadRules() override { return LoadRules(false); }
  const conf::RuleSet& rules() const override { return *rules_; }
  const conf::Overrides& overrides() const override { return *overrides_; }
  int64_t uptime_us() const override {
    return clock_.MonotonicUs() - start_us_;
  }
  void Pump() override;

 private:
  Status OpenState(const std::string& worker_dir);
  Status OpenFrontier(const std::string& worker_dir);
  Status OpenNetwork();
  // The per-IP gate, over the node's shared slots and, in a cluster, the
  // node's leases (docs/CLUSTER.md, "Per-IP politeness across workers and
  // nodes").
  Status OpenIpGate();
  // The WARC writer, the host table, the document claims and Documents.
  Status OpenStore();
  Status OpenPeers(const std::string& worker_dir);
  void BuildPath();
  // The admin API (admin.enabled), with its own metrics registry.
  Status StartApi();
  Status LoadRules(bool initial);
  void EnqueueSeeds();
  void StartTimers();
  void AfterPump();
  bool Accepting() const;
  bool Idle() const;
  void RequestStop(const std::string& reason);
  void MaybeFinish();
  void CloseAll();
  void Progress(bool final_line);
  void CleanUpDrained();
  // The supervisor's socket (docs/CLUSTER.md, "Worker processes").
  Status StartControl();
  void OnControlLine(std::string_view line);
  void Report();
  // Cluster membership (docs/CLUSTER.md, "Membership"): the supervisor
  // sends the ring of each membership epoch ("ring"): the worker stops
  // starting fetches, switches rings once nothing is in flight, hands over
  // the hosts that moved to a new worker, reads the inboxes of the workers
  // that left, reports ready at that epoch, and fetches again at "go" once
  // its inbox holds everything handed to it. A "lease" bounds how long it
  // may fetch without news of its node's membership.
  void Go();
  void OnRing(control::Command&& ring);
  void ApplyPendingRing();
  void CheckLease();
  void ReloadFromSupervisor(uint64_t seq);

  WorkerOptions options_;
  const conf::Config& config_;
  uv_loop_t loop_{};
  bool handles_open_ = false;
  uv_timer_t progress_timer_{};
  uv_timer_t checkpoint_timer_{};
  bool checkpoint_timer_open_ = false;
  bool timers_open_ = false;  // signals and the progress timer
  uv_signal_t sigint_{}, sigterm_{}, sighup_{};

  SystemClock clock_;
  EventLog log_;
  CrawlStats stats_;
  ProgressLine progress_;
  url::Canonicalizer canonicalizer_;
  conf::TrapGuard traps_;
  std::unique_ptr<conf::RuleSet> rules_;
  std::unique_ptr<conf::Overrides> overrides_;
  std::unique_ptr<checkpoint::Store> state_;
  std::unique_ptr<dedupe::UrlSeenStore> seen_store_;
  // [recrawl] enabled: the schedule (<wdir>/recrawl); else null.
  std::unique_ptr<recrawl::Schedule> schedule_;
  std::unique_ptr<dedupe::SeenSet> seen_memory_;
  std::unique_ptr<WorkerSeen> seen_;
  std::unique_ptr<frontier::Frontier> frontier_;
  std::unique_ptr<ResolverPort> resolve_;
  std::unique_ptr<FetcherPort> fetch_;
  // Declared in this order: the gate uses the leases, which use the table.
  std::unique_ptr<frontier::IpSlotTable> ip_slots_;
  std::unique_ptr<cluster::IpLeases> ip_leases_;
  std::unique_ptr<frontier::IpGate> ip_gate_;
  std::unique_ptr<UvWorkPool> pool_;
  std::unique_ptr<UvWaker> waker_;
  std::unique_ptr<store::WarcWriter> warc_;
  std::unique_ptr<HostTable> hosts_;
  std::unique_ptr<dedupe::DocumentClaims> claims_;   // null: dedupe off
  std::unique_ptr<store::EarlierCaptures> earlier_;  // dedupe.earlier
  std::unique_ptr<Documents> documents_;
  std::unique_ptr<Peers> peers_;
  // The last fetches of this worker, for the admin API's host page.
  RecentFetches recent_{RecentFetches::Options{}};
  std::unique_ptr<CrawlPath> path_;
  bool checkpoint_waiting_ = false;  // an interval checkpoint awaits the store
  std::unique_ptr<Recovery> recovery_;
  std::unique_ptr<WorkerApi> api_;
  metrics::Histogram* fetch_seconds_ = nullptr;

  bool resumed_ = false;
  int previous_workers_ = 1;  // the worker count of the checkpoint
  // This worker is not on the ring any more: it hands over everything it
  // holds, then stops ("drained") and deletes its state.
  bool drainer_ = false;
  bool paused_ = false;  // by the API: no new fetches start
  bool stopping_ = false;
  bool finished_ = false;
  std::string stop_reason_;
  int64_t start_us_ = 0;

  // The supervisor's socket.
  uv_pipe_t control_{};
  bool control_open_ = false;
  std::string control_buf_;
  char control_chunk_[4096];
  uv_timer_t report_timer_{};
  bool ready_ = false;  // handover done and acknowledged
  struct PendingRing {
    int64_t epoch = 0;
    std::vector<int> live, gone;  // global worker ids, ascending
  };
  std::optional<PendingRing> pending_ring_;
  bool go_wanted_ = false;       // "go" came; the inbox is being caught up
  uint64_t lease_until_ms_ = 0;  // control::MonotonicMs(); 0 = no lease
  // Not ready before this (control::MonotonicMs()): a host handed over
  // waits min_delay_ms after this worker's last request to it.
  uint64_t handover_ready_ms_ = 0;
  uint64_t reload_seq_ = 0;  // the last "reload" done
  bool reload_ok_ = true;    // and whether both files loaded
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_WORKER_IMPL_H_
