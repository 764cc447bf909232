#include "robots/fetch_policy.h"

#include <algorithm>

namespace crawld::robots {

namespace {

FetchPolicyOptions Sanitize(FetchPolicyOptions o) {
  o.ttl_us = std::max<int64_t>(o.ttl_us, 1'000'000);
  o.outage_grace_us = std::max<int64_t>(o.outage_grace_us, 0);
  o.last_good_recheck_us = std::max<int64_t>(o.last_good_recheck_us, 1);
  o.max_redirects = std::clamp(o.max_redirects, 5, 20);
  return o;
}

// A fetch that found rules (or found that there are none): failures end.
RobotsDecision Reachable(Access access, int64_t now_us, int64_t ttl_us,
                         std::string_view reason) {
  RobotsDecision d;
  d.access = access;
  d.valid_until_us = now_us + ttl_us;
  d.failing_since_us = -1;
  d.reason = reason;
  return d;
}

}  // namespace

RobotsDecision DecideRobotsFetch(const FetchOutcome& outcome,
                                 const RobotsHistory& history, int64_t now_us,
                                 const FetchPolicyOptions& raw) {
  const FetchPolicyOptions o = Sanitize(raw);
  const int status = outcome.status;

  if (status >= 200 && status < 300 && !outcome.undecodable &&
      !outcome.incomplete) {
    return Reachable(Access::kUseBody, now_us, o.ttl_us, "2xx");
  }
  if (status >= 300 && status < 400) {
    if (outcome.has_location && outcome.hops < o.max_redirects) {
      RobotsDecision d;
      d.access = Access::kFollowRedirect;
      d.failing_since_us = history.failing_since_us;
      d.reason = "redirect";
      return d;
    }
    return Reachable(Access::kAllowAll, now_us, o.ttl_us,
                     outcome.has_location ? "too_many_redirects"
                                          : "redirect_without_location");
  }
  if (status >= 400 && status < 500 && status != 429) {
    return Reachable(Access::kAllowAll, now_us, o.ttl_us, "4xx");
  }

  // Unreachable: 5xx, 429, no response, an undecodable 2xx, a bad status.
  RobotsDecision d;
  d.reason = status == 0                     ? "unreachable"
             : outcome.undecodable           ? "undecodable"
             : outcome.incomplete            ? "incomplete"
             : status == 429                 ? "429"
             : status >= 500 && status < 600 ? "5xx"
                                             : "bad_status";
  d.failing_since_us =
      history.failing_since_us >= 0 ? history.failing_since_us : now_us;
  if (history.has_last_good &&
      now_us - d.failing_since_us >= o.outage_grace_us) {
    // A long outage: crawl under the last good copy, and look again soon.
    // No host error: each retry would otherwise find the short-lived copy
    // expired again behind a growing backoff.
    d.access = Access::kUseLastGood;
    d.valid_until_us = now_us + std::min(o.ttl_us, o.last_good_recheck_us);
    return d;
  }
  d.access = Access::kDisallowAll;
  d.valid_until_us = now_us;
  d.host_error = true;
  return d;
}

}  // namespace crawld::robots
