// Tests for conf/overrides.h: the per-host robots/politeness override file.
#include "conf/overrides.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace crawld::conf {
namespace {

std::unique_ptr<Overrides> MustParse(std::string_view text) {
  auto r = Overrides::Parse(text, "ov.conf");
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return Overrides::None();
  return std::move(r).value();
}

std::string ParseError(std::string_view text) {
  auto r = Overrides::Parse(text, "ov.conf");
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  if (r.ok()) return {};
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  return r.status().message();
}

std::vector<std::string> Patterns(const HostOverride& o) {
  std::vector<std::string> out;
  for (const auto& d : o.disallow) out.push_back(d.pattern);
  return out;
}

TEST(Overrides, EmptyFileAndNoneOverrideNothing) {
  auto ov = MustParse("# only a comment\n\n   \n");
  EXPECT_EQ(ov->size(), 0u);
  EXPECT_TRUE(ov->For("example.com").empty());
  const HostOverride none = Overrides::None()->For("example.com");
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.ignore_robots);
  EXPECT_FALSE(none.delay_ms.has_value());
  EXPECT_FALSE(none.concurrency.has_value());
}

TEST(Overrides, IgnoreRobotsAppliesToExactHostOnly) {
  auto ov = MustParse("intranet.example ignore-robots\n");
  const HostOverride o = ov->For("intranet.example");
  EXPECT_TRUE(o.ignore_robots);
  EXPECT_EQ(o.lines, std::vector<int>{1});
  EXPECT_FALSE(ov->For("www.intranet.example").ignore_robots);
  EXPECT_FALSE(ov->For("other.example").ignore_robots);
}

TEST(Overrides, DisallowKeepsPatternAndLine) {
  auto ov = MustParse(
      "\nexample.org disallow /private/*\n"
      "example.org disallow /*.pdf$   # comment\n");
  const HostOverride o = ov->For("example.org");
  ASSERT_EQ(o.disallow.size(), 2u);
  EXPECT_EQ(o.disallow[0].pattern, "/private/*");
  EXPECT_EQ(o.disallow[0].line, 2);
  EXPECT_EQ(o.disallow[1].pattern, "/*.pdf$");
  EXPECT_EQ(o.disallow[1].line, 3);
  EXPECT_EQ(o.lines, (std::vector<int>{2, 3}));
  EXPECT_FALSE(o.ignore_robots);
}

TEST(Overrides, DelayAndConcurrency) {
  auto ov = MustParse(
      "slow.example.net delay-ms 5000\n"
      "big.example.com concurrency 4\n"
      "zero.example delay-ms 0\n");
  EXPECT_EQ(ov->For("slow.example.net").delay_ms, 5000);
  EXPECT_FALSE(ov->For("slow.example.net").concurrency.has_value());
  EXPECT_EQ(ov->For("big.example.com").concurrency, 4);
  EXPECT_FALSE(ov->For("big.example.com").delay_ms.has_value());
  EXPECT_EQ(ov->For("zero.example").delay_ms, 0);
}

TEST(Overrides, DomainSelectorMatchesDomainAndSubdomainsNotLookalikes) {
  for (const char* sel : {".example.org", "*.example.org"}) {
    SCOPED_TRACE(sel);
    auto ov = MustParse(std::string(sel) + " delay-ms 100\n");
    EXPECT_EQ(ov->For("example.org").delay_ms, 100);
    EXPECT_EQ(ov->For("www.example.org").delay_ms, 100);
    EXPECT_EQ(ov->For("a.b.example.org").delay_ms, 100);
    EXPECT_FALSE(ov->For("badexample.org").delay_ms.has_value());
    EXPECT_FALSE(ov->For("example.org.evil").delay_ms.has_value());
    EXPECT_FALSE(ov->For("org").delay_ms.has_value());
  }
}

TEST(Overrides, StarMatchesEveryHostIncludingIps) {
  auto ov = MustParse("* delay-ms 2000\n");
  EXPECT_EQ(ov->For("example.com").delay_ms, 2000);
  EXPECT_EQ(ov->For("10.0.0.1").delay_ms, 2000);
  EXPECT_EQ(ov->For("[::1]").delay_ms, 2000);
}

TEST(Overrides, SelectorsAreNormalizedLikeUrlHosts) {
  auto ov = MustParse(
      "Big.EXAMPLE.com concurrency 2\n"
      "*.Bücher.example delay-ms 10\n"
      "[0:0::1] ignore-robots\n"
      "0x7f.1 delay-ms 20\n");
  EXPECT_EQ(ov->For("big.example.com").concurrency, 2);
  EXPECT_EQ(ov->For("www.xn--bcher-kva.example").delay_ms, 10);
  EXPECT_TRUE(ov->For("[::1]").ignore_robots);
  EXPECT_EQ(ov->For("127.0.0.1").delay_ms, 20);  // WHATWG IPv4 forms
}

TEST(Overrides, IpSelectorsMatchOnlyExactly) {
  auto ov = MustParse("127.0.0.1 delay-ms 7\n");
  EXPECT_EQ(ov->For("127.0.0.1").delay_ms, 7);
  EXPECT_FALSE(ov->For("127.0.0.2").delay_ms.has_value());
}

TEST(Overrides, MostSpecificSelectorWinsPerDirective) {
  auto ov = MustParse(
      "*                 delay-ms 1000\n"  // 1
      ".example.com      delay-ms 2000\n"  // 2
      ".a.example.com    delay-ms 3000\n"  // 3
      "x.a.example.com   delay-ms 4000\n"  // 4
      ".example.com      concurrency 2\n"  // 5
      "*                 ignore-robots\n"  // 6
      ".a.example.com    obey-robots\n");  // 7
  HostOverride o = ov->For("x.a.example.com");
  EXPECT_EQ(o.delay_ms, 4000);
  EXPECT_EQ(o.concurrency, 2);
  EXPECT_FALSE(o.ignore_robots);
  EXPECT_EQ(o.lines, (std::vector<int>{4, 5, 7}));

  o = ov->For("y.a.example.com");
  EXPECT_EQ(o.delay_ms, 3000);
  EXPECT_EQ(o.lines, (std::vector<int>{3, 5, 7}));

  o = ov->For("b.example.com");
  EXPECT_EQ(o.delay_ms, 2000);
  EXPECT_TRUE(o.ignore_robots);
  EXPECT_EQ(o.lines, (std::vector<int>{2, 5, 6}));

  o = ov->For("other.net");
  EXPECT_EQ(o.delay_ms, 1000);
  EXPECT_FALSE(o.concurrency.has_value());
  EXPECT_TRUE(o.ignore_robots);
  EXPECT_EQ(o.lines, (std::vector<int>{1, 6}));
}

TEST(Overrides, ExactHostBeatsDomainSelectorOfTheSameName) {
  auto ov = MustParse(".example.com delay-ms 1\nexample.com delay-ms 2\n");
  EXPECT_EQ(ov->For("example.com").delay_ms, 2);
  EXPECT_EQ(ov->For("www.example.com").delay_ms, 1);
}

TEST(Overrides, DisallowsAccumulateAcrossSelectorsInFileOrder) {
  auto ov = MustParse(
      "* disallow /tmp/\n"
      "www.example.com disallow /a\n"
      ".example.com disallow /b\n"
      ".other.com disallow /c\n");
  EXPECT_EQ(Patterns(ov->For("www.example.com")),
            (std::vector<std::string>{"/tmp/", "/a", "/b"}));
  EXPECT_EQ(Patterns(ov->For("other.com")),
            (std::vector<std::string>{"/tmp/", "/c"}));
}

TEST(Overrides, IgnoreRobotsStillAppliesExtraDisallows) {
  auto ov = MustParse("own.example ignore-robots\nown.example disallow /x\n");
  const HostOverride o = ov->For("own.example");
  EXPECT_TRUE(o.ignore_robots);
  EXPECT_EQ(Patterns(o), std::vector<std::string>{"/x"});
}

TEST(Overrides, StatsCountEveryUseOfALine) {
  auto ov = MustParse(
      "* delay-ms 10\n"
      ".example.com delay-ms 20\n"
      ".example.com disallow /x\n"
      "unused.test concurrency 3\n");
  (void)ov->For("a.example.com");
  (void)ov->For("b.example.com");
  (void)ov->For("elsewhere.net");
  const auto stats = ov->Stats();
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].line, 1);
  EXPECT_EQ(stats[0].text, "* delay-ms 10");
  EXPECT_EQ(stats[0].hits, 1u);  // overruled for *.example.com
  EXPECT_EQ(stats[1].hits, 2u);
  EXPECT_EQ(stats[2].text, ".example.com disallow /x");
  EXPECT_EQ(stats[2].hits, 2u);
  EXPECT_EQ(stats[3].hits, 0u);
}

TEST(Overrides, StatsAreExactUnderConcurrentCalls) {
  auto ov = MustParse(".example.com delay-ms 20\n");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) (void)ov->For("www.example.com");
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ov->Stats()[0].hits, 4000u);
}

TEST(Overrides, DescribeNamesFileLineAndDirective) {
  auto ov = MustParse(
      "# header\n"
      "*.example.org   disallow   /private/*\n"
      "www.example.org concurrency 4\n");
  const HostOverride o = ov->For("www.example.org");
  EXPECT_EQ(ov->Describe(o),
            "ov.conf:2 *.example.org disallow /private/*; "
            "ov.conf:3 www.example.org concurrency 4");
  EXPECT_EQ(ov->Describe(HostOverride{}), "");
  EXPECT_EQ(ov->Where(3), "ov.conf:3");
  EXPECT_EQ(ov->source(), "ov.conf");
}

TEST(Overrides, CrlfAndTabsAreAccepted) {
  auto ov = MustParse("a.example\tdelay-ms\t5\r\nb.example concurrency 1\r\n");
  EXPECT_EQ(ov->For("a.example").delay_ms, 5);
  EXPECT_EQ(ov->For("b.example").concurrency, 1);
}

struct BadCase {
  const char* text;
  const char* error;  // expected message, after "ov.conf:"
};

class OverridesError : public testing::TestWithParam<BadCase> {};

TEST_P(OverridesError, WholeFileRejectedWithFileAndLine) {
  const std::string msg = ParseError(GetParam().text);
  EXPECT_EQ(msg.rfind("ov.conf:", 0), 0u) << msg;
  EXPECT_NE(msg.find(GetParam().error), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Each, OverridesError,
    testing::Values(
        BadCase{"ok.example delay-ms 1\nexample.com\n",
                "ov.conf:2: missing directive"},
        BadCase{"example.com ignore_robots\n",
                "ov.conf:1: unknown directive 'ignore_robots'"},
        BadCase{"example.com ignore-robots yes\n",
                "ov.conf:1: ignore-robots: takes no argument"},
        BadCase{"example.com disallow\n",
                "ov.conf:1: disallow: expected exactly one argument"},
        BadCase{"example.com disallow /a /b\n",
                "disallow: expected exactly one argument"},
        BadCase{"example.com disallow private/\n",
                "ov.conf:1: disallow: pattern 'private/' must start"},
        BadCase{"example.com delay-ms -1\n", "delay-ms: bad number '-1'"},
        BadCase{"example.com delay-ms 5s\n", "delay-ms: bad number '5s'"},
        BadCase{"example.com delay-ms 3600001\n",
                "delay-ms: bad number '3600001' (expected a decimal integer "
                "from 0 to 3600000)"},
        BadCase{"example.com concurrency 0\n", "concurrency: bad number '0'"},
        BadCase{"example.com concurrency 99999999999999999999\n",
                "concurrency: bad number"},
        BadCase{"http://example.com/ delay-ms 5\n", "is not a host name"},
        BadCase{"example.com:8080 delay-ms 5\n", "is not a host name"},
        BadCase{"user@example.com delay-ms 5\n", "is not a host name"},
        BadCase{"exa%41mple.com delay-ms 5\n", "is not a host name"},
        BadCase{"a.*.example.com delay-ms 5\n", "'*' is allowed only"},
        BadCase{"** delay-ms 5\n", "'*' is allowed only"},
        BadCase{"*. delay-ms 5\n", "names no host"},
        BadCase{". delay-ms 5\n", "names no host"},
        BadCase{"exa<mple.com delay-ms 5\n", "is not a valid host name"},
        BadCase{"[::1 delay-ms 5\n", "is not"},
        BadCase{"*.10.0.0.1 delay-ms 5\n", "not an IP address"},
        BadCase{"example.com delay-ms 1\nexample.com delay-ms 2\n",
                "ov.conf:2: selector 'example.com' already sets this "
                "(line 1)"},
        BadCase{".e.com delay-ms 1\n*.E.com delay-ms 2\n",
                "ov.conf:2: selector '*.E.com' already sets this (line 1)"},
        BadCase{"e.com ignore-robots\ne.com obey-robots\n",
                "ov.conf:2: selector 'e.com' already sets this (line 1)"}));

TEST(Overrides, NulByteIsRejectedWithItsLine) {
  const std::string text("a.example delay-ms 1\nb.exa\0mple delay-ms 2\n", 43);
  EXPECT_EQ(ParseError(text), "ov.conf:2: NUL byte in line");
}

TEST(Overrides, DuplicateDisallowsAreAllowed) {
  auto ov = MustParse("e.com disallow /a\ne.com disallow /a\n");
  EXPECT_EQ(ov->For("e.com").disallow.size(), 2u);
}

TEST(Overrides, LoadReadsFileAndNamesItInErrors) {
  const std::string dir = testing::TempDir();
  const std::string good = dir + "/overrides_good.conf";
  const std::string bad = dir + "/overrides_bad.conf";
  std::ofstream(good) << "slow.example delay-ms 5000\n";
  std::ofstream(bad) << "slow.example delay-ms 5000\nslow.example frobnicate\n";
  auto ov = Overrides::Load(good);
  ASSERT_TRUE(ov.ok()) << ov.status().message();
  EXPECT_EQ((*ov)->For("slow.example").delay_ms, 5000);
  EXPECT_EQ((*ov)->source(), good);

  auto err = Overrides::Load(bad);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message().rfind(bad + ":2: unknown directive", 0), 0u)
      << err.status().message();

  auto missing = Overrides::Load(dir + "/no-such-overrides.conf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kIOError);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace crawld::conf
