#include "daemon/worker_api.h"

#include <uv.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/time.h"
#include "console/console.h"
#include "daemon/component_options.h"
#include "daemon/feed_json.h"
#include "daemon/progress.h"
#include "fetcher/fetcher.h"

namespace crawld::daemon {

namespace {

// The API's vocabulary predates the host record's: an unreachable
// robots.txt is "failing", a skipped one (allow-all) "ready".
const char* ApiRobotsState(RobotsState state) {
  switch (state) {
    case RobotsState::kReady:
    case RobotsState::kSkipped:
      return "ready";
    case RobotsState::kUnreachable:
      return "failing";
    case RobotsState::kUnknown:
    case RobotsState::kFetching:
      break;
  }
  return "unknown";
}

}  // namespace

Result<std::unique_ptr<WorkerApi>> WorkerApi::Start(
    uv_loop_t* loop, const Parts& parts, bool under_supervisor,
    const std::string& url_file) {
  const conf::AdminConfig& admin = parts.config->admin;
  http::Server::Options ao;
  ao.bind_address = admin.address;
  ao.port = static_cast<uint16_t>(admin.port);
  if (under_supervisor) {
    // The supervisor serves the configured address and port and asks its
    // workers: loopback, any free port (run/admin-<id>.url).
    ao.bind_address = "127.0.0.1";
    ao.port = 0;
  }
  ao.token = admin.token;
  std::unique_ptr<WorkerApi> api(new WorkerApi(parts));
  auto server = http::Server::Create(loop, ao);
  if (!server.ok()) return server.status();
  api->server_ = std::move(server).value();
  api->reports_ = std::make_unique<ReportApi>(
      std::make_unique<UvWorkPool>(loop), parts.config->crawl.data_dir);
  if (!under_supervisor) {
    api->disk_ = std::make_unique<DiskUsage>(parts.config->crawl.data_dir);
  }
  api->Routes();

  const std::string& bound = ao.bind_address;
  api->url_ =
      "http://" +
      (bound.find(':') != std::string::npos ? "[" + bound + "]" : bound) + ":" +
      std::to_string(api->server_->port());
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(url_file).parent_path(), ec);
  const std::string tmp = url_file + ".tmp";
  if (FILE* f = fopen(tmp.c_str(), "w")) {
    fprintf(f, "%s\n", api->url_.c_str());
    fclose(f);
    std::filesystem::rename(tmp, url_file, ec);
  }
  api->url_file_ = url_file;
  parts.log->Write(Level::kInfo, "admin_listening", {{"url", api->url_}});
  return api;
}

WorkerApi::~WorkerApi() = default;

void WorkerApi::Close(uv_loop_t* loop) {
  // A report in progress would hold the end of the loop: cut it short.
  reports_->Cancel();
  std::error_code ec;
  std::filesystem::remove(url_file_, ec);
  auto* t = new uv_timer_t;
  uv_timer_init(loop, t);
  t->data = server_.release();
  uv_timer_start(
      t,
      [](uv_timer_t* timer) {
        delete static_cast<http::Server*>(timer->data);
        uv_close(reinterpret_cast<uv_handle_t*>(timer), [](uv_handle_t* h) {
          delete reinterpret_cast<uv_timer_t*>(h);
        });
      },
      1, 0);
}

using http::Request;
using http::Responder;

void WorkerApi::Routes() {
  auto route = [&](const char* method, const char* path, http::Handler h) {
    Status s = server_->Route(method, path, std::move(h));
    (void)s;  // the patterns are literals; tested
  };
  WorkerControl* control = parts_.control;
  route("GET", "/api/status",
        [this](const Request&, Responder r) { r.SendJson(200, StatusJson()); });
  route("GET", "/metrics", [this](const Request&, Responder r) {
    r.Send(http::Response::MakeText(
        200, metrics_.Render(), std::string(metrics::Registry::kContentType)));
  });
  // The same series as data, for the supervisor to merge (docs/API.md).
  route("GET", "/api/metrics", [this](const Request&, Responder r) {
    r.SendJson(200, metrics_.Snapshot());
  });
  route("POST", "/api/pause", [control](const Request&, Responder r) {
    control->Pause();
    r.SendJson(200, {{"state", control->StateName()}});
  });
  route("POST", "/api/resume", [control](const Request&, Responder r) {
    control->Resume();
    r.SendJson(200, {{"state", control->StateName()}});
  });
  route("POST", "/api/stop", [control](const Request&, Responder r) {
    // Answer first: the stop closes the server once in-flight work is done.
    r.SendJson(200, {{"state", "stopping"}});
    control->Stop("api stop");
  });
  route("POST", "/api/seeds",
        [this](const Request& req, Responder r) { AddSeeds(req, r); });
  route("POST", "/api/rules/reload", [control](const Request&, Responder r) {
    Status s = control->ReloadRules();
    if (!s.ok()) {
      r.SendError(400, s.message());
      return;
    }
    control->Pump();
    r.SendJson(
        200,
        {{"reloaded", true},
         {"filter_rules", static_cast<uint64_t>(control->rules().size())},
         {"overrides", static_cast<uint64_t>(control->overrides().size())}});
  });
  route("POST", "/api/rules/test", [this](const Request& req, Responder r) {
    auto body = req.JsonBody();
    const Json* u = body.ok() ? json::Find(*body, "url") : nullptr;
    if (u == nullptr || !u->is_string()) {
      r.SendError(400, body.ok() ? "body must be {\"url\": \"http://...\"}"
                                 : body.status().message());
      return;
    }
    r.SendJson(200, RulesTestJson(*body));
  });
  route("GET", "/api/hosts/{host}", [this](const Request& req, Responder r) {
    Json j = HostJson(*req.Param("host"));
    if (j.is_null()) {
      r.SendError(404, "unknown host: " + *req.Param("host"));
      return;
    }
    r.SendJson(200, j);
  });
  route("GET", "/api/hosts",
        [this](const Request& req, Responder r) { ListHosts(req, r); });
  route("GET", "/api/rules",
        [this](const Request&, Responder r) { r.SendJson(200, RulesJson()); });
  route("GET", "/api/docs",
        [this](const Request& req, Responder r) { ReadFeed(req, r); });
  route("GET", "/api/docs/record",
        [this](const Request& req, Responder r) { ReadRecord(req, r); });
  route("GET", "/api/reports",
        [this](const Request& req, Responder r) { reports_->List(req, r); });
  route("GET", "/api/reports/{name}",
        [this](const Request& req, Responder r) { reports_->Get(req, r); });
  // The web console: static files on this same server (console/console.h).
  Status cs =
      console::AddRoutes(server_.get(), ConsoleOptions(parts_.config->admin));
  (void)cs;  // fixed patterns, added once; tested
  // Counters mirror the summary counts at each scrape: one place counts.
  metrics_.AddCollector([this] { SyncMetrics(); });
}

void WorkerApi::AddSeeds(const Request& req, Responder r) {
  auto body = req.JsonBody();
  const Json* urls = body.ok() ? json::Find(*body, "urls") : nullptr;
  if (urls == nullptr || !urls->is_array()) {
    r.SendError(400, body.ok() ? "body must be {\"urls\": [\"http://...\"]}"
                               : body.status().message());
    return;
  }
  uint64_t added = 0, known = 0;
  Json rejected = Json::array();
  for (const Json& u : *urls) {
    if (!u.is_string()) {
      rejected.push_back({{"url", nullptr}, {"error", "not a string"}});
      continue;
    }
    const std::string& text = u.get_ref<const std::string&>();
    auto canon = parts_.canonicalizer->Canonicalize(text);
    if (!canon.ok() || !canon->is_http()) {
      rejected.push_back(
          {{"url", text},
           {"error", canon.ok() ? "not http(s)" : canon.status().message()}});
      continue;
    }
    conf::RuleVerdict v =
        parts_.control->rules().Decide({canon->href(), 0, canon->host()});
    if (!v.accept) {
      rejected.push_back({{"url", text}, {"error", "filter: " + v.rule}});
      continue;
    }
    Candidate c;
    c.url = canon->href();
    c.source = Candidate::Source::kApi;
    c.credit = 1.0;
    // A seed of another worker's host goes there; that worker decides
    // whether it is new, so it counts as added here.
    const EnterResult e = parts_.path->Enter(c);
    if (e == EnterResult::kQueued || e == EnterResult::kRouted) {
      ++added;
    } else {
      ++known;
    }
  }
  if (added > 0) parts_.stats->Count("api_seeds_added", added);
  parts_.log->Write(Level::kInfo, "seeds_added",
                    {{"added", std::to_string(added)}});
  r.SendJson(
      200,
      {{"added", added}, {"known", known}, {"rejected", std::move(rejected)}});
  parts_.control->Pump();
}

void WorkerApi::ReadFeed(const Request& req, Responder r) {
  const std::string* since = req.QueryValue("since");
  Result<size_t> limit = FeedLimit(req.QueryValue("limit"));
  if (!limit.ok()) {
    r.SendError(400, limit.status().message());
    return;
  }
  // No flush: a reader sees every line the writer's write(2) put there;
  // the writer belongs to the record writes (off the loop) and the
  // checkpoint, which syncs it.
  if (feed_ == nullptr) {
    auto reader =
        store::FeedReader::Open(parts_.config->crawl.data_dir + "/index/feed");
    if (!reader.ok()) {
      r.SendError(503, "no document feed: " + reader.status().message());
      return;
    }
    feed_ = std::move(reader).value();
  }
  auto page = feed_->Read(since == nullptr ? "" : *since, *limit);
  if (!page.ok()) {
    r.SendError(400, page.status().message());
    return;
  }
  r.SendJson(200, FeedPageJson(*page));
}

Json WorkerApi::StatusJson() {
  const CrawlStats& st = *parts_.stats;
  const frontier::Frontier& fr = *parts_.frontier;
  const double uptime = std::max<int64_t>(1, parts_.control->uptime_us()) / 1e6;
  Json counts = Json::object();
  // The failure classes among the counts, as the progress line adds them
  // up (IsErrorCount): the console's "errors by class".
  Json errors = Json::object();
  for (const auto& [k, v] : st.counts) {
    counts[k] = v;
    if (IsErrorCount(k)) errors[k] = v;
  }
  const size_t waiting = parts_.path->ip_waiting();
  Json j = Json::object();
  j["state"] = parts_.control->StateName();
  j["pages"] = st.pages;
  j["pages_per_s"] = st.pages / uptime;
  j["bytes"] = st.bytes;
  j["queued"] = static_cast<uint64_t>(fr.queued());
  j["in_flight"] = static_cast<uint64_t>(parts_.path->active() - waiting);
  j["ip_waiting"] = static_cast<uint64_t>(waiting);
  Json hosts = {{"known", static_cast<uint64_t>(fr.hosts())},
                {"active", static_cast<uint64_t>(fr.in_flight())},
                {"retired", static_cast<uint64_t>(fr.retired_hosts())}};
  // By state (console_api.h): one pass over the host records, O(hosts),
  // well under a millisecond for the tens of thousands a worker holds.
  // Counted by name view (HostStateName returns views of its static
  // names), not through the JSON object: the console polls this every 2 s.
  const auto& names = HostStateNames();
  std::vector<uint64_t> by_state(names.size(), 0);
  const int64_t now = parts_.clock->MonotonicUs();
  fr.ForEachHost([&](std::string_view, const frontier::HostInfo& info) {
    const std::string_view name = HostStateName(info, now);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) {
        ++by_state[i];
        break;
      }
    }
  });
  for (size_t i = 0; i < names.size(); ++i) {
    hosts[std::string(names[i])] = by_state[i];
  }
  j["hosts"] = std::move(hosts);
  j["robots_fetches"] = st.robots_fetches;
  j["uptime_s"] = uptime;
  j["counts"] = std::move(counts);
  j["errors"] = std::move(errors);
  if (disk_ != nullptr) j["disk"] = disk_->Get(parts_.clock->MonotonicUs());
  j["workers"] =
      Json::array({{{"id", parts_.worker_id},
                    {"pages", st.pages},
                    {"queued", static_cast<uint64_t>(fr.queued())}}});
  return j;
}

void WorkerApi::SyncMetrics() {
  auto counter = [this](const char* name, const char* help, double value,
                        const metrics::Labels& labels = {}) {
    auto c = metrics_.GetCounter(name, help, labels);
    if (c.ok()) (*c)->Increment(value - (*c)->value());
  };
  auto gauge = [this](const char* name, const char* help, double value,
                      const metrics::Labels& labels = {}) {
    auto g = metrics_.GetGauge(name, help, labels);
    if (g.ok()) (*g)->Set(value);
  };
  const CrawlStats& st = *parts_.stats;
  counter("crawld_pages_fetched_total",
          "Responses recorded in the WARCs (robots.txt excluded).",
          static_cast<double>(st.pages));
  counter("crawld_bytes_received_total", "Body bytes received.",
          static_cast<double>(st.bytes));
  counter("crawld_robots_fetches_total", "robots.txt fetches.",
          static_cast<double>(st.robots_fetches));
  // Against fetches, the share of pages that paid a TCP (and TLS)
  // handshake: how well keep-alive works (fetch.max_idle_connections).
  counter("crawld_connections_opened_total",
          "Connections opened by this process (a fetch on a kept-alive "
          "connection opens none).",
          static_cast<double>(parts_.fetch->connections_opened()));
  // Above zero, hosts in rotation outnumber the idle slots: raising
  // fetch.max_idle_connections saves those handshakes.
  counter("crawld_connections_not_kept_total",
          "Connections closed after their page although the host had more "
          "queued, because the idle pool (fetch.max_idle_connections) was "
          "full.",
          static_cast<double>(parts_.fetch->connections_not_kept()));
  for (const auto& [k, v] : st.counts) {
    counter("crawld_events_total",
            "Counted events by class: fetch errors, HTTP status classes, "
            "URL drops by reason, traps, filter and robots decisions.",
            static_cast<double>(v), {{"event", k}});
  }
  // Each filter rule and override line counts its hits (hot-reloaded sets
  // start again from zero, so these are gauges).
  const conf::RuleSet& rules = parts_.control->rules();
  for (const conf::RuleSet::RuleStats& r : rules.Stats()) {
    std::string where = r.line > 0 ? parts_.config->crawl.rules_file + ":" +
                                         std::to_string(r.line)
                                   : r.rule;
    gauge("crawld_filter_rule_hits",
          "URLs decided by each filter rule (file:line) of the rule set in "
          "force.",
          static_cast<double>(r.hits), {{"rule", where}});
  }
  const conf::Overrides& ov = parts_.control->overrides();
  for (const conf::Overrides::LineStats& l : ov.Stats()) {
    gauge("crawld_override_hits",
          "Hosts each robots override line (file:line) applied to.",
          static_cast<double>(l.hits), {{"line", ov.Where(l.line)}});
  }
  const frontier::Frontier& fr = *parts_.frontier;
  gauge("crawld_queued_urls", "URLs waiting in the frontier.",
        static_cast<double>(fr.queued()));
  gauge("crawld_in_flight_requests", "Requests in flight.",
        static_cast<double>(parts_.path->active() - parts_.path->ip_waiting()));
  gauge("crawld_hosts", "Hosts known to the frontier.",
        static_cast<double>(fr.hosts()), {{"state", "known"}});
  gauge("crawld_hosts", "Hosts known to the frontier.",
        static_cast<double>(fr.retired_hosts()), {{"state", "retired"}});
  gauge("crawld_paused", "1 while the crawl is paused.",
        parts_.control->StateName() == "paused" ? 1 : 0);
}

Json WorkerApi::RulesTestJson(const Json& body) {
  Json out = Json::object();
  const std::string text = json::Find(body, "url")->get<std::string>();
  auto canon = parts_.canonicalizer->Canonicalize(text);
  if (!canon.ok()) {
    out["url"] = text;
    out["error"] = canon.status().message();
    return out;
  }
  int depth = 0;
  if (const Json* d = json::Find(body, "depth");
      d != nullptr && d->is_number()) {
    depth = static_cast<int>(std::clamp(d->get<double>(), 0.0, 1e6));
  }
  std::string seed_host(canon->host());
  if (const Json* h = json::Find(body, "seed_host");
      h != nullptr && h->is_string() && !h->get<std::string>().empty()) {
    seed_host = h->get<std::string>();
  }
  const conf::RuleVerdict v =
      parts_.control->rules().Decide({canon->href(), depth, seed_host});
  out["url"] = canon->href();
  out["filter"] = {{"accept", v.accept},
                   {"rule", v.rule},
                   {"line", v.line},
                   {"file", parts_.config->crawl.rules_file}};
  out["traps"] = parts_.traps->CheckShape(*canon);
  const HostRecord* host = parts_.hosts->Lookup(canon->origin_key());
  Json robots = Json::object();
  if (host == nullptr || host->rules == nullptr) {
    robots["state"] = "unknown";
    robots["allowed"] = nullptr;
    out["override"] = "";
  } else {
    robots["state"] = ApiRobotsState(host->robots);
    const robots::Verdict rv = host->rules->Check(canon->path_and_query());
    robots["allowed"] = rv.allowed;
    robots["rule"] = rv.rule;
    out["override"] = parts_.control->overrides().Describe(host->override_rule);
  }
  out["robots"] = std::move(robots);
  return out;
}

Json WorkerApi::HostJson(const std::string& name) {
  std::vector<std::string> keys;
  if (name.find("://") != std::string::npos) {
    auto u = url::Parse(name);
    if (u.ok()) keys.push_back(u->origin_key());
  } else {
    for (const char* scheme : {"http://", "https://"}) {
      auto u = url::Parse(scheme + name + "/");
      if (u.ok()) keys.push_back(u->origin_key());
    }
  }
  for (const std::string& key : keys) {
    std::optional<frontier::HostInfo> info = parts_.frontier->Host(key);
    const HostRecord* host = parts_.hosts->Lookup(key);
    if (!info.has_value() && host == nullptr) continue;
    Json j = Json::object();
    j["host"] = key;
    const int64_t now = parts_.clock->MonotonicUs();
    if (info.has_value()) {
      j["queued"] = static_cast<uint64_t>(info->queued);
      j["in_flight"] = info->in_flight;
      j["next_fetch_in_ms"] =
          std::max<int64_t>(0, info->next_fetch_us - now) / 1000;
      j["credit"] = info->credit;
      j["crawl_delay_ms"] = info->crawl_delay_us / 1000;
      j["consecutive_errors"] = info->consecutive_errors;
      j["retired"] = info->retired;
      j["pages"] = info->pages;
      j["page_budget"] = info->page_budget;
      j["fetched"] = info->fetched;
      j["state"] = std::string(HostStateName(*info, now));
    }
    Json robots = Json::object();
    if (host == nullptr) {
      robots["state"] = "unknown";
      j["override"] = "";
    } else {
      robots["state"] = ApiRobotsState(host->robots);
      if (host->rules != nullptr) robots["rules"] = host->rules->Describe();
      j["override"] = parts_.control->overrides().Describe(host->override_rule);
    }
    j["robots"] = std::move(robots);
    // The newest first, from the worker's ring of recent fetches.
    j["recent"] = parts_.recent != nullptr ? parts_.recent->ForHost(key, 20)
                                           : Json::array();
    return j;
  }
  return Json();
}

void WorkerApi::ListHosts(const Request& req, Responder r) {
  Result<HostQuery> query = ParseHostQuery(req.query);
  if (!query.ok()) {
    r.SendError(400, query.status().message());
    return;
  }
  const int64_t now = parts_.clock->MonotonicUs();
  std::vector<Json> rows;
  uint64_t matched = 0;
  parts_.frontier->ForEachHost([&](std::string_view key,
                                   const frontier::HostInfo& info) {
    // (Without loading a record that left memory.)
    const std::optional<RobotsState> robots = parts_.hosts->StateOf(key, now);
    Json row =
        HostRow(key, info, robots ? ApiRobotsState(*robots) : "unknown", now);
    if (!HostRowMatches(row, *query)) return;
    ++matched;
    rows.push_back(std::move(row));
    // Keep memory bounded on a big table: cut back to the page now
    // and then instead of holding every match.
    if (rows.size() >= 4 * kMaxHostRows) SortHostRows(*query, &rows);
  });
  SortHostRows(*query, &rows);
  Json out = Json::object();
  out["hosts"] = Json(std::move(rows));
  out["matched"] = matched;
  r.SendJson(200, out);
}

Json WorkerApi::RulesJson() {
  const conf::RuleSet& rules = parts_.control->rules();
  const std::string& rules_file = parts_.config->crawl.rules_file;
  Json filter = Json::array();
  for (const conf::RuleSet::RuleStats& st : rules.Stats()) {
    filter.push_back(
        {{"line", st.line},
         {"rule", st.rule},
         {"where",
          st.line > 0 ? rules_file + ":" + std::to_string(st.line) : st.rule},
         {"hits", st.hits}});
  }
  const conf::Overrides& ov = parts_.control->overrides();
  Json overrides = Json::array();
  for (const conf::Overrides::LineStats& st : ov.Stats()) {
    overrides.push_back({{"line", st.line},
                         {"text", st.text},
                         {"where", ov.Where(st.line)},
                         {"hits", st.hits}});
  }
  return {{"rules_file", rules_file},
          {"filter", std::move(filter)},
          {"overrides_file", parts_.config->politeness.overrides_file},
          {"overrides", std::move(overrides)}};
}

void WorkerApi::ReadRecord(const Request& req, Responder r) {
  Result<RecordQuery> query = ParseRecordQuery(req.query);
  if (!query.ok()) {
    r.SendError(400, query.status().message());
    return;
  }
  Result<Json> rec =
      ReadRecordJson(parts_.config->crawl.data_dir + "/warc", *query);
  if (!rec.ok()) {
    r.SendError(rec.status().code() == Status::Code::kNotFound ? 404 : 400,
                rec.status().message());
    return;
  }
  r.SendJson(200, *rec);
}

}  // namespace crawld::daemon
