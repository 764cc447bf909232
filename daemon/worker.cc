#include "daemon/worker.h"

#include <curl/curl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/json.h"
#include "base/time.h"
#include "checkpoint/checkpoint.h"
#include "cluster/cluster.h"
#include "conf/overrides.h"
#include "conf/read_file.h"
#include "conf/rules.h"
#include "daemon/event_log.h"
#include "daemon/ip_gate.h"
#include "daemon/processors.h"
#include "daemon/traps.h"
#include "dedupe/dedupe.h"
#include "dns/dns.h"
#include "fetcher/fetcher.h"
#include "frontier/frontier.h"
#include "http/http.h"
#include "metrics/metrics.h"
#include "parser/parser.h"
#include "robots/robots.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

namespace {

int64_t MonotonicUs() { return static_cast<int64_t>(uv_hrtime() / 1000); }

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

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) {
    snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1073741824.0);
  } else if (bytes >= (1ull << 20)) {
    snprintf(buf, sizeof(buf), "%.1f MB", bytes / 1048576.0);
  } else {
    snprintf(buf, sizeof(buf), "%.1f kB", bytes / 1024.0);
  }
  return buf;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

// ---------------------------------------------------------------------------

class Worker::Impl {
 public:
  explicit Impl(const WorkerOptions& options);
  ~Impl();

  Status Init();
  Result<CrawlSummary> Run();

 private:
  // Per-origin state the worker keeps beside the frontier: robots.txt and
  // the admin override in force.
  struct HostState {
    enum class Robots { kUnknown, kReady, kFailing };
    Robots robots = Robots::kUnknown;
    // The rules in force: the fetched ones (or allow-all) plus the
    // override's extra disallows.
    std::optional<robots::Rules> rules;
    int64_t robots_expires_us = 0;
    // The last robots.txt that parsed, for a long outage (RFC 9309 2.3.1.4
    // lets a crawler keep using a cached copy).
    std::optional<robots::Rules> last_good;
    int64_t failing_since_us = -1;  // monotonic; -1 while not failing
    // Override lookup, redone after a reload (generation mismatch).
    uint64_t override_generation = 0;
    bool robots_in_flight = false;
    bool robots_skipped = false;  // ignore-robots (or respect_robots off)
    bool rules_stale = false;     // the override changed since rules were set
    conf::HostOverride override_rule;
  };

  // One URL on its way through resolve and fetch.
  struct Job {
    std::string host_key;
    frontier::Item item;
    bool is_robots = false;
    int robots_hops = 0;     // redirects followed for robots.txt
    std::string fetch_url;   // item.url, or the robots.txt URL
    int64_t started_us = 0;  // monotonic
    std::string ip;          // address held at the IP gate ("" = none)
    // Host of the seed this URL descends from, for the filter's scope
    // rules: the host of the page the link was found on (see RULES.md).
    std::string seed_host;
  };

  // A stored body, read back from its response record, for the revisit
  // record of a later exact duplicate.
  struct DocumentRef {
    std::string uri;
    std::string record_id;
    std::string payload_digest;
    int64_t time_us = 0;
  };
  // What processing a 2xx body found; it decides the index flags of the
  // record, so it runs before the record is written.
  struct Processed {
    // xxh3-128 of a 2xx body, when computed.
    std::optional<dedupe::Digest128> digest;
    // The SimHash of a page with new text, to remember with its record.
    std::optional<uint64_t> new_simhash;
    std::string near_duplicate_of;  // URL of an earlier page with ~ text
    bool parsed = false;            // page_ holds this body's Page
    bool noindex = false;
    bool nofollow = false;
  };

  void Pump();
  void ArmTimer(int64_t now_us);
  void Dispatch(frontier::Frontier::Ready ready, int64_t now_us);
  void StartFetch(std::shared_ptr<Job> job);
  void OnResolved(std::shared_ptr<Job> job, Result<dns::Answer> answer);
  void OnResponse(std::shared_ptr<Job> job, fetcher::Response&& response);
  void OnRobotsResponse(std::shared_ptr<Job> job, fetcher::Response&& response);
  void FinishJob(const Job& job, const frontier::Completion& completion);
  // Requeues a page after a transient failure, at most kMaxRetries times.
  void RetryLater(const Job& job);
  static constexpr int kMaxRetries = 3;
  // Writes the exchange; returns the response record's WARC-Record-ID
  // ("" when nothing was written).
  std::string Record(const Job& job, const fetcher::Response& response,
                     const Processed& processed);
  // xxh3-128 of a complete body of at most kMaxDedupeBodyBytes.
  std::optional<dedupe::Digest128> BodyDigest(
      const fetcher::Response& response);
  // The stored copy's WARC number for this file, assigned on first sight.
  uint32_t WarcFileNumber(const std::string& file);
  // The response record behind a copy; nullopt (counted, logged) when it
  // cannot be read back, e.g. the file was moved away.
  std::optional<store::Record> ReadCopy(const dedupe::DocumentCopy& copy);
  void RecordRevisit(const Job& job, const fetcher::Response& response,
                     const DocumentRef& original);
  void WriteMetadata(const Job& job, const std::string& response_id,
                     const parser::Page& page, bool noindex, bool nofollow,
                     const std::string& near_duplicate_of);
  void HandleRedirect(const Job& job, const fetcher::Response& response);
  Processed Process(const Job& job, const fetcher::Response& response);
  void FollowLinks(const Job& job, const Processed& processed,
                   const std::string& response_id);
  // Canonicalizes and enqueues a discovered URL; returns true if it was new.
  bool Enqueue(std::string_view url, uint16_t depth, uint8_t redirects,
               double credit, uint64_t redirect_parent,
               std::string_view seed_host, std::string_view from_host_key = {});
  // Loads rules_file and overrides_file; on failure the old ones stay.
  Status LoadRules(bool initial);
  // The override for a host (cached per generation); counted and logged
  // when it is first used.
  const conf::HostOverride& OverrideFor(const std::string& host_key,
                                        HostState& hs);
  // The override's delay and concurrency into the frontier; concurrency
  // only while no robots.txt fetch is pending for the host.
  void ApplyHostPoliteness(const std::string& host_key, const HostState& hs);
  // Fetched (or allow-all) rules plus the override's disallows.
  robots::Rules EffectiveRules(robots::Rules base, const HostState& hs);
  void ResolveAndGate(std::shared_ptr<Job> job, dns::Answer answer);
  bool SeenInsert(std::string_view host_key, uint64_t fp);
  Status OpenState(const std::string& worker_dir, bool* resumed);
  Status Checkpoint(const char* why);
  Status Recover();
  void ReplayRecord(const store::Record& rec);
  // This worker's WARC files (the worker id is in the name), oldest first.
  std::vector<std::string> OwnWarcFiles() const;
  bool resumed_ = false;
  int previous_workers_ = 1;  // the worker count of the checkpoint
  // Workers the exchange connects: the ring's, or more while workers that
  // the ring no longer has hand their hosts over (drainers).
  int exchange_workers_ = 1;
  // This worker is not on the ring any more: it hands over everything it
  // holds, then stops ("drained") and deletes its state.
  bool drainer_ = false;
  // The admin API on this loop (docs/API.md).
  Status StartAdmin();
  // <data>/run/admin.url, or admin-<worker>.url with several workers.
  std::string AdminUrlFile() const {
    return config_.crawl.data_dir +
           (options_.workers > 1
                ? "/run/admin-" + std::to_string(options_.worker_id) + ".url"
                : std::string("/run/admin.url"));
  }
  std::string StateName() const;
  Json StatusJson();
  void SyncMetrics();
  Json RulesTestJson(const Json& body);
  Json HostJson(const std::string& name);
  void LeaveIpGate(Job& job);
  void Count(const std::string& what, uint64_t n = 1) { counts_[what] += n; }
  void Progress(bool final_line);
  void RequestStop(const std::string& reason);
  void MaybeFinish();
  void CloseAll();

  WorkerOptions options_;
  const conf::Config& config_;
  uv_loop_t loop_{};
  uv_timer_t pump_timer_{};
  uv_timer_t progress_timer_{};
  uv_signal_t sigint_{};
  uv_signal_t sigterm_{};
  uv_signal_t sighup_{};
  uv_timer_t admin_close_timer_{};
  bool handles_open_ = false;

  url::Canonicalizer canonicalizer_;
  std::unique_ptr<frontier::Frontier> frontier_;
  std::unique_ptr<dedupe::SeenSet> seen_;  // without checkpoints
  // With checkpoints: the seen-set in LevelDB, the state store, the pages
  // in flight (host key, item) to put back after a crash, and the URLs a
  // recovery found already recorded.
  std::unique_ptr<dedupe::UrlSeenStore> seen_store_;
  std::unique_ptr<checkpoint::Store> state_;
  std::unordered_map<uint64_t, std::pair<std::string, frontier::Item>>
      inflight_;
  std::unordered_set<uint64_t> done_;
  bool replaying_ = false;
  uint64_t checkpoints_ = 0;
  uv_timer_t checkpoint_timer_{};
  bool checkpoint_timer_open_ = false;
  std::unique_ptr<dns::Resolver> resolver_;
  std::unique_ptr<fetcher::Fetcher> fetcher_;
  std::unique_ptr<store::WarcWriter> warc_;
  EventLog log_;
  std::unique_ptr<conf::RuleSet> rules_;
  std::unique_ptr<conf::Overrides> overrides_;
  uint64_t override_generation_ = 1;
  IpGate ip_gate_;
  TrapGuard traps_;
  ProcessorRegistry processors_;
  parser::Page page_;  // reused per parsed body
  std::unique_ptr<http::Server> admin_;
  metrics::Registry metrics_;
  metrics::Histogram* fetch_seconds_ = nullptr;
  std::unique_ptr<store::FeedReader> feed_;
  bool paused_ = false;  // by the API: no new fetches start
  std::unique_ptr<dedupe::NearDupIndex> near_dups_;
  // SimHash (high word; low = 0) -> the first page with that text, for
  // naming it when a near-duplicate turns up.
  dedupe::DocumentTable simhash_copies_{1};

  // --- One of several workers (WorkerOptions::workers > 1) ---
  // A URL of a host another worker owns goes there through the exchange;
  // what the exchange refuses (back-pressure) waits in overflow_, and no
  // new fetch starts until it drained. Received URLs are appended to
  // inbox_log_ before they are acknowledged, and replayed after a crash
  // (the log is emptied at each checkpoint, which then holds them).
  void RouteOut(int to, cluster::UrlMessage m);
  void OnInbox(int from, std::vector<cluster::UrlMessage>&& batch,
               cluster::AckFn ack);
  void Admit(const cluster::UrlMessage& m);
  void DrainOverflow(int to);
  std::string OutboxText() const;
  void ResendOutbox(const std::string& text);
  void ReplayInboxLog();
  Status StartControl();
  void OnControlLine(std::string_view line);
  void Report();
  void Rebalance();
  bool Owns(std::string_view host) const;
  bool Idle() const;
  std::unique_ptr<cluster::Ring> ring_;
  std::unique_ptr<cluster::Exchange> exchange_;
  std::vector<std::deque<cluster::UrlMessage>> overflow_;
  size_t overflow_urls_ = 0;
  std::string final_outbox_;  // the outbox as the exchange closed
  FILE* inbox_log_ = nullptr;
  std::string inbox_log_path_;
  uv_pipe_t control_{};
  bool control_open_ = false;
  std::string control_buf_;
  uv_timer_t report_timer_{};
  uv_timer_t exchange_close_timer_{};
  bool go_ = true;  // the supervisor said go (or there is none)
  // URLs received before go: admitted at go, after every handover's
  // fetched-page marks, so that none of those pages is queued again.
  std::vector<cluster::UrlMessage> pre_go_;
  void EnqueueSeeds();
  bool ready_ = false;  // handover done and acknowledged

  std::unordered_map<std::string, HostState> hosts_;
  // robots.txt answers since the last checkpoint, by host key: "<expiry,
  // unix us>\n" then "ok\n<body>" or "none\n" (4xx: no rules). Saved with
  // the checkpoint, so that a restart does not fetch every robots.txt again.
  std::unordered_map<std::string, std::string> robots_dirty_;
  void RememberRobots(const std::string& host_key, const std::string* body);
  // True if the copy is still fresh and in force again.
  bool RestoreRobots(std::string_view host_key, std::string_view value);
  // Redirect-discovered URL -> the URL that redirected to it, to tell a
  // redirect loop from a redirect to a page seen elsewhere.
  std::unordered_map<uint64_t, uint64_t> redirect_parent_;
  std::unordered_map<uint64_t, int> retries_;
  // Bodies stored so far, by xxh3-128 of their bytes, for revisit records:
  // where each response record is, not what it says (read back on a hit).
  // 70% of 2^22 slots: at most 168 MB.
  static constexpr size_t kMaxDocuments = 2'900'000;
  dedupe::DocumentTable documents_{kMaxDocuments};
  // WARC basenames by the number a DocumentCopy holds.
  std::vector<std::string> warc_files_;
  static constexpr uint64_t kMaxDedupeBodyBytes = 8u << 20;

  size_t active_ = 0;  // jobs between Dispatch and FinishJob
  bool stopping_ = false;
  bool finished_ = false;
  std::string stop_reason_;
  int64_t start_us_ = 0;
  uint64_t pages_ = 0;
  uint64_t robots_fetches_ = 0;
  uint64_t bytes_ = 0;
  uint64_t last_pages_ = 0;
  int64_t last_progress_us_ = 0;
  std::map<std::string, uint64_t> counts_;
};

namespace {

url::Options CanonOptions(const conf::Config& c) {
  url::Options o;
  o.drop_fragment = c.url.drop_fragment;
  o.drop_trailing_host_dot = c.url.drop_trailing_host_dot;
  o.normalize_percent_encoding = c.url.normalize_percent_encoding;
  o.drop_empty_query = c.url.drop_empty_query;
  o.strip_session_params = c.url.strip_session_params;
  o.strip_params = c.url.strip_params;
  o.sort_query_params = c.url.sort_query_params;
  o.max_length = static_cast<size_t>(c.url.max_length);
  return o;
}

parser::Options ParserOptions(const conf::Config&) { return parser::Options(); }

cluster::Options RingOptions(const conf::Config& c) {
  cluster::Options o;
  o.virtual_nodes = c.cluster.virtual_nodes;
  return o;
}

IpGate::Options IpGateOptions(const conf::Config& c) {
  IpGate::Options o;
  o.enabled = c.politeness.per_ip;
  o.min_delay_us = c.politeness.ip_min_delay_ms * 1000;
  o.delay_factor = c.politeness.delay_factor;
  o.max_delay_us = c.politeness.max_delay_ms * 1000;
  return o;
}

TrapGuard::Options TrapOptions(const conf::Config& c) {
  TrapGuard::Options o;
  o.host_budget = c.traps.host_budget;
  o.max_path_repeats = c.traps.max_path_repeats;
  o.calendar = c.traps.calendar;
  time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  o.current_year = tm.tm_year + 1900;
  o.calendar_years_back = c.traps.calendar_years_back;
  o.calendar_years_ahead = c.traps.calendar_years_ahead;
  o.max_query_variants = static_cast<uint32_t>(c.traps.max_query_variants);
  o.max_query_params = c.traps.max_query_params;
  return o;
}

std::string HostOf(std::string_view url_or_origin) {
  auto u = url::Parse(url_or_origin);
  return u.ok() ? std::string(u->host()) : std::string();
}

}  // namespace

Worker::Impl::Impl(const WorkerOptions& options)
    : options_(options),
      config_(options_.config),
      canonicalizer_(CanonOptions(options_.config)),
      ip_gate_(IpGateOptions(options_.config)),
      traps_(TrapOptions(options_.config)),
      processors_(ProcessorRegistry::Default(ParserOptions(options_.config))) {}

Worker::Impl::~Impl() {
  if (handles_open_) {
    CloseAll();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  if (inbox_log_ != nullptr) fclose(inbox_log_);
  uv_loop_close(&loop_);
}

Status Worker::Impl::Init() {
  if (int rc = uv_loop_init(&loop_); rc != 0) {
    return Status::Internal(std::string("uv_loop_init: ") + uv_strerror(rc));
  }
  const std::string& data = config_.crawl.data_dir;
  std::error_code ec;
  for (const char* sub : {"warc", "logs", "tmp"}) {
    std::filesystem::create_directories(data + "/" + sub, ec);
    if (ec) {
      return Status::IOError(data + "/" + sub + ": " + ec.message());
    }
  }
  // One log per worker process: appends of several processes to one file
  // would interleave.
  const std::string log_name =
      options_.workers > 1
          ? "/logs/crawld-" + std::to_string(options_.worker_id) + ".jsonl"
          : std::string("/logs/crawld.jsonl");
  if (Status s = log_.Open(data + log_name); !s.ok()) return s;
  if (Status s = LoadRules(true); !s.ok()) return s;

  frontier::Options fo;
  fo.min_delay_us = config_.politeness.min_delay_ms * 1000;
  fo.max_delay_us = config_.politeness.max_delay_ms * 1000;
  fo.delay_factor = config_.politeness.delay_factor;
  fo.max_crawl_delay_us = config_.politeness.max_crawl_delay_ms * 1000;
  fo.max_consecutive_errors = config_.politeness.max_host_errors;
  fo.credit_scheduling = config_.frontier.credit_scheduling;
  // Credit enters only with the seeds (1.0 on each seed's item) and the API,
  // and flows along links: a host created by a link must not mint credit,
  // or a link farm of N hosts would mint N credits out of one entry link.
  fo.seed_credit = 0.0;
  fo.tax = config_.frontier.tax;
  fo.lambda_interval = static_cast<uint64_t>(config_.frontier.lambda_interval);
  fo.base_page_budget = config_.frontier.base_page_budget;
  fo.budget_pages_per_credit = config_.frontier.budget_pages_per_credit;
  fo.memory_budget_bytes =
      static_cast<size_t>(config_.frontier.memory_budget_bytes);
  const std::string wdir =
      data + "/worker-" + std::to_string(options_.worker_id);
  // Checkpoints need the spilled frontier (its manifest is the queue part
  // of a checkpoint); without spill or with interval 0 each run is fresh.
  const bool checkpoints =
      config_.frontier.spill && config_.checkpoint.interval_s > 0;
  if (config_.frontier.spill) fo.spill_dir = wdir + "/frontier";
  if (checkpoints) {
    if (Status s = OpenState(wdir, &resumed_); !s.ok()) return s;
  } else {
    std::filesystem::remove_all(wdir, ec);
  }
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
    if (Status s = OpenState(wdir, &resumed_); !s.ok()) return s;
    resumed_ = true;  // replay every WARC record
    frontier = frontier::Frontier::Open(fo);
  }
  if (!frontier.ok()) return frontier.status();
  frontier_ = std::move(frontier).value();

  dedupe::Options dopt;
  dopt.expected_urls =
      std::max<uint64_t>(1'000'000, config_.crawl.max_pages * 20);
  if (seen_store_ == nullptr) seen_ = std::make_unique<dedupe::SeenSet>(dopt);
  if (config_.store.near_duplicate_bits > 0) {
    dedupe::Options no;
    no.near_dup_max_distance = config_.store.near_duplicate_bits;
    no.near_dup_max_entries = 1 << 20;
    near_dups_ = std::make_unique<dedupe::NearDupIndex>(no);
    simhash_copies_ = dedupe::DocumentTable(near_dups_->capacity());
  }

  dns::Options dnso;
  dnso.servers = config_.dns.servers;
  dnso.min_ttl_s = config_.dns.min_ttl_s;
  dnso.max_ttl_s = config_.dns.max_ttl_s;
  dnso.negative_ttl_s = config_.dns.negative_ttl_s;
  dnso.timeout_ms = config_.dns.timeout_ms;
  dnso.tries = config_.dns.tries;
  dnso.max_queries_in_flight =
      static_cast<size_t>(config_.dns.max_queries_in_flight);
  dnso.allow_private = config_.network.allow_private;
  auto resolver = dns::Resolver::Create(&loop_, dnso);
  if (!resolver.ok()) return resolver.status();
  resolver_ = std::move(resolver).value();

  fetcher::Options feo;
  feo.user_agent = config_.crawl.user_agent;
  feo.connect_timeout_ms = config_.fetch.connect_timeout_ms;
  feo.total_timeout_ms = config_.fetch.total_timeout_ms;
  feo.low_speed_bytes_per_s = config_.fetch.low_speed_bytes_per_s;
  feo.low_speed_time_s = config_.fetch.low_speed_time_s;
  feo.max_body_bytes = config_.fetch.max_body_bytes;
  feo.max_connections = static_cast<size_t>(config_.fetch.max_connections);
  feo.max_idle_connections = IdleConnectionBudget(
      feo.max_connections,
      static_cast<size_t>(config_.fetch.max_idle_connections));
  if (feo.max_idle_connections <
      static_cast<size_t>(config_.fetch.max_idle_connections)) {
    log_.Write(
        Level::kWarn, "idle_connections_capped",
        {{"configured", std::to_string(config_.fetch.max_idle_connections)},
         {"kept", std::to_string(feo.max_idle_connections)},
         {"why", "open-file limit (ulimit -n)"}});
  }
  feo.body_buffer.memory_limit = config_.fetch.memory_body_bytes;
  feo.body_buffer.spill_dir = data + "/tmp";
  feo.verify_tls = config_.fetch.verify_tls;
  feo.ca_file = config_.fetch.ca_file;
  feo.accept_encoding = config_.fetch.accept_encoding;
  auto fetcher = fetcher::Fetcher::Create(&loop_, feo);
  if (!fetcher.ok()) return fetcher.status();
  fetcher_ = std::move(fetcher).value();

  store::Options so;
  so.dir = data + "/warc";
  so.prefix = config_.store.warc_prefix;
  so.worker_id = options_.worker_id;
  so.rotate_bytes = config_.store.rotate_bytes;
  so.gzip_level = config_.store.gzip_level;
  so.user_agent = config_.crawl.user_agent;
  if (config_.store.write_index) so.index_dir = data + "/index";
  so.write_feed = config_.store.write_feed;
  so.conversion_records = config_.store.conversion_records;
  auto warc = store::WarcWriter::Open(so);
  if (!warc.ok()) return warc.status();
  warc_ = std::move(warc).value();

  uv_timer_init(&loop_, &pump_timer_);
  uv_timer_init(&loop_, &progress_timer_);
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sighup_);
  pump_timer_.data = progress_timer_.data = this;
  sigint_.data = sigterm_.data = sighup_.data = this;
  handles_open_ = true;
  if (state_ != nullptr) {
    if (auto v = state_->Get("meta/workers"); v.ok() && v->has_value()) {
      previous_workers_ = std::max(1, atoi((*v)->c_str()));
    }
  }
  drainer_ = options_.worker_id >= options_.workers;
  exchange_workers_ =
      std::max({options_.workers, previous_workers_, options_.worker_id + 1});
  if (exchange_workers_ > 1) {
    ring_ =
        std::make_unique<cluster::Ring>(options_.workers, RingOptions(config_));
    Result<std::unique_ptr<cluster::Exchange>> ex =
        Status::Internal("no exchange");
    if (config_.cluster.redis.empty()) {
      cluster::LocalOptions lo;
      lo.run_dir = data + "/run";
      lo.exchange.self = options_.worker_id;
      lo.exchange.workers = exchange_workers_;
      ex = cluster::NewLocalExchange(&loop_, lo);
    } else {
      const conf::RedisAddress addr =
          conf::ParseRedisUrl(config_.cluster.redis);
      cluster::RedisOptions ro;
      ro.host = addr.host;
      ro.port = addr.port;
      ro.crawl = config_.cluster.name;
      ro.exchange.self = options_.worker_id;
      ro.exchange.workers = exchange_workers_;
      // Only this worker reads its inbox: pending entries idle this long
      // belong to a dead incarnation of it (a crash), so take them back
      // soon after a restart.
      ro.claim_min_idle_ms = 5000;
      ex = cluster::NewRedisExchange(&loop_, ro);
    }
    if (!ex.ok()) return ex.status();
    exchange_ = std::move(ex).value();
    overflow_.resize(static_cast<size_t>(exchange_workers_));
    exchange_->SetInbox([this](int from,
                               std::vector<cluster::UrlMessage>&& batch,
                               cluster::AckFn ack) {
      OnInbox(from, std::move(batch), std::move(ack));
    });
    exchange_->SetOnWritable([this](int to) {
      DrainOverflow(to);
      Pump();
    });
    if (state_ != nullptr) inbox_log_path_ = wdir + "/inbox.log";
  }
  if (options_.control_fd >= 0) {
    go_ = false;
    if (Status s = StartControl(); !s.ok()) return s;
  }
  auto hist = metrics_.GetHistogram(
      "crawld_fetch_duration_seconds",
      "Time from request start to the end of the response body.", {});
  if (hist.ok()) fetch_seconds_ = *hist;
  if (Status s = StartAdmin(); !s.ok()) return s;
  return Status::Ok();
}

Result<CrawlSummary> Worker::Impl::Run() {
  start_us_ = MonotonicUs();
  last_progress_us_ = start_us_;
  log_.Write(Level::kInfo, "crawl_start",
             {{"seeds", std::to_string(options_.seeds.size())},
              {"data_dir", config_.crawl.data_dir}});
  if (resumed_) {
    if (Status s = Recover(); !s.ok()) return s;
  }
  if (ring_ != nullptr && resumed_ && previous_workers_ != options_.workers) {
    Rebalance();
  }
  if (!inbox_log_path_.empty()) {
    // Replayed by Recover(); the checkpoint below holds what it had.
    inbox_log_ = fopen(inbox_log_path_.c_str(), "a");
    if (inbox_log_ == nullptr) {
      return Status::IOError(inbox_log_path_ + ": " + strerror(errno));
    }
  }
  if (go_) EnqueueSeeds();  // else at go
  if (state_ != nullptr) {
    // A first checkpoint at once: a crash before the first interval then
    // does not replay the previous run's records again.
    if (Status s = Checkpoint("start"); !s.ok()) return s;
    uv_timer_init(&loop_, &checkpoint_timer_);
    checkpoint_timer_.data = this;
    checkpoint_timer_open_ = true;
    const uint64_t every_ms =
        static_cast<uint64_t>(config_.checkpoint.interval_s * 1000);
    uv_timer_start(
        &checkpoint_timer_,
        [](uv_timer_t* t) {
          Impl* self = static_cast<Impl*>(t->data);
          if (Status s = self->Checkpoint("interval"); !s.ok()) {
            self->Count("checkpoint_failed");
            self->log_.Write(Level::kError, "checkpoint_failed",
                             {{"error", s.ToString()}});
          }
        },
        every_ms, every_ms);
  }

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

  const uint64_t period_ms = static_cast<uint64_t>(
      (options_.progress_tty ? std::min(config_.crawl.progress_interval_s, 0.5)
                             : config_.crawl.progress_interval_s) *
      1000);
  uv_timer_start(
      &progress_timer_,
      [](uv_timer_t* t) { static_cast<Impl*>(t->data)->Progress(false); },
      std::max<uint64_t>(period_ms, 50), std::max<uint64_t>(period_ms, 50));

  Pump();
  uv_run(&loop_, UV_RUN_DEFAULT);

  // The last checkpoint: what is still queued (and what a signal aborted,
  // which went back to its queue) is there for the next start.
  if (Status s = Checkpoint("exit"); !s.ok()) {
    Count("checkpoint_failed");
    log_.Write(Level::kError, "checkpoint_failed", {{"error", s.ToString()}});
  }

  if (Status s = warc_->Close(); !s.ok()) {
    log_.Write(Level::kError, "warc_close_failed", {{"error", s.ToString()}});
    Count("store_error");
  }
  if (drainer_ && stop_reason_ == "drained") {
    // Everything it held is with the workers on the ring, acknowledged: its
    // state is not needed again (a next start must not drain it twice).
    // Its WARC files stay.
    state_.reset();
    seen_store_.reset();
    if (inbox_log_ != nullptr) fclose(inbox_log_);
    inbox_log_ = nullptr;
    const std::string wdir = config_.crawl.data_dir + "/worker-" +
                             std::to_string(options_.worker_id);
    std::error_code ec;
    for (const char* sub : {"/state", "/seen", "/frontier", "/inbox.log"}) {
      std::filesystem::remove_all(wdir + sub, ec);
    }
    log_.Write(Level::kInfo, "drained", {});
  }
  Progress(true);

  CrawlSummary summary;
  summary.pages = pages_;
  summary.robots_fetches = robots_fetches_;
  summary.bytes = bytes_;
  summary.seconds = (MonotonicUs() - start_us_) / 1e6;
  summary.queued_left = frontier_->queued();
  summary.stop_reason = stop_reason_.empty() ? "done" : stop_reason_;
  summary.counts = counts_;
  log_.Write(
      Level::kInfo, "crawl_end",
      {{"pages", std::to_string(pages_)}, {"reason", summary.stop_reason}});
  log_.Flush();
  return summary;
}

void Worker::Impl::Pump() {
  if (finished_) return;
  const int64_t now = MonotonicUs();
  if (!stopping_ && config_.crawl.max_duration_s > 0 &&
      now - start_us_ >=
          static_cast<int64_t>(config_.crawl.max_duration_s * 1e6)) {
    RequestStop("max_duration");
  }
  // Waiters at the IP gate run even while stopping: they hold host slots,
  // and the crawl ends only when every job has finished.
  ip_gate_.RunReady(now);
  const size_t max_active = static_cast<size_t>(config_.fetch.max_connections);
  // Jobs waiting at the IP gate hold a host slot but no connection; they
  // are bounded separately so one crowded address cannot pull in every
  // host that lives on it.
  while (!stopping_ && !paused_ && go_ && overflow_urls_ == 0 &&
         active_ - ip_gate_.waiting() < max_active &&
         ip_gate_.waiting() < 4 * max_active) {
    if (config_.crawl.max_pages > 0 &&
        pages_ + active_ >= config_.crawl.max_pages) {
      if (active_ == 0) RequestStop("max_pages");
      break;
    }
    auto ready = frontier_->Pop(now);
    if (!ready) break;
    Dispatch(std::move(*ready), now);
  }
  ArmTimer(now);
  MaybeFinish();
}

void Worker::Impl::ArmTimer(int64_t now_us) {
  if (finished_) {
    uv_timer_stop(&pump_timer_);
    return;
  }
  int64_t next = INT64_MAX;
  if (!stopping_ && !paused_ && go_ && overflow_urls_ == 0) {
    next = frontier_->NextReadyUs();
    const size_t max_active =
        static_cast<size_t>(config_.fetch.max_connections);
    const bool saturated = active_ - ip_gate_.waiting() >= max_active ||
                           ip_gate_.waiting() >= 4 * max_active ||
                           (config_.crawl.max_pages > 0 &&
                            pages_ + active_ >= config_.crawl.max_pages);
    if (saturated) next = INT64_MAX;
  }
  // A waiter at the IP gate becomes due on its own clock.
  next = std::min(next, ip_gate_.RunReady(now_us));
  if (next == INT64_MAX) {
    // Nothing to wait for, or no slot free: the next completion pumps.
    uv_timer_stop(&pump_timer_);
    return;
  }
  // Round up to the next millisecond, and never 0: libuv runs a timer that
  // is re-armed with 0 inside its own callback again in the same pass,
  // which would starve all I/O.
  int64_t wait_ms = next > now_us ? (next - now_us + 999) / 1000 : 1;
  uv_timer_start(
      &pump_timer_, [](uv_timer_t* t) { static_cast<Impl*>(t->data)->Pump(); },
      static_cast<uint64_t>(wait_ms), 0);
}

void Worker::Impl::Dispatch(frontier::Frontier::Ready ready, int64_t now_us) {
  if (!done_.empty() && done_.erase(ready.item.fingerprint) > 0) {
    // Recorded after the last checkpoint, before a crash: not again.
    Count("recovered_skips");
    frontier_->Release(ready.host_key);
    return;
  }
  HostState& hs = hosts_[ready.host_key];
  const conf::HostOverride& ov = OverrideFor(ready.host_key, hs);
  if (!config_.politeness.respect_robots || ov.ignore_robots) {
    // No robots.txt fetch: allow-all plus the override's disallows.
    if (hs.robots != HostState::Robots::kReady || hs.rules_stale ||
        !hs.robots_skipped) {
      hs.rules = EffectiveRules(robots::Rules::AllowAll(), hs);
      hs.robots = HostState::Robots::kReady;
    }
    hs.robots_skipped = true;
    hs.robots_expires_us = INT64_MAX;
  } else if (hs.robots_skipped) {
    // A reload took ignore-robots away: fetch robots.txt now.
    hs.robots_skipped = false;
    hs.robots = HostState::Robots::kUnknown;
  } else if (hs.rules_stale && hs.robots == HostState::Robots::kReady &&
             hs.last_good.has_value()) {
    // A reload changed the overrides: same robots.txt, new extra rules.
    hs.rules = EffectiveRules(*hs.last_good, hs);
  }
  hs.rules_stale = false;
  const bool need_robots =
      hs.robots != HostState::Robots::kReady || now_us >= hs.robots_expires_us;
  if (need_robots) {
    // The slot Pop gave us is used for robots.txt; the page waits at the
    // head of its queue and comes out again after the politeness delay.
    // Until robots.txt is in, the host gets one slot whatever its override
    // says (a second Pop would only fetch robots.txt again).
    hs.robots_in_flight = true;
    ApplyHostPoliteness(ready.host_key, hs);
    frontier_->PushFront(ready.host_key, ready.item);
    auto job = std::make_shared<Job>();
    job->host_key = ready.host_key;
    job->is_robots = true;
    job->fetch_url = ready.host_key + "/robots.txt";
    ++active_;
    StartFetch(std::move(job));
    return;
  }
  if (hs.rules.has_value()) {
    auto parsed = url::Parse(ready.item.url);
    if (parsed.ok() && !hs.rules->Allowed(parsed->path_and_query())) {
      Count("robots_disallowed");
      robots::Verdict v = hs.rules->Check(parsed->path_and_query());
      if (v.from_override) Count("override_disallowed");
      log_.Write(
          Level::kDebug, "robots_disallowed",
          {{"url", ready.item.url}, {"rule", v.rule}, {"origin", v.origin}});
      frontier_->Release(ready.host_key);
      return;
    }
  }
  auto job = std::make_shared<Job>();
  job->host_key = std::move(ready.host_key);
  job->fetch_url = ready.item.url;
  job->item = std::move(ready.item);
  if (state_ != nullptr) {
    inflight_.emplace(job->item.fingerprint,
                      std::make_pair(job->host_key, job->item));
  }
  ++active_;
  StartFetch(std::move(job));
}

void Worker::Impl::StartFetch(std::shared_ptr<Job> job) {
  job->started_us = MonotonicUs();
  auto parsed = url::Parse(job->fetch_url);
  if (!parsed.ok()) {
    // Only canonical URLs enter the frontier, so this is a bug, not input.
    Count("invalid_url");
    FinishJob(*job, {frontier::Outcome::kSuccess, 0, -1});
    return;
  }
  std::string host(parsed->host());
  resolver_->Resolve(host, [this, job](Result<dns::Answer> answer) {
    OnResolved(job, std::move(answer));
  });
}

void Worker::Impl::OnResolved(std::shared_ptr<Job> job,
                              Result<dns::Answer> answer) {
  if (finished_) return;
  if (!answer.ok() || answer->addresses.empty()) {
    const Status s =
        answer.ok() ? Status::NotFound("no address") : answer.status();
    const char* cls = s.code() == Status::Code::kFailedPrecondition
                          ? "blocked_private"
                          : "dns";
    Count(cls);
    log_.Write(
        Level::kWarn, "fetch_error",
        {{"url", job->fetch_url}, {"class", cls}, {"error", s.ToString()}});
    if (job->is_robots) {
      // The page that waits behind robots.txt cannot be fetched either.
      hosts_[job->host_key].robots = HostState::Robots::kFailing;
      hosts_[job->host_key].robots_in_flight = false;
    } else if (s.code() != Status::Code::kNotFound &&
               s.code() != Status::Code::kFailedPrecondition) {
      // A resolver timeout or server failure is transient: try again.
      RetryLater(*job);
    }
    FinishJob(*job, {frontier::Outcome::kNetworkError, 0, -1});
    return;
  }
  ResolveAndGate(std::move(job), std::move(answer).value());
}

void Worker::Impl::ResolveAndGate(std::shared_ptr<Job> job,
                                  dns::Answer answer) {
  // Politeness per address: the request waits at the gate until its
  // address is free and due; the host's frontier slot stays held.
  const std::string ip = answer.addresses.front();
  // An override's concurrency > 1 is the admin's word for this host: the
  // per-IP limit would serialize it again, so such a host skips the gate.
  const auto& ov = hosts_[job->host_key].override_rule;
  const bool gated = !(ov.concurrency.has_value() && *ov.concurrency > 1);
  ip_gate_.Enter(
      gated ? ip : std::string(), MonotonicUs(), [this, job, ip, gated] {
        if (finished_) return;
        if (gated) job->ip = ip;
        job->started_us = MonotonicUs();
        fetcher::Request req;
        req.url = job->fetch_url;
        req.ip = ip;
        // A host with nothing queued after this page (a robots.txt fetch
        // has its page queued) does not keep its connection open; links
        // found on the page may still bring it back, for one handshake.
        const std::optional<frontier::HostInfo> host =
            frontier_->Host(job->host_key);
        req.keep_alive = host.has_value() && host->queued > 0;
        fetcher_->Submit(std::move(req), [this, job](fetcher::Response&& r) {
          if (finished_) return;
          if (job->is_robots) {
            OnRobotsResponse(job, std::move(r));
          } else {
            OnResponse(job, std::move(r));
          }
        });
      });
}

void Worker::Impl::LeaveIpGate(Job& job) {
  if (job.ip.empty()) return;
  const int64_t now = MonotonicUs();
  ip_gate_.Leave(job.ip, now, now - job.started_us);
  job.ip.clear();
}

void Worker::Impl::RetryLater(const Job& job) {
  // Back to the head of its host's queue: the frontier's backoff spaces the
  // retries, and repeated failures retire the host (counted there).
  int& tries = retries_[job.item.fingerprint];
  if (++tries <= kMaxRetries) {
    Count("retries");
    frontier_->PushFront(job.host_key, job.item);
  } else {
    Count("retries_exhausted");
    log_.Write(Level::kWarn, "retries_exhausted", {{"url", job.fetch_url}});
  }
}

void Worker::Impl::FinishJob(const Job& job,
                             const frontier::Completion& completion) {
  LeaveIpGate(const_cast<Job&>(job));
  if (!job.is_robots) inflight_.erase(job.item.fingerprint);
  frontier_->Complete(job.host_key, MonotonicUs(), completion);
  if (active_ > 0) --active_;
  Pump();
}

std::optional<dedupe::Digest128> Worker::Impl::BodyDigest(
    const fetcher::Response& response) {
  if (response.truncated || response.body.size() > kMaxDedupeBodyBytes) {
    return std::nullopt;
  }
  auto bytes = response.body.ReadPrefix(kMaxDedupeBodyBytes);
  if (!bytes.ok()) return std::nullopt;
  return dedupe::DocumentDigest128(*bytes);
}

uint32_t Worker::Impl::WarcFileNumber(const std::string& file) {
  // Records go to the newest file, so a new name is always the last one.
  if (warc_files_.empty() || warc_files_.back() != file) {
    warc_files_.push_back(file);
  }
  return static_cast<uint32_t>(warc_files_.size() - 1);
}

std::optional<store::Record> Worker::Impl::ReadCopy(
    const dedupe::DocumentCopy& copy) {
  if (copy.file >= warc_files_.size()) return std::nullopt;
  const std::string path = warc_->options().dir + "/" + warc_files_[copy.file];
  Result<store::Record> rec =
      store::ReadRecordAt(path, copy.offset, copy.length);
  if (!rec.ok()) {
    Count("stored_copy_unreadable");
    log_.Write(Level::kWarn, "stored_copy_unreadable",
               {{"file", path}, {"error", rec.status().ToString()}});
    return std::nullopt;
  }
  return std::move(rec).value();
}

void Worker::Impl::RecordRevisit(const Job& job,
                                 const fetcher::Response& response,
                                 const DocumentRef& original) {
  store::FetchRecord rec;
  rec.target_uri = job.fetch_url;
  rec.ip = response.ip;
  rec.fetch_time_us = response.start_us;
  rec.request_head = response.request_head;
  rec.response_head = response.response_head;
  auto revisit = warc_->WriteRevisit(rec, original.record_id, original.uri,
                                     original.time_us, original.payload_digest);
  if (!revisit.ok()) {
    Count("store_error");
    log_.Write(
        Level::kError, "warc_write_failed",
        {{"url", job.fetch_url}, {"error", revisit.status().ToString()}});
    RequestStop("store_error");
    return;
  }
  Count("revisits");
}

std::string Worker::Impl::Record(const Job& job,
                                 const fetcher::Response& response,
                                 const Processed& processed) {
  store::FetchRecord rec;
  rec.target_uri = job.fetch_url;
  rec.ip = response.ip;
  rec.fetch_time_us = response.start_us;
  rec.request_head = response.request_head;
  rec.response_head = response.response_head;
  rec.body = &response.body;
  rec.flags.noindex = processed.noindex;
  rec.flags.near_duplicate_of = processed.near_duplicate_of;
  if (response.truncated) {
    rec.truncated =
        response.error == fetcher::ErrorClass::kTimeout ? "time" : "length";
  }
  auto written = warc_->WriteExchange(rec);
  if (!written.ok()) {
    Count("store_error");
    log_.Write(
        Level::kError, "warc_write_failed",
        {{"url", job.fetch_url}, {"error", written.status().ToString()}});
    // A crawler that cannot record what it fetches must not go on fetching.
    RequestStop("store_error");
    return "";
  }
  const dedupe::DocumentCopy copy{
      written->response.offset, response.start_us,
      WarcFileNumber(written->response.file),
      static_cast<uint32_t>(written->response.length)};
  if (processed.digest.has_value() && !written->payload_digest.empty()) {
    // Present only when its copy could not be read back: this one serves
    // the next duplicates instead.
    if (!documents_.Replace(*processed.digest, copy)) {
      if (documents_.size() < documents_.max_entries()) {
        documents_.Insert(*processed.digest, copy);
      } else {
        Count("dedupe_table_full");
      }
    }
  }
  if (processed.new_simhash.has_value()) {
    simhash_copies_.Insert({*processed.new_simhash, 0}, copy);
  }
  return written->response.record_id;
}

void Worker::Impl::OnRobotsResponse(std::shared_ptr<Job> job,
                                    fetcher::Response&& response) {
  ++robots_fetches_;
  HostState& hs = hosts_[job->host_key];
  hs.robots_in_flight = false;  // set again below if a redirect is followed
  const int64_t now = MonotonicUs();
  const int64_t rtt = now - job->started_us;
  const int status = response.status_code;
  if (status > 0) Record(*job, response, Processed{});

  if (status >= 300 && status < 400 && job->robots_hops < 5) {
    // RFC 9309 2.3.1.2: follow at least five redirects for robots.txt.
    auto base = url::Parse(job->fetch_url);
    std::string location = response.Header("Location");
    if (base.ok() && !location.empty()) {
      auto target = url::Parse(location, &base.value());
      if (target.ok() && target->is_http()) {
        LeaveIpGate(*job);  // the next hop queues at the gate again
        hs.robots_in_flight = true;
        auto next = std::make_shared<Job>(*job);
        next->fetch_url = std::string(target->href());
        next->robots_hops++;
        StartFetch(std::move(next));
        return;
      }
    }
  }
  frontier::Completion done{frontier::Outcome::kSuccess, rtt, -1};
  const int64_t ttl_us = config_.politeness.robots_ttl_s * 1000000;
  if (status >= 200 && status < 300) {
    bool capped = false;
    auto body = fetcher::DecodeBody(response, 500 * 1024, &capped);
    robots::Rules parsed = robots::Rules::Parse(
        body.ok() ? *body : std::string(), config_.crawl.robots_token);
    const std::string empty;
    RememberRobots(job->host_key, body.ok() ? &*body : &empty);
    hs.last_good = parsed;
    hs.failing_since_us = -1;
    hs.rules = EffectiveRules(std::move(parsed), hs);
    hs.robots = HostState::Robots::kReady;
    hs.robots_expires_us = now + ttl_us;
    // (An override's delay-ms replaces this in the frontier.)
    if (auto delay = hs.rules->crawl_delay_seconds()) {
      // Clamp before the cast: a hostile "Crawl-delay: 1e300" must not be
      // undefined behaviour; the frontier caps it at max_crawl_delay.
      const double capped_s = std::clamp(*delay, 0.0, 86400.0);
      frontier_->SetCrawlDelay(job->host_key,
                               static_cast<int64_t>(capped_s * 1e6));
    }
  } else if (status >= 400 && status < 500) {
    // RFC 9309 2.3.1.3: "unavailable" robots.txt: crawl without rules.
    RememberRobots(job->host_key, nullptr);
    hs.rules = EffectiveRules(robots::Rules::AllowAll(), hs);
    hs.last_good = robots::Rules::AllowAll();
    hs.failing_since_us = -1;
    hs.robots = HostState::Robots::kReady;
    hs.robots_expires_us = now + ttl_us;
  } else {
    // 5xx, network error, or too many redirects: RFC 9309 2.3.1.4
    // "unreachable": assume complete disallow and retry with backoff.
    hs.robots = HostState::Robots::kFailing;
    std::string cls = status >= 500 ? "robots_5xx"
                      : status > 0  ? "robots_redirects"
                                    : "robots_unreachable";
    Count(cls);
    if (status == 0) {
      // The host is unreachable for pages too: count the network class.
      const std::string net(fetcher::ErrorClassName(response.error));
      Count(net);
      log_.Write(Level::kWarn, "fetch_error",
                 {{"url", job->fetch_url},
                  {"class", net},
                  {"error", response.error_message}});
    }
    log_.Write(Level::kWarn, "robots_unavailable",
               {{"host", job->host_key},
                {"status", std::to_string(status)},
                {"error", response.error_message}});
    done.outcome = status >= 500 ? frontier::Outcome::kServerError
                                 : frontier::Outcome::kNetworkError;
    if (hs.failing_since_us < 0) hs.failing_since_us = now;
    const int64_t grace_us = config_.politeness.robots_outage_grace_s * 1000000;
    if (hs.last_good.has_value() && now - hs.failing_since_us >= grace_us) {
      // A long outage: crawl under the last good copy, and look again
      // after a TTL (or an hour, whichever is sooner).
      hs.rules = EffectiveRules(*hs.last_good, hs);
      hs.robots = HostState::Robots::kReady;
      hs.robots_expires_us = now + std::min<int64_t>(ttl_us, 3600ll * 1000000);
      Count("robots_last_good_used");
      // Crawling goes on under that copy: no error backoff for the host,
      // or each retry would find the short-lived copy expired again.
      done.outcome = frontier::Outcome::kSuccess;
      log_.Write(Level::kWarn, "robots_last_good_used",
                 {{"host", job->host_key}});
    }
  }
  ApplyHostPoliteness(job->host_key, hs);
  FinishJob(*job, done);
}

void Worker::Impl::OnResponse(std::shared_ptr<Job> job,
                              fetcher::Response&& response) {
  const int64_t now = MonotonicUs();
  const int64_t rtt = now - job->started_us;
  const int status = response.status_code;
  frontier::Completion done{frontier::Outcome::kSuccess, rtt, -1};

  if (status == 0 && response.error == fetcher::ErrorClass::kAborted) {
    // Shut down under it (a signal): back to its queue for the next start.
    frontier_->PushFront(job->host_key, job->item);
    FinishJob(*job, done);
    return;
  }
  if (status == 0) {
    const std::string cls(fetcher::ErrorClassName(response.error));
    Count(cls);
    log_.Write(Level::kWarn, "fetch_error",
               {{"url", job->fetch_url},
                {"class", cls},
                {"error", response.error_message}});
    done.outcome = frontier::Outcome::kNetworkError;
    if (response.error == fetcher::ErrorClass::kConnect ||
        response.error == fetcher::ErrorClass::kTimeout ||
        response.error == fetcher::ErrorClass::kProtocol) {
      RetryLater(*job);  // transient; a TLS failure is not
    }
    FinishJob(*job, done);
    return;
  }

  ++pages_;
  bytes_ += response.body.size();
  if (fetch_seconds_ != nullptr) fetch_seconds_->Observe(rtt / 1e6);
  Processed processed;
  if (status >= 200 && status < 300) {
    // An exact duplicate of a body stored before (same bytes, any URL) is
    // written as a revisit record and not parsed again: its links were
    // followed when the original was.
    const std::optional<dedupe::Digest128> digest = BodyDigest(response);
    const dedupe::DocumentCopy* copy =
        digest.has_value() ? documents_.Find(*digest) : nullptr;
    // The original is read back for its URL, id and digest; if it cannot
    // be (its file moved away), this body is stored in full instead.
    if (std::optional<store::Record> original =
            copy != nullptr ? ReadCopy(*copy) : std::nullopt) {
      RecordRevisit(
          *job, response,
          DocumentRef{original->Header("WARC-Target-URI"),
                      original->Header("WARC-Record-ID"),
                      original->Header("WARC-Payload-Digest"), copy->time_us});
      FinishJob(*job, done);
      return;
    }
    processed = Process(*job, response);
    processed.digest = digest;
  }
  const std::string response_id = Record(*job, response, processed);
  if (response.error != fetcher::ErrorClass::kNone) {
    // A response arrived but the transfer was cut (cap, slow body): it is
    // recorded as truncated and counted; its links are still used.
    Count(std::string(fetcher::ErrorClassName(response.error)));
    log_.Write(Level::kWarn, "fetch_truncated",
               {{"url", job->fetch_url},
                {"class", std::string(fetcher::ErrorClassName(response.error))},
                {"error", response.error_message}});
  }

  if (status == 429 || status == 503) {
    Count(status == 429 ? "http_429" : "http_503");
    done.outcome = frontier::Outcome::kRetryLater;
    done.retry_after_us =
        fetcher::ParseRetryAfter(response.Header("Retry-After"), time(nullptr));
    RetryLater(*job);
    FinishJob(*job, done);
    return;
  }
  if (status >= 500) {
    Count("http_5xx");
    done.outcome = frontier::Outcome::kServerError;
  } else if (status >= 400) {
    Count("http_4xx");
  } else if (status >= 300 && status < 400) {
    HandleRedirect(*job, response);
  } else if (status >= 200 && status < 300) {
    FollowLinks(*job, processed, response_id);
  }
  FinishJob(*job, done);
}

void Worker::Impl::HandleRedirect(const Job& job,
                                  const fetcher::Response& response) {
  std::string location = response.Header("Location");
  if (location.empty()) return;
  if (job.item.redirects >= config_.fetch.max_redirects) {
    Count("too_many_redirects");
    log_.Write(Level::kWarn, "too_many_redirects", {{"url", job.fetch_url}});
    return;
  }
  auto base = url::Parse(job.fetch_url);
  if (!base.ok()) return;
  auto target = canonicalizer_.Canonicalize(location, &base.value());
  if (!target.ok()) {
    Count("invalid_url");
    return;
  }
  const uint64_t fp = url::Fingerprint(target->href());
  // A redirect to a URL already on this redirect chain is a loop.
  for (uint64_t cur = job.item.fingerprint, hops = 0; hops <= 32; ++hops) {
    if (cur == fp) {
      Count("redirect_loop");
      log_.Write(Level::kWarn, "redirect_loop",
                 {{"url", job.fetch_url}, {"location", location}});
      return;
    }
    auto it = redirect_parent_.find(cur);
    if (it == redirect_parent_.end()) break;
    cur = it->second;
  }
  Enqueue(target->href(), job.item.depth,
          static_cast<uint8_t>(job.item.redirects + 1), job.item.credit,
          job.item.fingerprint, base->host(), job.host_key);
}

Worker::Impl::Processed Worker::Impl::Process(
    const Job& job, const fetcher::Response& response) {
  Processed out;
  // Page-level robots directives from the header apply to any type.
  std::vector<std::string_view> xrt;
  for (const auto& [name, value] : response.headers) {
    if (IEquals(name, "X-Robots-Tag")) xrt.push_back(value);
  }
  const parser::RobotsDirectives header_robots =
      parser::ParseXRobotsTag(xrt, config_.crawl.robots_token);
  if (header_robots.noindex) Count("x_robots_noindex");
  out.noindex = header_robots.noindex;
  out.nofollow = header_robots.nofollow;

  std::string content_type = response.Header("Content-Type");
  bool capped = false;
  auto body = fetcher::DecodeBody(response, 8u << 20, &capped);
  if (!body.ok()) {
    Count("decode_error");
    log_.Write(Level::kWarn, "decode_error",
               {{"url", job.fetch_url}, {"error", body.status().ToString()}});
    return out;
  }
  if (capped) Count("decode_capped");
  const std::string mime = SniffMime(content_type, *body);
  const Processor* processor = processors_.For(mime);
  if (processor == nullptr) {
    Count("not_parsed");  // archived only
    return out;
  }
  auto doc_url = url::Parse(job.fetch_url);
  if (!doc_url.ok()) return out;
  processor->Process(*body, content_type, doc_url.value(),
                     config_.crawl.robots_token, &page_);
  out.parsed = true;
  if (page_.invalid_links > 0) Count("invalid_url", page_.invalid_links);
  if (near_dups_ != nullptr && !replaying_ && page_.text.size() >= 200) {
    // Near-duplicates (same template, a changed date or counter) are
    // flagged for indexers, not dropped: they may differ where it matters.
    const uint64_t h = dedupe::SimHash(page_.text);
    if (std::optional<uint64_t> near = near_dups_->FindNear(h)) {
      const dedupe::DocumentCopy* copy = simhash_copies_.Find({*near, 0});
      std::optional<store::Record> first =
          copy != nullptr ? ReadCopy(*copy) : std::nullopt;
      out.near_duplicate_of =
          first.has_value() ? first->Header("WARC-Target-URI") : "?";
      Count("near_duplicates");
    } else {
      near_dups_->Insert(h);
      out.new_simhash = h;
    }
  }
  out.noindex = out.noindex || page_.meta_noindex;
  out.nofollow = out.nofollow || page_.meta_nofollow;
  if (out.noindex) Count("noindex_pages");
  return out;
}

void Worker::Impl::FollowLinks(const Job& job, const Processed& processed,
                               const std::string& response_id) {
  if (!processed.parsed) return;
  const parser::Page& page = page_;
  if (config_.store.write_metadata && !response_id.empty()) {
    WriteMetadata(job, response_id, page, processed.noindex, processed.nofollow,
                  processed.near_duplicate_of);
  }
  if (config_.store.conversion_records && !response_id.empty() &&
      !page.text.empty()) {
    auto conv = warc_->WriteConversion(job.fetch_url, response_id,
                                       time(nullptr) * 1000000ll, page.text);
    if (!conv.ok()) {
      Count("store_error");
      log_.Write(Level::kError, "warc_write_failed",
                 {{"url", job.fetch_url}, {"error", conv.status().ToString()}});
      RequestStop("store_error");
    }
  }
  if (processed.nofollow) {
    Count("meta_nofollow_pages");
    return;
  }
  const uint16_t depth = static_cast<uint16_t>(job.item.depth + 1);
  if (config_.crawl.max_depth > 0 && depth > config_.crawl.max_depth) {
    Count("max_depth", page.links.size());
    return;
  }
  auto doc_url = url::Parse(job.fetch_url);
  if (!doc_url.ok()) return;
  const std::string_view seed_host = doc_url->host();
  // AOPIC: the page's after-tax credit is shared equally among the links it
  // passes on (a link to a URL already queued still credits its host).
  size_t followed = 0;
  for (const parser::Link& link : page.links) {
    if (!link.nofollow || config_.crawl.follow_rel_nofollow) ++followed;
  }
  const double share =
      followed > 0 ? job.item.credit / static_cast<double>(followed) : 0.0;
  for (const parser::Link& link : page.links) {
    if (link.nofollow && !config_.crawl.follow_rel_nofollow) {
      Count("nofollow_links");
      continue;
    }
    Enqueue(link.url, depth, 0, share, 0, seed_host, job.host_key);
    if (config_.crawl.path_ascending) {
      // /a/b/page offers /a/b/, /a/ and /: parents are cheap to test and
      // often list what no link points to.
      auto u = url::Parse(link.url);
      if (!u.ok()) continue;
      std::string_view path = u->path();
      const std::string origin = u->origin_key();
      size_t end = path.size();
      if (end > 0 && path.back() == '/') --end;
      while (end > 0) {
        size_t slash = path.rfind('/', end - 1);
        if (slash == std::string_view::npos) break;
        std::string parent = origin;
        parent.append(path.substr(0, slash + 1));
        if (Enqueue(parent, depth, 0, 0.0, 0, seed_host, job.host_key)) {
          Count("path_ascending_added");
        }
        end = slash;
      }
    }
  }
}

void Worker::Impl::WriteMetadata(const Job& job, const std::string& response_id,
                                 const parser::Page& page, bool noindex,
                                 bool nofollow,
                                 const std::string& near_duplicate_of) {
  // application/warc-fields, as Heritrix writes it: one outlink per line,
  // plus the page-level robots flags indexers must honour.
  std::string block;
  block.reserve(64 + page.links.size() * 80);
  if (noindex) block += "robots: noindex\r\n";
  if (nofollow) block += "robots: nofollow\r\n";
  if (!near_duplicate_of.empty()) {
    block += "near-duplicate-of: ";
    block += near_duplicate_of;
    block += "\r\n";
  }
  if (!page.canonical.empty()) {
    block += "canonical: ";
    block += page.canonical;
    block += "\r\n";
  }
  for (const parser::Link& link : page.links) {
    block += "outlink: ";
    block += link.url;
    if (link.nofollow) block += " nofollow";
    block += "\r\n";
  }
  auto written = warc_->WriteMetadata(job.fetch_url, response_id,
                                      time(nullptr) * 1000000ll,
                                      "application/warc-fields", block);
  if (!written.ok()) {
    Count("store_error");
    log_.Write(
        Level::kError, "warc_write_failed",
        {{"url", job.fetch_url}, {"error", written.status().ToString()}});
    RequestStop("store_error");
  }
}

bool Worker::Impl::Enqueue(std::string_view url_text, uint16_t depth,
                           uint8_t redirects, double credit,
                           uint64_t redirect_parent, std::string_view seed_host,
                           std::string_view from_host_key) {
  auto canon = canonicalizer_.Canonicalize(url_text);
  if (!canon.ok()) {
    Count("invalid_url");
    return false;
  }
  if (!canon->is_http()) return false;
  // The filter decides before the seen test: a URL rejected now is not
  // remembered, so a rule reload can admit it when it is met again.
  conf::RuleVerdict verdict = rules_->Decide({canon->href(), depth, seed_host});
  if (!verdict.accept) {
    Count("filter_rejected");
    log_.Write(Level::kDebug, "filter_rejected",
               {{"url", std::string(canon->href())},
                {"rule", verdict.rule},
                {"line", std::to_string(verdict.line)}});
    return false;
  }
  if (std::string_view trap = traps_.CheckShape(*canon); !trap.empty()) {
    Count("trap_" + std::string(trap));
    log_.Write(
        Level::kDebug, "trap",
        {{"url", std::string(canon->href())}, {"trap", std::string(trap)}});
    return false;
  }
  if (ring_ != nullptr) {
    // Another worker owns the host: it alone decides whether the URL is new.
    const int owner = ring_->Owner(canon->host());
    if (owner != options_.worker_id) {
      RouteOut(owner,
               cluster::UrlMessage{std::string(canon->href()), depth, credit});
      return false;
    }
  }
  const uint64_t fp = url::Fingerprint(canon->href());
  const std::string host_key = canon->origin_key();
  if (!SeenInsert(host_key, fp)) {
    // Known URL: its host still receives the credit (AOPIC).
    if (credit > 0) frontier_->AddCredit(host_key, credit, from_host_key);
    return false;
  }
  if (std::string_view trap = traps_.Admit(host_key, *canon); !trap.empty()) {
    Count("trap_" + std::string(trap));
    log_.Write(
        Level::kDebug, "trap",
        {{"url", std::string(canon->href())}, {"trap", std::string(trap)}});
    return false;
  }
  if (redirect_parent != 0) redirect_parent_[fp] = redirect_parent;
  frontier::Item item;
  item.url = std::string(canon->href());
  item.fingerprint = fp;
  item.depth = depth;
  item.redirects = redirects;
  item.credit = credit;
  if (Status st = frontier_->TryPush(host_key, std::move(item), from_host_key);
      !st.ok()) {
    if (st.code() == Status::Code::kFailedPrecondition) {
      Count("retired_host_drops");
    } else {
      // The spill disk failed and memory is over budget: counted and
      // logged, never silent.
      Count("frontier_refused");
      log_.Write(
          Level::kError, "frontier_refused",
          {{"url", std::string(canon->href())}, {"error", st.ToString()}});
    }
    return false;
  }
  return true;
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
    Count("rules_reload_failed");
    log_.Write(Level::kError, "rules_reload_failed",
               {{"error", failed.ToString()}});
    if (options_.progress != nullptr) {
      fprintf(
          options_.progress, "%srules reload failed, previous rules stay: %s\n",
          options_.progress_tty ? "\r\033[K" : "", failed.ToString().c_str());
    }
    return failed;
  }
  rules_ = std::move(rules);
  overrides_ = std::move(overrides);
  ++override_generation_;
  if (!initial) {
    Count("rules_reloaded");
    // The rules in force include override disallows: each host rebuilds
    // them from its cached robots.txt at its next dispatch (generation).
  }
  log_.Write(Level::kInfo, initial ? "rules_loaded" : "rules_reloaded",
             {{"filter_rules", std::to_string(rules_->size())},
              {"overrides", std::to_string(overrides_->size())}});
  return Status::Ok();
}

const conf::HostOverride& Worker::Impl::OverrideFor(const std::string& host_key,
                                                    HostState& hs) {
  if (hs.override_generation == override_generation_) return hs.override_rule;
  hs.override_generation = override_generation_;
  hs.rules_stale = true;
  hs.override_rule = overrides_->For(HostOf(host_key));
  if (!hs.override_rule.empty()) {
    // Never silently: each host an override touches is counted and logged.
    Count("override_hosts");
    log_.Write(Level::kInfo, "override_applied",
               {{"host", host_key},
                {"override", overrides_->Describe(hs.override_rule)}});
  }
  // Also when empty: a reload may have removed the host's override.
  ApplyHostPoliteness(host_key, hs);
  return hs.override_rule;
}

void Worker::Impl::ApplyHostPoliteness(const std::string& host_key,
                                       const HostState& hs) {
  const conf::HostOverride& ov = hs.override_rule;
  frontier_->SetHostPoliteness(
      host_key, ov.delay_ms ? *ov.delay_ms * 1000 : -1,
      hs.robots_in_flight ? 1 : ov.concurrency.value_or(1));
}

robots::Rules Worker::Impl::EffectiveRules(robots::Rules base,
                                           const HostState& hs) {
  for (const conf::OverrideDisallow& d : hs.override_rule.disallow) {
    base.AddDisallow(d.pattern, overrides_->Where(d.line));
  }
  return base;
}

namespace {

// The counters that are failures an operator should look at, for the
// progress line; the others are events (near_duplicates, revisits,
// routed_in, trap_*, robots_disallowed, ...).
bool IsErrorCount(std::string_view name) {
  static constexpr std::string_view kErrors[] = {
      // fetch error classes (fetcher::ErrorClassName, and the resolver's)
      "dns", "blocked_private", "connect", "timeout", "tls", "too_large",
      "protocol", "other",
      // answers and redirects
      "http_4xx", "http_5xx", "redirect_loop", "too_many_redirects",
      "retries_exhausted", "decode_error",
      // our own state
      "store_error", "seen_store_error", "checkpoint_failed",
      "inbox_log_failed", "rules_reload_failed", "stored_copy_unreadable"};
  return std::find(std::begin(kErrors), std::end(kErrors), name) !=
         std::end(kErrors);
}

}  // namespace

void Worker::Impl::Progress(bool final_line) {
  if (options_.progress == nullptr) return;
  const int64_t now = MonotonicUs();
  const double dt = std::max<int64_t>(1, now - last_progress_us_) / 1e6;
  const double elapsed = std::max<int64_t>(1, now - start_us_) / 1e6;
  const double rate =
      final_line ? pages_ / elapsed : (pages_ - last_pages_) / dt;
  last_pages_ = pages_;
  last_progress_us_ = now;
  uint64_t errors = 0;
  for (const auto& [k, v] : counts_) {
    if (IsErrorCount(k)) errors += v;
  }
  char line[256];
  snprintf(line, sizeof(line),
           "pages %" PRIu64
           " | %.1f/s | queued %zu | hosts %zu (active %zu) "
           "| errors %" PRIu64 " | %s | %.0fs",
           pages_, rate, frontier_->queued(), frontier_->hosts(), active_,
           errors, FormatBytes(bytes_).c_str(), elapsed);
  if (options_.progress_tty) {
    fprintf(options_.progress, "\r\033[K%s%s", line, final_line ? "\n" : "");
  } else {
    fprintf(options_.progress, "%s\n", line);
  }
  fflush(options_.progress);
  log_.Flush();
}

void Worker::Impl::RequestStop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  stop_reason_ = reason;
  log_.Write(Level::kInfo, "stopping", {{"reason", reason}});
  ArmTimer(MonotonicUs());  // only IP-gate waiters still need the clock
  if (reason.rfind("signal", 0) == 0) {
    // Abort what is in flight: each callback runs with kAborted and is not
    // recorded; those URLs are fetched again on resume (next issue).
    fetcher_->Shutdown();
  }
  MaybeFinish();
}

void Worker::Impl::MaybeFinish() {
  if (finished_ || active_ > 0) return;
  if (!stopping_ && !frontier_->Idle()) return;
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
  fetcher_->Shutdown();
  resolver_->Shutdown();
  if (admin_ != nullptr) {
    // The address is valid only while crawld runs; a stale one would send
    // crawlctl to whatever listens there next.
    std::error_code ec;
    std::filesystem::remove(AdminUrlFile(), ec);
    // Not destroyed here: CloseAll can run inside an admin handler (the
    // stop call), and a server must not be destroyed by its own callback.
    uv_timer_init(&loop_, &admin_close_timer_);
    admin_close_timer_.data = this;
    uv_timer_start(
        &admin_close_timer_,
        [](uv_timer_t* t) {
          static_cast<Impl*>(t->data)->admin_.reset();
          uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
        },
        1, 0);
  }
  if (exchange_ != nullptr) {
    // What is still unacknowledged goes into the exit checkpoint. Destroyed
    // later, not here: CloseAll can run inside an exchange callback.
    exchange_->Flush();
    final_outbox_ = OutboxText();
    uv_timer_init(&loop_, &exchange_close_timer_);
    exchange_close_timer_.data = this;
    uv_timer_start(
        &exchange_close_timer_,
        [](uv_timer_t* t) {
          static_cast<Impl*>(t->data)->exchange_.reset();
          uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
        },
        1, 0);
  }
  if (control_open_) {
    control_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&control_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&report_timer_), nullptr);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&pump_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&progress_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sighup_), nullptr);
  if (checkpoint_timer_open_) {
    checkpoint_timer_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&checkpoint_timer_), nullptr);
  }
}

// --- checkpoints and recovery (docs/OPERATIONS.md, "After a crash") --------
//
// A checkpoint writes, in this order: the frontier's queues (its manifest),
// the URL-seen store, then one LevelDB batch with the counters, the
// in-flight URLs and the WARC position. Recovery opens the frontier and the
// seen store as checkpointed, puts the in-flight URLs back, and replays the
// WARC records written after the checkpointed position: their URLs are not
// fetched again, and their links and redirects are followed again (the
// queue entries they made after the checkpoint were lost). So a crash at
// any moment loses no URL, and a URL is fetched at most once more.

namespace {

constexpr char kMetaPages[] = "meta/pages";
constexpr char kMetaBytes[] = "meta/bytes";
constexpr char kMetaRobots[] = "meta/robots_fetches";
constexpr char kMetaWarcFile[] = "meta/warc_file";
constexpr char kMetaWarcSize[] = "meta/warc_size";
constexpr char kMetaInflight[] = "meta/inflight";
constexpr char kMetaDone[] = "meta/done";
constexpr char kMetaOutbox[] = "meta/outbox";
constexpr char kMetaWorkers[] = "meta/workers";
constexpr char kCountPrefix[] = "count/";
constexpr char kRobotsPrefix[] = "robots/";

int64_t WallUs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

uint64_t ToU64(const std::optional<std::string>& v) {
  return v.has_value() ? strtoull(v->c_str(), nullptr, 10) : 0;
}

uint64_t HostHash(std::string_view host_key) {
  return XXH3_64bits(host_key.data(), host_key.size());
}

}  // namespace

bool Worker::Impl::SeenInsert(std::string_view host_key, uint64_t fp) {
  if (seen_store_ == nullptr) return seen_->InsertIfNew(fp);
  Result<bool> r = seen_store_->InsertIfNew(HostHash(host_key), fp);
  if (r.ok()) return *r;
  // Better a URL fetched twice than one lost: an unreadable store says new.
  Count("seen_store_error");
  log_.Write(Level::kError, "seen_store_error",
             {{"error", r.status().ToString()}});
  return true;
}

Status Worker::Impl::OpenState(const std::string& wdir, bool* resumed) {
  *resumed = false;
  checkpoint::Options co;
  co.sync = true;
  std::error_code ec;
  const bool had_state = std::filesystem::exists(wdir + "/state/CURRENT", ec);
  if (!config_.checkpoint.resume && had_state) {
    for (const char* sub : {"/state", "/seen", "/frontier"}) {
      std::filesystem::remove_all(wdir + sub, ec);
    }
  }
  auto store = checkpoint::Store::Open(wdir + "/state", co);
  if (!store.ok()) return store.status();
  state_ = std::move(store).value();
  dedupe::Options so;
  so.dir = wdir + "/seen";
  so.expected_urls =
      std::max<uint64_t>(1'000'000, config_.crawl.max_pages * 20);
  // Fingerprints reach the disk only at checkpoints, after the frontier's
  // queues: the seen store never remembers a URL the queues could lose.
  so.batch_size = SIZE_MAX;
  auto seen = dedupe::UrlSeenStore::Open(so);
  if (!seen.ok()) return seen.status();
  seen_store_ = std::move(seen).value();
  *resumed = config_.checkpoint.resume && had_state;
  return Status::Ok();
}

Status Worker::Impl::Checkpoint(const char* why) {
  if (state_ == nullptr) return Status::Ok();
  const int64_t t0 = MonotonicUs();
  if (Status s = warc_->Flush(); !s.ok()) return s;
  const std::string warc_file = warc_->current_file();
  std::error_code ec;
  const uint64_t warc_size = std::filesystem::file_size(
      config_.crawl.data_dir + "/warc/" + warc_file, ec);
  if (Status s = frontier_->Checkpoint(); !s.ok()) return s;
  if (Status s = seen_store_->Flush(); !s.ok()) return s;
  checkpoint::Store::Batch b;
  b.Put(kMetaPages, std::to_string(pages_));
  b.Put(kMetaBytes, std::to_string(bytes_));
  b.Put(kMetaRobots, std::to_string(robots_fetches_));
  b.Put(kMetaWarcFile, warc_file);
  b.Put(kMetaWarcSize, std::to_string(ec ? 0 : warc_size));
  std::string inflight;
  for (const auto& [fp, entry] : inflight_) {
    const frontier::Item& it = entry.second;
    inflight += entry.first + '\t' + it.url + '\t' + std::to_string(it.depth) +
                '\t' + std::to_string(it.redirects) + '\n';
  }
  b.Put(kMetaInflight, inflight);
  // Recorded URLs still waiting in the queues to be skipped: the queues are
  // checkpointed with them, so the skip list must be too (else a second
  // crash before they come out fetches them again).
  std::string done;
  done.reserve(done_.size() * 17);
  for (uint64_t fp : done_) done += std::to_string(fp) + '\n';
  b.Put(kMetaDone, done);
  b.Put(kMetaOutbox, OutboxText());
  b.Put(kMetaWorkers, std::to_string(options_.workers));
  for (const auto& [k, v] : counts_) {
    b.Put(std::string(kCountPrefix) + k, std::to_string(v));
  }
  for (const auto& [host_key, value] : robots_dirty_) {
    b.Put(std::string(kRobotsPrefix) + host_key, value);
  }
  if (Status s = state_->Write(b); !s.ok()) return s;
  robots_dirty_.clear();
  // The checkpoint holds every URL received so far: the inbox log starts
  // over (O_APPEND writes go to the new end).
  if (inbox_log_ != nullptr) {
    fflush(inbox_log_);
    if (ftruncate(fileno(inbox_log_), 0) != 0) Count("inbox_log_failed");
  }
  ++checkpoints_;
  log_.Write(Level::kInfo, "checkpoint",
             {{"why", why},
              {"queued", std::to_string(frontier_->queued())},
              {"in_flight", std::to_string(inflight_.size())},
              {"warc", warc_file + ":" + std::to_string(warc_size)},
              {"ms", std::to_string((MonotonicUs() - t0) / 1000)}});
  return Status::Ok();
}

Status Worker::Impl::Recover() {
  const int64_t t0 = MonotonicUs();
  auto get = [this](const char* key) -> std::optional<std::string> {
    auto v = state_->Get(key);
    return v.ok() ? *v : std::nullopt;
  };
  pages_ = ToU64(get(kMetaPages));
  bytes_ = ToU64(get(kMetaBytes));
  robots_fetches_ = ToU64(get(kMetaRobots));
  const std::string warc_file = get(kMetaWarcFile).value_or("");
  const uint64_t warc_size = ToU64(get(kMetaWarcSize));
  previous_workers_ =
      std::max<int>(1, static_cast<int>(ToU64(get(kMetaWorkers))));
  Status scan = state_->ScanPrefix(
      kCountPrefix, [this](std::string_view k, std::string_view v) {
        counts_[std::string(k.substr(sizeof(kCountPrefix) - 1))] =
            strtoull(std::string(v).c_str(), nullptr, 10);
        return true;
      });
  if (!scan.ok()) return scan;
  uint64_t robots_restored = 0;
  scan = state_->ScanPrefix(kRobotsPrefix, [&](std::string_view k,
                                               std::string_view v) {
    robots_restored += RestoreRobots(k.substr(sizeof(kRobotsPrefix) - 1), v);
    return true;
  });
  if (!scan.ok()) return scan;
  const std::string done = get(kMetaDone).value_or("");
  for (size_t a = 0; a < done.size();) {
    size_t nl = done.find('\n', a);
    if (nl == std::string::npos) nl = done.size();
    if (nl > a)
      done_.insert(strtoull(done.substr(a, nl - a).c_str(), nullptr, 10));
    a = nl + 1;
  }
  // In flight at the checkpoint: back to the head of their queues.
  uint64_t requeued = 0;
  const std::string inflight = get(kMetaInflight).value_or("");
  size_t pos = 0;
  while (pos < inflight.size()) {
    size_t nl = inflight.find('\n', pos);
    if (nl == std::string::npos) nl = inflight.size();
    std::string_view line(inflight.data() + pos, nl - pos);
    pos = nl + 1;
    std::vector<std::string_view> f;
    for (size_t a = 0; a <= line.size();) {
      size_t t = line.find('\t', a);
      if (t == std::string_view::npos) t = line.size();
      f.push_back(line.substr(a, t - a));
      a = t + 1;
    }
    if (f.size() != 4) continue;
    frontier::Item item;
    item.url = std::string(f[1]);
    item.fingerprint = url::Fingerprint(item.url);
    item.depth =
        static_cast<uint16_t>(strtoul(std::string(f[2]).c_str(), nullptr, 10));
    item.redirects =
        static_cast<uint8_t>(strtoul(std::string(f[3]).c_str(), nullptr, 10));
    if (frontier_->PushFront(f[0], std::move(item))) ++requeued;
  }

  // Sent to other workers and not acknowledged at the checkpoint: again.
  ResendOutbox(get(kMetaOutbox).value_or(""));

  // The WARC records after the checkpointed position, oldest first.
  const std::string dir = config_.crawl.data_dir + "/warc";
  const std::vector<std::string> files = OwnWarcFiles();
  std::error_code ec;
  uint64_t replayed = 0, truncated = 0;
  replaying_ = true;
  for (const std::string& name : files) {
    if (!warc_file.empty() && name < warc_file) continue;
    const std::string path = dir + "/" + name;
    const uint64_t before = std::filesystem::file_size(path, ec);
    auto cut = store::TruncateToLastCompleteRecord(path);
    if (cut.ok() && *cut < before) {
      ++truncated;
      log_.Write(Level::kWarn, "warc_tail_truncated",
                 {{"file", name}, {"bytes", std::to_string(before - *cut)}});
    }
    auto reader = store::WarcReader::Open(path);
    if (!reader.ok()) continue;
    const uint64_t from = name == warc_file ? warc_size : 0;
    store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      if (rec.offset < from) continue;
      const std::string type = rec.type();
      if (type != "response" && type != "revisit") continue;
      ReplayRecord(rec);
      ++replayed;
    }
  }
  replaying_ = false;
  Count("recovered_records", replayed);
  ReplayInboxLog();
  log_.Write(Level::kInfo, "recovered",
             {{"queued", std::to_string(frontier_->queued())},
              {"requeued_in_flight", std::to_string(requeued)},
              {"robots_restored", std::to_string(robots_restored)},
              {"replayed_records", std::to_string(replayed)},
              {"truncated_files", std::to_string(truncated)},
              {"ms", std::to_string((MonotonicUs() - t0) / 1000)}});
  if (options_.progress != nullptr) {
    fprintf(options_.progress,
            "resumed: %zu URLs queued, %" PRIu64 " records replayed\n",
            frontier_->queued(), replayed);
  }
  return Status::Ok();
}

void Worker::Impl::RememberRobots(const std::string& host_key,
                                  const std::string* body) {
  if (state_ == nullptr) return;
  const int64_t expiry =
      WallUs() + config_.politeness.robots_ttl_s * int64_t{1000000};
  std::string v = std::to_string(expiry) + (body ? "\nok\n" : "\nnone\n");
  if (body != nullptr) v += *body;
  robots_dirty_[host_key] = std::move(v);
}

bool Worker::Impl::RestoreRobots(std::string_view host_key,
                                 std::string_view value) {
  const size_t nl = value.find('\n');
  if (nl == std::string_view::npos) return false;
  const int64_t expiry =
      strtoll(std::string(value.substr(0, nl)).c_str(), nullptr, 10);
  std::string_view rest = value.substr(nl + 1);
  robots::Rules rules = robots::Rules::AllowAll();
  if (rest.rfind("ok\n", 0) == 0) {
    rules = robots::Rules::Parse(std::string(rest.substr(3)),
                                 config_.crawl.robots_token);
  } else if (rest != "none\n") {
    return false;  // not ours: fetch it again
  }
  HostState& hs = hosts_[std::string(host_key)];
  // The last good copy serves a later outage even when expired.
  hs.last_good = rules;
  const int64_t left_us = expiry - WallUs();
  if (left_us <= 0) return false;
  if (auto delay = rules.crawl_delay_seconds()) {
    const double capped_s = std::clamp(*delay, 0.0, 86400.0);
    frontier_->SetCrawlDelay(host_key, static_cast<int64_t>(capped_s * 1e6));
  }
  // The override's rules are added at the first Dispatch (rules_stale).
  hs.rules = std::move(rules);
  hs.robots = HostState::Robots::kReady;
  hs.robots_expires_us = MonotonicUs() + left_us;
  return true;
}

void Worker::Impl::ReplayRecord(const store::Record& rec) {
  const std::string uri = rec.Header("WARC-Target-URI");
  auto canon = url::Parse(uri);
  if (!canon.ok()) return;
  // Fetched after the checkpoint: not again.
  done_.insert(url::Fingerprint(uri));
  if (canon->path() == "/robots.txt") return;
  ++pages_;
  if (rec.type() != "response") return;
  // Rebuild the response the fetcher saw, to follow its links (or its
  // redirect) again.
  const size_t head_end = rec.block.find("\r\n\r\n");
  if (head_end == std::string::npos) return;
  fetcher::Response response;
  response.response_head = rec.block.substr(0, head_end + 4);
  std::string_view head(response.response_head);
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  size_t sp = status_line.find(' ');
  if (sp == std::string_view::npos) return;
  response.status_code =
      atoi(std::string(status_line.substr(sp + 1, 3)).c_str());
  size_t p = line_end + 2;
  while (p < head.size()) {
    size_t e = head.find("\r\n", p);
    if (e == std::string_view::npos || e == p) break;
    std::string_view field = head.substr(p, e - p);
    size_t colon = field.find(':');
    if (colon != std::string_view::npos) {
      std::string_view v = field.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      response.headers.emplace_back(std::string(field.substr(0, colon)),
                                    std::string(v));
    }
    p = e + 2;
  }
  (void)response.body.Append(std::string_view(rec.block).substr(head_end + 4));
  Job job;
  job.fetch_url = uri;
  job.host_key = canon->origin_key();
  job.item.url = uri;
  job.item.fingerprint = url::Fingerprint(uri);
  job.item.depth = 0;  // not recorded in the WARC; depth limits restart here
  job.item.credit = 0;
  const int status = response.status_code;
  if (status >= 300 && status < 400) {
    HandleRedirect(job, response);
  } else if (status >= 200 && status < 300) {
    Processed processed = Process(job, response);
    FollowLinks(job, processed, "");
  }
}

// --- admin API (docs/API.md) -------------------------------------------------

Status Worker::Impl::StartAdmin() {
  if (!config_.admin.enabled) return Status::Ok();
  http::Server::Options ao;
  ao.bind_address = config_.admin.address;
  ao.port = static_cast<uint16_t>(config_.admin.port);
  if (options_.control_fd >= 0) {
    // Under a supervisor, which serves the configured address and port and
    // asks its workers: loopback, any free port (run/admin-<id>.url).
    ao.bind_address = "127.0.0.1";
    ao.port = 0;
  }
  ao.token = config_.admin.token;
  auto server = http::Server::Create(&loop_, ao);
  if (!server.ok()) return server.status();
  admin_ = std::move(server).value();

  using http::Request;
  using http::Responder;
  auto route = [&](const char* method, const char* path, http::Handler h) {
    Status s = admin_->Route(method, path, std::move(h));
    (void)s;  // the patterns are literals; tested
  };
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
  route("POST", "/api/pause", [this](const Request&, Responder r) {
    if (!stopping_ && !paused_) {
      paused_ = true;
      log_.Write(Level::kInfo, "paused", {});
      ArmTimer(MonotonicUs());
    }
    r.SendJson(200, {{"state", StateName()}});
  });
  route("POST", "/api/resume", [this](const Request&, Responder r) {
    if (paused_) {
      paused_ = false;
      log_.Write(Level::kInfo, "resumed", {});
      Pump();
    }
    r.SendJson(200, {{"state", StateName()}});
  });
  route("POST", "/api/stop", [this](const Request&, Responder r) {
    // Answer first: the stop closes the server once in-flight work is done.
    r.SendJson(200, {{"state", "stopping"}});
    paused_ = false;
    RequestStop("api stop");
  });
  route("POST", "/api/seeds", [this](const Request& req, Responder r) {
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
      auto canon = canonicalizer_.Canonicalize(text);
      if (!canon.ok() || !canon->is_http()) {
        rejected.push_back(
            {{"url", text},
             {"error", canon.ok() ? "not http(s)" : canon.status().message()}});
        continue;
      }
      conf::RuleVerdict v = rules_->Decide({canon->href(), 0, canon->host()});
      if (!v.accept) {
        rejected.push_back({{"url", text}, {"error", "filter: " + v.rule}});
        continue;
      }
      // A seed of another worker's host goes there; that worker decides
      // whether it is new, so it counts as added here.
      const bool routed = !Owns(canon->host());
      if (Enqueue(canon->href(), 0, 0, 1.0, 0, canon->host()) || routed) {
        ++added;
      } else {
        ++known;
      }
    }
    if (added > 0) Count("api_seeds_added", added);
    log_.Write(Level::kInfo, "seeds_added", {{"added", std::to_string(added)}});
    r.SendJson(200, {{"added", added},
                     {"known", known},
                     {"rejected", std::move(rejected)}});
    Pump();
  });
  route("POST", "/api/rules/reload", [this](const Request&, Responder r) {
    Status s = LoadRules(false);
    if (!s.ok()) {
      r.SendError(400, s.message());
      return;
    }
    Pump();
    r.SendJson(200, {{"reloaded", true},
                     {"filter_rules", static_cast<uint64_t>(rules_->size())},
                     {"overrides", static_cast<uint64_t>(overrides_->size())}});
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
  route("GET", "/api/docs", [this](const Request& req, Responder r) {
    const std::string* since = req.QueryValue("since");
    const std::string* limit_s = req.QueryValue("limit");
    size_t limit = 100;
    if (limit_s != nullptr) {
      char* end = nullptr;
      unsigned long v = strtoul(limit_s->c_str(), &end, 10);
      if (limit_s->empty() || *end != '\0' || v == 0 || v > 1000) {
        r.SendError(400, "limit must be 1 .. 1000");
        return;
      }
      limit = v;
    }
    if (Status s = warc_->Flush(); !s.ok()) {
      r.SendError(500, s.message());
      return;
    }
    if (feed_ == nullptr) {
      auto reader =
          store::FeedReader::Open(config_.crawl.data_dir + "/index/feed");
      if (!reader.ok()) {
        r.SendError(503, "no document feed: " + reader.status().message());
        return;
      }
      feed_ = std::move(reader).value();
    }
    auto page = feed_->Read(since == nullptr ? "" : *since, limit);
    if (!page.ok()) {
      r.SendError(400, page.status().message());
      return;
    }
    Json entries = Json::array();
    for (const store::FeedEntry& e : page->entries) {
      Json flags = {{"noindex", e.flags.noindex}, {"revisit", e.revisit}};
      if (!e.flags.near_duplicate_of.empty()) {
        flags["near_duplicate_of"] = e.flags.near_duplicate_of;
      }
      entries.push_back({{"cursor", e.cursor},
                         {"url", e.url},
                         {"warc", e.warc_file},
                         {"offset", e.offset},
                         {"length", e.length},
                         {"digest", e.digest},
                         {"status", e.status},
                         {"mime", e.mime},
                         {"time", Iso8601Micros(e.fetch_time_us)},
                         {"flags", std::move(flags)}});
    }
    r.SendJson(200,
               {{"entries", std::move(entries)}, {"next", page->next_cursor}});
  });

  // Counters mirror the summary counts at each scrape: one place counts.
  metrics_.AddCollector([this] { SyncMetrics(); });

  const std::string& bound = options_.control_fd >= 0 ? std::string("127.0.0.1")
                                                      : config_.admin.address;
  const std::string url =
      "http://" +
      (bound.find(':') != std::string::npos ? "[" + bound + "]" : bound) + ":" +
      std::to_string(admin_->port());
  std::error_code ec;
  std::filesystem::create_directories(config_.crawl.data_dir + "/run", ec);
  const std::string path = AdminUrlFile();
  const std::string tmp = path + ".tmp";
  if (FILE* f = fopen(tmp.c_str(), "w")) {
    fprintf(f, "%s\n", url.c_str());
    fclose(f);
    std::filesystem::rename(tmp, path, ec);
  }
  log_.Write(Level::kInfo, "admin_listening", {{"url", url}});
  if (options_.progress != nullptr) {
    fprintf(options_.progress, "admin API: %s\n", url.c_str());
  }
  return Status::Ok();
}

std::string Worker::Impl::StateName() const {
  if (finished_) return "done";
  if (stopping_) return "stopping";
  return paused_ ? "paused" : "running";
}

Json Worker::Impl::StatusJson() {
  const int64_t now = MonotonicUs();
  const double uptime = std::max<int64_t>(1, now - start_us_) / 1e6;
  Json counts = Json::object();
  for (const auto& [k, v] : counts_) counts[k] = v;
  Json hosts = {{"known", static_cast<uint64_t>(frontier_->hosts())},
                {"active", static_cast<uint64_t>(frontier_->in_flight())},
                {"retired", static_cast<uint64_t>(frontier_->retired_hosts())}};
  Json worker = {{"id", options_.worker_id},
                 {"pages", pages_},
                 {"queued", static_cast<uint64_t>(frontier_->queued())}};
  Json j = Json::object();
  j["state"] = StateName();
  j["pages"] = pages_;
  j["pages_per_s"] = pages_ / uptime;
  j["bytes"] = bytes_;
  j["queued"] = static_cast<uint64_t>(frontier_->queued());
  j["in_flight"] = static_cast<uint64_t>(active_ - ip_gate_.waiting());
  j["ip_waiting"] = static_cast<uint64_t>(ip_gate_.waiting());
  j["hosts"] = std::move(hosts);
  j["robots_fetches"] = robots_fetches_;
  j["uptime_s"] = uptime;
  j["counts"] = std::move(counts);
  j["workers"] = Json::array({std::move(worker)});
  return j;
}

void Worker::Impl::SyncMetrics() {
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
  counter("crawld_pages_fetched_total",
          "Responses recorded in the WARCs (robots.txt excluded).",
          static_cast<double>(pages_));
  counter("crawld_bytes_received_total", "Body bytes received.",
          static_cast<double>(bytes_));
  counter("crawld_robots_fetches_total", "robots.txt fetches.",
          static_cast<double>(robots_fetches_));
  if (fetcher_ != nullptr) {
    // Against fetches, the share of pages that paid a TCP (and TLS)
    // handshake: how well keep-alive works (fetch.max_idle_connections).
    counter("crawld_connections_opened_total",
            "Connections opened by this process (a fetch on a kept-alive "
            "connection opens none).",
            static_cast<double>(fetcher_->stats().connections));
  }
  for (const auto& [k, v] : counts_) {
    counter("crawld_events_total",
            "Counted events by class: fetch errors, HTTP status classes, "
            "URL drops by reason, traps, filter and robots decisions.",
            static_cast<double>(v), {{"event", k}});
  }
  // Each filter rule and override line counts its hits (hot-reloaded sets
  // start again from zero, so these are gauges).
  for (const conf::RuleSet::RuleStats& r : rules_->Stats()) {
    std::string where =
        r.line > 0 ? config_.crawl.rules_file + ":" + std::to_string(r.line)
                   : r.rule;
    gauge("crawld_filter_rule_hits",
          "URLs decided by each filter rule (file:line) of the rule set in "
          "force.",
          static_cast<double>(r.hits), {{"rule", where}});
  }
  for (const conf::Overrides::LineStats& l : overrides_->Stats()) {
    gauge("crawld_override_hits",
          "Hosts each robots override line (file:line) applied to.",
          static_cast<double>(l.hits), {{"line", overrides_->Where(l.line)}});
  }
  gauge("crawld_queued_urls", "URLs waiting in the frontier.",
        static_cast<double>(frontier_->queued()));
  gauge("crawld_in_flight_requests", "Requests in flight.",
        static_cast<double>(active_ - ip_gate_.waiting()));
  gauge("crawld_hosts", "Hosts known to the frontier.",
        static_cast<double>(frontier_->hosts()), {{"state", "known"}});
  gauge("crawld_hosts", "Hosts known to the frontier.",
        static_cast<double>(frontier_->retired_hosts()),
        {{"state", "retired"}});
  gauge("crawld_paused", "1 while the crawl is paused.", paused_ ? 1 : 0);
}

Json Worker::Impl::RulesTestJson(const Json& body) {
  Json out = Json::object();
  const std::string text = json::Find(body, "url")->get<std::string>();
  auto canon = canonicalizer_.Canonicalize(text);
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
  conf::RuleVerdict v = rules_->Decide({canon->href(), depth, seed_host});
  out["url"] = canon->href();
  out["filter"] = {{"accept", v.accept},
                   {"rule", v.rule},
                   {"line", v.line},
                   {"file", config_.crawl.rules_file}};
  out["traps"] = traps_.CheckShape(*canon);
  const std::string key = canon->origin_key();
  auto it = hosts_.find(key);
  Json robots = Json::object();
  if (it == hosts_.end() || !it->second.rules.has_value()) {
    robots["state"] = "unknown";
    robots["allowed"] = nullptr;
    out["override"] = "";
  } else {
    robots["state"] =
        it->second.robots == HostState::Robots::kReady ? "ready" : "failing";
    robots::Verdict rv = it->second.rules->Check(canon->path_and_query());
    robots["allowed"] = rv.allowed;
    robots["rule"] = rv.rule;
    out["override"] = overrides_->Describe(it->second.override_rule);
  }
  out["robots"] = std::move(robots);
  return out;
}

Json Worker::Impl::HostJson(const std::string& name) {
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
    std::optional<frontier::HostInfo> info = frontier_->Host(key);
    auto hs = hosts_.find(key);
    if (!info.has_value() && hs == hosts_.end()) continue;
    Json j = Json::object();
    j["host"] = key;
    const int64_t now = MonotonicUs();
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
    }
    Json robots = Json::object();
    if (hs == hosts_.end()) {
      robots["state"] = "unknown";
      j["override"] = "";
    } else {
      robots["state"] = hs->second.robots == HostState::Robots::kReady ? "ready"
                        : hs->second.robots == HostState::Robots::kFailing
                            ? "failing"
                            : "unknown";
      if (hs->second.rules.has_value()) {
        robots["rules"] = hs->second.rules->Describe();
      }
      j["override"] = overrides_->Describe(hs->second.override_rule);
    }
    j["robots"] = std::move(robots);
    return j;
  }
  return Json();
}

// ---------------------------------------------------------------------------

std::string CrawlSummary::ToText() const {
  char head[256];
  snprintf(head, sizeof(head),
           "crawl %s: %" PRIu64
           " pages, %s, %.1f s, %.1f pages/s, "
           "%" PRIu64 " robots.txt fetches, %" PRIu64 " URLs left queued\n",
           stop_reason.c_str(), pages, FormatBytes(bytes).c_str(), seconds,
           seconds > 0 ? pages / seconds : 0.0, robots_fetches, queued_left);
  std::string out = head;
  if (!counts.empty()) {
    out += "counts:";
    for (const auto& [k, v] : counts) {
      // Appended piecewise: g++ 12 -O3 warns (-Wrestrict, a false positive)
      // on "literal" + std::string temporaries.
      out += ' ';
      out += k;
      out += '=';
      out += std::to_string(v);
    }
    out += "\n";
  }
  return out;
}

std::string CrawlSummary::ToJson() const {
  Json j = Json::object();
  j["stop_reason"] = stop_reason;
  j["pages"] = pages;
  j["robots_fetches"] = robots_fetches;
  j["bytes"] = bytes;
  // Milliseconds, as the text always gave them.
  j["seconds"] = std::round(seconds * 1000) / 1000;
  j["queued_left"] = queued_left;
  Json c = Json::object();
  for (const auto& [k, v] : counts) c[k] = v;
  j["counts"] = std::move(c);
  return json::Dump(j) + "\n";
}

// --- one of several workers (docs/CLUSTER.md, "Worker processes") --------

namespace {

// A message with this depth carries a URL its previous owner fetched (a
// rebalance): the new owner remembers it as seen and does not queue it.
constexpr uint16_t kSeenMarkDepth = UINT16_MAX;

// Outbox and inbox log lines: "worker \t depth \t credit \t url \n".
void AppendMessageLine(std::string* out, int to, const cluster::UrlMessage& m) {
  char head[64];
  snprintf(head, sizeof(head), "%d\t%u\t%.17g\t", to,
           static_cast<unsigned>(m.depth), m.credit);
  *out += head;
  *out += m.url;
  *out += '\n';
}

template <typename Fn>
void ForEachMessageLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    // A line cut by a kill has no '\n': it was never acknowledged, so the
    // sender still has it.
    if (nl == std::string_view::npos) return;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[4];
    size_t n = 0;
    while (n < 3) {
      size_t t = line.find('\t');
      if (t == std::string_view::npos) break;
      f[n++] = line.substr(0, t);
      line.remove_prefix(t + 1);
    }
    if (n != 3 || line.empty()) continue;
    cluster::UrlMessage m;
    m.url = std::string(line);
    m.depth =
        static_cast<uint16_t>(strtoul(std::string(f[1]).c_str(), nullptr, 10));
    m.credit = strtod(std::string(f[2]).c_str(), nullptr);
    fn(atoi(std::string(f[0]).c_str()), std::move(m));
  }
}

}  // namespace

void Worker::Impl::EnqueueSeeds() {
  // On a resume the seeds are known already (the seen store says so). Each
  // worker takes the seeds of its own hosts.
  for (const std::string& seed : options_.seeds) {
    if (!Owns(HostOf(seed))) continue;
    Enqueue(seed, 0, 0, 1.0, 0, HostOf(seed));
  }
}

bool Worker::Impl::Owns(std::string_view host) const {
  return ring_ == nullptr || ring_->Owner(host) == options_.worker_id;
}

void Worker::Impl::RouteOut(int to, cluster::UrlMessage m) {
  Count("routed_out");
  auto& waiting = overflow_[static_cast<size_t>(to)];
  if (exchange_ != nullptr && waiting.empty()) {
    Status s = exchange_->Send(to, m);
    if (s.ok()) return;
    if (s.code() != Status::Code::kResourceExhausted) {
      Count("route_refused");
      log_.Write(Level::kWarn, "route_refused",
                 {{"url", m.url}, {"error", s.ToString()}});
      return;
    }
  }
  // Back-pressure (or the exchange is closing): kept, saved by the next
  // checkpoint, and no new fetch starts until it drained.
  waiting.push_back(std::move(m));
  ++overflow_urls_;
}

void Worker::Impl::DrainOverflow(int to) {
  auto& waiting = overflow_[static_cast<size_t>(to)];
  while (exchange_ != nullptr && !waiting.empty()) {
    Status s = exchange_->Send(to, waiting.front());
    if (s.code() == Status::Code::kResourceExhausted) return;
    if (!s.ok()) Count("route_refused");
    waiting.pop_front();
    --overflow_urls_;
  }
}

std::string Worker::Impl::OutboxText() const {
  if (exchange_ == nullptr) return final_outbox_;
  std::string out;
  exchange_->ForEachUnacked([&out](int to, const cluster::UrlMessage& m) {
    AppendMessageLine(&out, to, m);
  });
  for (size_t to = 0; to < overflow_.size(); ++to) {
    for (const auto& m : overflow_[to]) {
      AppendMessageLine(&out, static_cast<int>(to), m);
    }
  }
  for (const auto& m : pre_go_) AppendMessageLine(&out, options_.worker_id, m);
  return out;
}

void Worker::Impl::ResendOutbox(const std::string& text) {
  uint64_t n = 0;
  ForEachMessageLine(text, [&](int, cluster::UrlMessage&& m) {
    // The owner may have changed with the worker count.
    const int owner =
        ring_ != nullptr ? ring_->Owner(HostOf(m.url)) : options_.worker_id;
    if (owner == options_.worker_id) {
      Admit(m);
    } else {
      RouteOut(owner, std::move(m));
    }
    ++n;
  });
  if (n > 0) Count("outbox_resent", n);
}

void Worker::Impl::Admit(const cluster::UrlMessage& m) {
  if (!go_ && m.depth != kSeenMarkDepth) {
    pre_go_.push_back(m);
    return;
  }
  if (m.depth == kSeenMarkDepth) {
    auto canon = canonicalizer_.Canonicalize(m.url);
    if (canon.ok())
      SeenInsert(canon->origin_key(), url::Fingerprint(canon->href()));
    return;
  }
  Enqueue(m.url, m.depth, 0, m.credit, 0, HostOf(m.url));
}

void Worker::Impl::OnInbox(int, std::vector<cluster::UrlMessage>&& batch,
                           cluster::AckFn ack) {
  if (finished_) return;  // not acknowledged: the sender keeps it
  if (inbox_log_ != nullptr) {
    // Durable before the ack: a kill after it replays the log.
    std::string text;
    for (const auto& m : batch) AppendMessageLine(&text, options_.worker_id, m);
    if (fwrite(text.data(), 1, text.size(), inbox_log_) != text.size() ||
        fflush(inbox_log_) != 0) {
      Count("inbox_log_failed");
      log_.Write(Level::kError, "inbox_log_failed",
                 {{"error", strerror(errno)}});
      clearerr(inbox_log_);
      return;  // unacknowledged: resent after a reconnect
    }
  }
  Count("routed_in", batch.size());
  for (const auto& m : batch) Admit(m);
  ack();
  Pump();
}

void Worker::Impl::ReplayInboxLog() {
  if (inbox_log_path_.empty()) return;
  auto text = conf::internal::ReadSmallFile(inbox_log_path_, 1ull << 40);
  if (!text.ok()) return;  // none yet
  uint64_t n = 0;
  ForEachMessageLine(*text, [&](int, cluster::UrlMessage&& m) {
    Admit(m);
    ++n;
  });
  if (n > 0) Count("inbox_replayed", n);
}

std::vector<std::string> Worker::Impl::OwnWarcFiles() const {
  const std::string& prefix = config_.store.warc_prefix;
  char id[16];
  snprintf(id, sizeof(id), "-%05d-", options_.worker_id);
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           config_.crawl.data_dir + "/warc", ec)) {
    const std::string name = e.path().filename().string();
    // <prefix>-<14-digit time>-<5-digit worker>-<serial>.warc.gz
    if (name.ends_with(".warc.gz") && name.rfind(prefix + "-", 0) == 0 &&
        name.compare(prefix.size() + 15, 7, id) == 0) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

void Worker::Impl::Rebalance() {
  const int64_t t0 = MonotonicUs();
  uint64_t hosts = 0, urls = 0, marks = 0;
  for (const std::string& key : frontier_->QueuedHosts()) {
    const std::string host = HostOf(key);
    if (host.empty() || Owns(host)) continue;
    const int to = ring_->Owner(host);
    ++hosts;
    Status s = frontier_->TakeQueue(key, [&](frontier::Item&& item) {
      RouteOut(to, cluster::UrlMessage{std::move(item.url), item.depth,
                                       item.credit});
      ++urls;
    });
    if (!s.ok()) {
      log_.Write(Level::kError, "rebalance_queue_lost",
                 {{"host", key}, {"error", s.ToString()}});
    }
  }
  // The pages this worker fetched of hosts it gave away: their new owner
  // must not fetch them again when links to them turn up.
  const std::string dir = config_.crawl.data_dir + "/warc";
  store::Record rec;
  for (const std::string& name : OwnWarcFiles()) {
    auto reader = store::WarcReader::Open(dir + "/" + name);
    if (!reader.ok()) continue;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      const std::string type = rec.type();
      if (type != "response" && type != "revisit") continue;
      std::string uri = rec.Header("WARC-Target-URI");
      const std::string host = HostOf(uri);
      if (host.empty() || Owns(host)) continue;
      RouteOut(ring_->Owner(host),
               cluster::UrlMessage{std::move(uri), kSeenMarkDepth, 0.0});
      ++marks;
    }
  }
  Count("rebalance_hosts_moved", hosts);
  log_.Write(Level::kInfo, "rebalanced",
             {{"from_workers", std::to_string(previous_workers_)},
              {"workers", std::to_string(options_.workers)},
              {"hosts_moved", std::to_string(hosts)},
              {"urls_moved", std::to_string(urls)},
              {"fetched_urls_sent", std::to_string(marks)},
              {"ms", std::to_string((MonotonicUs() - t0) / 1000)}});
}

bool Worker::Impl::Idle() const {
  if (!go_ || active_ > 0 || overflow_urls_ > 0 || !frontier_->Idle()) {
    return false;
  }
  for (int w = 0; exchange_ != nullptr && w < exchange_workers_; ++w) {
    if (exchange_->Pending(w) > 0) return false;
  }
  return true;
}

Status Worker::Impl::StartControl() {
  uv_pipe_init(&loop_, &control_, 0);
  if (int rc = uv_pipe_open(&control_, options_.control_fd); rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&control_), nullptr);
    return Status::Internal(std::string("control socket: ") + uv_strerror(rc));
  }
  control_.data = this;
  uv_timer_init(&loop_, &report_timer_);
  report_timer_.data = this;
  control_open_ = true;
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&control_),
      [](uv_handle_t*, size_t, uv_buf_t* buf) {
        static char chunk[4096];  // one loop per process: no sharing
        buf->base = chunk;
        buf->len = sizeof(chunk);
      },
      [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
        Impl* self = static_cast<Impl*>(stream->data);
        if (n < 0) {
          // The supervisor is gone: stop cleanly, checkpointed.
          uv_read_stop(stream);
          self->paused_ = false;
          self->RequestStop("signal (supervisor gone)");
          return;
        }
        self->control_buf_.append(buf->base, static_cast<size_t>(n));
        size_t nl;
        while ((nl = self->control_buf_.find('\n')) != std::string::npos) {
          std::string line = self->control_buf_.substr(0, nl);
          self->control_buf_.erase(0, nl + 1);
          self->OnControlLine(line);
          if (!self->control_open_) return;
        }
      });
  uv_timer_start(
      &report_timer_,
      [](uv_timer_t* t) { static_cast<Impl*>(t->data)->Report(); }, 200, 200);
  return Status::Ok();
}

void Worker::Impl::OnControlLine(std::string_view line) {
  if (line == "go") {
    if (!go_) {
      go_ = true;
      log_.Write(Level::kInfo, "go",
                 {{"waiting_urls", std::to_string(pre_go_.size())}});
      std::vector<cluster::UrlMessage> waiting;
      waiting.swap(pre_go_);
      for (const auto& m : waiting) Admit(m);
      EnqueueSeeds();
      Pump();
    }
  } else if (line.rfind("stop ", 0) == 0) {
    paused_ = false;
    RequestStop(std::string(line.substr(5)));
  }
}

void Worker::Impl::Report() {
  if (!control_open_) return;
  if (!ready_ && overflow_urls_ == 0) {
    bool acked = true;
    for (int w = 0; exchange_ != nullptr && w < exchange_workers_; ++w) {
      if (exchange_->Pending(w) > 0) acked = false;
    }
    ready_ = acked;
  }
  const cluster::ExchangeStats ex =
      exchange_ != nullptr ? exchange_->stats() : cluster::ExchangeStats();
  std::string line = json::Dump({{"worker", options_.worker_id},
                                 {"ready", ready_},
                                 {"idle", Idle()},
                                 {"pages", pages_},
                                 {"bytes", bytes_},
                                 {"queued", frontier_->queued()},
                                 {"active", active_},
                                 {"hosts", frontier_->hosts()},
                                 {"sent", ex.urls_sent},
                                 {"received", ex.urls_received},
                                 {"overflow", overflow_urls_}}) +
                     "\n";
  uv_buf_t buf = uv_buf_init(line.data(), static_cast<unsigned>(line.size()));
  // A report that does not fit now is skipped: the next one is 200 ms away.
  (void)uv_try_write(reinterpret_cast<uv_stream_t*>(&control_), &buf, 1);
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
