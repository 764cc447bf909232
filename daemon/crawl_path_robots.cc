// daemon/crawl_path_robots.cc: step 12 of crawl_path.h for a robots.txt
// job, the sub-path that fetches a host's rules before its first page: what
// arrived (status, redirect target, a cut body), recorded, decoded and
// parsed on the pool, then decided by the host's record (hosts.h) under the
// RFC 9309 section 2.3.1 fetch policy (robots/fetch_policy.h).
#include <memory>
#include <string>

#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"
#include "fetcher/fetcher.h"

namespace crawld::daemon {

void CrawlPath::OnRobotsFetched(Job* job) {
  const fetcher::Response& r = job->response;
  if (r.status_code == 0 && r.error == fetcher::ErrorClass::kAborted) {
    // Shut down under it: the page behind it is queued; nothing learned.
    ReleaseSlots(job, {frontier::Outcome::kSuccess, 0, -1});
    Finish(job);
    return;
  }
  job->robots_fetch = std::make_unique<RobotsFetch>();
  RobotsFetch& fetch = *job->robots_fetch;
  fetch.status = r.status_code;
  fetch.response_us = parts_.clock->MonotonicUs() - job->started_us;
  if (fetch.status >= 300 && fetch.status < 400) {
    auto base = url::Parse(job->url);
    const std::string location = r.Header("Location");
    if (base.ok() && !location.empty()) {
      auto target = url::Parse(location, &base.value());
      if (target.ok() && target->is_http()) {
        fetch.location = std::string(target->href());
      }
    }
  }
  if (fetch.status >= 200 && fetch.status < 300 && r.truncated &&
      r.error != fetcher::ErrorClass::kTooLarge) {
    // Cut by the network, not by the size cap: half a file could open a
    // site its last line closes.
    fetch.incomplete = true;
  }
  if (r.status_code == 0) {
    DecideRobots(job);
    return;
  }
  ++stats_->robots_fetches;
  Record(job, [this](Job* j) {
    const RobotsFetch& f = *j->robots_fetch;
    if (f.status < 200 || f.status >= 300 || f.incomplete) {
      DecideRobots(j);
      return;
    }
    // Decoding and parsing up to 500 KiB of rules is the loop's longest
    // robots.txt step: it runs on the pool, as a page's parse does.
    SetStage(j, Stage::kProcessing);
    RobotsFetch* out = j->robots_fetch.get();
    const fetcher::Response* response = &j->response;
    const size_t max_decoded = options_.max_decoded_robots_bytes;
    parts_.pool->Run(
        [out, response, max_decoded, parse = hosts_->RobotsParser()] {
          // One byte more than the parser reads: a longer file reaches it
          // cut, and it ignores the line the cut went through (RFC 9309
          // 2.5; issue 19: a line cut in half was obeyed as a whole rule).
          Result<std::string> decoded =
              fetcher::DecodeBody(*response, max_decoded);
          if (!decoded.ok()) {
            out->undecodable = true;
            return;
          }
          out->decoded = std::move(decoded).value();
          out->body = &out->decoded;
          out->rules = parse(out->decoded);
        },
        [this, j] { DecideRobots(j); });
  });
}

void CrawlPath::DecideRobots(Job* job) {
  const fetcher::Response& r = job->response;
  const RobotsFetch& fetch = *job->robots_fetch;
  const int64_t now = parts_.clock->MonotonicUs();
  const HostTable::RobotsResult result = hosts_->OnRobotsFetched(
      job->host_key, fetch, now, parts_.clock->WallUs());
  if (result.access == robots::Access::kDisallowAll ||
      result.reason == "too_many_redirects") {
    stats_->Count("robots_" + std::string(result.reason));
    if (fetch.status == 0 && job->stage == Stage::kFetching) {
      // The host is unreachable for pages too: count the network class.
      const std::string net(fetcher::ErrorClassName(r.error));
      stats_->Count(net);
      log_->Write(
          Level::kWarn, "fetch_error",
          {{"url", job->url}, {"class", net}, {"error", r.error_message}});
    }
    log_->Write(Level::kWarn, "robots_unavailable",
                {{"host", job->host_key},
                 {"status", std::to_string(fetch.status)},
                 {"reason", std::string(result.reason)},
                 {"error", r.error_message}});
  }
  EnterSitemaps(job);
  ReleaseSlots(job, result.completion);
  Finish(job);
}

}  // namespace crawld::daemon
