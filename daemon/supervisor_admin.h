// daemon/supervisor_admin.h: the admin HTTP API of crawld when it runs
// several worker processes (docs/API.md, "With several workers").
//
// Each worker serves its own API on 127.0.0.1 at a free port, written to
// <data>/run/admin-<id>.url. The supervisor serves the configured [admin]
// address, port and token, writes <data>/run/admin.url, and answers every
// endpoint by asking the workers over loopback HTTP:
//  - status and /metrics: from every worker, merged (sums; per-worker
//    entries; a worker="<id>" label on each worker sample);
//  - pause, resume, rules/reload: to every worker;
//  - seeds, rules/test: to worker 0 (the next running one if worker 0
//    cannot be reached: any worker routes seeds through the exchange);
//  - docs: the supervisor's own feed reader over <data>/index/feed, all
//    local workers merged by feed ID, with the node's watermark;
//  - hosts/{host}: to the host's owner on the ring;
//  - reports/{name}: computed here from the node's data directory, off
//    the loop (daemon/report_api.h);
//  - stop: the supervisor's own stop callback (it stops every worker at a
//    checkpoint).
// The worker calls are asynchronous (http::Client: libcurl multi on the
// supervisor's loop), in parallel, each with a short timeout: a handler
// never blocks the loop, so a slow or hung worker delays only the answers
// that need it. Worker metrics come as JSON snapshots (a worker's
// GET /api/metrics, metrics::Registry::Snapshot) merged into one registry
// with a worker label; no Prometheus text is parsed.
#ifndef CRAWLD_DAEMON_SUPERVISOR_ADMIN_H_
#define CRAWLD_DAEMON_SUPERVISOR_ADMIN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "cluster/cluster.h"
#include "conf/conf.h"

struct uv_loop_s;

namespace crawld::daemon {

// One worker's answer to GET /api/status for MergeStatus().
struct WorkerStatus {
  Json status;        // the worker's status object; null when unreachable
  std::string error;  // why there is no status
};

// The supervisor's status: the same top-level fields as a worker's (sums of
// pages, pages_per_s, bytes, queued, in_flight, ip_waiting, robots_fetches,
// hosts.*, counts.*, errors.*), "state", "uptime_s", and "workers": one
// entry per entry of supervisor["workers"] (id, pid, up, restarts), with
// that worker's pages and queued and its whole status object under
// "status", or "error"; supervisor["cluster"] as it is, when present.
// `supervisor` is SupervisorAdmin::View::supervisor_status()'s value;
// statuses[i] belongs to supervisor["workers"][i].
// state: "stopping" when the supervisor says so or a worker stops, else
// "paused" when every worker that answered is paused, else "running".
[[nodiscard]] Json MergeStatus(const Json& supervisor,
                               const std::vector<WorkerStatus>& statuses);

class SupervisorAdmin {
 public:
  struct Options {
    conf::AdminConfig admin;  // address, port, token (enabled is the caller's)
    std::string data_dir;     // run/admin.url and run/admin-<id>.url
    int workers = 1;          // local worker processes
    int first_worker = 0;     // global id of local worker 0
    int total_workers = 1;    // workers of the whole crawl (the ring's size)
    cluster::Options ring;    // the workers' ring (virtual nodes)
    // Connect plus transfer time allowed for each worker call.
    uint64_t worker_timeout_ms = 2000;
  };

  struct View {
    // {"state": "running"|"stopping", "uptime_s": S,
    //  "workers": [{"id": global id, "pid": P, "up": bool,
    //               "restarts": N}, ...]} with one entry per local worker in
    // id order, and on a cluster node "cluster" (docs/API.md). A worker
    // that is not "up" is not asked.
    std::function<Json()> supervisor_status;
    // Stops the crawl gracefully; the argument is the reason ("api stop").
    // Called on the loop, after the response has been queued.
    std::function<void(const std::string&)> stop;
  };

  // Listens on options.admin's address and port, writes
  // <data_dir>/run/admin.url and removes the local workers' stale
  // run/admin-<id>.url files: call it before starting the workers. Fails
  // like http::Server::Create, or with IOError when the URL file cannot be
  // written.
  // REQUIRES: curl_global_init() was called; the loop outlives the result.
  [[nodiscard]] static Result<std::unique_ptr<SupervisorAdmin>> Start(
      uv_loop_s* loop, const Options& options, View view);

  // Removes run/admin.url and closes the server (in-flight requests are
  // dropped). The loop must run once more to release the handles.
  ~SupervisorAdmin();
  SupervisorAdmin(const SupervisorAdmin&) = delete;
  SupervisorAdmin& operator=(const SupervisorAdmin&) = delete;

  // The bound port (the chosen one when the configured port was 0).
  [[nodiscard]] uint16_t port() const;
  // The base URL written to run/admin.url, e.g. "http://127.0.0.1:8181".
  [[nodiscard]] const std::string& url() const;

  struct Impl;  // internal

 private:
  explicit SupervisorAdmin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_SUPERVISOR_ADMIN_H_
