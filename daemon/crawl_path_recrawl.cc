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
//                                      interval adapted (within the bounds
//                                      of the URL's recrawl rule, from the
//                                      sitemap's changefreq at first), the
//                                      next visit due
//    6'. lastmod     DueByLastmod()    a known URL a sitemap lists with a
//                                      lastmod after its last capture (or
//                                      its fetch's start) is due now
//    6''. changefreq LateChangefreq()  a known URL's changefreq kept for
//                                      its first capture, or its first
//                                      interval planned again
//
// Politeness is untouched: a revisit is a frontier item like any other and
// waits for its host's slot and delay.
//
// The schedule moves with its hosts: a URL whose host another worker owns
// now is handed over with its capture (crawl_path_handoff.cc).
#include <algorithm>

#include "base/time.h"
#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"

namespace crawld::daemon {

namespace {

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
      const std::string host = url::HostOf(c.url);
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
    item.kind = static_cast<frontier::ItemKind>(c.kind);
    item.sitemap_of = c.sitemap_of;
    item.revisit = true;  // not against the host's page budget
    // A host at its page budget holds its new URLs until more credit comes
    // (a trap's); a revisit behind them in its FIFO queue would wait as
    // long, so it goes to the front.
    const bool pushed =
        frontier_->AtPageBudget(c.host_key)
            ? frontier_->PushFront(c.host_key, std::move(item))
            : frontier_->TryPush(c.host_key, std::move(item)).ok();
    if (pushed) {
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
  if (ready.item.retries == 0 &&
      parts_.clock->WallUs() - c.fetched_us < DuplicateWindowUs(c)) {
    stats_->Count("recrawl_duplicate_skips");
    return false;
  }
  *capture = std::move(**found);
  stats_->Count("recrawl_visits");
  return true;
}

int64_t CrawlPath::DuplicateWindowUs(const recrawl::Capture& c) const {
  // Half the shortest interval; a recrawl rule may set one below the
  // [recrawl] minimum, and the capture's own interval is then shorter.
  const int64_t shortest =
      recrawl::NextIntervalUs(parts_.schedule->options(), 1, true);
  return std::min(shortest, std::max<int64_t>(c.interval_us, 1)) / 2;
}

// --- 6'. lastmod ------------------------------------------------------------

void CrawlPath::DueByLastmod(uint64_t fingerprint, uint32_t lastmod_s) {
  recrawl::Schedule* schedule = parts_.schedule;
  if (schedule == nullptr) return;
  const int64_t wall = parts_.clock->WallUs();
  const int64_t lastmod_us = static_cast<int64_t>(lastmod_s) * 1'000'000;
  // A lastmod ahead of our clock by more than any skew is a sitemap that
  // stamps "now + something" on everything: it says nothing.
  constexpr int64_t kSkewUs = 3600LL * 1'000'000;
  if (lastmod_us > wall + kSkewUs) {
    stats_->Count("recrawl_lastmod_future");
    return;
  }
  // Being fetched or recorded now (a site's sitemap is often read right
  // after its front page): the capture on its way is older than the
  // lastmod when its fetch began before it. Reschedule() makes it due.
  const int64_t mono = parts_.clock->MonotonicUs();
  for (auto& [id, job] : jobs_) {
    if (!job->robots && job->item.fingerprint == fingerprint &&
        job->item.kind == frontier::ItemKind::kPage &&
        job->stage != Stage::kResolving && job->stage != Stage::kIpWait &&
        lastmod_us > wall - (mono - job->started_us)) {
      job->stale_by_lastmod = true;
      return;
    }
  }
  auto found = schedule->Get(fingerprint);
  // Not captured yet (queued): its first visit comes anyway.
  if (!found.ok() || !found->has_value()) return;
  recrawl::Capture c = std::move(**found);
  if (lastmod_us <= c.fetched_us || c.due_us <= wall) return;
  // Due now, but not sooner than a revisit copy would be refused
  // (FindCapture): a page changed right after its visit waits that long.
  c.due_us = std::max(wall, c.fetched_us + DuplicateWindowUs(c));
  if (Status st = schedule->Put(fingerprint, c); !st.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"url", c.url}, {"error", st.ToString()}});
    return;
  }
  next_due_us_ = std::min(next_due_us_, c.due_us);
  stats_->Count("recrawl_lastmod_due");
  log_->Write(Level::kDebug, "recrawl_lastmod_due",
              {{"url", c.url}, {"lastmod", std::to_string(lastmod_s)}});
}

void CrawlPath::LateChangefreq(uint64_t fingerprint, uint8_t changefreq) {
  recrawl::Schedule* schedule = parts_.schedule;
  if (schedule == nullptr) return;
  auto found = schedule->Get(fingerprint);
  if (!found.ok()) return;
  if (!found->has_value()) {
    // Queued or in flight: Reschedule() takes it at the first capture.
    if (late_changefreq_.size() >= kMaxLateHints &&
        late_changefreq_.count(fingerprint) == 0) {
      stats_->Count("recrawl_hints_dropped");
      return;
    }
    late_changefreq_[fingerprint] = changefreq;
    return;
  }
  recrawl::Capture c = std::move(**found);
  // Only a first interval still running as planned at the first capture
  // (not leased by a release, not adapted by a second visit).
  if (c.visits != 1 || c.due_us != c.fetched_us + c.interval_us) return;
  const int64_t interval =
      recrawl::NextIntervalUs(schedule->options(), 0, false,
                              SteerOf(c.url, c.depth, c.seed_host, changefreq));
  if (interval == c.interval_us) return;
  c.interval_us = interval;
  c.due_us =
      std::max(c.fetched_us + interval, c.fetched_us + DuplicateWindowUs(c));
  if (Status st = schedule->Put(fingerprint, c); !st.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"url", c.url}, {"error", st.ToString()}});
    return;
  }
  next_due_us_ = std::min(next_due_us_, c.due_us);
  stats_->Count("recrawl_changefreq_replanned");
}

recrawl::Steer CrawlPath::SteerOf(std::string_view url, int depth,
                                  std::string_view seed_host,
                                  uint8_t changefreq) const {
  recrawl::Steer steer;
  // Carried as its integer (frontier::Item): a value past the protocol's
  // last one is kNever's.
  steer.changefreq = static_cast<sitemap::ChangeFreq>(std::min<uint8_t>(
      changefreq, static_cast<uint8_t>(sitemap::ChangeFreq::kNever)));
  if (rules_ != nullptr) {
    // The rules in force now: a reload changes the bounds from the URL's
    // next visit on (its current due time stays).
    auto verdict = rules_->Recrawl({url, depth, seed_host});
    if (verdict.has_value()) {
      steer.has_rule = true;
      steer.rule_min_s = verdict->min_s;
      steer.rule_max_s = verdict->max_s;
    }
  }
  return steer;
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
    return !v.empty() && v.size() <= recrawl::kMaxValidatorBytes &&
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
  // A retry (429, 503, 5xx) is in its queue and rescheduled when it ends.
  // Sitemaps are scheduled as pages are: each read admits their entries
  // again, and a changed lastmod there makes the page due.
  if (status == 0 || status == 429 || status >= 500) return;
  const bool first = !job->capture.has_value();
  // The sitemap's changefreq: carried by the item, or met after the URL
  // was queued (LateChangefreq).
  uint8_t changefreq = job->item.changefreq;
  if (auto late = late_changefreq_.find(job->item.fingerprint);
      late != late_changefreq_.end()) {
    if (changefreq == 0) changefreq = late->second;
    late_changefreq_.erase(late);
  }
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
  c.kind = static_cast<uint8_t>(job->item.kind);
  c.sitemap_of = job->item.sitemap_of;
  c.interval_us = recrawl::NextIntervalUs(
      parts_.schedule->options(), first ? 0 : c.interval_us, changed,
      SteerOf(job->item.url, job->item.depth, job->item.seed_host, changefreq));
  c.fetched_us = wall;
  c.due_us = wall + c.interval_us;
  if (job->stale_by_lastmod) {
    // Changed, says its sitemap, after this fetch began.
    c.due_us = std::min(c.due_us, wall + DuplicateWindowUs(c));
    stats_->Count("recrawl_lastmod_due");
  }
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

}  // namespace crawld::daemon
