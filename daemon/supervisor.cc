// daemon/supervisor.cc: see supervisor.h.
#include "daemon/supervisor.h"

#include <fmt/format.h>
#include <uv.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "conf/overrides.h"
#include "conf/read_file.h"
#include "conf/rules.h"
#include "daemon/control.h"
#include "daemon/event_log.h"
#include "daemon/membership.h"
#include "daemon/progress.h"
#include "daemon/supervisor_admin.h"
#include "daemon/supervisor_impl.h"

namespace crawld::daemon {
namespace {

int64_t NowMs() { return static_cast<int64_t>(uv_hrtime() / 1000000); }

// Consecutive 200 ms ticks with every worker idle and no URL moving between
// them before the crawl is done: one second.
constexpr int kQuietTicks = 5;
constexpr uint64_t kTickMs = 200;

}  // namespace

Status Supervisor::Spawn(Child& c) {
  const std::vector<std::string> args = {opt_.crawld_path,
                                         "--worker",
                                         std::to_string(Global(c)),
                                         "--workers",
                                         std::to_string(opt_.total_workers),
                                         "--config",
                                         opt_.config_file,
                                         "--seeds",
                                         opt_.seeds_file,
                                         "--control-fd",
                                         "3",
                                         "--quiet"};
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  c.pipe = new uv_pipe_t;
  uv_pipe_init(&loop_, c.pipe, 0);
  c.pipe->data = &c;
  uv_stdio_container_t stdio[5];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = 1;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  stdio[3].flags = static_cast<uv_stdio_flags>(
      UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE);
  stdio[3].data.stream = reinterpret_cast<uv_stream_t*>(c.pipe);
  // The data directory's lock, held by the worker too (see
  // SupervisorOptions::data_lock_fd); the worker never touches it.
  stdio[4].flags = UV_INHERIT_FD;
  stdio[4].data.fd = opt_.data_lock_fd;
  uv_process_options_t po{};
  po.file = opt_.crawld_path.c_str();
  po.args = argv.data();
  po.stdio_count = opt_.data_lock_fd >= 0 ? 5 : 4;
  po.stdio = stdio;
  po.exit_cb = [](uv_process_t* p, int64_t status, int signal) {
    Child* child = static_cast<Child*>(p->data);
    child->sup->OnExit(*child, status, signal);
  };
  c.proc = new uv_process_t;
  c.proc->data = &c;
  if (int rc = uv_spawn(&loop_, c.proc, &po); rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(c.proc),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
    uv_close(reinterpret_cast<uv_handle_t*>(c.pipe),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_pipe_t*>(h); });
    c.proc = nullptr;
    c.pipe = nullptr;
    return Status::IOError("cannot start worker " + std::to_string(c.id) +
                           " (" + opt_.crawld_path + "): " + uv_strerror(rc));
  }
  c.buf.clear();
  c.go_sent = c.stop_sent = false;
  c.fresh = c.ready = c.idle = false;
  c.epoch = 0;
  c.ring_sent = c.go_epoch = -1;
  c.lease_sent = 0;
  c.reload_at_start = reload_seq_;
  StartReading(c);
  if (stopping_) Send(c, "stop " + reason_);
  return Status::Ok();
}

void Supervisor::OnLine(Child& c, std::string_view line) {
  auto j = json::Parse(line);
  if (!j.ok() || !j->is_object()) return;
  auto num = [&](const char* k) -> uint64_t {
    const Json* v = json::Find(*j, k);
    return v != nullptr && v->is_number()
               ? static_cast<uint64_t>(v->get<double>())
               : 0;
  };
  auto flag = [&](const char* k) {
    const Json* v = json::Find(*j, k);
    return v != nullptr && v->is_boolean() && v->get<bool>();
  };
  c.fresh = true;
  c.ready = flag("ready");
  c.idle = flag("idle");
  c.pages = num("pages");
  c.bytes = num("bytes");
  c.queued = num("queued");
  c.active = num("active");
  c.hosts = num("hosts");
  c.sent = num("sent");
  c.received = num("received");
  c.epoch = static_cast<int64_t>(num("epoch"));
  c.reload = num("reload");
  c.reload_ok = flag("reload_ok");
  if (c.ready) c.backoff_ms = 0;
}

void Supervisor::Send(Child& c, const std::string& line) {
  if (c.pipe == nullptr) return;
  struct Req {
    uv_write_t req;
    std::string data;
  };
  auto* r = new Req;
  r->data = line + "\n";
  uv_buf_t buf =
      uv_buf_init(r->data.data(), static_cast<unsigned>(r->data.size()));
  if (uv_write(&r->req, reinterpret_cast<uv_stream_t*>(c.pipe), &buf, 1,
               [](uv_write_t* w, int) { delete reinterpret_cast<Req*>(w); }) !=
      0) {
    delete r;
  }
}

void Supervisor::StartReading(Child& c) {
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(c.pipe),
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        Child* child = static_cast<Child*>(h->data);
        buf->base = child->chunk;
        buf->len = sizeof(child->chunk);
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
        Child* child = static_cast<Child*>(s->data);
        if (n < 0) {
          uv_read_stop(s);  // the worker is exiting; OnExit follows
          return;
        }
        child->buf.append(buf->base, static_cast<size_t>(n));
        size_t nl;
        while ((nl = child->buf.find('\n')) != std::string::npos) {
          std::string line = child->buf.substr(0, nl);
          child->buf.erase(0, nl + 1);
          child->sup->OnLine(*child, line);
        }
      });
}

void Supervisor::OnExit(Child& c, int64_t status, int signal) {
  uv_close(reinterpret_cast<uv_handle_t*>(c.proc),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
  uv_close(reinterpret_cast<uv_handle_t*>(c.pipe),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_pipe_t*>(h); });
  c.proc = nullptr;
  c.pipe = nullptr;
  c.fresh = c.idle = c.ready = false;
  if (stopping_ || (status == 0 && signal == 0)) {
    c.finished = true;
    MaybeEnd();
    return;
  }
  const std::string worker = std::to_string(Global(c));
  if (signal == 0 && (status == control::kExitStoreError ||
                      status == control::kExitStartFailed)) {
    // Fatal for the crawl: restarting would fail again (a full disk, state
    // that cannot be opened). The others stop at a checkpoint.
    const char* why =
        status == control::kExitStoreError ? "store_error" : "worker_failed";
    log_.Write(Level::kError, "worker_failed",
               {{"worker", worker}, {"reason", why}});
    progress_.Message(
        fmt::format("worker {} stopped: {}; stopping the crawl", c.id, why));
    c.finished = true;
    Stop(why);
    return;
  }
  if (signal == 0 && status == control::kExitFenced) {
    // Its lease ran out (Redis out of reach): not a crash. It waits for a
    // ring and a go, which come once the node is back in the crawl.
    log_.Write(Level::kWarn, "worker_fenced", {{"worker", worker}});
    Restart(c, opt_.restart_min_ms);
    return;
  }
  ++c.crashes;
  ++restarts_;
  c.backoff_ms = c.backoff_ms == 0
                     ? opt_.restart_min_ms
                     : std::min(opt_.restart_max_ms, 2 * c.backoff_ms);
  log_.Write(Level::kWarn, "worker_restart",
             {{"worker", worker},
              {"signal", std::to_string(signal)},
              {"status", std::to_string(status)},
              {"delay_ms", std::to_string(c.backoff_ms)}});
  progress_.Message(fmt::format(
      "worker {} {} {}; restarting in {} ms", c.id,
      signal != 0 ? "killed by signal" : "exited with status",
      signal != 0 ? signal : static_cast<int>(status), c.backoff_ms));
  Restart(c, c.backoff_ms);
}

void Supervisor::Restart(Child& c, int delay_ms) {
  uv_timer_start(
      &c.restart_timer,
      [](uv_timer_t* t) {
        Child* child = static_cast<Child*>(t->data);
        Supervisor* sup = child->sup;
        if (sup->stopping_) {
          child->finished = true;
          sup->MaybeEnd();
          return;
        }
        if (Status s = sup->Spawn(*child); !s.ok()) {
          sup->progress_.Message("crawld: " + s.ToString());
          sup->Stop("worker_failed");
        }
      },
      static_cast<uint64_t>(delay_ms), 0);
}

void Supervisor::Tick() {
  log_.Flush();  // a few lines a minute: let operators and tests see them
  if (stopping_) return;
  bool all_running = true, all_ready = true, all_idle = true, all_fresh = true;
  uint64_t pages = 0, sent = 0, received = 0;
  for (auto& c : children_) {
    pages += c->pages;
    if (c->finished) continue;  // a drainer that handed everything over
    if (Drainer(*c) && c->ready && !c->stop_sent && c->proc != nullptr) {
      // Its handover is acknowledged: it stops and deletes its state.
      Send(*c, "stop drained");
      c->stop_sent = true;
    }
    all_running &= c->proc != nullptr;
    all_ready &= c->ready;
    all_idle &= c->idle;
    all_fresh &= c->fresh;
    c->fresh = false;
    sent += c->sent;
    received += c->received;
  }
  CheckReload();
  if (cluster_ != nullptr) {
    ClusterTick(all_running && all_idle && all_fresh, sent, received, pages);
    if (stopping_) return;
  } else {
    // Go: all at once the first time (after every handover), then to each
    // restarted worker as soon as its own resend is acknowledged.
    if (!all_ready_once_ && all_running && all_ready) all_ready_once_ = true;
    if (all_ready_once_) {
      for (auto& c : children_) {
        if (c->proc != nullptr && c->ready && !c->go_sent && !Drainer(*c)) {
          Send(*c, "go");
          c->go_sent = true;
        }
      }
    }
    bool go_all = all_ready_once_;
    for (auto& c : children_) go_all &= c->go_sent || c->finished;
    const bool local_idle = go_all && all_running && all_idle && all_fresh;
    if (opt_.config.crawl.max_pages > 0 &&
        pages >= opt_.config.crawl.max_pages) {
      Stop("max_pages");
      return;
    }
    // Done: every worker idle (nothing queued, in flight or unacknowledged)
    // in fresh reports for a second in which no URL moved between workers.
    if (local_idle && sent == last_sent_ && received == last_received_) {
      if (++quiet_ticks_ >= kQuietTicks) {
        Stop("done");
        return;
      }
    } else {
      quiet_ticks_ = 0;
    }
    last_sent_ = sent;
    last_received_ = received;
  }
  const int64_t now = NowMs();
  const double every =
      opt_.progress_tty ? std::min(opt_.config.crawl.progress_interval_s, 0.5)
                        : opt_.config.crawl.progress_interval_s;
  if (now - last_progress_ms_ >= static_cast<int64_t>(every * 1000)) {
    Progress(false);
  }
}

void Supervisor::Reload() {
  // Both files are checked here first: a bad one leaves the old rules in
  // every worker, instead of new rules in some and old in others.
  Status failed = Status::Ok();
  const conf::Config& cfg = opt_.config;
  if (!cfg.crawl.rules_file.empty()) {
    if (auto r = conf::RuleSet::Load(cfg.crawl.rules_file); !r.ok()) {
      failed = r.status();
    }
  }
  if (failed.ok() && !cfg.politeness.overrides_file.empty()) {
    if (auto o = conf::Overrides::Load(cfg.politeness.overrides_file);
        !o.ok()) {
      failed = o.status();
    }
  }
  if (!failed.ok()) {
    log_.Write(Level::kError, "rules_reload_failed",
               {{"error", failed.ToString()}});
    fprintf(stderr, "%scrawld: rules reload failed, previous rules stay: %s\n",
            opt_.progress_tty ? "\r\033[K" : "", failed.ToString().c_str());
    return;
  }
  ++reload_seq_;
  reload_pending_ = true;
  for (auto& c : children_) {
    if (c->proc != nullptr) Send(*c, control::ReloadLine(reload_seq_));
  }
}

void Supervisor::CheckReload() {
  if (!reload_pending_) return;
  std::string failed;
  int workers = 0;
  for (auto& c : children_) {
    // A worker started after the reload read the files at its start.
    if (c->proc == nullptr || c->reload_at_start >= reload_seq_) continue;
    if (c->reload < reload_seq_) return;  // not answered yet
    ++workers;
    if (!c->reload_ok) failed += " " + std::to_string(Global(*c));
  }
  reload_pending_ = false;
  if (!failed.empty()) {
    // Only if a file changed again between the check and the load.
    log_.Write(Level::kError, "rules_reload_failed",
               {{"workers", failed.substr(1)}});
    fprintf(stderr,
            "%scrawld: rules reload failed in worker(s)%s (a file changed "
            "during the reload?); see their logs\n",
            opt_.progress_tty ? "\r\033[K" : "", failed.c_str());
    return;
  }
  log_.Write(Level::kInfo, "rules_reloaded",
             {{"workers", std::to_string(workers)}});
  progress_.Message(fmt::format("rules reloaded in {} workers", workers));
}

void Supervisor::Progress(bool final_line) {
  ProgressFigures f;
  int up = 0;
  for (auto& c : children_) {
    f.pages += c->pages;
    f.bytes += c->bytes;
    f.queued += c->queued;
    f.hosts += c->hosts;
    f.active += c->active;
    up += c->proc != nullptr;
  }
  f.middle =
      fmt::format("workers {}/{} | restarts {}", up, opt_.workers, restarts_);
  const int64_t now = NowMs();
  last_progress_ms_ = now;
  progress_.PrintFigures(f, now * 1000, start_ms_ * 1000, final_line);
}

void Supervisor::Stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  reason_ = reason;
  for (auto& c : children_) {
    if (c->proc != nullptr) {
      Send(*c, "stop " + reason);
    } else if (!c->finished) {
      uv_timer_stop(&c->restart_timer);
      c->finished = true;
    }
  }
  MaybeEnd();
}

void Supervisor::MaybeEnd() {
  if (ended_) return;
  for (auto& c : children_) {
    if (!c->finished) return;
  }
  ended_ = true;
  if (reason_.empty()) reason_ = "drained";  // a node leaving, all handed over
  log_.Write(Level::kInfo, "crawl_end", {{"reason", reason_}});
  log_.Flush();
  uv_timer_stop(&tick_);
  admin_.reset();  // its listener would keep the loop running
  if (cluster_ != nullptr) {
    // Out of the view at once: the others need not wait for our heartbeat
    // to expire (our workers have all exited).
    cluster_->Leave([this] {
      cluster_.reset();
      CloseHandles();
    });
    return;
  }
  CloseHandles();
}

void Supervisor::CloseHandles() {
  uv_timer_stop(&tick_);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sighup_), nullptr);
  for (auto& c : children_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&c->restart_timer), nullptr);
  }
}

void Supervisor::StartSignals() {
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sighup_);
  sigint_.data = sigterm_.data = sighup_.data = this;
  auto on_signal = [](uv_signal_t* h, int signum) {
    static_cast<Supervisor*>(h->data)->Stop(
        signum == SIGINT ? "signal (SIGINT)" : "signal (SIGTERM)");
  };
  uv_signal_start(&sigint_, on_signal, SIGINT);
  uv_signal_start(&sigterm_, on_signal, SIGTERM);
  // What `systemctl reload` sends: without a handler it would end the
  // supervisor, and with it the crawl.
  uv_signal_start(
      &sighup_,
      [](uv_signal_t* h, int) {
        auto* self = static_cast<Supervisor*>(h->data);
        if (!self->stopping_) self->Reload();
      },
      SIGHUP);
}

Status Supervisor::StartAdmin() {
  if (!opt_.config.admin.enabled) return Status::Ok();
  SupervisorAdmin::Options ao;
  ao.admin = opt_.config.admin;
  ao.data_dir = opt_.config.crawl.data_dir;
  ao.workers = Children();
  ao.first_worker = opt_.first_worker;
  ao.total_workers = opt_.total_workers;
  ao.ring.virtual_nodes = opt_.config.cluster.virtual_nodes;
  SupervisorAdmin::View view;
  view.supervisor_status = [this] {
    Json ws = Json::array();
    for (auto& c : children_) {
      Json w = {{"id", Global(*c)}, {"restarts", c->crashes}};
      w["up"] = c->proc != nullptr;
      if (c->proc != nullptr) w["pid"] = c->proc->pid;
      ws.push_back(std::move(w));
    }
    Json st = Json::object();
    st["state"] = stopping_ ? "stopping" : "running";
    st["uptime_s"] = (NowMs() - start_ms_) / 1000.0;
    st["workers"] = std::move(ws);
    if (cluster_ != nullptr) st["cluster"] = ClusterJson();
    return st;
  };
  view.stop = [this](const std::string& why) { Stop(why); };
  auto admin = SupervisorAdmin::Start(&loop_, ao, std::move(view));
  if (!admin.ok()) return admin.status();
  admin_ = std::move(admin).value();
  progress_.Message("admin API: " + admin_->url());
  return Status::Ok();
}

Result<CrawlSummary> Supervisor::Run() {
  if (int rc = uv_loop_init(&loop_); rc != 0) {
    return Status::Internal(std::string("uv_loop_init: ") + uv_strerror(rc));
  }
  start_ms_ = last_progress_ms_ = NowMs();
  const std::string& data = opt_.config.crawl.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(data + "/logs", ec);
  if (Status s = log_.Open(data + "/logs/supervisor.jsonl"); !s.ok()) {
    return s;
  }
  log_.Write(Level::kInfo, "crawl_start",
             {{"workers", std::to_string(opt_.workers)},
              {"drainers", std::to_string(opt_.drainers)},
              {"first_worker", std::to_string(opt_.first_worker)}});
  uv_timer_init(&loop_, &tick_);
  tick_.data = this;
  StartSignals();
  Status failed = StartCluster();
  for (int i = 0; i < Children(); ++i) {
    auto c = std::make_unique<Child>();
    c->sup = this;
    c->id = i;
    uv_timer_init(&loop_, &c->restart_timer);
    c->restart_timer.data = c.get();
    children_.push_back(std::move(c));
  }
  if (Status s = StartAdmin(); failed.ok()) failed = s;
  for (auto& c : children_) {
    if (failed.ok()) failed = Spawn(*c);
    if (!failed.ok() && c->proc == nullptr) c->finished = true;
  }
  if (!failed.ok()) Stop("worker_failed");
  uv_timer_start(
      &tick_, [](uv_timer_t* t) { static_cast<Supervisor*>(t->data)->Tick(); },
      kTickMs, kTickMs);
  MaybeEnd();
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
  Progress(true);
  if (!failed.ok()) return failed;
  return SumWorkerSummaries();
}

CrawlSummary Supervisor::SumWorkerSummaries() const {
  // The workers' own summaries, summed.
  CrawlSummary sum;
  sum.stop_reason = reason_;
  sum.seconds = (NowMs() - start_ms_) / 1000.0;
  for (int i = 0; i < Children(); ++i) {
    auto text = conf::internal::ReadSmallFile(
        opt_.config.crawl.data_dir + "/worker-" +
            std::to_string(opt_.first_worker + i) + "/summary.json",
        64u << 20);
    if (text.ok()) sum.AddFiguresOf(*text);
  }
  if (restarts_ > 0) sum.counts["worker_restarts"] = restarts_;
  return sum;
}

Result<CrawlSummary> RunSupervisor(const SupervisorOptions& options) {
  Supervisor s(options);
  return s.Run();
}

}  // namespace crawld::daemon
