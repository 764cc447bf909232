// Tests for Rules::Describe(), group_agents() and AddDisallow's origin: what
// `crawlctl robots show` prints and what the worker logs for an override.
#include <gtest/gtest.h>

#include <string>

#include "robots/robots.h"

namespace crawld::robots {
namespace {

TEST(CrawldRobotsDescribe, SpecificGroupRulesInMatchOrderDelayAndSitemaps) {
  const char* body =
      "User-agent: *\n"                        // 1
      "Disallow: /\n"                          // 2
      "\n"                                     // 3
      "User-agent: crawld\n"                   // 4
      "Disallow: /private/\n"                  // 5
      "Allow: /private/public/\n"              // 6
      "Crawl-delay: 2.5\n"                     // 7
      "User-agent: CrawlD/2.0\n"               // 8
      "Disallow: /*.pdf$\n"                    // 9
      "Sitemap: https://example.com/s.xml\n";  // 10
  const Rules rules = Rules::Parse(body, "crawld");
  EXPECT_EQ(rules.group_agents(),
            (std::vector<std::string>{"line 4: User-agent: crawld",
                                      "line 8: User-agent: CrawlD/2.0"}));
  EXPECT_EQ(rules.Describe(),
            "group: specific (names \"crawld\")\n"
            "  line 4: User-agent: crawld\n"
            "  line 8: User-agent: CrawlD/2.0\n"
            "rules: 3, first match wins\n"
            "  line 6: Allow: /private/public/\n"
            "  line 5: Disallow: /private/\n"
            "  line 9: Disallow: /*.pdf$\n"
            "crawl-delay: 2.5 s\n"
            "sitemaps: 1\n"
            "  https://example.com/s.xml\n");
}

TEST(CrawldRobotsDescribe, GlobalGroupIsNamedAsSuch) {
  const Rules rules = Rules::Parse(
      "User-agent: other\nDisallow: /o\n"
      "User-agent: *\nDisallow: /g\n",
      "crawld");
  EXPECT_EQ(rules.Describe(),
            "group: * (no group names \"crawld\")\n"
            "  line 3: User-agent: *\n"
            "rules: 1, first match wins\n"
            "  line 4: Disallow: /g\n"
            "crawl-delay: none\n"
            "sitemaps: none\n");
}

TEST(CrawldRobotsDescribe, NoGroupMeansEverythingAllowed) {
  const Rules rules =
      Rules::Parse("User-agent: other\nDisallow: /\n", "crawld");
  EXPECT_TRUE(rules.group_agents().empty());
  EXPECT_EQ(rules.Describe(),
            "group: none (no group names \"crawld\" and there is no \"*\" "
            "group)\n"
            "rules: none, everything is allowed\n"
            "crawl-delay: none\n"
            "sitemaps: none\n");
}

TEST(CrawldRobotsDescribe, AllowAllAndDisallowAll) {
  EXPECT_EQ(Rules::AllowAll().Describe(),
            "group: none\n"
            "rules: none, everything is allowed\n"
            "crawl-delay: none\n"
            "sitemaps: none\n");
  EXPECT_EQ(Rules::DisallowAll().Describe(),
            "group: none\n"
            "rules: 1, first match wins\n"
            "  Disallow: /\n"
            "crawl-delay: none\n"
            "sitemaps: none\n");
}

TEST(CrawldRobotsDescribe, OverridesShowTheirOriginAndTakeTheirPlace) {
  Rules rules =
      Rules::Parse("User-agent: *\nDisallow: /a\nAllow: /tmp/ok\n", "crawld");
  rules.AddDisallow("/tmp/", "ov.conf:3");
  rules.AddDisallow("/zz");  // no origin
  EXPECT_EQ(rules.Describe(),
            "group: * (no group names \"crawld\")\n"
            "  line 1: User-agent: *\n"
            "rules: 4, first match wins\n"
            "  line 3: Allow: /tmp/ok\n"
            "  override ov.conf:3: Disallow: /tmp/\n"
            "  override: Disallow: /zz\n"  // longer than /a: first
            "  line 2: Disallow: /a\n"
            "crawl-delay: none\n"
            "sitemaps: none\n");
}

TEST(CrawldRobotsDescribe, OverrideOnAllowAllForIgnoredRobots) {
  // The worker's path for an "ignore-robots" host with extra disallows.
  Rules rules = Rules::AllowAll();
  rules.AddDisallow("/private/*", "ov.conf:7");
  const Verdict v = rules.Check("/private/x");
  EXPECT_FALSE(v.allowed);
  EXPECT_TRUE(v.from_override);
  EXPECT_EQ(v.origin, "ov.conf:7");
  EXPECT_EQ(v.rule, "Disallow: /private/*");
  EXPECT_TRUE(rules.Allowed("/public"));
  EXPECT_TRUE(rules.Allowed("/robots.txt"));
}

TEST(CrawldRobotsDescribe, VerdictOriginEmptyForFileRules) {
  Rules rules = Rules::Parse("User-agent: *\nDisallow: /a\n", "crawld");
  rules.AddDisallow("/b", "ov.conf:1");
  EXPECT_EQ(rules.Check("/a").origin, "");
  EXPECT_FALSE(rules.Check("/a").from_override);
  EXPECT_EQ(rules.Check("/b").origin, "ov.conf:1");
}

TEST(CrawldRobotsDescribe, ControlCharactersFromTheFileAreMasked) {
  const Rules rules = Rules::Parse(
      "User-agent: *\nDisallow: /a\x1b[2Jb\nSitemap: http://x/\x07\n",
      "crawld");
  const std::string d = rules.Describe();
  EXPECT_EQ(d.find('\x1b'), std::string::npos);
  EXPECT_EQ(d.find('\x07'), std::string::npos);
  EXPECT_NE(d.find("  line 2: Disallow: /a?[2Jb\n"), std::string::npos) << d;
}

}  // namespace
}  // namespace crawld::robots
