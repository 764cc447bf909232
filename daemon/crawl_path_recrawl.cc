// The recrawl schedule in the way of one URL (issue 17; docs/OPERATIONS.md,
// "A continuous crawl"). With [recrawl] enabled, every page recorded gets a
// next visit in recrawl::Schedule (on disk). On its way:
//
//   7'. release      ReleaseDue()      due URLs back into their host's
//                                      queue (step 7 without the seen
//                                      test), within the share and the cap;
//                                      the next visit leased one interval
//                                      ahead, so a URL lost before it is
//                                      fetched comes back, never twice
//    9'. capture     FindCapture()     at dispatch, the URL's last capture:
//                                      a revisit; a copy already revisited
//                                      (a restart) is dropped
//   12'. validators  AddValidators()   If-None-Match / If-Modified-Since
//   12''. 304        OnNotModified()   a 304 to a conditional request is
//                                      written as a server-not-modified
//                                      revisit of the last capture; any
//                                      other 304 is a lie, counted
//   14'. reschedule  Reschedule()      once recorded: changed or not, the
//                                      interval adapted, the next visit due
//
// Politeness is untouched: a revisit is a frontier item like any other and
// waits for its host's slot and delay.
//
// The schedule moves with its hosts. When a host belongs to another worker
// now (workers.count changed, a node joined or left), the URL's capture is
// handed over through the exchange (UrlMessage::capture):
//
//   hand-off         HandOff()         the capture, due as it was, to the
//                                      host's owner: from ReleaseDue()
//                                      when a URL of a moved host is due,
//                                      and from a sweep of the whole
//                                      schedule (SweepSchedule(), at start
//                                      and after a ring change), so that a
//                                      worker that drains and stops hands
//                                      over everything at once and a URL
//                                      is not late by up to an interval
//   settle           SettleHandOffs()  once the exchange acknowledged it
//                                      (the owner stored it), deleted here;
//                                      until then it stays, so a kill loses
//                                      nothing (it is handed over again)
//   receive          ReceiveCapture()  the owner keeps the newest capture
//                                      of the URL (by its last visit): a
//                                      copy sent twice, or older than its
//                                      own, changes nothing
//
// Counted: recrawl_handoff_sent, recrawl_handed_off (acknowledged and
// deleted here), recrawl_received, recrawl_received_stale,
// recrawl_handoff_refused, recrawl_handoff_malformed; see
// docs/OPERATIONS.md and docs/CHECKPOINT.md, "Recrawl schedule".
#include <algorithm>
#include <unordered_set>

#include "base/time.h"
#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"

namespace crawld::daemon {

namespace {

// The sweep keeps at most this many hand-offs unacknowledged (count), and
// looks at most at this many captures per step (count): memory and the
// exchange's queue stay bounded, a loop turn short.
constexpr size_t kMaxSweepPending = 512;
// Due URLs of moved hosts are handed over while fewer than this are
// unacknowledged (count); past it (the exchange stalls) they stay leased
// here and come due again: memory stays bounded, the revisit late.
constexpr size_t kMaxPendingHandOffs = 4 * kMaxSweepPending;
constexpr size_t kSweepStepCaptures = 256;
// A validator longer than this is never sent back (AddValidators): not
// carried either.
constexpr size_t kMaxValidatorBytes = 1024;

std::string HostOfUrl(std::string_view url) {
  auto u = url::Parse(url);
  return u.ok() ? std::string(u->host()) : std::string();
}

// A revisit of a URL's last capture: the record that holds its payload.
store::RevisitOf RevisitOfCapture(const recrawl::Capture& c,
                                  store::RevisitProfile profile) {
  store::RevisitOf of;
  of.profile = profile;
  of.record_id = c.record_id;
  of.target_uri = c.record_uri.empty() ? c.url : c.record_uri;
  of.date = c.record_date;
  of.payload_digest = c.payload_digest;
  return of;
}

}  // namespace

// --- 7'. release ------------------------------------------------------------

void CrawlPath::ReleaseDue() {
  recrawl::Schedule* schedule = parts_.schedule;
  if (schedule == nullptr) return;
  const int64_t wall = parts_.clock->WallUs();
  if (wall < next_due_us_) return;
  release_blocked_ = false;
  // New URLs are never starved: while some wait, released revisits make up
  // at most `recrawl_share` of the queue (each host's queue is FIFO, so
  // that is about their share of the fetches too).
  const size_t queued = frontier_->queued();
  // A released URL dropped before its dispatch counted it (disallowed, a
  // skip after recovery) is no longer queued: the count cannot exceed the
  // queue, and so never blocks releases for good.
  recrawl_queued_ = std::min(recrawl_queued_, queued);
  const size_t fresh = queued > recrawl_queued_ ? queued - recrawl_queued_ : 0;
  size_t limit = options_.recrawl_max_queued;
  if (fresh > 0) {
    limit = std::min(
        limit,
        std::max<size_t>(1, static_cast<size_t>(options_.recrawl_share *
                                                static_cast<double>(queued))));
  }
  if (recrawl_queued_ >= limit) {
    // Full: the waker must not fire at once for due URLs that cannot go
    // in (the loop would spin). A dispatch or a new URL frees room and
    // ends in a Pump(); a look a second later covers a count gone stale.
    release_blocked_ = true;
    return;
  }
  const size_t room = limit - recrawl_queued_;
  std::vector<std::pair<uint64_t, recrawl::Capture>> due;
  Status st = schedule->ForEachDue(wall, [&](uint64_t fp, recrawl::Capture c) {
    due.emplace_back(fp, std::move(c));
    return due.size() < room;
  });
  for (auto& [fp, c] : due) {
    const int64_t due_us = c.due_us;
    // The lease: due again one interval on, whatever happens to this copy
    // (a kill before the frontier's next checkpoint, a network error, a
    // hand-off not acknowledged).
    c.due_us = wall + std::max<int64_t>(c.interval_us, 1);
    if (Status put = schedule->Put(fp, c); !put.ok()) {
      st = put;
      break;
    }
    Router* router = parts_.router;
    if (router != nullptr) {
      const std::string host = HostOfUrl(c.url);
      const int owner = host.empty() ? router->self() : router->Owner(host);
      if (owner != router->self()) {
        // Its host moved: the new owner revisits it, due as it was.
        if (handoffs_.count(fp) > 0) continue;  // on its way already
        if (handoffs_.size() >= kMaxPendingHandOffs) {
          stats_->Count("recrawl_handoff_deferred");
          continue;
        }
        c.due_us = due_us;
        HandOff(fp, c, owner);
        continue;
      }
    }
    frontier::Item item;
    item.url = c.url;
    item.fingerprint = fp;
    item.depth = c.depth;
    item.seed_host = c.seed_host;
    if (frontier_->TryPush(c.host_key, std::move(item)).ok()) {
      ++recrawl_queued_;
      stats_->Count("recrawl_released");
    } else {
      stats_->Count("recrawl_refused");
    }
  }
  if (!st.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"error", st.ToString()}});
  }
  auto next = schedule->NextDueUs();
  next_due_us_ = next.ok() && next->has_value() ? **next : INT64_MAX;
  if (!next.ok()) next_due_us_ = wall + 1'000'000;  // try again in a second
  // More due than there was room for: wait for room, as above. (Due URLs
  // that went nowhere, their host moved, were leased: the next look makes
  // progress, so it need not wait.)
  if (next_due_us_ <= wall && recrawl_queued_ > 0) release_blocked_ = true;
}

void CrawlPath::RefreshNextDue() {
  auto next = parts_.schedule->NextDueUs();
  if (!next.ok()) {
    next_due_us_ = parts_.clock->WallUs() + 1'000'000;  // again in a second
    return;
  }
  next_due_us_ = next->has_value() ? **next : INT64_MAX;
}

int64_t CrawlPath::NextDueMonotonicUs(int64_t now) const {
  if (next_due_us_ == INT64_MAX) return INT64_MAX;
  if (release_blocked_) return now + 1'000'000;
  const int64_t wait = next_due_us_ - parts_.clock->WallUs();
  return wait <= 0 ? now : now + wait;
}

// --- 9'. capture ------------------------------------------------------------

bool CrawlPath::FindCapture(const frontier::Frontier::Ready& ready,
                            std::optional<recrawl::Capture>* capture) {
  if (ready.item.kind != frontier::ItemKind::kPage) return true;
  auto found = parts_.schedule->Get(ready.item.fingerprint);
  if (!found.ok()) {
    // Fetched without validators: a full response, nothing lost.
    stats_->Count("recrawl_store_error");
    log_->Write(
        Level::kError, "recrawl_store_error",
        {{"url", ready.item.url}, {"error", found.status().ToString()}});
    return true;
  }
  if (!found->has_value()) return true;  // a new URL
  if (recrawl_queued_ > 0) --recrawl_queued_;
  const recrawl::Capture& c = **found;
  // A second copy of a revisit (released before a kill and again after
  // it, or queued in flight and re-queued): visited within half the
  // shortest interval, so not again. Retries are not copies.
  const int64_t fresh_us =
      recrawl::NextIntervalUs(parts_.schedule->options(), 1, true) / 2;
  if (ready.item.retries == 0 &&
      parts_.clock->WallUs() - c.fetched_us < fresh_us) {
    stats_->Count("recrawl_duplicate_skips");
    return false;
  }
  *capture = std::move(**found);
  stats_->Count("recrawl_visits");
  return true;
}

// --- 12'. validators --------------------------------------------------------

void CrawlPath::AddValidators(Job* job, fetcher::Request* req) {
  const recrawl::Capture& c = *job->capture;
  // Only with a record to refer to: a 304 must become a revisit of it.
  if (c.record_id.empty()) return;
  // RFC 9110 13.1.3: a server evaluates If-None-Match first and ignores
  // If-Modified-Since when both are present; sending both serves servers
  // that know only one.
  // A validator is the server's text sent back in our request: one with a
  // control character (a bare CR would end the line for some servers) or
  // longer than any real one is not sent.
  auto sendable = [](const std::string& v) {
    return !v.empty() && v.size() <= 1024 &&
           std::none_of(v.begin(), v.end(), [](char ch) {
             const auto u = static_cast<unsigned char>(ch);
             return (u < 0x20 && u != '\t') || u == 0x7F;
           });
  };
  bool sent = false;
  if (sendable(c.etag)) {
    req->extra_headers.push_back("If-None-Match: " + c.etag);
    sent = true;
  }
  if (sendable(c.last_modified)) {
    req->extra_headers.push_back("If-Modified-Since: " + c.last_modified);
    sent = true;
  }
  job->conditional = sent;
}

// --- 12''. 304 --------------------------------------------------------------

void CrawlPath::OnNotModified(Job* job) {
  const fetcher::Response& r = job->response;
  if (!job->conditional) {
    // A 304 to a request with no validators (RFC 9110 15.4.5 allows it
    // only for a conditional request): nothing to refer to. Recorded as
    // the response it is; the schedule counts it as unchanged.
    stats_->Count("recrawl_304_unconditional");
    log_->Write(Level::kWarn, "recrawl_304_unconditional", {{"url", job->url}});
    return;
  }
  if (r.body.size() > 0) {
    // A 304 has no content (RFC 9110 15.4.5); what came is not kept.
    stats_->Count("recrawl_304_body");
  }
  job->not_modified_of = RevisitOfCapture(
      *job->capture, store::RevisitProfile::kServerNotModified);
  stats_->Count("recrawl_not_modified");
}

RecrawlWrite CrawlPath::RecrawlWriteOf(Job* job) {
  RecrawlWrite rw;
  if (parts_.schedule == nullptr) return rw;
  rw.out = &job->recorded;
  if (job->not_modified_of.has_value()) {
    rw.not_modified_of = &*job->not_modified_of;
    return rw;
  }
  const int status = job->response.status_code;
  if (job->capture.has_value() && status >= 200 && status < 300 &&
      !job->capture->record_id.empty() &&
      !job->capture->payload_digest.empty()) {
    job->unchanged_of = RevisitOfCapture(
        *job->capture, store::RevisitProfile::kIdenticalPayloadDigest);
    rw.unchanged_of = &*job->unchanged_of;
  }
  return rw;
}

// --- 14'. reschedule --------------------------------------------------------

void CrawlPath::Reschedule(Job* job) {
  const fetcher::Response& r = job->response;
  const int status = r.status_code;
  // Sitemaps are read when robots.txt names them, not revisited as pages;
  // a retry (429, 503, 5xx) is in its queue and rescheduled when it ends.
  if (job->item.kind != frontier::ItemKind::kPage || status == 0 ||
      status == 429 || status >= 500) {
    return;
  }
  const bool first = !job->capture.has_value();
  recrawl::Capture c = first ? recrawl::Capture{} : *job->capture;
  const RecordedPayload& p = job->recorded;
  bool changed = false;
  if (status >= 200 && status < 300 && !p.payload_digest.empty()) {
    changed = !first && p.payload_digest != c.payload_digest;
    if (!first && !changed && job->conditional) {
      // Validators that never match the same bytes (an ETag per request):
      // a full response each time, written as an identical-payload revisit.
      stats_->Count("recrawl_validator_miss");
    }
    c.payload_digest = p.payload_digest;
    c.record_id = p.record_id;
    c.record_uri = p.record_uri;
    c.record_date = p.record_date;
    c.etag = r.Header("ETag");
    c.last_modified = r.Header("Last-Modified");
  } else if (p.not_modified) {
    // RFC 9110 15.4.5: a 304 sends the validators the 200 would have.
    if (std::string etag = r.Header("ETag"); !etag.empty()) c.etag = etag;
  } else if (status != 304) {
    // Not a page now (a redirect, a 4xx): revisited without validators.
    c.etag.clear();
    c.last_modified.clear();
  }
  const int64_t wall = parts_.clock->WallUs();
  c.url = job->item.url;
  c.host_key = job->host_key;
  c.seed_host = job->item.seed_host;
  c.depth = job->item.depth;
  c.interval_us = recrawl::NextIntervalUs(parts_.schedule->options(),
                                          first ? 0 : c.interval_us, changed);
  c.fetched_us = wall;
  c.due_us = wall + c.interval_us;
  ++c.visits;
  if (changed) ++c.changes;
  if (!first) stats_->Count(changed ? "recrawl_changed" : "recrawl_unchanged");
  if (Status st = parts_.schedule->Put(job->item.fingerprint, c); !st.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"url", job->url}, {"error", st.ToString()}});
    return;
  }
  next_due_us_ = std::min(next_due_us_, c.due_us);
  log_->Write(Level::kDebug, "recrawl_scheduled",
              {{"url", job->url},
               {"changed", changed ? "true" : "false"},
               {"interval_ms", std::to_string(c.interval_us / 1000)}});
}

// --- hand-off ---------------------------------------------------------------

bool CrawlPath::HandOff(uint64_t fp, const recrawl::Capture& capture, int to) {
  recrawl::Capture sent = capture;
  if (sent.etag.size() > kMaxValidatorBytes) sent.etag.clear();
  if (sent.last_modified.size() > kMaxValidatorBytes) {
    sent.last_modified.clear();
  }
  cluster::UrlMessage m;
  m.url = capture.url;
  m.depth = capture.depth;
  m.seed_host = capture.seed_host;
  m.capture = recrawl::EncodeCapture(sent);
  if (!parts_.router->Send(to, std::move(m))) {
    // Refused for good (counted by the router too): it stays here, leased
    // or swept again, and is tried again when due.
    stats_->Count("recrawl_handoff_refused");
    return false;
  }
  handoffs_[fp] = PendingHandOff{capture.url, capture.fetched_us};
  stats_->Count("recrawl_handoff_sent");
  return true;
}

void CrawlPath::SettleHandOffs(int64_t now) {
  if (handoffs_.empty() || now < next_settle_us_) return;
  next_settle_us_ = now + kSettleEveryUs;
  std::unordered_set<std::string> unacked;
  if (!parts_.router->ForEachUnackedCapture(
          [&](const std::string& url) { unacked.insert(url); })) {
    return;  // closing: kept here, handed over again at the next start
  }
  for (auto it = handoffs_.begin(); it != handoffs_.end();) {
    if (unacked.count(it->second.url) > 0) {
      ++it;
      continue;
    }
    // Acknowledged: the owner has it. Deleted unless a newer visit here
    // replaced it since (the host came back), which then stays.
    auto deleted =
        parts_.schedule->DeleteIfFetchedAt(it->first, it->second.fetched_us);
    if (!deleted.ok()) {
      stats_->Count("recrawl_store_error");
      log_->Write(
          Level::kError, "recrawl_store_error",
          {{"url", it->second.url}, {"error", deleted.status().ToString()}});
      ++it;  // tried again at the next settle
      continue;
    }
    stats_->Count(*deleted ? "recrawl_handed_off"
                           : "recrawl_handoff_superseded");
    it = handoffs_.erase(it);
  }
  RefreshNextDue();
}

void CrawlPath::SweepSchedule() {
  if (parts_.schedule == nullptr || parts_.router == nullptr) return;
  sweeping_ = true;
  sweep_after_.reset();
  log_->Write(Level::kInfo, "recrawl_sweep_start", {});
}

void CrawlPath::SweepStep() {
  if (!sweeping_) return;
  Router* router = parts_.router;
  struct Moved {
    uint64_t fp;
    recrawl::Capture capture;
    int to;
  };
  std::vector<Moved> moved;
  size_t looked = 0;
  bool more = false;
  Status st = parts_.schedule->ForEachCapture(
      sweep_after_, [&](uint64_t fp, recrawl::Capture c) {
        if (looked == kSweepStepCaptures ||
            handoffs_.size() + moved.size() >= kMaxSweepPending) {
          more = true;
          return false;
        }
        ++looked;
        sweep_after_ = fp;
        const std::string host = HostOfUrl(c.url);
        const int owner = host.empty() ? router->self() : router->Owner(host);
        if (owner != router->self() && handoffs_.count(fp) == 0) {
          moved.push_back({fp, std::move(c), owner});
        }
        return true;
      });
  for (const Moved& m : moved) HandOff(m.fp, m.capture, m.to);
  if (!st.ok()) {
    // Not retried in a loop: the next start (or ring change) sweeps again,
    // and ReleaseDue hands over what is due meanwhile.
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"error", st.ToString()}});
    more = false;
  }
  if (!more) {
    sweeping_ = false;
    log_->Write(Level::kInfo, "recrawl_sweep_done",
                {{"pending", std::to_string(handoffs_.size())}});
  }
}

void CrawlPath::ReceiveCapture(const cluster::UrlMessage& m) {
  recrawl::Schedule* schedule = parts_.schedule;
  auto canon = parts_.canonicalizer->Canonicalize(m.url);
  auto c = recrawl::DecodeCapture(m.capture);
  if (!canon.ok() || !canon->is_http() || !c.ok() || c->url != m.url) {
    // Not what a worker sends: acknowledged and dropped, loudly.
    stats_->Count("recrawl_handoff_malformed");
    log_->Write(
        Level::kWarn, "recrawl_handoff_malformed",
        {{"url", m.url}, {"error", c.ok() ? "url" : c.status().ToString()}});
    return;
  }
  const uint64_t fp = url::Fingerprint(canon->href());
  // Fetched by its previous owner: a link to it is not a new URL here.
  parts_.seen->InsertIfNew(canon->origin_key(), fp);
  if (schedule == nullptr) {
    // This worker runs without [recrawl]: the mark is all it keeps.
    stats_->Count("recrawl_received_unscheduled");
    return;
  }
  auto stored = schedule->Merge(fp, *c);
  if (!stored.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"url", m.url}, {"error", stored.status().ToString()}});
    return;
  }
  if (!*stored) {
    stats_->Count("recrawl_received_stale");
    return;
  }
  stats_->Count("recrawl_received");
  next_due_us_ = std::min(next_due_us_, c->due_us);
  Router* router = parts_.router;
  if (router != nullptr && handoffs_.count(fp) == 0) {
    // The ring moved on since it was sent: on to the owner now, the same
    // way (deleted here once that one is acknowledged).
    const int owner = router->Owner(canon->host());
    if (owner != router->self()) HandOff(fp, *c, owner);
  }
}

}  // namespace crawld::daemon
