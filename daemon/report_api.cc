// daemon/report_api.cc: see report_api.h.
#include "daemon/report_api.h"

#include <utility>

#include "base/ascii.h"
#include "report/report.h"

namespace crawld::daemon {

namespace {

// RFC 7111 section 3, with the header line announced.
constexpr char kCsvType[] = "text/csv; charset=utf-8; header=present";

// One computation: filled on the pool thread, read on the loop.
struct Job {
  std::string name;
  report::Options options;
  bool csv = false;
  Status status;
  std::string body;  // rendered off the loop too: a big crawl has many hosts
};

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case Status::Code::kNotFound:
      return 404;
    case Status::Code::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

}  // namespace

ReportApi::ReportApi(std::unique_ptr<WorkPool> pool, std::string data_dir)
    : pool_(std::move(pool)),
      data_dir_(std::move(data_dir)),
      shared_(std::make_shared<Shared>()) {}

ReportApi::~ReportApi() { Cancel(); }

void ReportApi::Cancel() { shared_->cancel.store(true); }

void ReportApi::List(const http::Request&, const http::Responder& r) {
  Json list = Json::array();
  for (const report::ReportInfo& info : report::Reports()) {
    list.push_back({{"name", std::string(info.name)},
                    {"description", std::string(info.description)}});
  }
  r.SendJson(200, {{"reports", std::move(list)}});
}

void ReportApi::Get(const http::Request& req, const http::Responder& r) {
  auto job = std::make_shared<Job>();
  job->name = *req.Param("name");
  if (const std::string* f = req.QueryValue("format"); f != nullptr) {
    if (*f != "csv" && *f != "json") {
      r.SendError(400, "format must be json or csv");
      return;
    }
    job->csv = *f == "csv";
  } else if (const std::string* accept = req.Header("accept");
             accept != nullptr) {
    job->csv = ascii::ToLower(*accept).find("text/csv") != std::string::npos;
  }
  if (shared_->busy) {
    http::Response busy = http::Response::MakeError(
        503, "a report is being computed; try again in a moment");
    busy.headers.emplace_back("Retry-After", "1");
    r.Send(std::move(busy));
    return;
  }
  shared_->busy = true;
  job->options.data_dir = data_dir_;
  job->options.cancel = &shared_->cancel;
  // The callbacks hold the job and the shared state, not this object: the
  // API may be gone when the computation ends.
  std::shared_ptr<Shared> shared = shared_;
  pool_->Run(
      [job] {
        auto t = report::Compute(job->name, job->options);
        if (!t.ok()) {
          job->status = t.status();
        } else {
          job->body = job->csv ? report::ToCsv(*t) : report::ToJson(*t);
        }
      },
      [job, shared, r] {
        shared->busy = false;
        if (!job->status.ok()) {
          r.SendError(HttpStatusOf(job->status), job->status.message());
          return;
        }
        if (job->csv) {
          r.Send(http::Response::MakeText(200, std::move(job->body), kCsvType));
          return;
        }
        http::Response ok;
        ok.body = std::move(job->body);
        r.Send(std::move(ok));
      });
}

}  // namespace crawld::daemon
