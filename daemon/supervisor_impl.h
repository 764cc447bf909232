// daemon/supervisor_impl.h (private to daemon/): the supervisor's one
// class, declared for its two files: supervisor.cc runs the workers (spawn,
// restart, ticks, reloads, the end of the crawl) and the admin API;
// supervisor_cluster.cc is its node's side of a cluster (the membership
// link, the ring, lease and go each worker is told, and the "cluster" of
// GET /api/status).
#ifndef CRAWLD_DAEMON_SUPERVISOR_IMPL_H_
#define CRAWLD_DAEMON_SUPERVISOR_IMPL_H_

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "daemon/event_log.h"
#include "daemon/membership.h"
#include "daemon/progress.h"
#include "daemon/supervisor.h"
#include "daemon/supervisor_admin.h"

namespace crawld::daemon {

// The supervisor of one node's worker processes (supervisor.h): their
// lifecycle, its loop, signals and timer, the cluster link and the admin
// API. Everything on the loop Run() owns; not copyable.
class Supervisor {
 public:
  explicit Supervisor(const SupervisorOptions& o) : opt_(o) {}
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  Result<CrawlSummary> Run();

 private:
  // Run's parts, in order.
  void StartSignals();
  Status StartCluster();
  Status StartAdmin();
  CrawlSummary SumWorkerSummaries() const;

  struct Child {
    Supervisor* sup = nullptr;
    int id = 0;
    uv_process_t* proc = nullptr;  // while running
    uv_pipe_t* pipe = nullptr;     // while running
    std::string buf;               // a line not yet ended
    char chunk[4096] = {};         // what the pipe's last read brought
    bool go_sent = false;
    bool stop_sent = false;
    bool finished = false;  // exited after a stop, or on its own with 0
    int crashes = 0;
    int backoff_ms = 0;
    uv_timer_t restart_timer{};
    // The latest report, and whether one came since the last tick.
    bool fresh = false, ready = false, idle = false;
    uint64_t pages = 0, bytes = 0, queued = 0, active = 0, hosts = 0;
    uint64_t sent = 0, received = 0;
    int64_t epoch = 0;      // the ring epoch it uses (cluster)
    uint64_t reload = 0;    // the last "reload" it did
    bool reload_ok = true;  // and whether it loaded both files
    // What this process was told (cluster): -1 / 0 = nothing yet.
    int64_t ring_sent = -1, go_epoch = -1;
    uint64_t lease_sent = 0;
    uint64_t reload_at_start = 0;  // reload_seq_ when it was started
  };

  Status Spawn(Child& c);
  // The worker's lines on its control pipe, each to OnLine.
  static void StartReading(Child& c);
  void OnExit(Child& c, int64_t status, int signal);
  void Restart(Child& c, int delay_ms);
  void OnLine(Child& c, std::string_view line);
  void Send(Child& c, const std::string& line);
  void Tick();
  void Stop(const std::string& reason);
  void Progress(bool final_line);
  void MaybeEnd();
  void CloseHandles();
  // Cluster (supervisor_cluster.cc, with StartCluster): reports this
  // node's state to the membership and makes the workers follow its
  // decision (ring, lease, go, stop).
  void ClusterTick(bool idle, uint64_t sent, uint64_t received, uint64_t pages);
  void SyncWorker(Child& c, const ClusterLink::Decision& d);
  // GET /api/status's "cluster": this node and the ring's live nodes.
  Json ClusterJson() const;
  // SIGHUP: checks the rule and override files, then has every worker load
  // them; CheckReload() reports once every worker answered.
  void Reload();
  void CheckReload();
  int Global(const Child& c) const { return opt_.first_worker + c.id; }
  bool Drainer(const Child& c) const { return Global(c) >= opt_.total_workers; }
  int Children() const { return opt_.workers + opt_.drainers; }

  SupervisorOptions opt_;
  ProgressLine progress_{opt_.progress, opt_.progress_tty};
  uv_loop_t loop_{};
  uv_timer_t tick_{};
  uv_signal_t sigint_{}, sigterm_{};
  std::vector<std::unique_ptr<Child>> children_;
  bool all_ready_once_ = false;
  bool stopping_ = false;
  bool ended_ = false;
  std::string reason_;
  int quiet_ticks_ = 0;
  uint64_t last_sent_ = UINT64_MAX, last_received_ = UINT64_MAX;
  int64_t start_ms_ = 0, last_progress_ms_ = 0;
  uint64_t restarts_ = 0;
  std::unique_ptr<SupervisorAdmin> admin_;  // the API (docs/API.md)
  uv_signal_t sighup_{};
  EventLog log_;  // <data>/logs/supervisor.jsonl
  uint64_t reload_seq_ = 0;
  bool reload_pending_ = false;
  // Cluster state (config cluster.redis non-empty).
  std::unique_ptr<ClusterLink> cluster_;
  int64_t ring_epoch_ = 0;  // the membership epoch the workers are told
  std::vector<int> ring_live_, ring_gone_;
  int64_t acked_epoch_ = 0;  // every ring worker of this node switched to it
  uint64_t lease_ = 0;       // control::MonotonicMs(); 0 = none
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_SUPERVISOR_IMPL_H_
