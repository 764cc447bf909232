// The way of one URL, steps 1-16 of crawl_path.h, in that order.
#include "daemon/crawl_path.h"

#include <algorithm>

#include "base/ascii.h"
#include "daemon/crawl_job.h"
#include "fetcher/fetcher.h"

namespace crawld::daemon {

std::string_view StageName(Stage stage) {
  switch (stage) {
    case Stage::kResolving:
      return "resolving";
    case Stage::kIpWait:
      return "ip_wait";
    case Stage::kFetching:
      return "fetching";
    case Stage::kProcessing:
      return "processing";
    case Stage::kRecording:
      return "recording";
    case Stage::kDone:
      return "done";
  }
  return "?";
}

CrawlPath::CrawlPath(const Options& options, const Parts& parts)
    : options_(options),
      parts_(parts),
      recorder_({options.write_metadata, options.conversion_records},
                parts.warc, parts.documents, parts.stats, parts.log,
                parts.clock, parts.pool),
      parse_slots_({options.parse_slots, options.big_body_bytes, options.parser,
                    options.sitemap},
                   parts.pool),
      frontier_(parts.frontier),
      ip_gate_(parts.ip_gate),
      hosts_(parts.hosts),
      stats_(parts.stats),
      log_(parts.log) {
  if (parts_.schedule != nullptr) {
    // Due at once, if anything is scheduled: ReleaseDue reads the real time.
    auto next = parts_.schedule->NextDueUs();
    next_due_us_ = !next.ok() || next->has_value() ? 0 : INT64_MAX;
  }
}

CrawlPath::~CrawlPath() = default;

// --- 1. enter, 2. canonicalize, 4. traps -----------------------------------

EnterResult CrawlPath::Enter(const Candidate& c) {
  auto canon = parts_.canonicalizer->Canonicalize(c.url);
  if (!canon.ok()) {
    stats_->Count("invalid_url");
    return EnterResult::kRejected;
  }
  if (!canon->is_http()) return EnterResult::kRejected;
  if (!Filter(*canon, c)) return EnterResult::kRejected;
  if (std::string_view trap = parts_.traps->CheckShape(*canon); !trap.empty()) {
    stats_->Count("trap_" + std::string(trap));
    log_->Write(
        Level::kDebug, "trap",
        {{"url", std::string(canon->href())}, {"trap", std::string(trap)}});
    return EnterResult::kRejected;
  }
  return Route(*canon, c);
}

// --- 3. filter --------------------------------------------------------------

bool CrawlPath::Filter(const url::Url& canon, const Candidate& c) {
  // The filter decides before the seen test: a URL rejected now is not
  // remembered, so a rule reload can admit it when it is met again.
  const std::string_view seed_host =
      c.seed_host.empty() ? canon.host() : c.seed_host;
  const conf::RuleVerdict verdict =
      rules_->Decide({canon.href(), c.depth, seed_host});
  if (verdict.accept) return true;
  stats_->Count("filter_rejected");
  log_->Write(Level::kDebug, "filter_rejected",
              {{"url", std::string(canon.href())},
               {"rule", verdict.rule},
               {"line", std::to_string(verdict.line)}});
  return false;
}

// --- 5. route ---------------------------------------------------------------

EnterResult CrawlPath::Route(const url::Url& canon, const Candidate& c) {
  Router* router = parts_.router;
  if (router != nullptr) {
    const int owner = router->Owner(canon.host());
    if (owner != router->self()) {
      // Another worker owns the host: it alone decides whether it is new.
      cluster::UrlMessage m;
      m.url = std::string(canon.href());
      m.depth = c.depth;
      m.credit = c.credit;
      m.seed_host =
          std::string(c.seed_host.empty() ? canon.host() : c.seed_host);
      m.sitemap_kind = static_cast<uint8_t>(c.kind);
      m.sitemap_of = std::string(c.sitemap_of);
      m.changefreq = c.changefreq;
      m.lastmod_s = c.lastmod_s;
      router->Send(owner, std::move(m));
      return EnterResult::kRouted;
    }
  }
  return Admit(canon, c);
}

// --- 6. seen, trap budgets; 7. enqueue --------------------------------------

EnterResult CrawlPath::Admit(const url::Url& canon, const Candidate& c) {
  const uint64_t fp = url::Fingerprint(canon.href());
  const std::string host_key = canon.origin_key();
  if (!parts_.seen->InsertIfNew(host_key, fp)) {
    // Known URL: its host still receives the credit (AOPIC).
    if (c.credit > 0) frontier_->AddCredit(host_key, c.credit, c.from_host_key);
    if (c.lastmod_s != 0) DueByLastmod(fp, c.lastmod_s);
    if (c.changefreq != 0) LateChangefreq(fp, c.changefreq);
    return EnterResult::kKnown;
  }
  if (std::string_view trap = parts_.traps->Admit(host_key, canon);
      !trap.empty()) {
    stats_->Count("trap_" + std::string(trap));
    log_->Write(
        Level::kDebug, "trap",
        {{"url", std::string(canon.href())}, {"trap", std::string(trap)}});
    return EnterResult::kRejected;
  }
  frontier::Item item;
  item.url = std::string(canon.href());
  item.fingerprint = fp;
  item.depth = c.depth;
  item.redirects = c.redirects;
  item.credit = c.credit;
  item.redirect_from = c.redirect_from;
  item.seed_host =
      std::string(c.seed_host.empty() ? canon.host() : c.seed_host);
  item.kind = c.kind;
  item.sitemap_of = std::string(c.sitemap_of);
  item.changefreq = c.changefreq;
  Status st = frontier_->TryPush(host_key, std::move(item), c.from_host_key);
  if (st.ok()) return EnterResult::kQueued;
  if (st.code() == Status::Code::kFailedPrecondition) {
    stats_->Count("retired_host_drops");
  } else {
    // The spill disk failed and memory is over budget: counted and
    // logged, never silent.
    stats_->Count("frontier_refused");
    log_->Write(Level::kError, "frontier_refused",
                {{"url", std::string(canon.href())}, {"error", st.ToString()}});
  }
  return EnterResult::kRejected;
}

// --- 8. schedule ------------------------------------------------------------

void CrawlPath::Pump() {
  if (replaying_) return;  // the caller pumps once the replay is over
  const int64_t now = parts_.clock->MonotonicUs();
  // Waiters at the IP gate run even while not accepting: they hold host
  // slots, and a crawl ends only when every job has finished.
  ip_gate_->RunReady(now);
  const size_t max_active = options_.max_connections;
  // A job waiting at the IP gate holds a host slot but no connection; they
  // are bounded separately so one crowded address cannot pull in every
  // host that lives on it.
  auto saturated = [&] {
    const size_t waiting = ip_gate_->waiting();
    return jobs_.size() - waiting >= max_active || waiting >= 4 * max_active ||
           (options_.max_pages > 0 &&
            stats_->pages + jobs_.size() >= options_.max_pages);
  };
  auto accepting = [this] { return !parts_.accepting || parts_.accepting(); };
  if (parts_.schedule != nullptr && parts_.router != nullptr) {
    // Recrawl hand-offs: the acknowledged ones forgotten here; the sweep
    // a step further. Not held back by accepting(): a worker leaving the
    // ring hands over before the supervisor's go (ready() waits for it),
    // and the sweep bounds what it leaves unacknowledged itself.
    SettleHandOffs(now);
    SweepStep();
  }
  if (accepting()) ReleaseDue();
  while (accepting() && !saturated()) {
    auto ready = frontier_->Pop(now);
    if (!ready) break;
    Dispatch(std::move(*ready));
  }
  ArmWaker(now, accepting() && !saturated());
  if (parts_.on_pumped) parts_.on_pumped();
}

void CrawlPath::ArmWaker(int64_t now, bool may_start) {
  int64_t next =
      may_start ? std::min(frontier_->NextReadyUs(), NextDueMonotonicUs(now))
                : INT64_MAX;
  // A waiter at the IP gate becomes due on its own clock.
  next = std::min(next, ip_gate_->RunReady(now));
  // Recrawl hand-offs: the sweep's next step, the next look for acks.
  if (sweeping_) next = std::min(next, now + 20'000);
  if (!handoffs_.empty()) next = std::min(next, now + kSettleEveryUs);
  parts_.waker->WakeAt(next);
}

// --- 9. robots gate ---------------------------------------------------------

void CrawlPath::Dispatch(frontier::Frontier::Ready ready) {
  if (!skip_.empty() && skip_.erase(ready.item.fingerprint) > 0) {
    // Recorded after the last checkpoint, before a crash: not again.
    stats_->Count("recovered_skips");
    frontier_->Release(ready.host_key);
    return;
  }
  auto parsed = url::Parse(ready.item.url);
  const std::string_view path =
      parsed.ok() ? parsed->path_and_query() : std::string_view("/");
  HostTable::Gate gate =
      hosts_->CheckPage(ready.host_key, path, parts_.clock->MonotonicUs());
  if (gate.kind == HostTable::Gate::kFetchRobots) {
    // The slot Pop gave us is used for robots.txt; the page waits at the
    // head of its queue and comes out again after the politeness delay.
    std::string seed_host = ready.item.seed_host;
    frontier_->PushFront(ready.host_key, std::move(ready.item));
    Job* robots = NewJob(true, std::move(ready.host_key), gate.robots_url);
    // The sitemaps its robots.txt names descend from the same seed.
    robots->item.seed_host = std::move(seed_host);
    Resolve(robots);
    return;
  }
  if (gate.kind == HostTable::Gate::kDisallowed) {
    stats_->Count("robots_disallowed");
    if (gate.verdict.from_override) stats_->Count("override_disallowed");
    log_->Write(Level::kDebug, "robots_disallowed",
                {{"url", ready.item.url},
                 {"rule", gate.verdict.rule},
                 {"origin", gate.verdict.origin}});
    frontier_->Release(ready.host_key);
    return;
  }
  std::optional<recrawl::Capture> capture;
  if (parts_.schedule != nullptr && !FindCapture(ready, &capture)) {
    frontier_->Release(ready.host_key);  // a copy already revisited
    return;
  }
  Job* job = NewJob(false, std::move(ready.host_key), ready.item.url);
  job->capture = std::move(capture);
  job->item = std::move(ready.item);
  Resolve(job);
}

// --- 10. resolve ------------------------------------------------------------

void CrawlPath::Resolve(Job* job) {
  SetStage(job, Stage::kResolving);
  job->started_us = parts_.clock->MonotonicUs();
  auto parsed = url::Parse(job->url);
  if (!parsed.ok()) {
    // Only canonical URLs enter the frontier, so this is a bug, not input.
    stats_->Count("invalid_url");
    ReleaseSlots(job, {frontier::Outcome::kSuccess, 0, -1});
    Finish(job);
    return;
  }
  parts_.resolve->Resolve(std::string(parsed->host()),
                          [this, job](Result<dns::Answer> answer) {
                            OnResolved(job, std::move(answer));
                          });
}

void CrawlPath::OnResolved(Job* job, Result<dns::Answer> answer) {
  if (answer.ok() && !answer->addresses.empty()) {
    EnterIpGate(job, answer->addresses.front());
    return;
  }
  const Status s =
      answer.ok() ? Status::NotFound("no address") : answer.status();
  const char* cls =
      s.code() == Status::Code::kFailedPrecondition ? "blocked_private" : "dns";
  stats_->Count(cls);
  log_->Write(Level::kWarn, "fetch_error",
              {{"url", job->url}, {"class", cls}, {"error", s.ToString()}});
  // No response: for robots.txt that is "unreachable" (RFC 9309 2.3.1.4);
  // for a page, a resolver timeout or failure is worth another try.
  job->response.status_code = 0;
  job->response.error = fetcher::ErrorClass::kConnect;
  job->response.error_message = s.ToString();
  if (job->robots) {
    OnRobotsFetched(job);
    return;
  }
  if (s.code() != Status::Code::kNotFound &&
      s.code() != Status::Code::kFailedPrecondition) {
    RetryLater(job);
  }
  ReleaseSlots(job, {frontier::Outcome::kNetworkError, 0, -1});
  Finish(job);
}

// --- 11. IP gate ------------------------------------------------------------

void CrawlPath::EnterIpGate(Job* job, const std::string& ip) {
  // An override's concurrency > 1 is the admin's word for this host: the
  // per-IP limit would serialize it again, so such a host skips the gate.
  const conf::HostOverride& ov = hosts_->OverrideFor(job->host_key);
  const bool gated = !(ov.concurrency.has_value() && *ov.concurrency > 1);
  SetStage(job, Stage::kIpWait);
  ip_gate_->Enter(gated ? ip : std::string(), parts_.clock->MonotonicUs(),
                  [this, job, ip, gated] {
                    if (gated) job->ip = ip;
                    Fetch(job, ip);
                  });
  if (job->stage == Stage::kIpWait) {
    // It waits for its address: the timer must cover the address's time
    // too (a robots.txt hop found nothing else to wake it once).
    Pump();
  }
}

// --- 12. fetch --------------------------------------------------------------

void CrawlPath::Fetch(Job* job, const std::string& ip) {
  SetStage(job, Stage::kFetching);
  job->started_us = parts_.clock->MonotonicUs();
  fetcher::Request req;
  req.url = job->url;
  req.ip = ip;
  // A host with nothing queued after this page (a robots.txt fetch has its
  // page queued) does not keep its connection open; links found on the
  // page may still bring it back, for one handshake.
  const std::optional<frontier::HostInfo> host = frontier_->Host(job->host_key);
  req.keep_alive = host.has_value() && host->queued > 0;
  if (job->capture.has_value()) AddValidators(job, &req);
  parts_.fetch->Submit(std::move(req), [this, job](fetcher::Response&& r) {
    OnFetched(job, std::move(r));
  });
}

void CrawlPath::OnFetched(Job* job, fetcher::Response&& response) {
  job->response = std::move(response);
  const fetcher::Response& r = job->response;
  if (parts_.recent != nullptr && r.error != fetcher::ErrorClass::kAborted) {
    parts_.recent->Add({job->host_key, job->url, r.status_code,
                        r.status_code == 0
                            ? std::string(fetcher::ErrorClassName(r.error))
                            : std::string(),
                        (parts_.clock->MonotonicUs() - job->started_us) / 1000,
                        static_cast<uint64_t>(r.body.size()),
                        parts_.clock->WallUs(), job->robots});
  }
  if (job->robots) {
    OnRobotsFetched(job);
  } else {
    OnPageFetched(job);
  }
}

void CrawlPath::OnPageFetched(Job* job) {
  const fetcher::Response& r = job->response;
  const int status = r.status_code;
  frontier::Completion done{frontier::Outcome::kSuccess,
                            parts_.clock->MonotonicUs() - job->started_us, -1};
  if (status == 0 && r.error == fetcher::ErrorClass::kAborted) {
    // Shut down under it (a signal): back to its queue for the next start.
    frontier_->PushFront(job->host_key, job->item);
    ReleaseSlots(job, done);
    Finish(job);
    return;
  }
  if (status == 0) {
    const std::string cls(fetcher::ErrorClassName(r.error));
    stats_->Count(cls);
    log_->Write(
        Level::kWarn, "fetch_error",
        {{"url", job->url}, {"class", cls}, {"error", r.error_message}});
    done.outcome = frontier::Outcome::kNetworkError;
    if (r.error == fetcher::ErrorClass::kConnect ||
        r.error == fetcher::ErrorClass::kTimeout ||
        r.error == fetcher::ErrorClass::kProtocol) {
      RetryLater(job);  // transient; a TLS failure is not
    }
    ReleaseSlots(job, done);
    Finish(job);
    return;
  }
  ++stats_->pages;
  stats_->bytes += r.body.size();
  if (parts_.on_fetch_seconds)
    parts_.on_fetch_seconds(done.response_time_us / 1e6);
  // The host's schedule first: its slot is free once the response is in.
  if (status == 429 || status == 503) {
    stats_->Count(status == 429 ? "http_429" : "http_503");
    done.outcome = frontier::Outcome::kRetryLater;
    done.retry_after_us = fetcher::ParseRetryAfter(
        r.Header("Retry-After"), parts_.clock->WallUs() / 1000000);
    RetryLater(job);
  } else if (status >= 500) {
    stats_->Count("http_5xx");
    done.outcome = frontier::Outcome::kServerError;
  } else if (status >= 400) {
    stats_->Count("http_4xx");
  }
  ReleaseSlots(job, done);
  if (status >= 200 && status < 300) {
    Process(job);
    return;
  }
  if (status == 304 && parts_.schedule != nullptr) {
    OnNotModified(job);  // a revisit of the last capture, or a lie counted
  } else if (status >= 300 && status < 400) {
    FollowRedirect(job);  // before the record, as links (OnProcessed)
    Pump();
  }
  Record(job, [this](Job* j) { Finish(j); });
}

// --- 13. parse --------------------------------------------------------------

void CrawlPath::Process(Job* job) {
  SetStage(job, Stage::kProcessing);
  auto task = std::make_unique<PageTask>();
  task->response = &job->response;
  task->url = job->url;
  task->robots_token = options_.robots_token;
  task->max_decoded = options_.max_decoded_page_bytes;
  if (job->item.kind != frontier::ItemKind::kPage) {
    task->sitemap = &options_.sitemap;
    if (!job->item.sitemap_of.empty()) {
      task->sitemap_hosts.push_back(job->item.sitemap_of);
    }
  }
  parts_.documents->Prepare(task.get());  // the body's digest and claim
  PageTask* t = task.get();
  job->task = std::move(task);
  parse_slots_.Run(t, [this, job] { OnProcessed(job); });
}

void CrawlPath::OnProcessed(Job* job) {
  PageTask& t = *job->task;
  if (!t.decode.ok()) {
    stats_->Count("decode_error");
    log_->Write(Level::kWarn, "decode_error",
                {{"url", job->url}, {"error", t.decode.ToString()}});
  } else if (t.capped) {
    stats_->Count("decode_capped");
  }
  if (t.decode.ok() && !t.parsed) stats_->Count("not_parsed");  // archived
  if (t.header_robots.noindex) stats_->Count("x_robots_noindex");
  if (t.parsed) CountParseCuts(t.page, stats_);
  if (t.sitemap_report.has_value()) CountSitemap(job, *t.sitemap_report);
  // Links first: the next page of a site need not wait for this one's
  // records, which queue behind every earlier write. Then the record, and
  // the job ends the moment it is written. So a checkpoint never holds a
  // page in flight whose record is behind its WARC position (a crash would
  // fetch it again although its record is in), nor a recorded page whose
  // links are not all queued (a crash would lose them: replay starts after
  // the record).
  auto record = [this](Job* j) { Record(j, [this](Job* k) { Finish(k); }); };
  if (!t.parsed) {
    record(job);
    return;
  }
  job->after_links = std::move(record);
  FollowLinks(job, /*all_now=*/false);
}

// --- 14. record -------------------------------------------------------------

void CrawlPath::Record(Job* job, std::function<void(Job*)> then) {
  SetStage(job, Stage::kRecording);
  recorder_.Submit(
      job->url, job->response, job->task.get(),
      [this, job, then = std::move(then)](Status s) {
        if (s.ok()) {
          if (parts_.schedule != nullptr && !job->robots) Reschedule(job);
          then(job);
        } else {
          StoreFailed(job, s);
        }
      },
      RecrawlWriteOf(job));
}

// --- jobs -------------------------------------------------------------------

CrawlPath::Job* CrawlPath::NewJob(bool robots, std::string host_key,
                                  std::string url) {
  auto job = std::make_unique<Job>();
  job->id = next_job_id_++;
  job->robots = robots;
  job->host_key = std::move(host_key);
  job->url = std::move(url);
  Job* raw = job.get();
  jobs_.emplace(raw->id, std::move(job));
  return raw;
}

void CrawlPath::SetStage(Job* job, Stage stage) {
  if (job->stage != stage) {
    log_->Write(Level::kDebug, "stage",
                {{"url", job->url},
                 {"from", StageName(job->stage)},
                 {"to", StageName(stage)}});
  }
  job->stage = stage;
}

void CrawlPath::ReleaseSlots(Job* job, const frontier::Completion& done) {
  const int64_t now = parts_.clock->MonotonicUs();
  if (!job->ip.empty()) {
    ip_gate_->Leave(job->ip, now, now - job->started_us);
    job->ip.clear();
  }
  if (job->holds_slot) {
    job->holds_slot = false;
    // A failure that retires the host drops its whole queue inside the
    // frontier: those URLs end here, and are counted like every URL that
    // meets a retired host.
    const uint64_t dropped = frontier_->dropped();
    frontier_->Complete(job->host_key, now, done);
    if (frontier_->dropped() > dropped) {
      stats_->Count("retired_host_drops", frontier_->dropped() - dropped);
    }
  }
}

void CrawlPath::RetryLater(Job* job) {
  // Back to the head of its host's queue: the frontier's backoff spaces the
  // retries, and repeated failures retire the host (counted there).
  if (job->item.retries < options_.max_retries) {
    stats_->Count("retries");
    frontier::Item again = job->item;
    ++again.retries;
    if (!frontier_->PushFront(job->host_key, std::move(again))) {
      // This very failure retired the host (politeness.max_host_errors):
      // the URL ends here, and is counted like the rest of its queue.
      stats_->Count("retired_host_drops");
    }
  } else {
    stats_->Count("retries_exhausted");
    log_->Write(Level::kWarn, "retries_exhausted", {{"url", job->url}});
  }
}

void CrawlPath::StoreFailed(Job* job, const Status& status) {
  const bool record_refused = status.code() == Status::Code::kInvalidArgument ||
                              status.code() == Status::Code::kResourceExhausted;
  stats_->Count(record_refused ? "record_refused" : "store_error");
  log_->Write(Level::kError,
              record_refused ? "record_refused" : "warc_write_failed",
              {{"url", job->url}, {"error", status.ToString()}});
  if (record_refused) {
    // This record cannot be written as it came (not an HTTP message, over
    // the record cap): the store wrote nothing of it; the crawl goes on.
    ReleaseSlots(job, {frontier::Outcome::kSuccess, 0, -1});
    Finish(job);
    return;
  }
  // The disk failed. Not recorded, so not lost: the page goes back to its
  // queue, which the exit checkpoint keeps for the next start (issue 19:
  // disk full).
  if (!job->robots) frontier_->PushFront(job->host_key, job->item);
  ReleaseSlots(job, {frontier::Outcome::kSuccess, 0, -1});
  Finish(job);
  // A crawler that cannot record what it fetches must not go on fetching.
  if (parts_.on_fatal) parts_.on_fatal("store_error");
}

void CrawlPath::Finish(Job* job) {
  SetStage(job, Stage::kDone);
  jobs_.erase(job->id);
  Pump();
}

}  // namespace crawld::daemon
