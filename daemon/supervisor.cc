// daemon/supervisor.cc: see supervisor.h.
#include "daemon/supervisor.h"

#include <hiredis/hiredis.h>
#include <uv.h>

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "conf/read_file.h"
#include "daemon/supervisor_admin.h"

namespace crawld::daemon {
namespace {

int64_t NowMs() { return static_cast<int64_t>(uv_hrtime() / 1000000); }

// Consecutive 200 ms ticks with every worker idle and no URL moving between
// them before the crawl is done: one second.
constexpr int kQuietTicks = 5;
constexpr uint64_t kTickMs = 200;

class Supervisor {
 public:
  explicit Supervisor(const SupervisorOptions& o) : opt_(o) {}

  Result<CrawlSummary> Run();

 private:
  struct Child {
    Supervisor* sup = nullptr;
    int id = 0;
    uv_process_t* proc = nullptr;  // while running
    uv_pipe_t* pipe = nullptr;     // while running
    std::string buf;
    bool go_sent = false;
    bool stop_sent = false;
    bool finished = false;  // exited after a stop, or on its own with 0
    int crashes = 0;
    int backoff_ms = 0;
    uv_timer_t restart_timer{};
    // The latest report, and whether one came since the last tick.
    bool fresh = false, ready = false, idle = false;
    uint64_t pages = 0, bytes = 0, queued = 0, active = 0, hosts = 0;
    uint64_t sent = 0, received = 0;
  };

  Status Spawn(Child& c);
  void OnExit(Child& c, int64_t status, int signal);
  void OnLine(Child& c, std::string_view line);
  void Send(Child& c, const std::string& line);
  void Tick();
  void Stop(const std::string& reason);
  void Progress(bool final_line);
  void MaybeEnd();
  // Cluster: publishes this node's state and reads the others'. Returns
  // the crawl-wide verdict: "" (go on), or the reason to stop.
  std::string ClusterTick(bool local_idle, uint64_t sent, uint64_t received,
                          uint64_t pages);
  // This node's workers have all handed over what they no longer own.
  bool local_ready_ = false;
  // Every node's have (cluster), read by the last ClusterTick.
  bool cluster_ready_ = false;
  bool stale_done_cleared_ = false;
  int Global(const Child& c) const { return opt_.first_worker + c.id; }
  bool Drainer(const Child& c) const { return Global(c) >= opt_.total_workers; }
  int Children() const { return opt_.workers + opt_.drainers; }

  SupervisorOptions opt_;
  uv_loop_t loop_{};
  uv_timer_t tick_{};
  uv_signal_t sigint_{}, sigterm_{};
  std::vector<std::unique_ptr<Child>> children_;
  bool all_ready_once_ = false;
  bool stopping_ = false;
  bool ended_ = false;
  std::string reason_;
  int quiet_ticks_ = 0;
  uint64_t last_sent_ = UINT64_MAX, last_received_ = UINT64_MAX;
  int64_t start_ms_ = 0, last_progress_ms_ = 0;
  uint64_t last_pages_ = 0;
  uint64_t restarts_ = 0;
  std::unique_ptr<SupervisorAdmin> admin_;  // the API (docs/API.md)
  // Cluster state (config cluster.redis non-empty).
  redisContext* redis_ = nullptr;
  int64_t redis_retry_ms_ = 0;
  uint64_t cluster_sent_ = UINT64_MAX, cluster_received_ = UINT64_MAX;
  int cluster_quiet_ticks_ = 0;

 public:
  ~Supervisor() {
    if (redis_ != nullptr) redisFree(redis_);
  }
};

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
  uv_stdio_container_t stdio[4];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = 1;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  stdio[3].flags = static_cast<uv_stdio_flags>(
      UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE);
  stdio[3].data.stream = reinterpret_cast<uv_stream_t*>(c.pipe);
  uv_process_options_t po{};
  po.file = opt_.crawld_path.c_str();
  po.args = argv.data();
  po.stdio_count = 4;
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
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(c.pipe),
      [](uv_handle_t*, size_t, uv_buf_t* buf) {
        static char chunk[4096];  // one loop in this process: no sharing
        buf->base = chunk;
        buf->len = sizeof(chunk);
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
  ++c.crashes;
  ++restarts_;
  c.backoff_ms = c.backoff_ms == 0
                     ? opt_.restart_min_ms
                     : std::min(opt_.restart_max_ms, 2 * c.backoff_ms);
  if (opt_.progress != nullptr) {
    fprintf(opt_.progress, "%sworker %d %s %d; restarting in %d ms\n",
            opt_.progress_tty ? "\r\033[K" : "", c.id,
            signal != 0 ? "killed by signal" : "exited with status",
            signal != 0 ? signal : static_cast<int>(status), c.backoff_ms);
  }
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
          if (sup->opt_.progress != nullptr) {
            fprintf(sup->opt_.progress, "crawld: %s\n", s.ToString().c_str());
          }
          sup->Stop("worker_failed");
        }
      },
      static_cast<uint64_t>(c.backoff_ms), 0);
}

void Supervisor::Tick() {
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
  // Go: all at once the first time (after every handover), then to each
  // restarted worker as soon as its own resend is acknowledged.
  // In a cluster the first go waits for every node's handover too (a
  // restart with another node count moves hosts between nodes).
  local_ready_ = all_running && all_ready;
  if (!all_ready_once_ && local_ready_ &&
      (opt_.config.cluster.redis.empty() || cluster_ready_)) {
    all_ready_once_ = true;
  }
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
  if (!opt_.config.cluster.redis.empty()) {
    const std::string verdict = ClusterTick(local_idle, sent, received, pages);
    if (!verdict.empty()) Stop(verdict);
    if (stopping_) return;
  } else if (opt_.config.crawl.max_pages > 0 &&
             pages >= opt_.config.crawl.max_pages) {
    Stop("max_pages");
    return;
  }
  // Done: every worker idle (nothing queued, in flight or unacknowledged)
  // in fresh reports for a second in which no URL moved between workers.
  if (opt_.config.cluster.redis.empty() && local_idle && sent == last_sent_ &&
      received == last_received_) {
    if (++quiet_ticks_ >= kQuietTicks) {
      Stop("done");
      return;
    }
  } else {
    quiet_ticks_ = 0;
  }
  last_sent_ = sent;
  last_received_ = received;
  const int64_t now = NowMs();
  const double every =
      opt_.progress_tty ? std::min(opt_.config.crawl.progress_interval_s, 0.5)
                        : opt_.config.crawl.progress_interval_s;
  if (now - last_progress_ms_ >= static_cast<int64_t>(every * 1000)) {
    Progress(false);
  }
}

std::string Supervisor::ClusterTick(bool local_idle, uint64_t sent,
                                    uint64_t received, uint64_t pages) {
  const conf::ClusterConfig& cc = opt_.config.cluster;
  const int64_t now = NowMs();
  if (redis_ == nullptr) {
    if (now < redis_retry_ms_) return "";
    redis_retry_ms_ = now + 1000;
    const conf::RedisAddress addr = conf::ParseRedisUrl(cc.redis);
    struct timeval tv = {0, 200000};
    redis_ = redisConnectWithTimeout(addr.host.c_str(), addr.port, tv);
    if (redis_ == nullptr || redis_->err != 0) {
      if (redis_ != nullptr) redisFree(redis_);
      redis_ = nullptr;
      return "";
    }
    redisSetTimeout(redis_, tv);
  }
  const std::string prefix = "crawld:" + cc.name + ":";
  auto command = [&](const std::vector<std::string>& args) -> redisReply* {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(
        redis_, static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (r == nullptr) {  // connection lost: reconnect on a later tick
      redisFree(redis_);
      redis_ = nullptr;
    }
    return r;
  };
  if (!stale_done_cleared_) {
    // A done key at start belongs to an earlier run: this crawl cannot have
    // ended without this node (its state was missing, so nobody was idle).
    redisReply* del = command({"DEL", prefix + "done"});
    if (del == nullptr) return "";
    freeReplyObject(del);
    stale_done_cleared_ = true;
  }
  char state[160];
  snprintf(state, sizeof(state), "%d %" PRIu64 " %" PRIu64 " %" PRIu64 " %d",
           local_idle ? 1 : 0, sent, received, pages,
           local_ready_ || all_ready_once_ ? 1 : 0);
  redisReply* r =
      command({"SET", prefix + "node-state:" + std::to_string(cc.node_id),
               state, "PX", "3000"});
  if (r == nullptr) return "";
  freeReplyObject(r);
  r = command({"GET", prefix + "done"});
  if (r == nullptr) return "";
  std::string verdict;
  if (r->type == REDIS_REPLY_STRING) verdict.assign(r->str, r->len);
  freeReplyObject(r);
  if (!verdict.empty()) return verdict;
  std::vector<std::string> mget = {"MGET"};
  for (int n = 0; n < cc.nodes; ++n) {
    mget.push_back(prefix + "node-state:" + std::to_string(n));
  }
  r = command(mget);
  if (r == nullptr) return "";
  bool all_idle = r->type == REDIS_REPLY_ARRAY &&
                  r->elements == static_cast<size_t>(cc.nodes);
  bool all_ready = all_idle;
  uint64_t total_sent = 0, total_received = 0, total_pages = 0;
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    int idle = 0, ready = 0;
    unsigned long long s = 0, rc = 0, p = 0;
    if (e->type != REDIS_REPLY_STRING ||
        sscanf(e->str, "%d %llu %llu %llu %d", &idle, &s, &rc, &p, &ready) !=
            5) {
      // A node is down or not started yet: not done, and no first go.
      all_idle = all_ready = false;
      continue;
    }
    all_idle &= idle == 1;
    all_ready &= ready == 1;
    total_sent += s;
    total_received += rc;
    total_pages += p;
  }
  freeReplyObject(r);
  cluster_ready_ = all_ready;
  std::string stop;
  if (opt_.config.crawl.max_pages > 0 &&
      total_pages >= opt_.config.crawl.max_pages) {
    stop = "max_pages";
  } else if (all_idle && total_sent == cluster_sent_ &&
             total_received == cluster_received_) {
    // Two seconds: a stream entry waits up to one read block (100 ms)
    // before its receiver counts it, and reports are 200 ms apart.
    if (++cluster_quiet_ticks_ >= 2 * kQuietTicks) stop = "done";
  } else {
    cluster_quiet_ticks_ = 0;
  }
  cluster_sent_ = total_sent;
  cluster_received_ = total_received;
  if (!stop.empty()) {
    // Every node sees it on its next tick. Kept a minute, so that a node
    // restarting right after the end does not wait for peers that are gone.
    r = command({"SET", prefix + "done", stop, "PX", "60000"});
    if (r != nullptr) freeReplyObject(r);
  }
  return stop;
}

void Supervisor::Progress(bool final_line) {
  if (opt_.progress == nullptr) return;
  const int64_t now = NowMs();
  uint64_t pages = 0, bytes = 0, queued = 0, hosts = 0, active = 0;
  int up = 0;
  for (auto& c : children_) {
    pages += c->pages;
    bytes += c->bytes;
    queued += c->queued;
    hosts += c->hosts;
    active += c->active;
    up += c->proc != nullptr;
  }
  const double dt = std::max<int64_t>(1, now - last_progress_ms_) / 1000.0;
  const double elapsed = std::max<int64_t>(1, now - start_ms_) / 1000.0;
  const double rate = final_line ? pages / elapsed : (pages - last_pages_) / dt;
  last_pages_ = pages;
  last_progress_ms_ = now;
  char line[256];
  snprintf(line, sizeof(line),
           "pages %" PRIu64 " | %.1f/s | queued %" PRIu64 " | hosts %" PRIu64
           " (active %" PRIu64 ") | workers %d/%d | restarts %" PRIu64
           " | %.1f MB | %.0fs",
           pages, rate, queued, hosts, active, up, opt_.workers, restarts_,
           bytes / 1048576.0, elapsed);
  if (opt_.progress_tty) {
    fprintf(opt_.progress, "\r\033[K%s%s", line, final_line ? "\n" : "");
  } else {
    fprintf(opt_.progress, "%s\n", line);
  }
  fflush(opt_.progress);
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
  admin_.reset();  // its listener would keep the loop running
  uv_timer_stop(&tick_);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
  for (auto& c : children_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&c->restart_timer), nullptr);
  }
}

Result<CrawlSummary> Supervisor::Run() {
  if (int rc = uv_loop_init(&loop_); rc != 0) {
    return Status::Internal(std::string("uv_loop_init: ") + uv_strerror(rc));
  }
  start_ms_ = last_progress_ms_ = NowMs();
  uv_timer_init(&loop_, &tick_);
  tick_.data = this;
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  sigint_.data = sigterm_.data = this;
  auto on_signal = [](uv_signal_t* h, int signum) {
    static_cast<Supervisor*>(h->data)->Stop(
        signum == SIGINT ? "signal (SIGINT)" : "signal (SIGTERM)");
  };
  uv_signal_start(&sigint_, on_signal, SIGINT);
  uv_signal_start(&sigterm_, on_signal, SIGTERM);
  Status failed = Status::Ok();
  for (int i = 0; i < Children(); ++i) {
    auto c = std::make_unique<Child>();
    c->sup = this;
    c->id = i;
    uv_timer_init(&loop_, &c->restart_timer);
    c->restart_timer.data = c.get();
    children_.push_back(std::move(c));
  }
  if (opt_.config.admin.enabled) {
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
      return st;
    };
    view.stop = [this](const std::string& why) { Stop(why); };
    auto admin = SupervisorAdmin::Start(&loop_, ao, std::move(view));
    if (admin.ok()) {
      admin_ = std::move(admin).value();
      if (opt_.progress != nullptr) {
        fprintf(opt_.progress, "admin API: %s\n", admin_->url().c_str());
      }
    } else {
      failed = admin.status();
    }
  }
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

  // The workers' own summaries, summed.
  CrawlSummary sum;
  sum.stop_reason = reason_;
  sum.seconds = (NowMs() - start_ms_) / 1000.0;
  for (int i = 0; i < Children(); ++i) {
    auto text = conf::internal::ReadSmallFile(
        opt_.config.crawl.data_dir + "/worker-" +
            std::to_string(opt_.first_worker + i) + "/summary.json",
        64u << 20);
    if (!text.ok()) continue;
    json::Limits limits;
    limits.max_bytes = 64u << 20;
    auto j = json::Parse(*text, limits);
    if (!j.ok()) continue;
    auto num = [&](const Json& o, const char* k) -> uint64_t {
      const Json* v = json::Find(o, k);
      return v != nullptr && v->is_number()
                 ? static_cast<uint64_t>(v->get<double>())
                 : 0;
    };
    sum.pages += num(*j, "pages");
    sum.robots_fetches += num(*j, "robots_fetches");
    sum.bytes += num(*j, "bytes");
    sum.queued_left += num(*j, "queued_left");
    if (const Json* counts = json::Find(*j, "counts");
        counts != nullptr && counts->is_object()) {
      for (const auto& [k, v] : counts->items()) {
        if (v.is_number())
          sum.counts[k] += static_cast<uint64_t>(v.get<double>());
      }
    }
  }
  if (restarts_ > 0) sum.counts["worker_restarts"] = restarts_;
  return sum;
}

}  // namespace

Result<CrawlSummary> RunSupervisor(const SupervisorOptions& options) {
  Supervisor s(options);
  return s.Run();
}

}  // namespace crawld::daemon
