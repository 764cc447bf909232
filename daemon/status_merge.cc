// daemon/status_merge.cc: MergeStatus (supervisor_admin.h), the crawl's
// status from the supervisor's view of its workers and each worker's own.
#include <string>
#include <string_view>
#include <vector>

#include "daemon/supervisor_admin.h"

namespace crawld::daemon {

namespace {

// The number at key, or 0 (an integer) when absent or not a number: a
// hostile or broken worker answer is ignored, not trusted.
Json Num(const Json& j, std::string_view key) {
  const Json* v = json::Find(j, key);
  return v != nullptr && v->is_number() ? *v : Json(0);
}

// a + b, kept an integer when both are (the counts stay integers in the
// merged status, as in a worker's).
Json Add(const Json& a, const Json& b) {
  if (a.is_number_unsigned() && b.is_number_unsigned()) {
    return a.get<uint64_t>() + b.get<uint64_t>();
  }
  if (a.is_number_integer() && b.is_number_integer()) {
    return a.get<int64_t>() + b.get<int64_t>();
  }
  return a.get<double>() + b.get<double>();
}

void SumMembers(const Json* from, Json* into) {
  if (from == nullptr || !from->is_object()) return;
  for (const auto& [k, v] : from->items()) {
    if (!v.is_number()) continue;
    (*into)[k] = Add(Num(*into, k), v);
  }
}

std::string StateOf(const Json& status) {
  const Json* s = json::Find(status, "state");
  return s != nullptr && s->is_string() ? s->get<std::string>() : std::string();
}

}  // namespace

Json MergeStatus(const Json& supervisor,
                 const std::vector<WorkerStatus>& statuses) {
  static constexpr const char* kSums[] = {
      "pages",     "pages_per_s", "bytes",         "queued",
      "in_flight", "ip_waiting",  "robots_fetches"};
  Json sums = Json::object();
  for (const char* k : kSums) sums[k] = 0;
  Json hosts = Json::object();
  for (const char* k : {"known", "active", "retired"}) hosts[k] = 0;
  Json counts = Json::object();
  Json errors = Json::object();
  Json workers = Json::array();
  bool stopping = StateOf(supervisor) == "stopping";
  int answered = 0, paused = 0;
  const Json* view = json::Find(supervisor, "workers");
  const size_t n = view != nullptr && view->is_array() ? view->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const Json& w = (*view)[i];
    Json entry = Json::object();
    if (w.is_object()) {
      for (const auto& [k, v] : w.items()) entry[k] = v;
    }
    const WorkerStatus* ws = i < statuses.size() ? &statuses[i] : nullptr;
    if (ws != nullptr && ws->status.is_object()) {
      const Json& st = ws->status;
      ++answered;
      const std::string state = StateOf(st);
      if (state == "paused") ++paused;
      if (state == "stopping" || state == "done") stopping = true;
      for (const char* k : kSums) sums[k] = Add(sums[k], Num(st, k));
      SumMembers(json::Find(st, "hosts"), &hosts);
      SumMembers(json::Find(st, "counts"), &counts);
      SumMembers(json::Find(st, "errors"), &errors);
      entry["pages"] = Num(st, "pages");
      entry["queued"] = Num(st, "queued");
      entry["status"] = st;
    } else {
      entry["error"] = ws != nullptr && !ws->error.empty()
                           ? ws->error
                           : std::string("no status");
    }
    workers.push_back(std::move(entry));
  }
  // The fields in the order a worker gives them.
  Json out = Json::object();
  out["state"] = stopping                             ? "stopping"
                 : answered > 0 && paused == answered ? "paused"
                                                      : "running";
  out["pages"] = sums["pages"];
  out["pages_per_s"] = sums["pages_per_s"];
  out["bytes"] = sums["bytes"];
  out["queued"] = sums["queued"];
  out["in_flight"] = sums["in_flight"];
  out["ip_waiting"] = sums["ip_waiting"];
  out["hosts"] = std::move(hosts);
  out["robots_fetches"] = sums["robots_fetches"];
  out["uptime_s"] = Num(supervisor, "uptime_s");
  // A node of a cluster: the supervisor's own view of the ring.
  if (const Json* cluster = json::Find(supervisor, "cluster")) {
    out["cluster"] = *cluster;
  }
  out["counts"] = std::move(counts);
  out["errors"] = std::move(errors);
  out["workers"] = std::move(workers);
  return out;
}

}  // namespace crawld::daemon
