// daemon/worker_api.h: a worker's admin API routes (docs/API.md): status,
// metrics, pause, resume, stop, seeds, rules reload and test, host
// records, the document feed, crawl reports. Served on the worker's loop by the
// admin HTTP server; with several workers the supervisor serves the configured
// address and asks each worker's API (daemon/supervisor_admin.h).
#ifndef CRAWLD_DAEMON_WORKER_API_H_
#define CRAWLD_DAEMON_WORKER_API_H_

#include <memory>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "conf/conf.h"
#include "conf/overrides.h"
#include "conf/rules.h"
#include "conf/traps.h"
#include "daemon/console_api.h"
#include "daemon/crawl_path.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "daemon/ports.h"
#include "daemon/report_api.h"
#include "frontier/frontier.h"
#include "http/http.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

// What the worker lets its API do and see of its run state.
class WorkerControl {
 public:
  virtual ~WorkerControl() = default;
  // "running", "paused", "stopping", "done".
  [[nodiscard]] virtual std::string StateName() const = 0;
  virtual void Pause() = 0;
  virtual void Resume() = 0;
  virtual void Stop(const std::string& reason) = 0;
  // Reloads the rule and override files, all or nothing.
  [[nodiscard]] virtual Status ReloadRules() = 0;
  [[nodiscard]] virtual const conf::RuleSet& rules() const = 0;
  [[nodiscard]] virtual const conf::Overrides& overrides() const = 0;
  // Microseconds since the crawl started (monotonic).
  [[nodiscard]] virtual int64_t uptime_us() const = 0;
  // Wakes the crawl path after a change (new seeds).
  virtual void Pump() = 0;
};

class WorkerApi {
 public:
  // None owned; all must outlive the API.
  struct Parts {
    const conf::Config* config = nullptr;
    int worker_id = 0;
    WorkerControl* control = nullptr;
    CrawlStats* stats = nullptr;
    frontier::Frontier* frontier = nullptr;
    CrawlPath* path = nullptr;
    HostTable* hosts = nullptr;
    const url::Canonicalizer* canonicalizer = nullptr;
    conf::TrapGuard* traps = nullptr;
    FetchPort* fetch = nullptr;
    EventLog* log = nullptr;
    const Clock* clock = nullptr;
    const RecentFetches* recent = nullptr;  // may be null
  };

  // Listens (the config's [admin] address, or 127.0.0.1 on any free port
  // under a supervisor) and routes every endpoint. `url_file` receives the
  // API's base URL (written atomically); it is removed by Close().
  [[nodiscard]] static Result<std::unique_ptr<WorkerApi>> Start(
      uv_loop_t* loop, const Parts& parts, bool under_supervisor,
      const std::string& url_file);
  ~WorkerApi();
  WorkerApi(const WorkerApi&) = delete;
  WorkerApi& operator=(const WorkerApi&) = delete;

  // Removes the URL file (a stale address would send crawlctl to whatever
  // listens there next) and closes the server once the loop runs again
  // (Close can run inside a handler: the stop call).
  void Close(uv_loop_t* loop);

  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] metrics::Registry& metrics() { return metrics_; }

 private:
  explicit WorkerApi(const Parts& parts) : parts_(parts) {}
  void Routes();
  void AddSeeds(const http::Request& req, http::Responder r);
  void ReadFeed(const http::Request& req, http::Responder r);
  Json StatusJson();
  void SyncMetrics();
  Json RulesTestJson(const Json& body);
  Json HostJson(const std::string& name);
  void ListHosts(const http::Request& req, http::Responder r);
  Json RulesJson();
  void ReadRecord(const http::Request& req, http::Responder r);

  Parts parts_;
  std::unique_ptr<http::Server> server_;
  metrics::Registry metrics_;
  std::unique_ptr<store::FeedReader> feed_;
  std::unique_ptr<ReportApi> reports_;  // GET /api/reports, off the loop
  std::string url_;
  std::string url_file_;
  // GET /api/status's "disk": a worker alone only; under a supervisor the
  // supervisor measures the node's data directory once for all.
  std::unique_ptr<DiskUsage> disk_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_WORKER_API_H_
