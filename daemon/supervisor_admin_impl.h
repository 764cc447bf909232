// daemon/supervisor_admin_impl.h (private to daemon/): the state and the
// handlers of the supervisor's admin API (supervisor_admin.h), declared for
// its two files: supervisor_admin.cc holds the worker calls, status,
// metrics, pause and resume, rules, stop, the routes and Start;
// console_api_supervisor.cc the endpoints the web console reads
// (console_api.h): the host table, a host's page, the document feed and a
// record read back from its WARC.
#ifndef CRAWLD_DAEMON_SUPERVISOR_ADMIN_IMPL_H_
#define CRAWLD_DAEMON_SUPERVISOR_ADMIN_IMPL_H_

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "daemon/console_api.h"
#include "daemon/report_api.h"
#include "daemon/supervisor_admin.h"
#include "http/http.h"
#include "metrics/metrics.h"
#include "store/store.h"

namespace crawld::daemon {

// On the supervisor's loop, like SupervisorAdmin.
struct SupervisorAdmin::Impl {
  // One call to one local worker and, once done, its reply.
  struct Call {
    int index = 0;  // local worker index
    std::string method, target, body;
    http::Client::Reply reply;
    std::string url;  // filled when the worker's URL file was read
  };
  using Calls = std::vector<Call>;
  using CallsDone = std::function<void(Calls)>;

  uv_loop_t* loop = nullptr;
  Options options;
  View view;
  std::unique_ptr<http::Server> server;
  // Declared after the server, so destroyed before it: dropping the calls
  // in flight releases their Responders while the server still exists.
  std::unique_ptr<http::Client> client;
  std::string url, url_file;
  // While the operator has the crawl paused: the pid each worker had when
  // it acknowledged the pause. A worker restarted after a crash starts
  // unpaused, so the keeper timer pauses any worker whose pid changed.
  bool paused = false;
  std::vector<int64_t> paused_pids;
  bool keeping_paused = false;  // a KeepPaused round is in flight
  int broadcasts = 0;           // pause/resume calls in flight
  uv_timer_t* keeper = nullptr;
  // The node's document feed, read here rather than through a worker: the
  // node's merge of its workers by feed ID, with its watermark, whether or
  // not worker 0 is up (issue 14).
  std::unique_ptr<store::FeedReader> feed;
  // GET /api/reports: computed from the node's data directory off the
  // loop; cancelled when the admin API goes.
  std::unique_ptr<ReportApi> reports;
  // GET /api/status's "disk": the node's data directory, all workers'.
  std::unique_ptr<DiskUsage> disk;

  ~Impl();

  int Global(int index) const { return options.first_worker + index; }
  std::string WorkerName(int index) const;
  static const Json* WorkerEntry(const Json& sup, int index);
  static int64_t Pid(const Json& sup, int index);
  static bool Up(const Json& sup, int index);
  Json SupervisorJson() const;
  Call MakeCall(int index, const http::Request& req) const;
  // A worker's answer passed on as it is (status, type, body), or 502.
  static http::Response Forward(const Call& c);

  // Starts every call in parallel and runs done with all of them answered
  // (or failed), on the loop; done runs inline when no call could start.
  void Ask(Calls calls, CallsDone done);
  // The same request to every running local worker; the names of those not
  // running are added to *not_running.
  Calls ToAll(const http::Request& req, const Json& sup,
              std::string* not_running) const;
  void KeepPaused();
  // Asks the first local worker that can be reached, in id order from
  // `from`: worker 0 unless it is down.
  void ToFirst(Call proto, int from, std::string errors,
               const http::Responder& r);

  // The handlers (supervisor_admin.cc).
  void Status(const http::Request& req, const http::Responder& r);
  // GET /metrics (text) and GET /api/metrics (JSON): one registry made for
  // this scrape, holding the supervisor's own series and every worker's
  // snapshot under a worker label.
  void Metrics(const http::Request& req, const http::Responder& r,
               bool as_json);
  // The supervisor's own series: worker lifecycle.
  void AddOwnSeries(const Json& sup, const std::vector<bool>& scraped,
                    metrics::Registry* reg) const;
  // pause and resume: every worker; one error makes the whole call fail
  // (the others did act).
  void Broadcast(const http::Request& req, const http::Responder& r,
                 const char* state_ok);
  void RulesReload(const http::Request& req, const http::Responder& r);
  void Stop(const http::Responder& r);

  // The console's endpoints (console_api_supervisor.cc).
  // GET /api/hosts/{host}: to the host's owner on the ring.
  void Host(const http::Request& req, const http::Responder& r);
  // GET /api/hosts: the same query to every running worker, their rows
  // merged in the query's order and cut to its limit. A worker that does
  // not answer is named in "errors"; the others' rows still come.
  void ListHosts(const http::Request& req, const http::Responder& r);
  // GET /api/docs/record: read here, like the feed, from the node's WARCs.
  void Record(const http::Request& req, const http::Responder& r);
  // GET /api/docs?since=ID&limit=N (docs/API.md): the node's feed, read
  // from <data>/index/feed on the loop (a page is at most 1000 lines of a
  // local file, found by binary search: well under a millisecond of I/O
  // from the page cache).
  void Docs(const http::Request& q, http::Responder r);

  // Start's parts: the routes, and run/admin.url for crawlctl.
  void AddRoutes();
  crawld::Status PublishUrl();

  // Worker answers are JSON from our own processes, but read with limits
  // all the same; a big rule set makes /api/metrics the largest.
  static constexpr json::Limits kWorkerJson{64u << 20, 64};
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_SUPERVISOR_ADMIN_IMPL_H_
