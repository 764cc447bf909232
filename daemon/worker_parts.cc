// Worker::Impl's parts, opened from the config in the order Init()
// (worker.cc) calls them: the checkpoint state, the frontier and the seen
// store, the network (DNS, fetcher), the per-IP gate, the store and the
// document claims, the exchange with the other workers, the crawl path
// over all of them, and the admin API.
#include <sys/resource.h>

#include <algorithm>

#include "checkpoint/crawl_state.h"
#include "cluster/cluster.h"
#include "daemon/component_options.h"
#include "daemon/worker_impl.h"

namespace crawld::daemon {

namespace {

// The idle connections that fit in this process's open-file limit beside
// `transfers` and 256 other files (WARC, LevelDB, DNS and admin sockets).
// The soft limit is raised to the hard one first: the usual 1024 is far
// below what a crawler keeping connections warm needs.
size_t IdleConnectionBudget(size_t transfers, size_t wanted) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return wanted;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit up = rl;
    up.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
  }
  if (rl.rlim_cur == RLIM_INFINITY) return wanted;
  const size_t limit = static_cast<size_t>(rl.rlim_cur);
  const size_t room = limit > transfers + 256 ? limit - transfers - 256 : 0;
  return std::min(wanted, room);
}

}  // namespace

Status Worker::Impl::OpenState(const std::string& wdir) {
  checkpoint::Options co;
  co.sync = true;
  std::error_code ec;
  const bool had_state = std::filesystem::exists(wdir + "/state/CURRENT", ec);
  if (!config_.checkpoint.resume && had_state) {
    for (const char* sub : {"/state", "/seen", "/frontier", "/inbox.log"}) {
      std::filesystem::remove_all(wdir + sub, ec);
    }
  }
  auto store = checkpoint::Store::Open(wdir + "/state", co);
  if (!store.ok()) return store.status();
  state_ = std::move(store).value();
  auto seen = dedupe::UrlSeenStore::Open(SeenOptions(config_, wdir + "/seen"));
  if (!seen.ok()) return seen.status();
  seen_store_ = std::move(seen).value();
  resumed_ = config_.checkpoint.resume && had_state;
  if (resumed_) {
    auto meta = checkpoint::LoadCrawlMeta(*state_);
    if (!meta.ok()) return meta.status();
    previous_workers_ = std::max(1, meta->workers);
  }
  return Status::Ok();
}

Status Worker::Impl::OpenFrontier(const std::string& wdir) {
  // Checkpoints need the spilled frontier (its manifest is the queue part
  // of a checkpoint); without spill or with interval 0 each run is fresh.
  const bool checkpoints =
      config_.frontier.spill && config_.checkpoint.interval_s > 0;
  std::error_code ec;
  if (checkpoints) {
    if (Status s = OpenState(wdir); !s.ok()) return s;
  } else {
    std::filesystem::remove_all(wdir, ec);
  }
  const frontier::Options fo = FrontierOptions(
      config_, config_.frontier.spill ? wdir + "/frontier" : std::string());
  if (!resumed_ && !fo.spill_dir.empty()) {
    std::filesystem::remove_all(fo.spill_dir, ec);
  }
  auto frontier = frontier::Frontier::Open(fo);
  if (!frontier.ok() && resumed_) {
    // A damaged queue store: rebuild everything from the WARCs instead.
    log_.Write(Level::kError, "frontier_recovery_failed",
               {{"error", frontier.status().ToString()}});
    state_.reset();
    seen_store_.reset();
    for (const char* sub : {"/state", "/seen", "/frontier"}) {
      std::filesystem::remove_all(wdir + sub, ec);
    }
    if (Status s = OpenState(wdir); !s.ok()) return s;
    resumed_ = true;  // replay every WARC record
    frontier = frontier::Frontier::Open(fo);
  }
  if (!frontier.ok()) return frontier.status();
  frontier_ = std::move(frontier).value();
  if (seen_store_ == nullptr) {
    seen_memory_ =
        std::make_unique<dedupe::SeenSet>(SeenOptions(config_, std::string()));
  }
  seen_ = std::make_unique<WorkerSeen>(seen_memory_.get(), seen_store_.get(),
                                       &stats_, &log_);
  if (config_.recrawl.enabled) {
    // Resumed with the rest of the crawl's state, or started afresh.
    if (!resumed_) std::filesystem::remove_all(wdir + "/recrawl", ec);
    auto schedule =
        recrawl::Schedule::Open(wdir + "/recrawl", RecrawlOptions(config_));
    if (!schedule.ok()) return schedule.status();
    schedule_ = std::move(schedule).value();
  }
  return Status::Ok();
}

Status Worker::Impl::OpenNetwork() {
  auto resolver = dns::Resolver::Create(&loop_, DnsOptions(config_));
  if (!resolver.ok()) return resolver.status();
  resolve_ = std::make_unique<ResolverPort>(std::move(resolver).value());
  const size_t wanted = static_cast<size_t>(config_.fetch.max_idle_connections);
  const size_t idle = IdleConnectionBudget(
      static_cast<size_t>(config_.fetch.max_connections), wanted);
  if (idle < wanted) {
    log_.Write(Level::kWarn, "idle_connections_capped",
               {{"configured", std::to_string(wanted)},
                {"kept", std::to_string(idle)},
                {"why", "open-file limit (ulimit -n)"}});
  }
  auto fetcher =
      fetcher::Fetcher::Create(&loop_, FetcherOptions(config_, idle));
  if (!fetcher.ok()) return fetcher.status();
  fetch_ = std::make_unique<FetcherPort>(std::move(fetcher).value());
  pool_ = std::make_unique<UvWorkPool>(&loop_);
  waker_ = std::make_unique<UvWaker>(&loop_, [this] { Pump(); });
  handles_open_ = true;
  return Status::Ok();
}

Status Worker::Impl::OpenIpGate() {
  frontier::IpGate::Options go = IpGateOptions(config_);
  if (go.enabled) {
    // Hosts are spread over the workers by name, so the hosts of one
    // address are too: every worker of the node takes its addresses from
    // one table, and in a cluster the node takes them from Redis as well.
    // Whatever the worker count: a worker of a node that had more, or a
    // drainer, may fetch beside the others.
    const std::string run = config_.crawl.data_dir + "/run";
    std::error_code ec;
    std::filesystem::create_directories(run, ec);
    auto slots = frontier::IpSlotTable::OpenOrCreate(
        run + "/ip-slots", IpSlotOptions(config_, options_.workers));
    if (!slots.ok()) return slots.status();
    ip_slots_ = std::move(slots).value();
    go.shared = ip_slots_.get();
    if (!config_.cluster.redis.empty()) {
      auto leases = cluster::NewRedisIpLeases(&loop_, ip_slots_.get(),
                                              IpLeaseOptionsFor(config_));
      if (!leases.ok()) return leases.status();
      ip_leases_ = std::move(leases).value();
      go.shared = ip_leases_.get();
    }
  }
  ip_gate_ = std::make_unique<frontier::IpGate>(go);
  return Status::Ok();
}

Status Worker::Impl::OpenPeers(const std::string& wdir) {
  const int exchange_workers =
      std::max({options_.workers, previous_workers_, options_.worker_id + 1});
  if (exchange_workers <= 1 && config_.cluster.redis.empty()) {
    return Status::Ok();
  }
  Result<std::unique_ptr<cluster::Exchange>> ex =
      Status::Internal("no exchange");
  if (config_.cluster.redis.empty()) {
    cluster::LocalOptions lo;
    lo.run_dir = config_.crawl.data_dir + "/run";
    lo.exchange.self = options_.worker_id;
    lo.exchange.workers = exchange_workers;
    ex = cluster::NewLocalExchange(&loop_, lo);
  } else {
    const conf::RedisAddress addr = conf::ParseRedisUrl(config_.cluster.redis);
    cluster::RedisOptions ro;
    ro.host = addr.host;
    ro.port = addr.port;
    ro.crawl = config_.cluster.name;
    ro.exchange.self = options_.worker_id;
    // Nodes may join while the crawl runs: any worker id can become a
    // destination (the exchange makes one on first use).
    ro.exchange.workers = cluster::kMaxWorkers;
    // Should this node leave the crawl, the others read everything ever
    // sent to it again (docs/CLUSTER.md, "A node lost").
    ro.retain_acked = true;
    // Only this worker reads its inbox: pending entries idle this long
    // belong to a dead incarnation of it (a crash), so take them back
    // soon after a restart.
    ro.claim_min_idle_ms = 5000;
    ex = cluster::NewRedisExchange(&loop_, ro);
  }
  if (!ex.ok()) return ex.status();
  Peers::Options po;
  po.self = options_.worker_id;
  po.workers = options_.workers;
  po.exchange_workers = exchange_workers;
  po.ring.virtual_nodes = config_.cluster.virtual_nodes;
  if (state_ != nullptr) po.inbox_log_path = wdir + "/inbox.log";
  peers_ = std::make_unique<Peers>(po, std::move(ex).value(), &stats_, &log_);
  peers_->SetWake([this] { Pump(); });
  peers_->SetAdmit([this](const cluster::UrlMessage& m) -> bool {
    if (!m.capture.empty()) {
      // A recrawl schedule entry of a host that moved here.
      return path_->ReceiveCapture(m);
    }
    if (m.seen_mark) {
      // A page the host's previous owner fetched: remembered, not queued.
      auto canon = canonicalizer_.Canonicalize(m.url);
      if (canon.ok()) {
        seen_->InsertIfNew(canon->origin_key(),
                           url::Fingerprint(canon->href()));
      }
      return true;
    }
    Candidate c;
    c.url = m.url;
    c.source = Candidate::Source::kPeer;
    c.depth = m.depth;
    c.credit = m.credit;
    c.seed_host = m.seed_host;
    c.kind = static_cast<frontier::ItemKind>(m.sitemap_kind);
    c.sitemap_of = m.sitemap_of;
    c.changefreq = m.changefreq;
    c.lastmod_s = m.lastmod_s;
    path_->Enter(c);
    return true;
  });
  return Status::Ok();
}

void Worker::Impl::BuildPath() {
  CrawlPath::Parts pp;
  pp.clock = &clock_;
  pp.fetch = fetch_.get();
  pp.resolve = resolve_.get();
  pp.pool = pool_.get();
  pp.waker = waker_.get();
  pp.canonicalizer = &canonicalizer_;
  pp.traps = &traps_;
  pp.frontier = frontier_.get();
  pp.ip_gate = ip_gate_.get();
  pp.hosts = hosts_.get();
  pp.documents = documents_.get();
  pp.warc = warc_.get();
  pp.seen = seen_.get();
  pp.schedule = schedule_.get();
  pp.router = peers_.get();
  pp.stats = &stats_;
  pp.log = &log_;
  pp.accepting = [this] { return Accepting(); };
  pp.on_fetch_seconds = [this](double s) {
    if (fetch_seconds_ != nullptr) fetch_seconds_->Observe(s);
  };
  pp.on_fatal = [this](const std::string& reason) { RequestStop(reason); };
  pp.recent = &recent_;
  pp.on_pumped = [this] { AfterPump(); };
  path_ = std::make_unique<CrawlPath>(PathOptions(config_), pp);
  path_->SetRules(rules_.get());
  Recovery::Options ro;
  ro.warc_dir = config_.crawl.data_dir + "/warc";
  ro.warc_prefix = config_.store.warc_prefix;
  if (config_.store.write_index) {
    ro.index_dir = config_.crawl.data_dir + "/index";
  }
  ro.worker_id = options_.worker_id;
  ro.workers = options_.workers;
  Recovery::Parts rp;
  rp.state = state_.get();
  rp.seen = seen_store_.get();
  rp.frontier = frontier_.get();
  rp.warc = warc_.get();
  rp.path = path_.get();
  rp.documents = documents_.get();
  rp.hosts = hosts_.get();
  rp.traps = &traps_;
  rp.peers = peers_.get();
  rp.stats = &stats_;
  rp.log = &log_;
  rp.clock = &clock_;
  recovery_ = std::make_unique<Recovery>(ro, rp);
}

Status Worker::Impl::OpenStore() {
  // First: a missing earlier crawl stops the start before anything is
  // written.
  if (!config_.dedupe.earlier.empty()) {
    // One index file for the node's workers: the first builds it, the
    // others map it (one copy in the page cache, not one per worker).
    auto earlier = store::EarlierCaptures::Load(
        config_.dedupe.earlier, config_.crawl.data_dir + "/dedupe/earlier.idx");
    if (!earlier.ok()) return earlier.status();
    earlier_ = std::move(earlier).value();
    const store::EarlierCaptures::Stats& es = earlier_->stats();
    log_.Write(Level::kInfo, "dedupe_earlier_loaded",
               {{"files", std::to_string(es.files)},
                {"captures", std::to_string(es.captures)},
                {"revisit_lines", std::to_string(es.revisits)},
                {"malformed_lines", std::to_string(es.malformed)},
                {"memory_bytes", std::to_string(earlier_->memory_bytes())},
                {"mapped_bytes", std::to_string(earlier_->mapped_bytes())}});
    if (es.malformed > 0) {
      log_.Write(Level::kWarn, "dedupe_earlier_malformed",
                 {{"lines", std::to_string(es.malformed)},
                  {"first", es.first_malformed}});
    }
  }
  auto warc =
      store::WarcWriter::Open(StoreOptions(config_, options_.worker_id));
  if (!warc.ok()) return warc.status();
  warc_ = std::move(warc).value();
  hosts_ = std::make_unique<HostTable>(HostOptions(config_), frontier_.get(),
                                       &stats_, &log_);
  hosts_->SetOverrides(overrides_.get());
  switch (ClaimStoreOf(config_)) {
    case ClaimStore::kNode: {
      auto table = dedupe::ClaimTable::Open(ClaimOptions(config_));
      if (!table.ok()) return table.status();
      claims_ = std::move(table).value();
      break;
    }
    case ClaimStore::kRedis:
      claims_ = dedupe::NewRedisClaims(ClaimOptions(config_));
      break;
    case ClaimStore::kNone:
      break;
  }
  documents_ =
      std::make_unique<Documents>(DocumentOptions(config_), claims_.get(),
                                  warc_.get(), pool_.get(), &stats_, &log_);
  if (earlier_ != nullptr) documents_->SetEarlier(earlier_.get());
  return Status::Ok();
}

Status Worker::Impl::StartApi() {
  WorkerApi::Parts ap;
  ap.config = &config_;
  ap.worker_id = options_.worker_id;
  ap.control = this;
  ap.stats = &stats_;
  ap.frontier = frontier_.get();
  ap.path = path_.get();
  ap.hosts = hosts_.get();
  ap.canonicalizer = &canonicalizer_;
  ap.traps = &traps_;
  ap.fetch = fetch_.get();
  ap.log = &log_;
  ap.clock = &clock_;
  ap.recent = &recent_;
  // <data>/run/admin.url, or admin-<worker>.url with several workers.
  const std::string url_file =
      config_.crawl.data_dir +
      (options_.workers > 1
           ? "/run/admin-" + std::to_string(options_.worker_id) + ".url"
           : std::string("/run/admin.url"));
  auto api = WorkerApi::Start(&loop_, ap, options_.control_fd >= 0, url_file);
  if (!api.ok()) return api.status();
  api_ = std::move(api).value();
  auto hist = api_->metrics().GetHistogram(
      "crawld_fetch_duration_seconds",
      "Time from request start to the end of the response body.", {});
  if (hist.ok()) fetch_seconds_ = *hist;
  progress_.Message("admin API: " + api_->url());
  return Status::Ok();
}

}  // namespace crawld::daemon
