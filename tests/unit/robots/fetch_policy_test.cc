// robots/fetch_policy.h: RFC 9309 section 2.3.1 (access results) and 2.4
// (caching), on a fake clock: `now` is whatever the test says.
#include "robots/fetch_policy.h"

#include <gtest/gtest.h>

namespace crawld::robots {
namespace {

constexpr int64_t kS = 1'000'000;  // one second in microseconds

FetchPolicyOptions Opts() {
  FetchPolicyOptions o;
  o.ttl_us = 86400 * kS;
  o.outage_grace_us = 3600 * kS;
  o.last_good_recheck_us = 600 * kS;
  o.max_redirects = 5;
  return o;
}

FetchOutcome Status(int status, int hops = 0, bool location = true) {
  FetchOutcome f;
  f.status = status;
  f.hops = hops;
  f.has_location = location;
  return f;
}

// 2.3.1.1 Successful Access
// https://www.rfc-editor.org/rfc/rfc9309#section-2.3.1.1
TEST(Rfc9309, Sec2_3_1_1_SuccessMeansTheBodysRulesForTheTtl) {
  RobotsHistory h;
  h.failing_since_us = 5 * kS;  // a failure run ends with a success
  const RobotsDecision d = DecideRobotsFetch(Status(200), h, 100 * kS, Opts());
  EXPECT_EQ(d.access, Access::kUseBody);
  EXPECT_EQ(d.valid_until_us, 100 * kS + 86400 * kS);
  EXPECT_FALSE(d.host_error);
  EXPECT_EQ(d.failing_since_us, -1);
  EXPECT_EQ(d.reason, "2xx");
  EXPECT_EQ(DecideRobotsFetch(Status(204), {}, 0, Opts()).access,
            Access::kUseBody);
}

// 2.3.1.2 Redirects
// https://www.rfc-editor.org/rfc/rfc9309#section-2.3.1.2
TEST(Rfc9309, Sec2_3_1_2_FollowsAtLeastFiveHops) {
  for (int hops = 0; hops < 5; ++hops) {
    const RobotsDecision d =
        DecideRobotsFetch(Status(301, hops), {}, 0, Opts());
    EXPECT_EQ(d.access, Access::kFollowRedirect) << hops;
  }
  // Options cannot ask for fewer than the RFC's five.
  FetchPolicyOptions few = Opts();
  few.max_redirects = 1;
  EXPECT_EQ(DecideRobotsFetch(Status(302, 4), {}, 0, few).access,
            Access::kFollowRedirect);
}

TEST(Rfc9309, Sec2_3_1_2_MoreThanFiveHopsIsUnavailable) {
  const RobotsDecision d = DecideRobotsFetch(Status(307, 5), {}, 7, Opts());
  EXPECT_EQ(d.access, Access::kAllowAll);
  EXPECT_EQ(d.reason, "too_many_redirects");
  EXPECT_FALSE(d.host_error);
  EXPECT_EQ(d.valid_until_us, 7 + 86400 * kS);
}

TEST(Rfc9309, Sec2_3_1_2_RedirectWithoutLocationIsUnavailable) {
  const RobotsDecision d =
      DecideRobotsFetch(Status(302, 0, /*location=*/false), {}, 0, Opts());
  EXPECT_EQ(d.access, Access::kAllowAll);
  EXPECT_EQ(d.reason, "redirect_without_location");
}

// 2.3.1.3 "Unavailable" Status
// https://www.rfc-editor.org/rfc/rfc9309#section-2.3.1.3
TEST(Rfc9309, Sec2_3_1_3_ClientErrorMeansNoRules) {
  for (int status : {400, 401, 403, 404, 410, 451, 499}) {
    const RobotsDecision d = DecideRobotsFetch(Status(status), {}, 0, Opts());
    EXPECT_EQ(d.access, Access::kAllowAll) << status;
    EXPECT_FALSE(d.host_error) << status;
    EXPECT_EQ(d.valid_until_us, 86400 * kS) << status;
  }
}

// 2.3.1.4 "Unreachable" Status
// https://www.rfc-editor.org/rfc/rfc9309#section-2.3.1.4
TEST(Rfc9309, Sec2_3_1_4_ServerErrorMeansCompleteDisallow) {
  for (int status : {500, 502, 503, 599}) {
    const RobotsDecision d =
        DecideRobotsFetch(Status(status), {}, 50 * kS, Opts());
    EXPECT_EQ(d.access, Access::kDisallowAll) << status;
    EXPECT_TRUE(d.host_error) << status;
    EXPECT_EQ(d.failing_since_us, 50 * kS) << status;
    // Asked again at the next page, after the host's backoff.
    EXPECT_EQ(d.valid_until_us, 50 * kS) << status;
  }
}

TEST(Rfc9309, Sec2_3_1_4_NetworkErrorIsUnreachable) {
  const RobotsDecision d = DecideRobotsFetch(Status(0), {}, 0, Opts());
  EXPECT_EQ(d.access, Access::kDisallowAll);
  EXPECT_EQ(d.reason, "unreachable");
}

TEST(Rfc9309, Sec2_3_1_4_FailureRunKeepsItsStart) {
  RobotsHistory h;
  h.failing_since_us = 10 * kS;
  const RobotsDecision d = DecideRobotsFetch(Status(503), h, 20 * kS, Opts());
  EXPECT_EQ(d.failing_since_us, 10 * kS);
}

TEST(Rfc9309, Sec2_3_1_4_LongOutageFallsBackToLastGoodCopy) {
  RobotsHistory h;
  h.has_last_good = true;
  h.failing_since_us = 0;
  // Inside the grace: still complete disallow.
  EXPECT_EQ(DecideRobotsFetch(Status(500), h, 3599 * kS, Opts()).access,
            Access::kDisallowAll);
  // From the grace on: the last good copy, re-checked after the recheck
  // interval, with no host error.
  const RobotsDecision d = DecideRobotsFetch(Status(500), h, 3600 * kS, Opts());
  EXPECT_EQ(d.access, Access::kUseLastGood);
  EXPECT_FALSE(d.host_error);
  EXPECT_EQ(d.valid_until_us, 3600 * kS + 600 * kS);
  EXPECT_EQ(d.failing_since_us, 0);
}

TEST(Rfc9309, Sec2_3_1_4_NoLastGoodCopyMeansDisallowForever) {
  RobotsHistory h;
  h.failing_since_us = 0;
  EXPECT_EQ(DecideRobotsFetch(Status(500), h, 1000 * 86400 * kS, Opts()).access,
            Access::kDisallowAll);
}

// 2.4 Caching: a recheck interval longer than the TTL is cut to the TTL.
// https://www.rfc-editor.org/rfc/rfc9309#section-2.4
TEST(Rfc9309, Sec2_4_LastGoodRecheckNeverExceedsTheTtl) {
  FetchPolicyOptions o = Opts();
  o.ttl_us = 60 * kS;
  o.last_good_recheck_us = 600 * kS;
  RobotsHistory h;
  h.has_last_good = true;
  h.failing_since_us = 0;
  EXPECT_EQ(DecideRobotsFetch(Status(500), h, 4000 * kS, o).valid_until_us,
            4000 * kS + 60 * kS);
}

TEST(Rfc9309, GoogleOnly_TooManyRequestsIsUnreachable) {
  const RobotsDecision d = DecideRobotsFetch(Status(429), {}, 0, Opts());
  EXPECT_EQ(d.access, Access::kDisallowAll);
  EXPECT_EQ(d.reason, "429");
}

// Issue 14: a 200 whose body cannot be decoded (Content-Encoding: br with
// garbage, broken gzip) must not read as an empty file, i.e. allow all.
TEST(Rfc9309, CrawldOnly_Issue14_UndecodableBodyIsUnreachable) {
  FetchOutcome f = Status(200);
  f.undecodable = true;
  const RobotsDecision d = DecideRobotsFetch(f, {}, 0, Opts());
  EXPECT_EQ(d.access, Access::kDisallowAll);
  EXPECT_TRUE(d.host_error);
  EXPECT_EQ(d.reason, "undecodable");
}

TEST(Rfc9309, CrawldOnly_BodyCutByTheNetworkIsUnreachable) {
  FetchOutcome f = Status(200);
  f.incomplete = true;
  const RobotsDecision d = DecideRobotsFetch(f, {}, 0, Opts());
  EXPECT_EQ(d.access, Access::kDisallowAll);
  EXPECT_EQ(d.reason, "incomplete");
}

TEST(Rfc9309, CrawldOnly_OddStatusIsUnreachable) {
  for (int status : {100, 199, 600, 999, -1}) {
    EXPECT_EQ(DecideRobotsFetch(Status(status), {}, 0, Opts()).access,
              Access::kDisallowAll)
        << status;
  }
}

}  // namespace
}  // namespace crawld::robots
