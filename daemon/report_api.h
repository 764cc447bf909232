// daemon/report_api.h: the crawl report routes of the admin API (docs/
// API.md, "Reports"), served alike by a worker (daemon/worker_api.cc) and
// by the supervisor (daemon/supervisor_admin.cc):
//   GET /api/reports          the report names
//   GET /api/reports/{name}   one report, JSON; CSV with ?format=csv or
//                             Accept: text/csv
// A report reads the data directory's index and logs, which on a big crawl
// takes seconds: it is computed on a WorkPool thread, never on the loop,
// one at a time per process (a second request meanwhile gets 503).
#ifndef CRAWLD_DAEMON_REPORT_API_H_
#define CRAWLD_DAEMON_REPORT_API_H_

#include <atomic>
#include <memory>
#include <string>

#include "daemon/ports.h"
#include "http/http.h"

namespace crawld::daemon {

class ReportApi {
 public:
  // `pool` runs the computations; reports are read from `data_dir` (its
  // seed list from data_dir/run/seeds.txt).
  ReportApi(std::unique_ptr<WorkPool> pool, std::string data_dir);
  // Cancels a computation in progress; its request is answered 503 if the
  // server still exists.
  ~ReportApi();
  ReportApi(const ReportApi&) = delete;
  ReportApi& operator=(const ReportApi&) = delete;

  // Makes a computation in progress, and any later one, stop early (the
  // server is shutting down: the loop would otherwise wait for it).
  void Cancel();

  void List(const http::Request& req, const http::Responder& r);
  void Get(const http::Request& req, const http::Responder& r);

 private:
  struct Shared {
    std::atomic<bool> cancel{false};
    bool busy = false;  // loop thread only
  };
  std::unique_ptr<WorkPool> pool_;
  std::string data_dir_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_REPORT_API_H_
