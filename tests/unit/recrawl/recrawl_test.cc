// Tests of the recrawl schedule (recrawl/recrawl.h): the interval math,
// the capture encoding, and the on-disk due set against a std::map model,
// across a reopen (what a restart sees).
#include "recrawl/recrawl.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/testing/temp_dir.h"

namespace crawld::recrawl {
namespace {

namespace fs = std::filesystem;
using sitemap::ChangeFreq;

using test::TempDir;

Options Hourly() {
  Options o;
  o.initial_interval_s = 86400;
  o.min_interval_s = 3600;
  o.max_interval_s = 7 * 86400;
  o.shrink = 0.5;
  o.grow = 2;
  o.time_scale = 1;
  return Sanitize(o);
}

constexpr int64_t kUsPerS = 1'000'000;

TEST(RecrawlInterval, FirstCaptureGetsTheInitialInterval) {
  EXPECT_EQ(NextIntervalUs(Hourly(), 0, false), 86400 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(Hourly(), 0, true), 86400 * kUsPerS);
}

TEST(RecrawlInterval, ShrinksOnChangeGrowsOtherwiseWithinBounds) {
  const Options o = Hourly();
  int64_t changing = 0, still = 0;
  for (int i = 0; i < 20; ++i) {
    changing = NextIntervalUs(o, changing, true);
    still = NextIntervalUs(o, still, false);
  }
  EXPECT_EQ(changing, 3600 * kUsPerS);    // the minimum
  EXPECT_EQ(still, 7 * 86400 * kUsPerS);  // the maximum
  EXPECT_EQ(NextIntervalUs(o, 86400 * kUsPerS, true), 43200 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 86400 * kUsPerS, false), 172800 * kUsPerS);
}

TEST(RecrawlInterval, TimeScaleCompressesEveryInterval) {
  Options o = Hourly();
  o.time_scale = 3600;  // an hour a second
  o = Sanitize(o);
  EXPECT_EQ(NextIntervalUs(o, 0, false), 24 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 2 * kUsPerS, true), 1 * kUsPerS);  // min
}

Steer Rule(double min_s, double max_s, ChangeFreq freq = ChangeFreq::kUnset) {
  Steer s;
  s.has_rule = true;
  s.rule_min_s = min_s;
  s.rule_max_s = max_s;
  s.changefreq = freq;
  return s;
}

Steer Hint(ChangeFreq freq) {
  Steer s;
  s.changefreq = freq;
  return s;
}

TEST(RecrawlSteer, ChangefreqGivesTheFirstIntervalWithinTheBounds) {
  const Options o = Hourly();  // 1 h .. 7 d, initial 1 d
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kHourly)),
            3600 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kDaily)),
            86400 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kWeekly)),
            7 * 86400 * kUsPerS);
  // Past the maximum: clamped.
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kMonthly)),
            7 * 86400 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kYearly)),
            7 * 86400 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kAlways)),
            3600 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kNever)),
            7 * 86400 * kUsPerS);
  // No hint: the initial interval.
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kUnset)),
            86400 * kUsPerS);
  // Only the first interval: later ones adapt from the current one.
  EXPECT_EQ(NextIntervalUs(o, 7200 * kUsPerS, false, Hint(ChangeFreq::kYearly)),
            14400 * kUsPerS);
}

TEST(RecrawlSteer, ChangeFreqSecondsFollowsTheProtocolNames) {
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kUnset, 10, 20), 0);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kAlways, 10, 20), 10);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kHourly, 10, 20), 3600);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kDaily, 10, 20), 86400);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kWeekly, 10, 20), 7 * 86400);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kMonthly, 10, 20), 30 * 86400);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kYearly, 10, 20), 365 * 86400);
  EXPECT_EQ(ChangeFreqSeconds(ChangeFreq::kNever, 10, 20), 20);
}

TEST(RecrawlSteer, AFixedRuleWinsOverEverything) {
  const Options o = Hourly();
  const Steer news = Rule(600, 600, ChangeFreq::kMonthly);  // 10 min, fixed
  // Below [recrawl]'s own minimum (1 h): the operator's rule stands.
  EXPECT_EQ(NextIntervalUs(o, 0, false, news), 600 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 600 * kUsPerS, true, news), 600 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 600 * kUsPerS, false, news), 600 * kUsPerS);
  const Steer weekly = Rule(7 * 86400, 7 * 86400, ChangeFreq::kAlways);
  EXPECT_EQ(NextIntervalUs(o, 0, true, weekly), 7 * 86400 * kUsPerS);
}

TEST(RecrawlSteer, ARangeRuleBoundsTheAdaptationAndClampsTheHint) {
  const Options o = Hourly();
  const Steer blog = Rule(6 * 3600, 2 * 86400);
  EXPECT_EQ(NextIntervalUs(o, 0, false, blog), 86400 * kUsPerS);  // initial
  int64_t changing = 0, still = 0;
  for (int i = 0; i < 20; ++i) {
    changing = NextIntervalUs(o, changing, true, blog);
    still = NextIntervalUs(o, still, false, blog);
  }
  EXPECT_EQ(changing, 6 * 3600 * kUsPerS);
  EXPECT_EQ(still, 2 * 86400 * kUsPerS);
  // The hint, clamped into the rule's range: the rule wins.
  Steer hinted = blog;
  hinted.changefreq = ChangeFreq::kHourly;
  EXPECT_EQ(NextIntervalUs(o, 0, false, hinted), 6 * 3600 * kUsPerS);
  hinted.changefreq = ChangeFreq::kNever;  // the rule's maximum
  EXPECT_EQ(NextIntervalUs(o, 0, false, hinted), 2 * 86400 * kUsPerS);
  // An interval planned under other rules (a reload) is pulled in.
  EXPECT_EQ(NextIntervalUs(o, 30 * 86400 * kUsPerS, true, blog),
            2 * 86400 * kUsPerS);
}

TEST(RecrawlSteer, TimeScaleCompressesRuleIntervalsToo) {
  Options o = Hourly();
  o.time_scale = 3600;
  o = Sanitize(o);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Rule(7200, 7200)), 2 * kUsPerS);
  EXPECT_EQ(NextIntervalUs(o, 0, false, Hint(ChangeFreq::kDaily)),
            24 * kUsPerS);
}

TEST(RecrawlSteer, AnInvertedRuleIsIgnoredNotObeyed) {
  // conf::RuleSet never makes one; the schedule does not trust that.
  const Options o = Hourly();
  EXPECT_EQ(NextIntervalUs(o, 0, false, Rule(86400, 3600)),
            NextIntervalUs(o, 0, false));
  EXPECT_EQ(NextIntervalUs(o, 0, false, Rule(0, 0)),
            NextIntervalUs(o, 0, false));
}

TEST(RecrawlInterval, SanitizeOrdersTheBoundsAndFactors) {
  Options o;
  o.min_interval_s = 100;
  o.max_interval_s = 10;  // below min
  o.initial_interval_s = 5;
  o.shrink = 3;
  o.grow = 0.5;
  o.time_scale = 0;
  const Options s = Sanitize(o);
  EXPECT_EQ(s.max_interval_s, 100);
  EXPECT_EQ(s.initial_interval_s, 100);
  EXPECT_LE(s.shrink, 1.0);
  EXPECT_GE(s.grow, 1.0);
  EXPECT_GT(s.time_scale, 0);
}

Capture Sample(int i) {
  Capture c;
  c.url = "http://h" + std::to_string(i % 3) + ".test/p/" + std::to_string(i) +
          ".html";
  c.host_key = "http://h" + std::to_string(i % 3) + ".test:80";
  c.seed_host = "h0.test";
  c.depth = static_cast<uint16_t>(i);
  c.etag = "\"v" + std::to_string(i) + "\"";
  c.last_modified = "Wed, 21 Oct 2015 07:28:00 GMT";
  c.payload_digest = "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  c.record_id = "<urn:uuid:12345678-1234-1234-1234-1234567890ab>";
  c.record_date = "2026-11-27T07:00:00.123456Z";
  c.record_uri = c.url;
  c.fetched_us = 1'700'000'000'000'000 + i;
  c.interval_us = 86400 * kUsPerS;
  c.due_us = c.fetched_us + c.interval_us;
  c.visits = 3;
  c.changes = 1;
  return c;
}

void ExpectSame(const Capture& a, const Capture& b) {
  EXPECT_EQ(EncodeCapture(a), EncodeCapture(b));
  EXPECT_EQ(a.url, b.url);
  EXPECT_EQ(a.etag, b.etag);
  EXPECT_EQ(a.due_us, b.due_us);
}

TEST(RecrawlCapture, RoundTripsEveryField) {
  const Capture c = Sample(7);
  auto back = DecodeCapture(EncodeCapture(c));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSame(c, *back);
  EXPECT_EQ(back->last_modified, c.last_modified);
  EXPECT_EQ(back->record_id, c.record_id);
  EXPECT_EQ(back->record_date, c.record_date);
  EXPECT_EQ(back->record_uri, c.record_uri);
  EXPECT_EQ(back->payload_digest, c.payload_digest);
  EXPECT_EQ(back->visits, 3u);
  EXPECT_EQ(back->changes, 1u);
}

TEST(RecrawlCapture, EveryTruncationIsCorruptionNotACrash) {
  const std::string bytes = EncodeCapture(Sample(1));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeCapture(std::string_view(bytes).substr(0, n));
    EXPECT_FALSE(r.ok()) << n;
  }
  EXPECT_FALSE(DecodeCapture(bytes + "x").ok());
}

// A sitemap's capture keeps its kind and cross-submitting host (version 2);
// a page's stays version 1, byte for byte what workers from before sitemap
// revisits write and read.
TEST(RecrawlCapture, ASitemapKeepsItsKindAPageStaysVersionOne) {
  Capture page = Sample(3);
  const std::string page_bytes = EncodeCapture(page);
  EXPECT_EQ(page_bytes[0], 1);
  Capture sitemap = Sample(3);
  sitemap.kind = 2;
  sitemap.sitemap_of = "named.example";
  const std::string bytes = EncodeCapture(sitemap);
  EXPECT_EQ(bytes[0], 2);
  auto back = DecodeCapture(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSame(sitemap, *back);
  EXPECT_EQ(back->kind, 2);
  EXPECT_EQ(back->sitemap_of, "named.example");
  auto old = DecodeCapture(page_bytes);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->kind, 0);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeCapture(std::string_view(bytes).substr(0, n)).ok()) << n;
  }
  // A version 2 capture of a page (kind 0) or of an unknown kind is not
  // what EncodeCapture writes.
  std::string bad = bytes;
  bad[bad.size() - 1 - sitemap.sitemap_of.size() - 1] = 0;
  EXPECT_FALSE(DecodeCapture(bad).ok());
  bad[bad.size() - 1 - sitemap.sitemap_of.size() - 1] = 3;
  EXPECT_FALSE(DecodeCapture(bad).ok());
}

// The due set against a model: random puts (a URL rescheduled moves, never
// doubles), the due scan in time order, and the same after a reopen.
TEST(RecrawlSchedule, DueSetMatchesAModelAcrossReopen) {
  TempDir dir;
  std::map<uint64_t, Capture> model;
  std::mt19937_64 rng(17);
  {
    auto s = Schedule::Open(dir.path(), Options{});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (int i = 0; i < 400; ++i) {
      const uint64_t fp = rng() % 60;
      Capture c = Sample(static_cast<int>(fp));
      c.due_us = static_cast<int64_t>(rng() % 1000);
      ASSERT_TRUE((*s)->Put(fp, c).ok());
      model[fp] = c;
    }
  }
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (int64_t now : {-1, 0, 250, 999, 5000}) {
    std::vector<std::pair<int64_t, uint64_t>> want;
    for (const auto& [fp, c] : model) {
      if (c.due_us <= now) want.push_back({c.due_us, fp});
    }
    std::sort(want.begin(), want.end());
    std::vector<std::pair<int64_t, uint64_t>> got;
    ASSERT_TRUE((*s)->ForEachDue(now,
                                 [&](uint64_t fp, Capture c) {
                                   EXPECT_EQ(c.url, model[fp].url);
                                   got.push_back({c.due_us, fp});
                                   return true;
                                 })
                    .ok());
    EXPECT_EQ(got, want) << "now " << now;
  }
  int64_t earliest = INT64_MAX;
  for (const auto& [fp, c] : model) earliest = std::min(earliest, c.due_us);
  auto next = (*s)->NextDueUs();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ(**next, earliest);
  auto one = (*s)->Get(model.begin()->first);
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(one->has_value());
  ExpectSame(**one, model.begin()->second);
  auto none = (*s)->Get(1000);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(RecrawlSchedule, ScanStopsWhenTheVisitorSaysSo) {
  TempDir dir;
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok());
  for (uint64_t fp = 1; fp <= 5; ++fp) {
    Capture c = Sample(static_cast<int>(fp));
    c.due_us = static_cast<int64_t>(fp);
    ASSERT_TRUE((*s)->Put(fp, c).ok());
  }
  int seen = 0;
  ASSERT_TRUE(
      (*s)->ForEachDue(100, [&](uint64_t, Capture) { return ++seen < 2; })
          .ok());
  EXPECT_EQ(seen, 2);
  auto empty_dir = TempDir();
  auto e = Schedule::Open(empty_dir.path(), Options{});
  ASSERT_TRUE(e.ok());
  auto next = (*e)->NextDueUs();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

// --- hand-off between workers ---

std::vector<uint64_t> DueFingerprints(const Schedule& s) {
  std::vector<uint64_t> out;
  EXPECT_TRUE(s.ForEachDue(INT64_MAX, [&](uint64_t fp, Capture) {
                 out.push_back(fp);
                 return true;
               }).ok());
  return out;
}

TEST(RecrawlSchedule, DeleteRemovesTheCaptureAndItsDueKeyAcrossReopen) {
  TempDir dir;
  {
    auto s = Schedule::Open(dir.path(), Options{});
    ASSERT_TRUE(s.ok());
    for (uint64_t fp = 1; fp <= 3; ++fp) {
      ASSERT_TRUE((*s)->Put(fp, Sample(static_cast<int>(fp))).ok());
    }
    ASSERT_TRUE((*s)->Delete(2).ok());
    ASSERT_TRUE((*s)->Delete(2).ok());   // twice: nothing left to do
    ASSERT_TRUE((*s)->Delete(99).ok());  // never there
  }
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok());
  auto gone = (*s)->Get(2);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  EXPECT_EQ(DueFingerprints(**s), (std::vector<uint64_t>{1, 3}));
  ASSERT_TRUE((*s)->Delete(1).ok());
  ASSERT_TRUE((*s)->Delete(3).ok());
  auto next = (*s)->NextDueUs();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());  // empty: a drained worker can stop
}

TEST(RecrawlSchedule, DeleteIfFetchedAtKeepsACaptureReplacedSince) {
  TempDir dir;
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok());
  Capture handed = Sample(4);
  ASSERT_TRUE((*s)->Put(4, handed).ok());
  // Visited here again after the hand-off was sent: the newer one stays.
  Capture newer = handed;
  newer.fetched_us += 10;
  newer.due_us += 10;
  ASSERT_TRUE((*s)->Put(4, newer).ok());
  auto kept = (*s)->DeleteIfFetchedAt(4, handed.fetched_us);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
  EXPECT_EQ(DueFingerprints(**s), (std::vector<uint64_t>{4}));
  auto deleted = (*s)->DeleteIfFetchedAt(4, newer.fetched_us);
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE(*deleted);
  EXPECT_TRUE(DueFingerprints(**s).empty());
  auto absent = (*s)->DeleteIfFetchedAt(4, newer.fetched_us);
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(*absent);
}

// The receiver of hand-offs keeps the newest capture of a URL by its last
// visit, whatever order copies arrive in, and one due key per URL.
TEST(RecrawlSchedule, MergeKeepsTheNewestCaptureInAnyArrivalOrder) {
  TempDir dir;
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok());
  Capture older = Sample(5);
  Capture newer = older;
  newer.fetched_us += 1000;
  newer.due_us += 5000;
  newer.etag = "\"newer\"";
  newer.visits = 4;

  auto first = (*s)->Merge(5, older);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);  // nothing yet: stored
  auto again = (*s)->Merge(5, older);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);  // the same hand-off twice: kept as is
  auto up = (*s)->Merge(5, newer);
  ASSERT_TRUE(up.ok());
  EXPECT_TRUE(*up);
  auto late = (*s)->Merge(5, older);  // an old copy after the new one
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(*late);

  auto got = (*s)->Get(5);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  ExpectSame(**got, newer);
  EXPECT_EQ(DueFingerprints(**s), (std::vector<uint64_t>{5}));
  auto next = (*s)->NextDueUs();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ(**next, newer.due_us);

  // A capture this worker leased since (same visit, due moved on) is kept:
  // a copy of the hand-off must not make it due again at once.
  Capture leased = newer;
  leased.due_us += 777;
  ASSERT_TRUE((*s)->Put(5, leased).ok());
  auto dup = (*s)->Merge(5, newer);
  ASSERT_TRUE(dup.ok());
  EXPECT_FALSE(*dup);
  auto after = (*s)->Get(5);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->due_us, leased.due_us);
}

TEST(RecrawlSchedule, ForEachCaptureResumesAfterACursor) {
  TempDir dir;
  auto s = Schedule::Open(dir.path(), Options{});
  ASSERT_TRUE(s.ok());
  const std::vector<uint64_t> fps = {3, 1, UINT64_MAX, 200, 0x0100000000000000};
  for (uint64_t fp : fps) {
    ASSERT_TRUE((*s)->Put(fp, Sample(static_cast<int>(fp % 97))).ok());
  }
  // Two at a time, each step from where the last stopped.
  std::vector<uint64_t> got;
  std::optional<uint64_t> cursor;
  for (int step = 0; step < 10; ++step) {
    int n = 0;
    bool any = false;
    ASSERT_TRUE(
        (*s)->ForEachCapture(cursor,
                             [&](uint64_t fp, Capture c) {
                               EXPECT_EQ(c.url,
                                         Sample(static_cast<int>(fp % 97)).url);
                               got.push_back(fp);
                               cursor = fp;
                               any = true;
                               return ++n < 2;
                             })
            .ok());
    if (!any) break;
  }
  EXPECT_EQ(got,
            (std::vector<uint64_t>{1, 3, 200, 0x0100000000000000, UINT64_MAX}));
  int none = 0;
  ASSERT_TRUE((*s)->ForEachCapture(UINT64_MAX,
                                   [&](uint64_t, Capture) {
                                     ++none;
                                     return true;
                                   })
                  .ok());
  EXPECT_EQ(none, 0);
}

}  // namespace
}  // namespace crawld::recrawl
