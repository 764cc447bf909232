// daemon/crawl_path_handoff.cc: the recrawl schedule handed over with its
// hosts (issue 17; docs/CHECKPOINT.md, "Recrawl schedule"), a slice of
// CrawlPath (crawl_path.h) beside crawl_path_recrawl.cc.
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
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/crawl_path.h"

namespace crawld::daemon {

namespace {

// The sweep looks at most at this many captures per step (count): a loop
// turn stays short.
constexpr size_t kSweepStepCaptures = 256;

}  // namespace

// --- hand-off ---------------------------------------------------------------

bool CrawlPath::HandOff(uint64_t fp, const recrawl::Capture& capture, int to) {
  recrawl::Capture sent = capture;
  if (sent.etag.size() > recrawl::kMaxValidatorBytes) sent.etag.clear();
  if (sent.last_modified.size() > recrawl::kMaxValidatorBytes) {
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
        const std::string host = url::HostOf(c.url);
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

bool CrawlPath::ReceiveCapture(const cluster::UrlMessage& m) {
  recrawl::Schedule* schedule = parts_.schedule;
  auto canon = parts_.canonicalizer->Canonicalize(m.url);
  auto c = recrawl::DecodeCapture(m.capture);
  if (!canon.ok() || !canon->is_http() || !c.ok() || c->url != m.url) {
    // Not what a worker sends: acknowledged and dropped, loudly.
    stats_->Count("recrawl_handoff_malformed");
    log_->Write(
        Level::kWarn, "recrawl_handoff_malformed",
        {{"url", m.url}, {"error", c.ok() ? "url" : c.status().ToString()}});
    return true;
  }
  const uint64_t fp = url::Fingerprint(canon->href());
  // Fetched by its previous owner: a link to it is not a new URL here.
  parts_.seen->InsertIfNew(canon->origin_key(), fp);
  if (schedule == nullptr) {
    // This worker runs without [recrawl]: the mark is all it keeps.
    stats_->Count("recrawl_received_unscheduled");
    return true;
  }
  auto stored = schedule->Merge(fp, *c);
  if (!stored.ok()) {
    stats_->Count("recrawl_store_error");
    log_->Write(Level::kError, "recrawl_store_error",
                {{"url", m.url}, {"error", stored.status().ToString()}});
    return false;  // its sender keeps it; Peers::RetryHeld tries again
  }
  if (!*stored) {
    stats_->Count("recrawl_received_stale");
    return true;
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
  return true;
}

}  // namespace crawld::daemon
