// daemon/supervisor_admin.cc: see supervisor_admin.h.
#include "daemon/supervisor_admin.h"

#include <uv.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "base/time.h"
#include "console/console.h"
#include "daemon/component_options.h"
#include "daemon/console_api.h"
#include "daemon/report_api.h"
#include "daemon/supervisor_admin_impl.h"
#include "http/http.h"
#include "metrics/metrics.h"

namespace crawld::daemon {

// ---------------------------------------------------------------------------
// Worker calls

namespace {

// How often a paused crawl's workers are checked for a restart.
constexpr uint64_t kKeepPausedMs = 500;

// The port in "http://host:port\n" (the worker's admin-<id>.url).
int PortOf(const std::string& url) {
  std::string_view s = url;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' ||
                        s.back() == ' ' || s.back() == '/')) {
    s.remove_suffix(1);
  }
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= s.size()) return -1;
  int port = 0;
  for (char ch : s.substr(colon + 1)) {
    if (ch < '0' || ch > '9' || port > 65535) return -1;
    port = port * 10 + (ch - '0');
  }
  return port > 0 && port <= 65535 ? port : -1;
}

}  // namespace

SupervisorAdmin::Impl::~Impl() {
  if (keeper != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(keeper),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  }
}

std::string SupervisorAdmin::Impl::WorkerName(int index) const {
  return "worker " + std::to_string(Global(index));
}

const Json* SupervisorAdmin::Impl::WorkerEntry(const Json& sup, int index) {
  const Json* w = json::Find(sup, "workers");
  if (w == nullptr || !w->is_array() || index < 0 ||
      static_cast<size_t>(index) >= w->size()) {
    return nullptr;
  }
  return &(*w)[static_cast<size_t>(index)];
}

int64_t SupervisorAdmin::Impl::Pid(const Json& sup, int index) {
  const Json* w = WorkerEntry(sup, index);
  const Json* pid = w != nullptr ? json::Find(*w, "pid") : nullptr;
  return pid != nullptr && pid->is_number() ? pid->get<int64_t>() : 0;
}

bool SupervisorAdmin::Impl::Up(const Json& sup, int index) {
  const Json* w = WorkerEntry(sup, index);
  if (w == nullptr) return false;
  const Json* up = json::Find(*w, "up");
  return up == nullptr || (up->is_boolean() && up->get<bool>());
}

Json SupervisorAdmin::Impl::SupervisorJson() const {
  Json j = view.supervisor_status ? view.supervisor_status() : Json();
  if (!j.is_object()) j = Json::object();
  const Json* w = json::Find(j, "workers");
  if (w == nullptr || !w->is_array()) {
    // No view: every local worker, assumed up.
    Json workers = Json::array();
    for (int i = 0; i < options.workers; ++i) {
      workers.push_back({{"id", Global(i)}, {"up", true}});
    }
    j["workers"] = std::move(workers);
  }
  return j;
}

SupervisorAdmin::Impl::Call SupervisorAdmin::Impl::MakeCall(
    int index, const http::Request& req) const {
  Call c;
  c.index = index;
  c.method = req.method == "HEAD" ? "GET" : req.method;
  c.target = req.target;
  c.body = req.body;
  return c;
}

http::Response SupervisorAdmin::Impl::Forward(const Call& c) {
  if (!c.reply.ok) return http::Response::MakeError(502, c.reply.error);
  http::Response r;
  r.status = c.reply.status;
  r.content_type =
      c.reply.content_type.empty() ? "application/json" : c.reply.content_type;
  r.body = c.reply.body;
  return r;
}

void SupervisorAdmin::Impl::Ask(Calls calls, CallsDone done) {
  struct Gather {
    Calls calls;
    size_t left = 0;
    CallsDone done;
  };
  auto g = std::make_shared<Gather>();
  g->calls = std::move(calls);
  g->done = std::move(done);
  g->left = g->calls.size();
  std::vector<size_t> to_start;
  for (size_t i = 0; i < g->calls.size(); ++i) {
    Call& c = g->calls[i];
    const std::string path = options.data_dir + "/run/admin-" +
                             std::to_string(Global(c.index)) + ".url";
    // A few bytes from a local file: the one synchronous step.
    std::ifstream in(path);
    std::string line;
    const int port = in && std::getline(in, line) ? PortOf(line) : -1;
    if (port < 0) {
      c.reply.error = WorkerName(c.index) + ": no admin URL in " + path +
                      " (not started yet?)";
      c.reply.connect_failed = true;
      --g->left;
      continue;
    }
    // The worker always listens on 127.0.0.1 under a supervisor, whatever
    // host its URL file names.
    c.url = "http://127.0.0.1:" + std::to_string(port) + c.target;
    to_start.push_back(i);
  }
  if (g->left == 0) {
    g->done(std::move(g->calls));
    return;
  }
  for (size_t i : to_start) {
    const Call& c = g->calls[i];
    client->Start({c.method, c.url, c.body, options.admin.token},
                  [this, g, i](http::Client::Reply reply) {
                    Call& c = g->calls[i];
                    c.reply = std::move(reply);
                    if (!c.reply.ok) {
                      c.reply.error = WorkerName(c.index) + " (" + c.url +
                                      "): " + c.reply.error;
                    }
                    if (--g->left == 0) g->done(std::move(g->calls));
                  });
  }
}

SupervisorAdmin::Impl::Calls SupervisorAdmin::Impl::ToAll(
    const http::Request& req, const Json& sup, std::string* not_running) const {
  Calls calls;
  for (int i = 0; i < options.workers; ++i) {
    if (Up(sup, i)) {
      calls.push_back(MakeCall(i, req));
    } else if (not_running != nullptr) {
      *not_running += (not_running->empty() ? "" : "; ") + WorkerName(i) +
                      " is not running";
    }
  }
  return calls;
}

void SupervisorAdmin::Impl::KeepPaused() {
  // During a pause or resume the pids are not known yet.
  if (!paused || keeping_paused || broadcasts > 0) return;
  const Json sup = SupervisorJson();
  Calls calls;
  for (int i = 0; i < options.workers; ++i) {
    if (Up(sup, i) && Pid(sup, i) != paused_pids[static_cast<size_t>(i)]) {
      Call c;
      c.index = i;
      c.method = "POST";
      c.target = "/api/pause";
      calls.push_back(std::move(c));
    }
  }
  if (calls.empty()) return;
  keeping_paused = true;
  Ask(std::move(calls), [this, sup](Calls done) {
    keeping_paused = false;
    if (!paused) return;  // resumed meanwhile
    // One not ready yet is tried again at the next tick.
    for (const Call& c : done) {
      if (c.reply.ok && c.reply.status == 200) {
        paused_pids[static_cast<size_t>(c.index)] = Pid(sup, c.index);
      }
    }
  });
}

void SupervisorAdmin::Impl::ToFirst(Call proto, int from, std::string errors,
                                    const http::Responder& r) {
  const Json sup = SupervisorJson();
  int i = from;
  for (; i < options.workers && !Up(sup, i); ++i) {
    errors += (errors.empty() ? "" : "; ") + WorkerName(i) + " is not running";
  }
  if (i >= options.workers) {
    r.SendError(503, "no worker could be reached: " + errors);
    return;
  }
  Call c = proto;
  c.index = i;
  Ask({std::move(c)}, [this, proto, i, errors, r](Calls done) {
    const Call& c = done[0];
    if (c.reply.ok || !c.reply.connect_failed) {
      r.Send(Forward(c));
      return;
    }
    ToFirst(proto, i + 1, errors + (errors.empty() ? "" : "; ") + c.reply.error,
            r);
  });
}

void SupervisorAdmin::Impl::Status(const http::Request& req,
                                   const http::Responder& r) {
  const Json sup = SupervisorJson();
  http::Request get = req;
  get.method = "GET";
  get.target = "/api/status";
  Ask(ToAll(get, sup, nullptr), [this, sup, r](Calls calls) {
    std::vector<WorkerStatus> statuses(static_cast<size_t>(options.workers));
    for (int i = 0; i < options.workers; ++i) {
      statuses[static_cast<size_t>(i)].error =
          WorkerName(i) + " is not running";
    }
    for (const Call& c : calls) {
      WorkerStatus& ws = statuses[static_cast<size_t>(c.index)];
      if (!c.reply.ok) {
        ws.error = c.reply.error;
      } else if (c.reply.status != 200) {
        ws.error = WorkerName(c.index) + " answered " +
                   std::to_string(c.reply.status) + ": " +
                   c.reply.body.substr(0, 200);
      } else if (auto j = json::Parse(c.reply.body, kWorkerJson);
                 j.ok() && j->is_object()) {
        ws.status = std::move(j).value();
        ws.error.clear();
      } else {
        ws.error = WorkerName(c.index) + ": status is not a JSON object";
      }
    }
    Json merged = MergeStatus(sup, statuses);
    merged["disk"] = disk->Get(static_cast<int64_t>(uv_now(loop)) * 1000);
    r.SendJson(200, merged);
  });
}

void SupervisorAdmin::Impl::Metrics(const http::Request& req,
                                    const http::Responder& r, bool as_json) {
  const Json sup = SupervisorJson();
  http::Request get = req;
  get.method = "GET";
  get.target = "/api/metrics";
  Ask(ToAll(get, sup, nullptr), [this, sup, r, as_json](Calls calls) {
    metrics::Registry::Options ro;
    // Each worker keeps its own registry under the default cap.
    ro.max_series = metrics::Registry::Options().max_series *
                    static_cast<size_t>(options.workers + 1);
    metrics::Registry reg(ro);
    std::vector<bool> scraped(static_cast<size_t>(options.workers), false);
    for (const Call& c : calls) {
      if (!c.reply.ok || c.reply.status != 200) continue;
      auto snap = json::Parse(c.reply.body, kWorkerJson);
      if (!snap.ok()) continue;
      reg.Import(*snap, {{"worker", std::to_string(Global(c.index))}});
      scraped[static_cast<size_t>(c.index)] = true;
    }
    AddOwnSeries(sup, scraped, &reg);
    if (as_json) {
      r.SendJson(200, reg.Snapshot());
    } else {
      r.Send(http::Response::MakeText(
          200, reg.Render(), std::string(metrics::Registry::kContentType)));
    }
  });
}

void SupervisorAdmin::Impl::AddOwnSeries(const Json& sup,
                                         const std::vector<bool>& scraped,
                                         metrics::Registry* reg) const {
  int up = 0;
  for (int i = 0; i < options.workers; ++i) {
    const std::string id = std::to_string(Global(i));
    const bool is_up = Up(sup, i);
    up += is_up;
    const Json* w = WorkerEntry(sup, i);
    const Json* restarts = w != nullptr ? json::Find(*w, "restarts") : nullptr;
    if (auto g =
            reg->GetGauge("crawld_worker_up",
                          "1 while the worker process runs.", {{"worker", id}});
        g.ok()) {
      (*g)->Set(is_up ? 1 : 0);
    }
    if (auto g =
            reg->GetGauge("crawld_worker_scrape_ok",
                          "1 when the worker's own metrics are in this scrape.",
                          {{"worker", id}});
        g.ok()) {
      (*g)->Set(scraped[static_cast<size_t>(i)] ? 1 : 0);
    }
    if (auto c = reg->GetCounter("crawld_worker_restarts_total",
                                 "Restarts of the worker after a crash.",
                                 {{"worker", id}});
        c.ok() && restarts != nullptr && restarts->is_number()) {
      (*c)->Increment(restarts->get<double>());
    }
  }
  if (auto g = reg->GetGauge("crawld_workers_up", "Worker processes running.");
      g.ok()) {
    (*g)->Set(up);
  }
  if (auto g = reg->GetGauge("crawld_workers", "Worker processes configured.");
      g.ok()) {
    (*g)->Set(options.workers);
  }
}

void SupervisorAdmin::Impl::Broadcast(const http::Request& req,
                                      const http::Responder& r,
                                      const char* state_ok) {
  const Json sup = SupervisorJson();
  std::string errors;
  Calls calls = ToAll(req, sup, &errors);
  paused = req.path == "/api/pause";
  paused_pids.assign(static_cast<size_t>(options.workers), -1);
  const bool none = calls.empty();
  ++broadcasts;
  Ask(std::move(calls),
      [this, sup, r, state_ok, errors, none](Calls done) mutable {
        --broadcasts;
        Json workers = Json::array();
        for (const Call& c : done) {
          Json e = {{"id", Global(c.index)}};
          if (c.reply.ok && c.reply.status == 200) {
            paused_pids[static_cast<size_t>(c.index)] = Pid(sup, c.index);
            auto j = json::Parse(c.reply.body, kWorkerJson);
            const Json* st = j.ok() ? json::Find(*j, "state") : nullptr;
            e["state"] = st != nullptr ? *st : Json();
          } else {
            const std::string why = c.reply.ok
                                        ? WorkerName(c.index) + " answered " +
                                              std::to_string(c.reply.status)
                                        : c.reply.error;
            errors += (errors.empty() ? "" : "; ") + why;
            e["error"] = why;
          }
          workers.push_back(std::move(e));
        }
        if (!errors.empty()) {
          r.SendError(none ? 503 : 502, errors);
          return;
        }
        r.SendJson(200, {{"state", state_ok}, {"workers", std::move(workers)}});
      });
}

void SupervisorAdmin::Impl::RulesReload(const http::Request& req,
                                        const http::Responder& r) {
  // A worker that is not running loads the rule files when it starts.
  Calls calls = ToAll(req, SupervisorJson(), nullptr);
  if (calls.empty()) {
    r.SendError(503, "no worker is running");
    return;
  }
  Ask(std::move(calls), [r](Calls done) {
    for (const Call& c : done) {
      if (!c.reply.ok || c.reply.status < 200 || c.reply.status > 299) {
        r.Send(Forward(c));
        return;
      }
    }
    r.Send(Forward(done.front()));
  });
}

void SupervisorAdmin::Impl::Stop(const http::Responder& r) {
  r.SendJson(200, {{"state", "stopping"}});
  if (!view.stop) return;
  // Deferred to its own loop turn: the stop may end the supervisor's
  // loop, which destroys this server, which must not happen inside its
  // own handler.
  struct Deferred {
    uv_timer_t timer;
    std::function<void(const std::string&)> stop;
  };
  auto* d = new Deferred;
  d->stop = view.stop;
  uv_timer_init(loop, &d->timer);
  d->timer.data = d;
  uv_timer_start(
      &d->timer,
      [](uv_timer_t* t) {
        auto* self = static_cast<Deferred*>(t->data);
        auto stop = std::move(self->stop);
        uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) {
          delete static_cast<Deferred*>(h->data);
        });
        stop("api stop");
      },
      0, 0);
}

void SupervisorAdmin::Impl::AddRoutes() {
  using http::Request;
  using http::Responder;
  Impl* self = this;
  auto route = [&](const char* method, const char* pattern, http::Handler h) {
    crawld::Status s = self->server->Route(method, pattern, std::move(h));
    (void)s;  // literal patterns, tested
  };
  route("GET", "/api/status",
        [self](const Request& q, Responder r) { self->Status(q, r); });
  route("GET", "/metrics", [self](const Request& q, Responder r) {
    self->Metrics(q, r, /*as_json=*/false);
  });
  route("GET", "/api/metrics", [self](const Request& q, Responder r) {
    self->Metrics(q, r, /*as_json=*/true);
  });
  route("POST", "/api/pause", [self](const Request& q, Responder r) {
    self->Broadcast(q, r, "paused");
  });
  route("POST", "/api/resume", [self](const Request& q, Responder r) {
    self->Broadcast(q, r, "running");
  });
  route("POST", "/api/stop",
        [self](const Request&, Responder r) { self->Stop(r); });
  auto to_first = [self](const Request& q, Responder r) {
    self->ToFirst(self->MakeCall(0, q), 0, "", r);
  };
  route("POST", "/api/seeds", to_first);
  route("POST", "/api/rules/reload",
        [self](const Request& q, Responder r) { self->RulesReload(q, r); });
  route("POST", "/api/rules/test", to_first);
  route("GET", "/api/hosts/{host}",
        [self](const Request& q, Responder r) { self->Host(q, r); });
  route("GET", "/api/hosts",
        [self](const Request& q, Responder r) { self->ListHosts(q, r); });
  route("GET", "/api/rules", to_first);
  route("GET", "/api/docs",
        [self](const Request& q, Responder r) { self->Docs(q, r); });
  route("GET", "/api/docs/record",
        [self](const Request& q, Responder r) { self->Record(q, r); });
  route("GET", "/api/reports",
        [self](const Request& q, Responder r) { self->reports->List(q, r); });
  route("GET", "/api/reports/{name}",
        [self](const Request& q, Responder r) { self->reports->Get(q, r); });
  // The web console, served here like the API it calls: what users with
  // several workers open (console/console.h).
  crawld::Status cs =
      console::AddRoutes(server.get(), ConsoleOptions(options.admin));
  (void)cs;  // fixed patterns, added once; tested
}

crawld::Status SupervisorAdmin::Impl::PublishUrl() {
  const std::string& a = options.admin.address;
  url = "http://" + (a.find(':') != std::string::npos ? "[" + a + "]" : a) +
        ":" + std::to_string(server->port());
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir + "/run", ec);
  // A URL file left by a killed worker of an earlier run could name a port
  // that another process has since taken.
  for (int i = 0; i < options.workers; ++i) {
    std::filesystem::remove(options.data_dir + "/run/admin-" +
                                std::to_string(options.first_worker + i) +
                                ".url",
                            ec);
  }
  url_file = options.data_dir + "/run/admin.url";
  const std::string tmp = url_file + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return Status::IOError("supervisor admin: cannot write " + tmp);
  }
  fprintf(f, "%s\n", url.c_str());
  const bool ok = fclose(f) == 0;
  std::filesystem::rename(tmp, url_file, ec);
  if (!ok || ec) {
    return Status::IOError("supervisor admin: cannot write " + url_file);
  }
  return Status::Ok();
}

Result<std::unique_ptr<SupervisorAdmin>> SupervisorAdmin::Start(
    uv_loop_s* loop, const Options& options, View view) {
  // Local workers may lie past the ring (drainers handing over their
  // hosts), so only the counts themselves are checked.
  if (options.workers < 1 || options.total_workers < 1 ||
      options.first_worker < 0) {
    return Status::InvalidArgument(
        "supervisor admin: bad worker counts (workers " +
        std::to_string(options.workers) + ", first " +
        std::to_string(options.first_worker) + ", total " +
        std::to_string(options.total_workers) + ")");
  }
  if (options.admin.port < 0 || options.admin.port > 65535) {
    return Status::InvalidArgument("supervisor admin: bad port " +
                                   std::to_string(options.admin.port));
  }
  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = options;
  impl->view = std::move(view);
  http::Server::Options ao;
  ao.bind_address = options.admin.address;
  ao.port = static_cast<uint16_t>(options.admin.port);
  ao.token = options.admin.token;
  auto server = http::Server::Create(loop, ao);
  if (!server.ok()) return server.status();
  impl->server = std::move(server).value();
  http::Client::Options co;
  co.timeout_ms = options.worker_timeout_ms;
  auto client = http::Client::Create(loop, co);
  if (!client.ok()) return client.status();
  impl->client = std::move(client).value();
  impl->reports = std::make_unique<ReportApi>(
      std::make_unique<UvWorkPool>(loop), options.data_dir);
  impl->disk = std::make_unique<DiskUsage>(options.data_dir);

  impl->AddRoutes();
  if (Status s = impl->PublishUrl(); !s.ok()) return s;
  impl->paused_pids.assign(static_cast<size_t>(options.workers), -1);
  impl->keeper = new uv_timer_t;
  uv_timer_init(loop, impl->keeper);
  impl->keeper->data = impl.get();
  uv_timer_start(
      impl->keeper,
      [](uv_timer_t* t) { static_cast<Impl*>(t->data)->KeepPaused(); },
      kKeepPausedMs, kKeepPausedMs);
  return std::unique_ptr<SupervisorAdmin>(new SupervisorAdmin(std::move(impl)));
}

SupervisorAdmin::SupervisorAdmin(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

SupervisorAdmin::~SupervisorAdmin() {
  std::error_code ec;
  std::filesystem::remove(impl_->url_file, ec);
}

uint16_t SupervisorAdmin::port() const { return impl_->server->port(); }
const std::string& SupervisorAdmin::url() const { return impl_->url; }

}  // namespace crawld::daemon
