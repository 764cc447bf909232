// robots/fetch_policy.h: what a crawler does with the outcome of fetching
// /robots.txt, RFC 9309 section 2.3.1 ("Access Method") and section 2.4
// ("Caching"), as one pure function of (what the fetch gave, the time, the
// host's robots history). No I/O and no clock: the caller passes `now_us`
// (monotonic microseconds), so the policy is tested on a fake clock.
//
//   2.3.1.1 Successful access (2xx): the rules of the body apply; cached
//           for Options::ttl_us (2.4: "SHOULD NOT use the cached version
//           for more than 24 hours").
//   2.3.1.2 Redirects: followed, at least five hops. More than
//           Options::max_redirects hops, or a 3xx without a usable
//           Location: "MAY assume the robots.txt file is unavailable".
//   2.3.1.3 Unavailable (4xx): "MAY access any resources on the server":
//           allow all, cached like a success.
//   2.3.1.4 Unreachable (5xx, network errors): "MUST assume complete
//           disallow"; retried with the host's error backoff. "If the
//           robots.txt file is unreachable for more than 30 days, crawlers
//           MAY use a cached copy indefinitely": after Options::outage_grace_us
//           of failure the last good copy applies again, re-checked every
//           Options::last_good_recheck_us.
//
// Deliberate choices beyond the RFC text, each as Google's crawler does
// (https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt):
//   - 429 Too Many Requests counts as unreachable, not unavailable: the
//     server is overloaded, not telling us there are no rules.
//   - A 2xx whose body cannot be decoded (an unknown or broken
//     Content-Encoding) is unreachable: an undecoded body would parse as
//     "no rules", i.e. allow all, which the site never said.
//   - A 2xx whose body the connection cut short is unreachable too: half a
//     file may open a site its last lines close.
//   - Status codes outside 200-599 are unreachable.
#ifndef CRAWLD_ROBOTS_FETCH_POLICY_H_
#define CRAWLD_ROBOTS_FETCH_POLICY_H_

#include <cstdint>
#include <string_view>

namespace crawld::robots {

struct FetchPolicyOptions {
  // How long fetched rules (or a 4xx "no rules") stay in force
  // (microseconds). Clamped to >= 1 s.
  int64_t ttl_us = 86'400'000'000;
  // Failure time after which the last good copy applies again
  // (microseconds); the RFC's example is 30 days. Clamped to >= 0.
  int64_t outage_grace_us = 43'200'000'000;
  // While the last good copy stands in for an unreachable file, how soon to
  // try the file again (microseconds): the smaller of this and ttl_us.
  int64_t last_good_recheck_us = 3'600'000'000;
  // Redirect hops followed for one robots.txt (count); the RFC asks for at
  // least five. Clamped to [5, 20].
  int max_redirects = 5;
};

// What one fetch of /robots.txt gave.
struct FetchOutcome {
  // The final HTTP status; 0 when no response arrived (DNS failure,
  // connect, TLS, timeout).
  int status = 0;
  // A 2xx whose body could not be decoded (Content-Encoding).
  bool undecodable = false;
  // A 2xx whose body the network cut (a close or a timeout, not the size
  // cap): the rest of the file is unknown.
  bool incomplete = false;
  // Redirect hops already followed to reach this response (count).
  int hops = 0;
  // For a 3xx: the Location header resolved to an http(s) URL.
  bool has_location = false;
};

// The host's robots history the policy needs.
struct RobotsHistory {
  // A copy of the rules fetched successfully before (2xx or 4xx) exists.
  bool has_last_good = false;
  // When the current run of failures started (monotonic microseconds);
  // negative while the last fetch did not fail.
  int64_t failing_since_us = -1;
};

enum class Access {
  kFollowRedirect,  // fetch the Location next (one more hop)
  kUseBody,         // parse the body: its rules apply
  kAllowAll,        // unavailable: no rules
  kDisallowAll,     // unreachable: nothing of the host may be fetched
  kUseLastGood,     // unreachable for long: the last good copy applies
};

struct RobotsDecision {
  Access access = Access::kDisallowAll;
  // Until when the decision stands (monotonic microseconds): rules are
  // fetched again from then on. For kDisallowAll it is now_us: the next
  // page of the host fetches robots.txt again, after the host's backoff.
  // For kFollowRedirect it is meaningless (0).
  int64_t valid_until_us = 0;
  // The fetch counts as a host error for the frontier's backoff.
  bool host_error = false;
  // The history's failing_since_us after this fetch.
  int64_t failing_since_us = -1;
  // Why, for counters and logs: "2xx", "4xx", "redirect",
  // "too_many_redirects", "redirect_without_location", "5xx", "429",
  // "unreachable", "undecodable", "incomplete", "bad_status". Static storage.
  std::string_view reason;
};

// Decides what a robots.txt fetch means. Pure and total: any outcome, any
// times. Options are sanitized inside (see the clamps above).
[[nodiscard]] RobotsDecision DecideRobotsFetch(
    const FetchOutcome& outcome, const RobotsHistory& history, int64_t now_us,
    const FetchPolicyOptions& options);

}  // namespace crawld::robots

#endif  // CRAWLD_ROBOTS_FETCH_POLICY_H_
