// daemon/console_api_supervisor.cc: the endpoints of the web console
// (console_api.h) on the supervisor's admin API (supervisor_admin.h): a
// host's page from its owner, the host table merged from every worker's,
// the node's document feed and a record read back from the node's WARCs.
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "daemon/console_api.h"
#include "daemon/feed_json.h"
#include "daemon/supervisor_admin_impl.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

void SupervisorAdmin::Impl::Host(const http::Request& req,
                                 const http::Responder& r) {
  const std::string& name = *req.Param("host");
  const std::string host = url::HostOf(
      name.find("://") != std::string::npos ? name : "http://" + name + "/");
  int index = 0;  // unparsable: worker 0 gives the worker's own answer
  if (!host.empty()) {
    const int owner =
        cluster::Ring(options.total_workers, options.ring).Owner(host);
    index = owner - options.first_worker;
    if (index < 0 || index >= options.workers) {
      r.SendError(502, "host " + host + " is owned by worker " +
                           std::to_string(owner) + " on another node");
      return;
    }
  }
  if (!Up(SupervisorJson(), index)) {
    r.SendError(503,
                WorkerName(index) + ", owner of " + host + ", is not running");
    return;
  }
  Ask({MakeCall(index, req)}, [r](Calls done) { r.Send(Forward(done[0])); });
}

void SupervisorAdmin::Impl::ListHosts(const http::Request& req,
                                      const http::Responder& r) {
  Result<HostQuery> query = ParseHostQuery(req.query);
  if (!query.ok()) {
    r.SendError(400, query.status().message());
    return;
  }
  std::string errors;
  Calls calls = ToAll(req, SupervisorJson(), &errors);
  if (calls.empty()) {
    r.SendError(503, "no worker is running");
    return;
  }
  const HostQuery q = *query;
  Ask(std::move(calls), [this, q, r, errors](Calls done) mutable {
    std::vector<Json> rows;
    uint64_t matched = 0;
    for (const Call& c : done) {
      auto j = c.reply.ok && c.reply.status == 200
                   ? json::Parse(c.reply.body, kWorkerJson)
                   : Result<Json>(Status::Internal("no answer"));
      const Json* hosts = j.ok() ? json::Find(*j, "hosts") : nullptr;
      if (hosts == nullptr || !hosts->is_array()) {
        errors += (errors.empty() ? "" : "; ") +
                  (c.reply.ok ? WorkerName(c.index) + " answered " +
                                    std::to_string(c.reply.status)
                              : c.reply.error);
        continue;
      }
      for (const Json& row : *hosts) {
        if (row.is_object()) rows.push_back(row);
      }
      const Json* m = json::Find(*j, "matched");
      if (m != nullptr && m->is_number_unsigned()) {
        matched += m->get<uint64_t>();
      }
    }
    SortHostRows(q, &rows);
    Json out = Json::object();
    out["hosts"] = Json(std::move(rows));
    out["matched"] = matched;
    if (!errors.empty()) out["errors"] = errors;
    r.SendJson(200, out);
  });
}

void SupervisorAdmin::Impl::Record(const http::Request& req,
                                   const http::Responder& r) {
  Result<RecordQuery> query = ParseRecordQuery(req.query);
  if (!query.ok()) {
    r.SendError(400, query.status().message());
    return;
  }
  Result<Json> rec = ReadRecordJson(options.data_dir + "/warc", *query);
  if (!rec.ok()) {
    r.SendError(rec.status().code() == Status::Code::kNotFound ? 404 : 400,
                rec.status().message());
    return;
  }
  r.SendJson(200, *rec);
}

void SupervisorAdmin::Impl::Docs(const http::Request& q, http::Responder r) {
  const std::string* since = q.QueryValue("since");
  Result<size_t> limit = FeedLimit(q.QueryValue("limit"));
  if (!limit.ok()) {
    r.SendError(400, limit.status().message());
    return;
  }
  const std::string cursor = since == nullptr ? "" : *since;
  if (feed == nullptr) {
    auto reader = store::FeedReader::Open(options.data_dir + "/index/feed");
    if (!reader.ok()) {
      // No worker has written a feed yet: nothing, and a watermark that
      // promises nothing beyond the cursor.
      auto c = store::ParseFeedCursor(cursor);
      if (!c.ok()) {
        r.SendError(400, c.status().message());
        return;
      }
      r.SendJson(200, {{"entries", Json::array()},
                       {"next", cursor},
                       {"watermark", std::to_string(*c)}});
      return;
    }
    feed = std::move(reader).value();
  }
  auto page = feed->Read(cursor, *limit);
  if (!page.ok()) {
    const bool bad = page.status().code() == Status::Code::kInvalidArgument;
    r.SendError(bad ? 400 : 500, page.status().message());
    return;
  }
  r.SendJson(200, FeedPageJson(*page));
}

}  // namespace crawld::daemon
