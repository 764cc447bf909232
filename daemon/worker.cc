// One crawl worker: builds its parts from the config (worker_parts.cc),
// wires them to the loop (timers, signals) and runs the crawl. The
// supervisor's side of it is daemon/worker_link.cc.
// The way of one URL is daemon/crawl_path.cc; checkpoints and recovery
// daemon/recovery.cc; the exchange daemon/peers.cc; the admin API
// daemon/worker_api.cc.
#include "daemon/worker.h"

#include <curl/curl.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>

#include "checkpoint/crawl_state.h"
#include "cluster/cluster.h"
#include "daemon/component_options.h"
#include "daemon/worker_impl.h"

namespace crawld::daemon {

namespace {

int CurrentYear() {
  time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

}  // namespace

bool WorkerSeen::InsertIfNew(std::string_view host_key, uint64_t fp) {
  if (store_ == nullptr) return memory_->InsertIfNew(fp);
  Result<bool> r = store_->InsertIfNew(SeenHostHash(host_key), fp);
  if (r.ok()) return *r;
  // Better a URL fetched twice than one lost: an unreadable store says new.
  stats_->Count("seen_store_error");
  log_->Write(Level::kError, "seen_store_error",
              {{"error", r.status().ToString()}});
  return true;
}

Worker::Impl::Impl(const WorkerOptions& options)
    : options_(options),
      config_(options_.config),
      progress_(options_.progress, options_.progress_tty),
      canonicalizer_(CanonOptions(options_.config)),
      traps_(TrapOptions(options_.config, CurrentYear())) {}

Worker::Impl::~Impl() {
  if (handles_open_) {
    CloseAll();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  path_.reset();
  peers_.reset();
  api_.reset();
  ip_gate_.reset();
  ip_leases_.reset();
  fetch_.reset();
  resolve_.reset();
  waker_.reset();
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

// --- set-up
// -------------------------------------------------------------------

Status Worker::Impl::Init() {
  if (int rc = uv_loop_init(&loop_); rc != 0) {
    return Status::Internal(std::string("uv_loop_init: ") + uv_strerror(rc));
  }
  const std::string& data = config_.crawl.data_dir;
  std::error_code ec;
  for (const char* sub : {"warc", "logs", "tmp"}) {
    std::filesystem::create_directories(data + "/" + sub, ec);
    if (ec) return Status::IOError(data + "/" + sub + ": " + ec.message());
  }
  // One log per worker process: appends of several processes to one file
  // would interleave.
  const std::string log_name =
      options_.workers > 1
          ? "/logs/crawld-" + std::to_string(options_.worker_id) + ".jsonl"
          : std::string("/logs/crawld.jsonl");
  if (Status s = log_.Open(data + log_name); !s.ok()) return s;
  if (Status s = LoadRules(true); !s.ok()) return s;
  const std::string wdir =
      data + "/worker-" + std::to_string(options_.worker_id);
  if (Status s = OpenFrontier(wdir); !s.ok()) return s;
  if (Status s = OpenNetwork(); !s.ok()) return s;
  if (Status s = OpenIpGate(); !s.ok()) return s;
  if (Status s = OpenStore(); !s.ok()) return s;
  drainer_ = options_.worker_id >= options_.workers;
  if (Status s = OpenPeers(wdir); !s.ok()) return s;
  BuildPath();
  if (options_.control_fd >= 0) {
    if (peers_ != nullptr) peers_->set_go(false);
    if (Status s = StartControl(); !s.ok()) return s;
  }
  if (config_.admin.enabled) {
    if (Status s = StartApi(); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Worker::Impl::LoadRules(bool initial) {
  // Both files are read before either is swapped in: a reload applies
  // entirely or not at all.
  std::unique_ptr<conf::RuleSet> rules;
  std::unique_ptr<conf::Overrides> overrides;
  Status failed = Status::Ok();
  if (config_.crawl.rules_file.empty()) {
    rules = conf::RuleSet::AcceptAll();
  } else if (auto r = conf::RuleSet::Load(config_.crawl.rules_file); r.ok()) {
    rules = std::move(r).value();
  } else {
    failed = r.status();
  }
  if (failed.ok()) {
    if (config_.politeness.overrides_file.empty()) {
      overrides = conf::Overrides::None();
    } else if (auto o =
                   conf::Overrides::Load(config_.politeness.overrides_file);
               o.ok()) {
      overrides = std::move(o).value();
    } else {
      failed = o.status();
    }
  }
  if (!failed.ok()) {
    if (initial) return failed;
    stats_.Count("rules_reload_failed");
    log_.Write(Level::kError, "rules_reload_failed",
               {{"error", failed.ToString()}});
    progress_.Message("rules reload failed, previous rules stay: " +
                      failed.ToString());
    return failed;
  }
  rules_ = std::move(rules);
  overrides_ = std::move(overrides);
  // The rules in force include override disallows: each host rebuilds
  // them from its cached robots.txt at its next page.
  if (path_ != nullptr) path_->SetRules(rules_.get());
  if (hosts_ != nullptr) hosts_->SetOverrides(overrides_.get());
  if (!initial) stats_.Count("rules_reloaded");
  log_.Write(Level::kInfo, initial ? "rules_loaded" : "rules_reloaded",
             {{"filter_rules", std::to_string(rules_->size())},
              {"overrides", std::to_string(overrides_->size())}});
  return Status::Ok();
}

// --- the run
// ------------------------------------------------------------------

Result<CrawlSummary> Worker::Impl::Run() {
  start_us_ = clock_.MonotonicUs();
  log_.Write(Level::kInfo, "crawl_start",
             {{"seeds", std::to_string(options_.seeds.size())},
              {"data_dir", config_.crawl.data_dir}});
  if (resumed_) {
    Result<int> previous = recovery_->Recover();
    if (!previous.ok()) return previous.status();
    previous_workers_ = *previous;
    progress_.Message("resumed: " + std::to_string(frontier_->queued()) +
                      " URLs queued, " +
                      std::to_string(stats_.count("recovered_records")) +
                      " records replayed");
    if (peers_ != nullptr && previous_workers_ != options_.workers) {
      std::vector<std::string> paths;
      const std::string dir = config_.crawl.data_dir + "/warc";
      for (const std::string& name :
           OwnWarcFiles(dir, config_.store.warc_prefix, options_.worker_id)) {
        paths.push_back(dir + "/" + name);
      }
      peers_->Rebalance(frontier_.get(), paths, previous_workers_);
    }
  }
  // Recrawl: the schedule entries of hosts other workers own now go to
  // them. At every start, not only after a rebalance: a hand-off that a
  // kill cut short is still here (a drainer's restart sees no rebalance).
  if (peers_ != nullptr && schedule_ != nullptr) path_->SweepSchedule();
  if (peers_ != nullptr) {
    // Replayed by Recover(); the checkpoint below holds what it had.
    if (Status s = peers_->OpenInboxLog(); !s.ok()) return s;
  }
  if (peers_ == nullptr || peers_->go()) EnqueueSeeds();  // else at go
  if (state_ != nullptr) {
    // A first checkpoint at once: a crash before the first interval then
    // does not replay the previous run's records again.
    if (Status s = recovery_->Checkpoint("start"); !s.ok()) return s;
  }
  StartTimers();
  Pump();
  uv_run(&loop_, UV_RUN_DEFAULT);

  // The last checkpoint: what is still queued (and what a signal aborted,
  // which went back to its queue) is there for the next start.
  if (Status s = recovery_->Checkpoint("exit"); !s.ok()) {
    stats_.Count("checkpoint_failed");
    log_.Write(Level::kError, "checkpoint_failed", {{"error", s.ToString()}});
  }
  if (Status s = warc_->Close(); !s.ok()) {
    log_.Write(Level::kError, "warc_close_failed", {{"error", s.ToString()}});
    stats_.Count("store_error");
  }
  if (drainer_ && stop_reason_ == "drained") CleanUpDrained();
  Progress(true);

  CrawlSummary summary;
  summary.pages = stats_.pages;
  summary.robots_fetches = stats_.robots_fetches;
  summary.bytes = stats_.bytes;
  summary.seconds = (clock_.MonotonicUs() - start_us_) / 1e6;
  summary.queued_left = frontier_->queued();
  summary.stop_reason = stop_reason_.empty() ? "done" : stop_reason_;
  summary.counts.insert(stats_.counts.begin(), stats_.counts.end());
  log_.Write(Level::kInfo, "crawl_end",
             {{"pages", std::to_string(stats_.pages)},
              {"reason", summary.stop_reason}});
  log_.Flush();
  return summary;
}

void Worker::Impl::CleanUpDrained() {
  // Everything it held is with the workers on the ring, acknowledged: its
  // state is not needed again (a next start must not drain it twice). Its
  // WARC files stay.
  if (hosts_ != nullptr) hosts_->SetLoader(nullptr);  // it reads state_
  state_.reset();
  seen_store_.reset();
  peers_.reset();
  const std::string wdir =
      config_.crawl.data_dir + "/worker-" + std::to_string(options_.worker_id);
  std::error_code ec;
  // Its recrawl schedule too: handed over entry by entry, empty by now
  // (Idle() waits for that).
  schedule_.reset();
  for (const char* sub :
       {"/state", "/seen", "/frontier", "/inbox.log", "/recrawl"}) {
    std::filesystem::remove_all(wdir + sub, ec);
  }
  log_.Write(Level::kInfo, "drained", {});
}

void Worker::Impl::EnqueueSeeds() {
  // On a resume the seeds are known already (the seen store says so). Each
  // worker takes the seeds of its own hosts.
  for (const std::string& seed : options_.seeds) {
    if (peers_ != nullptr &&
        peers_->Owner(url::HostOf(seed)) != options_.worker_id) {
      continue;
    }
    Candidate c;
    c.url = seed;
    c.source = Candidate::Source::kSeed;
    c.credit = 1.0;
    path_->Enter(c);
  }
}

void Worker::Impl::StartTimers() {
  if (state_ != nullptr) {
    uv_timer_init(&loop_, &checkpoint_timer_);
    checkpoint_timer_.data = this;
    checkpoint_timer_open_ = true;
    const uint64_t every_ms =
        static_cast<uint64_t>(config_.checkpoint.interval_s * 1000);
    uv_timer_start(
        &checkpoint_timer_,
        [](uv_timer_t* t) {
          Impl* self = static_cast<Impl*>(t->data);
          if (self->checkpoint_waiting_) return;
          // Between two record writes: the writer's position is exact.
          self->checkpoint_waiting_ = true;
          self->path_->WhenStoreIdle([self] {
            self->checkpoint_waiting_ = false;
            if (Status s = self->recovery_->Checkpoint("interval"); !s.ok()) {
              self->stats_.Count("checkpoint_failed");
              self->log_.Write(Level::kError, "checkpoint_failed",
                               {{"error", s.ToString()}});
            }
          });
        },
        every_ms, every_ms);
  }
  timers_open_ = true;
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sighup_);
  sigint_.data = sigterm_.data = sighup_.data = this;
  auto on_signal = [](uv_signal_t* h, int signum) {
    static_cast<Impl*>(h->data)->RequestStop(
        signum == SIGINT ? "signal (SIGINT)" : "signal (SIGTERM)");
  };
  uv_signal_start(&sigint_, on_signal, SIGINT);
  uv_signal_start(&sigterm_, on_signal, SIGTERM);
  uv_signal_start(
      &sighup_,
      [](uv_signal_t* h, int) {
        Impl* self = static_cast<Impl*>(h->data);
        (void)self->LoadRules(false);
        self->Pump();
      },
      SIGHUP);
  uv_timer_init(&loop_, &progress_timer_);
  progress_timer_.data = this;
  const double every_s = options_.progress_tty
                             ? std::min(config_.crawl.progress_interval_s, 0.5)
                             : config_.crawl.progress_interval_s;
  const uint64_t period_ms =
      std::max<uint64_t>(static_cast<uint64_t>(every_s * 1000), 50);
  uv_timer_start(
      &progress_timer_,
      [](uv_timer_t* t) {
        Impl* self = static_cast<Impl*>(t->data);
        self->Progress(false);
        // Batches held back by a store error are tried again here (at
        // most once a second): nothing else may wake an idle loop.
        if (self->peers_ != nullptr && self->peers_->held() > 0 &&
            self->peers_->RetryHeld(self->clock_.MonotonicUs()) == 0) {
          self->Pump();
        }
      },
      period_ms, period_ms);
}

void Worker::Impl::Pump() {
  if (finished_) return;
  if (!stopping_ && config_.crawl.max_duration_s > 0 &&
      clock_.MonotonicUs() - start_us_ >=
          static_cast<int64_t>(config_.crawl.max_duration_s * 1e6)) {
    RequestStop("max_duration");
  }
  path_->Pump();
}

bool Worker::Impl::Accepting() const {
  return !stopping_ && !paused_ && (peers_ == nullptr || peers_->go()) &&
         (peers_ == nullptr || !peers_->blocked());
}

void Worker::Impl::AfterPump() {
  if (finished_) return;
  CheckLease();
  if (!stopping_ && config_.crawl.max_pages > 0 &&
      stats_.pages >= config_.crawl.max_pages && path_->active() == 0) {
    RequestStop("max_pages");
  }
  MaybeFinish();
}

bool Worker::Impl::Idle() const {
  return (peers_ == nullptr || (peers_->go() && peers_->Drained())) &&
         path_->Idle();
}

// --- control
// ------------------------------------------------------------------

std::string Worker::Impl::StateName() const {
  if (finished_) return "done";
  if (stopping_) return "stopping";
  return paused_ ? "paused" : "running";
}

void Worker::Impl::Pause() {
  if (stopping_ || paused_) return;
  paused_ = true;
  log_.Write(Level::kInfo, "paused", {});
  Pump();  // re-arms the waker for what is not paused (the IP gate)
}

void Worker::Impl::Resume() {
  if (!paused_) return;
  paused_ = false;
  log_.Write(Level::kInfo, "resumed", {});
  Pump();
}

void Worker::Impl::RequestStop(const std::string& reason) {
  paused_ = false;
  if (stopping_) return;
  stopping_ = true;
  stop_reason_ = reason;
  log_.Write(Level::kInfo, "stopping", {{"reason", reason}});
  if (reason.rfind("signal", 0) == 0) {
    // Abort what is in flight: each callback runs with kAborted and is not
    // recorded; those URLs go back to their queues for the next start.
    fetch_->Shutdown();
  }
  Pump();
}

void Worker::Impl::MaybeFinish() {
  if (finished_ || path_->active() > 0) return;
  // path_->Idle(): the frontier, and (recrawl) nothing scheduled.
  if (!stopping_ && !path_->Idle()) return;
  // With a supervisor, an empty frontier is not the end: other workers may
  // still send URLs. The supervisor says stop when all are idle.
  if (!stopping_ && options_.control_fd >= 0) return;
  if (!stopping_) {
    stopping_ = true;
    stop_reason_ = "done";
  }
  finished_ = true;
  CloseAll();
}

void Worker::Impl::CloseAll() {
  if (!handles_open_) return;
  handles_open_ = false;
  fetch_->Shutdown();
  resolve_->Shutdown();
  waker_->Close();
  if (api_ != nullptr) api_->Close(&loop_);
  if (peers_ != nullptr) peers_->Close(&loop_);
  if (ip_leases_ != nullptr) ip_leases_->Close();
  if (control_open_) {
    control_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&control_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&report_timer_), nullptr);
  }
  if (timers_open_) {  // not yet when Init failed half-way
    timers_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&progress_timer_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&sighup_), nullptr);
  }
  if (checkpoint_timer_open_) {
    checkpoint_timer_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&checkpoint_timer_), nullptr);
  }
}

void Worker::Impl::Progress(bool final_line) {
  ProgressFigures f;
  f.queued = frontier_->queued();
  f.hosts = frontier_->hosts();
  f.active = path_->active();
  progress_.Print(stats_, f, clock_.MonotonicUs(), start_us_, final_line);
  log_.Flush();
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

Result<std::unique_ptr<Worker>> Worker::Create(const WorkerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Result<CrawlSummary> Worker::Run() { return impl_->Run(); }

}  // namespace crawld::daemon
