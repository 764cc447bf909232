// TrapGuard: each heuristic catches its trap shape and lets ordinary URLs
// through.
#include "conf/traps.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace crawld::conf {
namespace {

url::Url U(std::string_view s) { return url::Parse(s).value(); }

TrapGuard::Options All() {
  TrapGuard::Options o;
  o.host_budget = 3;
  o.max_path_repeats = 3;
  o.calendar = true;
  o.current_year = 2026;
  o.calendar_years_back = 30;
  o.calendar_years_ahead = 2;
  o.max_query_variants = 2;
  o.max_query_params = 4;
  return o;
}

TEST(Traps, RepeatedPathSegments) {
  TrapGuard g(All());
  EXPECT_EQ(g.CheckShape(U("http://h/a/a/a/")), "");
  EXPECT_EQ(g.CheckShape(U("http://h/a/a/a/a/")), "path_repeats");
  EXPECT_EQ(g.CheckShape(U("http://h/x/y/x/y/x/y/x/y")), "path_repeats");
  EXPECT_EQ(g.CheckShape(U("http://h/docs/v1/api/v1/index.html")), "");
}

TEST(Traps, CalendarYearsOutsideTheWindow) {
  TrapGuard g(All());
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/cal/2031/05/")), 2031);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/events/2031-05-01.html")), 2031);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/c?date=1980-02")), 1980);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/c?month=3&year=1970")), 1970);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/archive/20310501")), 2031);
  // Not dates: a 4-digit id without a month after it, a month > 12.
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/product/1234/")), 0);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/p/2024/13/")), 0);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/p/0.html")), 0);

  EXPECT_EQ(g.CheckShape(U("http://h/cal/2024/01/")), "");
  EXPECT_EQ(g.CheckShape(U("http://h/cal/2028/12/")), "");
  EXPECT_EQ(g.CheckShape(U("http://h/cal/2029/01/")), "calendar");
  EXPECT_EQ(g.CheckShape(U("http://h/cal/1996/01/")), "");
  EXPECT_EQ(g.CheckShape(U("http://h/cal/1995/12/")), "calendar");
  TrapGuard::Options off = All();
  off.calendar = false;
  EXPECT_EQ(TrapGuard(off).CheckShape(U("http://h/cal/9999/01/")), "");
}

TEST(Traps, TooManyQueryParameters) {
  TrapGuard g(All());
  EXPECT_EQ(g.CheckShape(U("http://h/s?a=1&b=2&c=3&d=4")), "");
  EXPECT_EQ(g.CheckShape(U("http://h/s?a=1&b=2&c=3&d=4&e=5")), "query_params");
}

TEST(Traps, HostBudgetCountsAdmittedUrlsOnly) {
  TrapGuard g(All());
  EXPECT_EQ(g.Admit("http://h", U("http://h/1")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/2")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/3")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/4")), "host_budget");
  EXPECT_EQ(g.Admit("http://h", U("http://h/5")), "host_budget");
  EXPECT_EQ(g.Admit("http://other", U("http://other/1")), "");
}

TEST(Traps, QueryVariantsPerPath) {
  TrapGuard::Options o = All();
  o.host_budget = 0;
  TrapGuard g(o);
  EXPECT_EQ(g.Admit("http://h", U("http://h/s?q=1")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/s?q=2")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/s?q=3")), "query_variants");
  // Another path, or no query, is not affected.
  EXPECT_EQ(g.Admit("http://h", U("http://h/t?q=3")), "");
  EXPECT_EQ(g.Admit("http://h", U("http://h/s")), "");
  // A rejected variant does not use up the host budget.
  TrapGuard both(All());
  EXPECT_EQ(both.Admit("http://h", U("http://h/s?q=1")), "");
  EXPECT_EQ(both.Admit("http://h", U("http://h/s?q=2")), "");
  EXPECT_EQ(both.Admit("http://h", U("http://h/s?q=3")), "query_variants");
  EXPECT_EQ(both.Admit("http://h", U("http://h/other")), "");
  EXPECT_EQ(both.Admit("http://h", U("http://h/other2")), "host_budget");
}

}  // namespace
}  // namespace crawld::conf

namespace crawld::conf {
namespace {

url::Url P(std::string_view s) { return url::Parse(s).value(); }

// Issue 14: budgets "over the crawl" survive a restart: what Admit counted
// is reported once as changed, and a restored guard goes on from there.
TEST(Traps, Issue14_BudgetsRoundTripThroughACheckpoint) {
  TrapGuard::Options o;
  o.host_budget = 3;
  o.max_query_variants = 2;
  TrapGuard g(o);
  EXPECT_EQ(g.Admit("http://h", P("http://h/s?q=1")), "");
  EXPECT_EQ(g.Admit("http://h", P("http://h/s?q=2")), "");
  std::map<std::string, uint64_t> hosts;
  std::map<uint64_t, uint32_t> paths;
  g.ForEachDirty([&](const std::string& k, uint64_t n) { hosts[k] = n; },
                 [&](uint64_t k, uint32_t n) { paths[k] = n; });
  EXPECT_EQ(hosts, (std::map<std::string, uint64_t>{{"http://h", 2}}));
  ASSERT_EQ(paths.size(), 1u);
  g.ClearDirty();
  size_t calls = 0;
  g.ForEachDirty([&](const std::string&, uint64_t) { ++calls; },
                 [&](uint64_t, uint32_t) { ++calls; });
  EXPECT_EQ(calls, 0u);

  TrapGuard restored(o);
  restored.RestoreHost("http://h", hosts["http://h"]);
  restored.RestoreVariants(paths.begin()->first, paths.begin()->second);
  EXPECT_EQ(restored.Admitted("http://h"), 2u);
  EXPECT_EQ(restored.Admit("http://h", P("http://h/s?q=3")), "query_variants");
  EXPECT_EQ(restored.Admit("http://h", P("http://h/x")), "");
  EXPECT_EQ(restored.Admit("http://h", P("http://h/y")), "host_budget");
}

// Issue 16: the shape checks walk the path in place; a path of more
// distinct segments than the walk counts on the stack is judged the same.
TEST(Traps, Issue16_LongPathsAreJudgedAsShortOnes) {
  TrapGuard g(All());
  std::string distinct = "http://h";
  for (int i = 0; i < 40; ++i) distinct += "/s" + std::to_string(i);
  EXPECT_EQ(g.CheckShape(U(distinct)), "");
  EXPECT_EQ(g.CheckShape(U(distinct + "/s3/s3/s3")), "path_repeats");
  EXPECT_EQ(g.CheckShape(U(distinct + "/s39/s39")), "");
  EXPECT_EQ(g.CheckShape(U(distinct + "/s39/s39/s39")), "path_repeats");
  // The year and month as the last two segments, after many others.
  EXPECT_EQ(TrapGuard::DateYear(U(distinct + "/1901/12")), 1901);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/1901")), 0);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h/1901/13/2030/01")), 2030);
  EXPECT_EQ(TrapGuard::DateYear(U("http://h//1901//12//")), 1901);
}

// Issue 16: host counters are looked up by view; restored and admitted
// counts meet under the same key.
TEST(Traps, Issue16_HostCountersByView) {
  TrapGuard g(All());
  g.RestoreHost(std::string_view("http://h:80"), 2);
  EXPECT_EQ(g.Admitted("http://h:80"), 2u);
  EXPECT_EQ(g.Admit("http://h:80", U("http://h/a")), "");
  EXPECT_EQ(g.Admitted(std::string("http://h:80")), 3u);
  EXPECT_EQ(g.Admit("http://h:80", U("http://h/b")), "host_budget");
  EXPECT_EQ(g.Admitted("http://other:80"), 0u);
}

}  // namespace
}  // namespace crawld::conf
