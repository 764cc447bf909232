// Tests for robots/: one test per requirement of RFC 9309
// (https://www.rfc-editor.org/rfc/rfc9309.html), named after its section,
// and CrawldRobots tests for our own choices listed in robots/robots.h.
#include "robots/robots.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace crawld::robots {
namespace {

constexpr std::string_view kAgent = "crawld";

bool Allowed(std::string_view body, std::string_view path,
             std::string_view agent = kAgent) {
  return Rules::Parse(body, agent).Allowed(path);
}

// --- RFC 9309 2.1 Protocol Definition ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.1

TEST(Rfc9309, Sec2_1_GroupIsUserAgentLinesFollowedByRules) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /private/\n";
  EXPECT_FALSE(Allowed(body, "/private/x"));
  EXPECT_TRUE(Allowed(body, "/public/x"));
}

TEST(Rfc9309, Sec2_1_GroupEndsAtNextUserAgentLine) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /a\n"
      "User-agent: other\n"
      "Disallow: /b\n";
  EXPECT_FALSE(Allowed(body, "/a"));
  EXPECT_TRUE(Allowed(body, "/b"));
  EXPECT_TRUE(Allowed(body, "/a", "other"));
  EXPECT_FALSE(Allowed(body, "/b", "other"));
}

TEST(Rfc9309, Sec2_1_LastGroupWithoutRulesAllowsAll) {
  const char* body =
      "User-agent: *\n"
      "Disallow: /\n"
      "User-agent: crawld\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_EQ(rules.group(), Group::kSpecific);
  EXPECT_TRUE(rules.Allowed("/anything"));
}

// --- RFC 9309 2.2 Formal Syntax ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.2

TEST(Rfc9309, Sec2_2_KeysAreCaseInsensitive) {
  EXPECT_FALSE(Allowed("USER-AGENT: crawld\nDISALLOW: /x\n", "/x"));
  EXPECT_FALSE(Allowed("user-agent: crawld\ndisallow: /x\n", "/x"));
  EXPECT_FALSE(Allowed("uSeR-aGeNt: crawld\ndIsAlLoW: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /\nALLOW: /x\n", "/x"));
}

TEST(Rfc9309, Sec2_2_WhitespaceAroundColonIsOptional) {
  EXPECT_FALSE(Allowed("User-agent:crawld\nDisallow:/x\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent : crawld\nDisallow : /x\n", "/x"));
  EXPECT_FALSE(Allowed("  User-agent:\tcrawld  \n\t Disallow:\t/x \t\n", "/x"));
}

TEST(Rfc9309, Sec2_2_CommentsEndTheLine) {
  const char* body =
      "# a comment on its own line\n"
      "User-agent: crawld # trailing comment\n"
      "Disallow: /x # /y is not part of the pattern\n";
  EXPECT_FALSE(Allowed(body, "/x"));
  EXPECT_FALSE(Allowed(body, "/x/y"));
  EXPECT_TRUE(Allowed(body, "/y"));
  EXPECT_TRUE(Rules::Parse(body, kAgent).diagnostics().empty());
}

TEST(Rfc9309, Sec2_2_LineEndsCrLfAndCrLf) {
  for (std::string_view eol : {"\n", "\r", "\r\n"}) {
    std::string body = "User-agent: crawld" + std::string(eol) +
                       "Disallow: /x" + std::string(eol) + "Allow: /x/y";
    Rules rules = Rules::Parse(body, kAgent);
    EXPECT_FALSE(rules.Allowed("/x")) << "eol " << eol.size();
    EXPECT_TRUE(rules.Allowed("/x/y")) << "eol " << eol.size();
    EXPECT_EQ(rules.Check("/x/y").line, 3) << "eol " << eol.size();
  }
  // Mixed line ends in one file count lines alike.
  Rules mixed = Rules::Parse(
      "User-agent: crawld\r\n\rDisallow: /a\nDisallow: /b", kAgent);
  EXPECT_EQ(mixed.Check("/a").line, 3);
  EXPECT_EQ(mixed.Check("/b").line, 4);
}

TEST(Rfc9309, Sec2_2_EmptyLinesInsideGroupAreAllowed) {
  const char* body =
      "User-agent: crawld\n"
      "\n"
      "Disallow: /x\n"
      "\n"
      "Disallow: /y\n";
  EXPECT_FALSE(Allowed(body, "/x"));
  EXPECT_FALSE(Allowed(body, "/y"));
}

TEST(Rfc9309, Sec2_2_EmptyPatternMatchesNothing) {
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow:\n", "/"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow:   \n", "/x"));
  // An empty Disallow is still a rule: the next user-agent starts a group.
  const char* body =
      "User-agent: crawld\n"
      "Disallow:\n"
      "User-agent: other\n"
      "Disallow: /\n";
  EXPECT_TRUE(Allowed(body, "/x"));
  EXPECT_FALSE(Allowed(body, "/x", "other"));
}

// --- RFC 9309 2.2.1 The User-Agent Line ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.2.1

TEST(Rfc9309, Sec2_2_1_UserAgentCaseInsensitive) {
  EXPECT_FALSE(Allowed("User-agent: CRAWLD\nDisallow: /\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: CrawlD\nDisallow: /\n", "/x", "cRAWLd"));
}

TEST(Rfc9309, Sec2_2_1_UserAgentMatchedUpToFirstNonTokenCharacter) {
  EXPECT_FALSE(Allowed("User-agent: crawld/1.0\nDisallow: /\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: crawld (+http://x)\nDisallow: /\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: Example_Bot-2\nDisallow: /\n", "/x",
                       "example_bot-"));
}

TEST(Rfc9309, Sec2_2_1_ProductTokenIsMatchedExactlyNotAsSubstring) {
  EXPECT_TRUE(Allowed("User-agent: crawldx\nDisallow: /\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: xcrawld\nDisallow: /\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: crawl\nDisallow: /\n", "/x"));
}

TEST(Rfc9309, Sec2_2_1_GroupsNamingTheSameAgentAreMerged) {
  // The merge example of section 2.2.1.
  const char* body =
      "user-agent: ExampleBot\n"
      "disallow: /foo\n"
      "disallow: /bar\n"
      "\n"
      "user-agent: ExampleBot\n"
      "disallow: /baz\n";
  Rules rules = Rules::Parse(body, "ExampleBot");
  EXPECT_FALSE(rules.Allowed("/foo"));
  EXPECT_FALSE(rules.Allowed("/bar"));
  EXPECT_FALSE(rules.Allowed("/baz"));
  EXPECT_TRUE(rules.Allowed("/qux"));
  EXPECT_EQ(rules.rule_count(), 3u);
}

TEST(Rfc9309, Sec2_2_1_StarGroupOnlyWhenNoGroupNamesUs) {
  // The "*" example of section 2.2.1.
  const char* body =
      "user-agent: *\n"
      "disallow: /foo\n"
      "disallow: /bar\n"
      "\n"
      "user-agent: BazBot\n"
      "disallow: /baz\n";
  Rules example = Rules::Parse(body, "ExampleBot");
  EXPECT_EQ(example.group(), Group::kGlobal);
  EXPECT_FALSE(example.Allowed("/foo"));
  EXPECT_FALSE(example.Allowed("/bar"));
  EXPECT_TRUE(example.Allowed("/baz"));
  Rules baz = Rules::Parse(body, "BazBot");
  EXPECT_EQ(baz.group(), Group::kSpecific);
  EXPECT_TRUE(baz.Allowed("/foo"));
  EXPECT_FALSE(baz.Allowed("/baz"));
}

TEST(Rfc9309, Sec2_2_1_NoMatchingGroupAndNoStarGroupMeansNoRules) {
  Rules rules = Rules::Parse("User-agent: other\nDisallow: /\n", kAgent);
  EXPECT_EQ(rules.group(), Group::kNone);
  EXPECT_TRUE(rules.Allowed("/x"));
  EXPECT_EQ(Rules::Parse("", kAgent).group(), Group::kNone);
  EXPECT_TRUE(Allowed("", "/x"));
}

TEST(Rfc9309, Sec2_2_1_ConsecutiveUserAgentLinesFormOneGroup) {
  const char* body =
      "User-agent: a\n"
      "User-agent: crawld\n"
      "User-agent: b\n"
      "Disallow: /x\n";
  for (std::string_view agent : {"a", "crawld", "b"}) {
    EXPECT_FALSE(Allowed(body, "/x", agent)) << agent;
  }
  EXPECT_TRUE(Allowed(body, "/x", "c"));
}

TEST(Rfc9309, Sec2_2_1_StarAndOurTokenInOneGroup) {
  const char* body =
      "User-agent: *\n"
      "User-agent: crawld\n"
      "Disallow: /x\n";
  EXPECT_FALSE(Allowed(body, "/x"));
  EXPECT_FALSE(Allowed(body, "/x", "other"));
}

// --- RFC 9309 2.2.2 The "Allow" and "Disallow" Lines ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.2.2

TEST(Rfc9309, Sec2_2_2_LongestMatchWins) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /a\n"
      "Allow: /a/b\n"
      "Disallow: /a/b/c\n";
  EXPECT_FALSE(Allowed(body, "/a"));
  EXPECT_TRUE(Allowed(body, "/a/b"));
  EXPECT_FALSE(Allowed(body, "/a/b/c/d"));
  // Order in the file does not matter.
  const char* reversed =
      "User-agent: crawld\n"
      "Disallow: /a/b/c\n"
      "Allow: /a/b\n"
      "Disallow: /a\n";
  EXPECT_TRUE(Allowed(reversed, "/a/b"));
  EXPECT_FALSE(Allowed(reversed, "/a/b/c"));
}

TEST(Rfc9309, Sec2_2_2_LongestMatchCountsPatternOctetsWithWildcards) {
  // "/*/page" (7 octets) beats "/a/" (3) even though it is less literal.
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /a/\n"
      "Allow: /*/page\n";
  EXPECT_TRUE(Allowed(body, "/a/page"));
  EXPECT_FALSE(Allowed(body, "/a/other"));
}

TEST(Rfc9309, Sec2_2_2_AllowWinsTie) {
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /x\nAllow: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nAllow: /x\nDisallow: /x\n", "/x"));
  // Equal length with different patterns.
  EXPECT_TRUE(
      Allowed("User-agent: crawld\nDisallow: /*b\nAllow: /a*\n", "/ab"));
}

TEST(Rfc9309, Sec2_2_2_MatchingIsCaseSensitive) {
  const char* body = "User-agent: crawld\nDisallow: /Private\n";
  EXPECT_FALSE(Allowed(body, "/Private"));
  EXPECT_TRUE(Allowed(body, "/private"));
  EXPECT_TRUE(Allowed(body, "/PRIVATE"));
}

TEST(Rfc9309, Sec2_2_2_MatchStartsAtFirstOctetOfPath) {
  const char* body = "User-agent: crawld\nDisallow: /a\n";
  EXPECT_FALSE(Allowed(body, "/a"));
  EXPECT_FALSE(Allowed(body, "/abc"));
  EXPECT_TRUE(Allowed(body, "/b/a"));
}

TEST(Rfc9309, Sec2_2_2_NoMatchingRuleMeansAllowed) {
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /a\n", "/b"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nAllow: /a\n", "/b"));
}

TEST(Rfc9309, Sec2_2_2_RobotsTxtIsImplicitlyAllowed) {
  const char* body = "User-agent: *\nDisallow: /\nDisallow: /robots.txt\n";
  EXPECT_TRUE(Allowed(body, "/robots.txt"));
  EXPECT_TRUE(Allowed(body, "/robots.txt?x=1"));
  EXPECT_FALSE(Allowed(body, "/robots.txt.bak"));
  EXPECT_FALSE(Allowed(body, "/robots.txt/x"));
  Verdict v = Rules::Parse(body, kAgent).Check("/robots.txt");
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.line, 0);
}

TEST(Rfc9309, Sec2_2_2_NonAsciiPatternMatchesPercentEncodedPath) {
  // "/foo/bar/ツ" is "/foo/bar/%E3%83%84" (the table of section 2.2.2).
  const char* body = "User-agent: crawld\nDisallow: /foo/bar/\xE3\x83\x84\n";
  EXPECT_FALSE(Allowed(body, "/foo/bar/%E3%83%84"));
  EXPECT_FALSE(Allowed(body, "/foo/bar/%e3%83%84"));
  EXPECT_FALSE(Allowed(body, "/foo/bar/\xE3\x83\x84"));
  EXPECT_TRUE(Allowed(body, "/foo/bar/%E3%83"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedPatternMatchesNonAsciiPath) {
  const char* body = "User-agent: crawld\nDisallow: /foo/bar/%E3%83%84\n";
  EXPECT_FALSE(Allowed(body, "/foo/bar/\xE3\x83\x84"));
  EXPECT_FALSE(Allowed(body, "/foo/bar/%E3%83%84"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedUnreservedOctetsAreDecoded) {
  // "/foo/bar/%62%61%7A" is matched as "/foo/bar/baz", both ways.
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /foo/bar/baz\n",
                       "/foo/bar/%62%61%7A"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /foo/bar/%62%61%7A\n",
                       "/foo/bar/baz"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /%7Euser\n", "/~user"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedReservedOctetsStayEncoded) {
  const char* body = "User-agent: crawld\nDisallow: /a/b\n";
  EXPECT_TRUE(Allowed(body, "/a%2Fb"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%2fb\n", "/a%2Fb"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /q?a=b\n", "/q%3Fa=b"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodingHexCaseIsIgnored) {
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%3cb\n", "/a%3Cb"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%3Cb\n", "/a%3cb"));
  // A character outside the URI set matches its encoded form.
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a<b\n", "/a%3Cb"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%3Cb\n", "/a<b"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%20b\n", "/a b"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a|b\n", "/a%7cb"));
}

TEST(Rfc9309, Sec2_2_2_QueryIsMatchedAsPartOfThePath) {
  const char* body = "User-agent: crawld\nDisallow: /foo/bar?baz=quz\n";
  EXPECT_FALSE(Allowed(body, "/foo/bar?baz=quz"));
  EXPECT_FALSE(Allowed(body, "/foo/bar?baz=quz&x=1"));
  EXPECT_TRUE(Allowed(body, "/foo/bar"));
  EXPECT_TRUE(Allowed(body, "/foo/bar?baz=other"));
}

TEST(Rfc9309, Sec2_2_2_RulesOutsideAnyGroupAreIgnored) {
  const char* body =
      "Disallow: /x\n"
      "Allow: /y\n"
      "User-agent: crawld\n"
      "Disallow: /y\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_TRUE(rules.Allowed("/x"));
  EXPECT_FALSE(rules.Allowed("/y"));
  ASSERT_EQ(rules.diagnostics().size(), 2u);
  EXPECT_EQ(rules.diagnostics()[0],
            "line 1: rule before any user-agent line, ignored");
}

TEST(Rfc9309, Sec2_2_2_DuplicateRulesAreDeduplicated) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /x\n"
      "Disallow: /x\n"
      "User-agent: crawld\n"
      "Disallow: /x\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_EQ(rules.rule_count(), 1u);
  EXPECT_EQ(rules.Check("/x").line, 2);
}

// --- RFC 9309 2.2.3 Special Characters ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.2.3

TEST(Rfc9309, Sec2_2_3_StarMatchesAnySequence) {
  const char* body = "User-agent: crawld\nDisallow: /this/*/exactly\n";
  EXPECT_FALSE(Allowed(body, "/this/x/exactly"));
  EXPECT_FALSE(Allowed(body, "/this//exactly"));
  EXPECT_FALSE(Allowed(body, "/this/x/y/exactly/z"));
  EXPECT_TRUE(Allowed(body, "/this/exactly"));
  EXPECT_TRUE(Allowed(body, "/that/x/exactly"));
}

TEST(Rfc9309, Sec2_2_3_StarMatchesSlashAndLeadingStarMatchesAnyPath) {
  const char* body = "User-agent: crawld\nDisallow: *.gif$\n";
  EXPECT_FALSE(Allowed(body, "/a.gif"));
  EXPECT_FALSE(Allowed(body, "/deep/dir/b.gif"));
  EXPECT_TRUE(Allowed(body, "/a.gif?x"));
  EXPECT_TRUE(Allowed(body, "/a.gifs"));
}

TEST(Rfc9309, Sec2_2_3_DollarAnchorsTheEnd) {
  const char* body = "User-agent: crawld\nDisallow: /this/path/exactly$\n";
  EXPECT_FALSE(Allowed(body, "/this/path/exactly"));
  EXPECT_TRUE(Allowed(body, "/this/path/exactly/"));
  EXPECT_TRUE(Allowed(body, "/this/path/exactly?q"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /$\n", "/"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /$\n", "/a"));
}

TEST(Rfc9309, Sec2_2_3_HashDesignatesComment) {
  const char* body =
      "User-agent: crawld\nAllow: / # comment in line\n"
      "Disallow: /a#b\n";
  EXPECT_FALSE(Allowed(body, "/a"));
  EXPECT_FALSE(Allowed(body, "/ab"));
}

TEST(Rfc9309, Sec2_2_3_PercentEncodedStarMatchesLiteralStar) {
  const char* body =
      "User-agent: crawld\nDisallow: /path/file-with-a-%2A.html\n";
  EXPECT_FALSE(Allowed(body, "/path/file-with-a-*.html"));
  EXPECT_FALSE(Allowed(body, "/path/file-with-a-%2a.html"));
  EXPECT_TRUE(Allowed(body, "/path/file-with-a-x.html"));
}

TEST(Rfc9309, Sec2_2_3_PercentEncodedDollarMatchesLiteralDollar) {
  const char* body = "User-agent: crawld\nDisallow: /path/foo-%24\n";
  EXPECT_FALSE(Allowed(body, "/path/foo-$"));
  EXPECT_FALSE(Allowed(body, "/path/foo-$/more"));
  EXPECT_TRUE(Allowed(body, "/path/foo-"));
}

TEST(Rfc9309, Sec2_2_3_PathologicalWildcardsDoNotBacktrack) {
  // Exponential with naive backtracking; linear here. The test is bounded
  // by its own size, not by a clock.
  const char* body = "User-agent: crawld\nDisallow: /*a*a*a*a*a*a*a*b\n";
  Rules rules = Rules::Parse(body, kAgent);
  const std::string as(200000, 'a');
  EXPECT_TRUE(rules.Allowed("/" + as));
  EXPECT_FALSE(rules.Allowed("/" + as + "b"));
  Rules anchored = Rules::Parse(
      "User-agent: crawld\nDisallow: /*a*a*a*a*a*a*a*b$\n", kAgent);
  EXPECT_TRUE(anchored.Allowed("/" + as + "bc"));
  EXPECT_FALSE(anchored.Allowed("/" + as + "b"));
  // Long literal segments in a long path (worst case of naive search).
  std::string seg(5000, 'a');
  Rules segs = Rules::Parse(
      "User-agent: crawld\nDisallow: /*" + seg + "b*" + seg + "c\n", kAgent);
  EXPECT_TRUE(segs.Allowed("/" + as));
  EXPECT_FALSE(segs.Allowed("/" + seg + "b" + seg + "c"));
}

// --- RFC 9309 2.2.4 Other Records ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.2.4

TEST(Rfc9309, Sec2_2_4_SitemapsAreCollectedFromAnyPosition) {
  const char* body =
      "Sitemap: https://example.com/s1.xml\n"
      "User-agent: other\n"
      "Sitemap: https://example.com/s2.xml\n"
      "Disallow: /\n"
      "sitemap:https://example.com/s3.xml # c\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_EQ(rules.sitemaps(),
            (std::vector<std::string>{"https://example.com/s1.xml",
                                      "https://example.com/s2.xml",
                                      "https://example.com/s3.xml"}));
}

TEST(Rfc9309, Sec2_2_4_SitemapDoesNotEndAGroup) {
  const char* body =
      "User-agent: crawld\n"
      "Sitemap: https://example.com/s.xml\n"
      "User-agent: other\n"
      "Disallow: /x\n";
  EXPECT_FALSE(Allowed(body, "/x"));
}

TEST(Rfc9309, Sec2_2_4_UnknownRecordDoesNotEndAGroup) {
  const char* body =
      "User-agent: crawld\n"
      "Host: example.com\n"
      "User-agent: other\n"
      "Disallow: /x\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_FALSE(rules.Allowed("/x"));
  ASSERT_EQ(rules.diagnostics().size(), 1u);
  EXPECT_EQ(rules.diagnostics()[0], "line 2: unknown key \"Host\", skipped");
}

// --- RFC 9309 2.3.1 Access Results ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.3.1

TEST(Rfc9309, Sec2_3_1_3_UnavailableMeansAllowAll) {
  Rules rules = Rules::AllowAll();
  EXPECT_TRUE(rules.Allowed("/"));
  EXPECT_TRUE(rules.Allowed("/anything?x"));
  EXPECT_EQ(rules.rule_count(), 0u);
  EXPECT_TRUE(Rules().Allowed("/x"));
}

TEST(Rfc9309, Sec2_3_1_4_UnreachableMeansDisallowAll) {
  Rules rules = Rules::DisallowAll();
  EXPECT_FALSE(rules.Allowed("/"));
  EXPECT_FALSE(rules.Allowed("/anything?x"));
  Verdict v = rules.Check("/a");
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.rule, "Disallow: /");
  EXPECT_EQ(v.line, 0);
  // robots.txt stays fetchable so that the crawler can try again.
  EXPECT_TRUE(rules.Allowed("/robots.txt"));
}

TEST(Rfc9309, Sec2_3_1_5_ParseableRulesAreUsedDespiteErrors) {
  const char* body =
      "<html><body>oops</body></html>\n"
      "User-agent: crawld\n"
      "\x01\x02 garbage \xff\xfe\n"
      "Disallow /y z\n"
      "Disallow: /x\n"
      "no-colon-here\n"
      "Allow: /x/ok\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_FALSE(rules.Allowed("/x"));
  EXPECT_TRUE(rules.Allowed("/x/ok"));
  EXPECT_TRUE(rules.Allowed("/y"));
  EXPECT_EQ(rules.diagnostic_count(), 4u);
}

// --- RFC 9309 2.5 Limits ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-2.5

std::string Padding(size_t bytes) {
  std::string line = "# " + std::string(78, 'p') + "\n";  // 81 bytes
  std::string out;
  while (out.size() + line.size() < bytes) out += line;
  out.append(bytes - out.size() - 1, '#');
  out += '\n';
  return out;
}

TEST(Rfc9309, Sec2_5_ParsesAtLeast500KiB) {
  std::string body =
      "User-agent: crawld\n" + Padding(490 * 1024) + "Disallow: /late\n";
  ASSERT_LT(body.size(), 500u * 1024);
  EXPECT_FALSE(Allowed(body, "/late"));
}

TEST(Rfc9309, Sec2_5_IgnoresWhatFollowsTheLimit) {
  std::string body =
      "User-agent: crawld\n" + Padding(500 * 1024) + "Disallow: /late\n";
  EXPECT_TRUE(Allowed(body, "/late"));
  Options options;
  options.max_bytes = 1024 * 1024;
  EXPECT_FALSE(Rules::Parse(body, kAgent, options).Allowed("/late"));
}

TEST(CrawldRobots, LineCutByTheLimitIsDropped) {
  std::string head = "User-agent: crawld\nDisallow: /\n";
  std::string body =
      head + Padding(500 * 1024 - head.size() - 8) + "Allow: /abc\n";
  // The limit falls inside "Allow: /abc": half of it ("Allow: /") would
  // allow everything.
  ASSERT_GT(body.size(), 500u * 1024);
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_FALSE(rules.Allowed("/"));
  EXPECT_FALSE(rules.Allowed("/abc"));
  ASSERT_FALSE(rules.diagnostics().empty());
  EXPECT_NE(rules.diagnostics().back().find("parsing limit"),
            std::string::npos);
}

TEST(CrawldRobots, MaxBytesIsClampedToTheRfcMinimum) {
  std::string body =
      "User-agent: crawld\n" + Padding(400 * 1024) + "Disallow: /late\n";
  Options options;
  options.max_bytes = 10;
  EXPECT_FALSE(Rules::Parse(body, kAgent, options).Allowed("/late"));
}

// --- RFC 9309 5 Examples ---
// https://www.rfc-editor.org/rfc/rfc9309.html#section-5

constexpr std::string_view kSimpleExample =
    "User-Agent: *\n"
    "Disallow: *.gif$\n"
    "Disallow: /example/\n"
    "Allow: /publications/\n"
    "\n"
    "User-Agent: foobot\n"
    "Disallow:/\n"
    "Allow:/example/page.html\n"
    "Allow:/example/allowed.gif\n"
    "\n"
    "User-Agent: barbot\n"
    "User-Agent: bazbot\n"
    "Disallow: /example/page.html\n"
    "\n"
    "User-Agent: quxbot\n"
    "\n"
    "EOF\n";

// https://www.rfc-editor.org/rfc/rfc9309.html#section-5.1
TEST(Rfc9309, Sec5_1_SimpleExampleStarGroup) {
  Rules rules = Rules::Parse(kSimpleExample, "otherbot");
  EXPECT_EQ(rules.group(), Group::kGlobal);
  EXPECT_TRUE(rules.Allowed("/publications/"));
  EXPECT_TRUE(rules.Allowed("/publications/a.html"));
  EXPECT_FALSE(rules.Allowed("/example/"));
  EXPECT_FALSE(rules.Allowed("/example/page.html"));
  EXPECT_FALSE(rules.Allowed("/image.gif"));
  EXPECT_FALSE(rules.Allowed("/dir/image.gif"));
  EXPECT_TRUE(rules.Allowed("/image.gif.html"));
  EXPECT_TRUE(rules.Allowed("/other/page.html"));
}

TEST(Rfc9309, Sec5_1_SimpleExampleFoobot) {
  Rules rules = Rules::Parse(kSimpleExample, "foobot");
  EXPECT_TRUE(rules.Allowed("/example/page.html"));
  EXPECT_TRUE(rules.Allowed("/example/allowed.gif"));
  EXPECT_FALSE(rules.Allowed("/"));
  EXPECT_FALSE(rules.Allowed("/example/"));
  EXPECT_FALSE(rules.Allowed("/publications/"));
}

TEST(Rfc9309, Sec5_1_SimpleExampleBarbotAndBazbot) {
  for (std::string_view agent : {"barbot", "bazbot"}) {
    Rules rules = Rules::Parse(kSimpleExample, agent);
    EXPECT_FALSE(rules.Allowed("/example/page.html")) << agent;
    EXPECT_FALSE(rules.Allowed("/example/page.html?x")) << agent;
    EXPECT_TRUE(rules.Allowed("/example/")) << agent;
    EXPECT_TRUE(rules.Allowed("/image.gif")) << agent;
    EXPECT_TRUE(rules.Allowed("/")) << agent;
  }
}

TEST(Rfc9309, Sec5_1_SimpleExampleQuxbotEmptyGroup) {
  Rules rules = Rules::Parse(kSimpleExample, "quxbot");
  EXPECT_EQ(rules.group(), Group::kSpecific);
  EXPECT_TRUE(rules.Allowed("/example/"));
  EXPECT_TRUE(rules.Allowed("/image.gif"));
  EXPECT_EQ(rules.rule_count(), 0u);
}

// https://www.rfc-editor.org/rfc/rfc9309.html#section-5.2
TEST(Rfc9309, Sec5_2_LongestMatch) {
  const char* body =
      "User-Agent: foobot\n"
      "Allow: /example/page/\n"
      "Disallow: /example/page/disallowed.gif\n";
  Rules rules = Rules::Parse(body, "foobot");
  EXPECT_TRUE(rules.Allowed("/example/page/"));
  EXPECT_TRUE(rules.Allowed("/example/page/other.gif"));
  EXPECT_FALSE(rules.Allowed("/example/page/disallowed.gif"));
  Verdict v = rules.Check("/example/page/disallowed.gif");
  EXPECT_EQ(v.line, 3);
  EXPECT_EQ(v.rule, "Disallow: /example/page/disallowed.gif");
}

// --- Our own choices (robots/robots.h, "Deliberate deviations") ---

TEST(CrawldRobots, AcceptsUserAgentMisspellings) {
  for (std::string_view key : {"useragent", "User agent", "USERAGENT"}) {
    std::string body = std::string(key) + ": crawld\nDisallow: /x\n";
    EXPECT_FALSE(Allowed(body, "/x")) << key;
  }
}

TEST(CrawldRobots, AcceptsDisallowMisspelling) {
  for (std::string_view key : {"dissallow", "dissalow", "disalow", "diasllow",
                               "disallaw", "DISALOW"}) {
    std::string body = "User-agent: crawld\n" + std::string(key) + ": /x\n";
    Rules rules = Rules::Parse(body, kAgent);
    EXPECT_FALSE(rules.Allowed("/x")) << key;
    EXPECT_EQ(rules.Check("/x").rule, "Disallow: /x") << key;
  }
  // Not every near-miss is read.
  EXPECT_TRUE(Allowed("User-agent: crawld\ndisalloww: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: crawld\ndisallow-x: /x\n", "/x"));
}

TEST(CrawldRobots, AcceptsSiteMapMisspelling) {
  Rules rules = Rules::Parse("Site-map: https://e.com/s.xml\n", kAgent);
  EXPECT_EQ(rules.sitemaps(), std::vector<std::string>{"https://e.com/s.xml"});
}

TEST(CrawldRobots, MisspellingsRejectedWhenTyposAreOff) {
  Options strict;
  strict.accept_typos = false;
  EXPECT_TRUE(Rules::Parse("User-agent: crawld\ndisalow: /x\n", kAgent, strict)
                  .Allowed("/x"));
  EXPECT_TRUE(Rules::Parse("useragent: crawld\nDisallow: /x\n", kAgent, strict)
                  .Allowed("/x"));
  EXPECT_TRUE(Rules::Parse("User-agent: crawld\nDisallow /x\n", kAgent, strict)
                  .Allowed("/x"));
}

TEST(CrawldRobots, AcceptsWhitespaceInsteadOfColonForKnownKeys) {
  const char* body =
      "User-agent crawld\n"
      "Disallow /x\n"
      "Allow\t/x/y\n"
      "Crawl-delay 2\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_FALSE(rules.Allowed("/x"));
  EXPECT_TRUE(rules.Allowed("/x/y"));
  EXPECT_EQ(rules.crawl_delay_seconds(), 2.0);
  EXPECT_TRUE(rules.diagnostics().empty());
  // As in Google's robotstxt, a colon later in the line is the separator:
  // "Sitemap https://..." has the key "Sitemap https" and is skipped.
  Rules sitemap = Rules::Parse("Sitemap https://e.com/s.xml\n", kAgent);
  EXPECT_TRUE(sitemap.sitemaps().empty());
  EXPECT_EQ(sitemap.diagnostic_count(), 1u);
}

TEST(CrawldRobots, WhitespaceSeparatorNeedsExactlyTwoWords) {
  Rules rules =
      Rules::Parse("User-agent: crawld\nDisallow /x /y\nFoo /z\n", kAgent);
  EXPECT_TRUE(rules.Allowed("/x"));
  EXPECT_TRUE(rules.Allowed("/y"));
  ASSERT_EQ(rules.diagnostics().size(), 2u);
  EXPECT_EQ(rules.diagnostics()[0],
            "line 2: no colon, skipped: \"Disallow /x /y\"");
  EXPECT_EQ(rules.diagnostics()[1], "line 3: no colon, skipped: \"Foo /z\"");
}

TEST(CrawldRobots, KeysAreMatchedExactlyNotAsPrefixes) {
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallowed: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agents: crawld\nDisallow: /x\n", "/x"));
}

TEST(CrawldRobots, Utf8ByteOrderMarkIsSkipped) {
  Rules rules =
      Rules::Parse("\xEF\xBB\xBFUser-agent: crawld\nDisallow: /x\n", kAgent);
  EXPECT_FALSE(rules.Allowed("/x"));
  EXPECT_TRUE(rules.diagnostics().empty());
  EXPECT_EQ(rules.Check("/x").line, 2);
}

TEST(CrawldRobots, CrawlDelayOfOurGroup) {
  const char* body =
      "User-agent: *\n"
      "Crawl-delay: 10\n"
      "User-agent: crawld\n"
      "Crawl-delay: 0.5\n"
      "Disallow: /x\n";
  EXPECT_EQ(Rules::Parse(body, kAgent).crawl_delay_seconds(), 0.5);
  EXPECT_EQ(Rules::Parse(body, "other").crawl_delay_seconds(), 10.0);
  EXPECT_FALSE(Rules::Parse("User-agent: *\nDisallow: /\n", kAgent)
                   .crawl_delay_seconds()
                   .has_value());
}

TEST(CrawldRobots, CrawlDelayEndsUserAgentRun) {
  const char* body =
      "User-agent: *\n"
      "Crawl-delay: 10\n"
      "User-agent: crawld\n"
      "Disallow: /x\n";
  Rules ours = Rules::Parse(body, kAgent);
  EXPECT_FALSE(ours.Allowed("/x"));
  EXPECT_FALSE(ours.crawl_delay_seconds().has_value());
  Rules other = Rules::Parse(body, "other");
  EXPECT_TRUE(other.Allowed("/x"));
  EXPECT_EQ(other.crawl_delay_seconds(), 10.0);
}

TEST(CrawldRobots, CrawlDelayLargestOfOurGroupWins) {
  const char* body =
      "User-agent: crawld\nCrawl-delay: 3\nDisallow: /a\n"
      "User-agent: crawld\nCrawl-delay: 7.25\nCrawl-delay: 1\n";
  EXPECT_EQ(Rules::Parse(body, kAgent).crawl_delay_seconds(), 7.25);
}

TEST(CrawldRobots, InvalidCrawlDelayIsIgnoredWithDiagnostic) {
  for (std::string_view value :
       {"-1", "abc", "1e3", "inf", "nan", "1.2.3", "5s", ".", ""}) {
    std::string body =
        "User-agent: crawld\nCrawl-delay: " + std::string(value) + "\n";
    Rules rules = Rules::Parse(body, kAgent);
    EXPECT_FALSE(rules.crawl_delay_seconds().has_value()) << value;
    EXPECT_EQ(rules.diagnostic_count(), 1u) << value;
  }
  EXPECT_EQ(Rules::Parse("User-agent: crawld\nCrawl-delay: .5\n", kAgent)
                .crawl_delay_seconds(),
            0.5);
}

TEST(CrawldRobots, PatternWithoutLeadingSlashGetsOne) {
  Rules rules =
      Rules::Parse("User-agent: crawld\nDisallow: private/\n", kAgent);
  EXPECT_FALSE(rules.Allowed("/private/x"));
  EXPECT_EQ(rules.Check("/private/x").rule, "Disallow: private/");
  ASSERT_EQ(rules.diagnostics().size(), 1u);
  EXPECT_NE(rules.diagnostics()[0].find("\"/private/\""), std::string::npos);
}

TEST(CrawldRobots, DollarInsideAPatternIsLiteral) {
  const char* body = "User-agent: crawld\nDisallow: /a$b\n";
  EXPECT_FALSE(Allowed(body, "/a$b"));
  EXPECT_FALSE(Allowed(body, "/a%24bc"));
  EXPECT_TRUE(Allowed(body, "/a"));
}

TEST(CrawldRobots, LiteralStarInPathIsNotAWildcard) {
  const char* body = "User-agent: crawld\nDisallow: /a%2Ab\n";
  EXPECT_TRUE(Allowed(body, "/axb"));
  EXPECT_FALSE(Allowed(body, "/a*b"));
}

TEST(CrawldRobots, FragmentIsIgnored) {
  const char* body = "User-agent: crawld\nDisallow: /a$\n";
  EXPECT_FALSE(Allowed(body, "/a#section"));
  EXPECT_TRUE(Allowed(body, "/a?#x"));
}

TEST(CrawldRobots, EmptyOrRelativePathIsReadFromRoot) {
  const char* body = "User-agent: crawld\nDisallow: /$\nDisallow: /?\n";
  EXPECT_FALSE(Allowed(body, ""));
  EXPECT_FALSE(Allowed(body, "?q=1"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /$\n", "a"));
}

TEST(CrawldRobots, UserAgentStarWithTrailingTextIsGlobal) {
  EXPECT_FALSE(Allowed("User-agent: * everyone\nDisallow: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: *bot\nDisallow: /x\n", "/x"));
}

TEST(CrawldRobots, ProductTokenIsReducedToTokenCharacters) {
  const char* body = "User-agent: crawld\nDisallow: /x\n";
  EXPECT_FALSE(Allowed(body, "/x", "crawld/0.1 (+https://example.com/bot)"));
  EXPECT_FALSE(Allowed(body, "/x", "  crawld "));
}

TEST(CrawldRobots, EmptyProductTokenGetsOnlyTheStarGroup) {
  const char* body =
      "User-agent: *\nDisallow: /a\n"
      "User-agent: /\nDisallow: /b\n";
  for (std::string_view agent : {"", "/"}) {
    Rules rules = Rules::Parse(body, agent);
    EXPECT_EQ(rules.group(), Group::kGlobal) << agent;
    EXPECT_FALSE(rules.Allowed("/a"));
    EXPECT_TRUE(rules.Allowed("/b"));
  }
}

TEST(CrawldRobots, CheckReportsTheDecidingRuleAndItsLine) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: /private/\n"
      "Allow: /private/ok   # why not\n";
  Rules rules = Rules::Parse(body, kAgent);
  Verdict v = rules.Check("/private/x");
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.line, 2);
  EXPECT_EQ(v.rule, "Disallow: /private/");
  EXPECT_FALSE(v.from_override);
  v = rules.Check("/private/ok");
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.line, 3);
  EXPECT_EQ(v.rule, "Allow: /private/ok");
  v = rules.Check("/public");
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.rule, "");
}

TEST(CrawldRobots, AllowedAgreesWithCheck) {
  Rules rules = Rules::Parse(kSimpleExample, "otherbot");
  for (std::string_view path : {"/", "/a.gif", "/example/", "/publications/x",
                                "/robots.txt", "/x%2A.gif"}) {
    EXPECT_EQ(rules.Allowed(path), rules.Check(path).allowed) << path;
  }
}

TEST(CrawldRobots, AddDisallowIsMergedAsIfInOurGroup) {
  Rules rules = Rules::Parse(
      "User-agent: crawld\nAllow: /shop/cart\nDisallow: /tmp\n", kAgent);
  rules.AddDisallow("/shop/");
  rules.AddDisallow("/shop/cart");  // ties with the Allow: Allow wins
  rules.AddDisallow("*.pdf$");
  rules.AddDisallow("");  // nothing
  EXPECT_EQ(rules.rule_count(), 5u);
  EXPECT_FALSE(rules.Allowed("/shop/shoes"));
  EXPECT_TRUE(rules.Allowed("/shop/cart"));
  EXPECT_FALSE(rules.Allowed("/docs/a.pdf"));
  EXPECT_FALSE(rules.Allowed("/tmp/x"));
  Verdict v = rules.Check("/shop/shoes");
  EXPECT_TRUE(v.from_override);
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.rule, "Disallow: /shop/");
  // A robots.txt rule of equal length is reported before the override.
  rules.AddDisallow("/tmp");
  v = rules.Check("/tmp/x");
  EXPECT_FALSE(v.from_override);
  EXPECT_EQ(v.line, 3);
}

TEST(CrawldRobots, AddDisallowWorksWithoutAnyGroup) {
  Rules rules = Rules::AllowAll();
  rules.AddDisallow("/admin");
  EXPECT_FALSE(rules.Allowed("/admin/x"));
  EXPECT_TRUE(rules.Allowed("/robots.txt"));
  rules.AddDisallow("/");
  EXPECT_TRUE(rules.Allowed("/robots.txt"));
}

TEST(CrawldRobots, DiagnosticsAreBounded) {
  std::string body;
  for (int i = 0; i < 1000; ++i) body += "junk line without colon\n";
  Options options;
  options.max_diagnostics = 10;
  Rules rules = Rules::Parse(body, kAgent, options);
  EXPECT_EQ(rules.diagnostics().size(), 10u);
  EXPECT_EQ(rules.diagnostic_count(), 1000u);
  EXPECT_EQ(rules.diagnostics()[9].substr(0, 8), "line 10:");
  EXPECT_EQ(Rules::Parse(body, kAgent).diagnostics().size(), 100u);
}

TEST(CrawldRobots, DiagnosticsQuoteHostileBytesPrintably) {
  Rules rules = Rules::Parse(std::string("\x01\x7f\xff\0zz", 6), kAgent);
  ASSERT_EQ(rules.diagnostics().size(), 1u);
  EXPECT_EQ(rules.diagnostics()[0], "line 1: no colon, skipped: \"????zz\"");
}

TEST(CrawldRobots, OverlongLinesAreCut) {
  Options options;
  options.max_line_bytes = 300;
  std::string body =
      "User-agent: crawld\nDisallow: /" + std::string(1000, 'a') + "\n";
  Rules rules = Rules::Parse(body, kAgent, options);
  // "Disallow: /" + 289 a's survive the cut.
  EXPECT_FALSE(rules.Allowed("/" + std::string(289, 'a')));
  EXPECT_TRUE(rules.Allowed("/" + std::string(288, 'a')));
  EXPECT_EQ(rules.diagnostic_count(), 1u);
}

TEST(CrawldRobots, HostileInputNeverCrashes) {
  // NUL bytes inside keys and values.
  std::string nul("User-agent: crawld\nDisallow: /a\0b\n", 32);
  Rules rules = Rules::Parse(nul, kAgent);
  EXPECT_FALSE(rules.Allowed(std::string("/a\0b", 4)));
  EXPECT_FALSE(rules.Allowed("/a%00b"));
  EXPECT_TRUE(rules.Allowed("/a"));
  // Random binary junk, several seeds.
  std::mt19937 rng(42);
  for (int round = 0; round < 50; ++round) {
    std::string junk(4096, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    Rules r = Rules::Parse("User-agent: *\n" + junk, kAgent);
    (void)r.Allowed("/");
    EXPECT_TRUE(r.Allowed("/robots.txt"));
  }
  // A huge line far past the line limit, and a huge path.
  std::string huge = "User-agent: crawld\nDisallow: /" +
                     std::string(3 * 1024 * 1024, '*') + "x\n";
  Options big;
  big.max_bytes = 4 * 1024 * 1024;
  Rules stars = Rules::Parse(huge, kAgent, big);
  EXPECT_FALSE(stars.Allowed("/" + std::string(1 << 20, 'y')));
  EXPECT_TRUE(stars.Allowed("/robots.txt"));
}

TEST(CrawldRobots, HundredThousandRules) {
  std::string body = "User-agent: crawld\n";
  for (int i = 0; i < 100000; ++i) {
    body += (i % 2 ? "Allow: /p" : "Disallow: /p") + std::to_string(i) + "/\n";
  }
  Options options;
  options.max_bytes = 4 * 1024 * 1024;
  Rules rules = Rules::Parse(body, kAgent, options);
  EXPECT_EQ(rules.rule_count(), 100000u);
  EXPECT_FALSE(rules.Allowed("/p99998/x"));
  EXPECT_TRUE(rules.Allowed("/p99999/x"));
  EXPECT_TRUE(rules.Allowed("/q"));
  EXPECT_EQ(rules.Check("/p99998/x").line, 99999 + 1);
}

TEST(CrawldRobots, RulesAreCopyableAndMovable) {
  Rules a = Rules::Parse(
      "Sitemap: s\nUser-agent: crawld\nDisallow: /x\nCrawl-delay: 1\n", kAgent);
  Rules b = a;
  Rules c = std::move(a);
  for (const Rules* r : {&b, &c}) {
    EXPECT_FALSE(r->Allowed("/x"));
    EXPECT_EQ(r->crawl_delay_seconds(), 1.0);
    EXPECT_EQ(r->sitemaps().size(), 1u);
  }
  b = Rules::AllowAll();
  EXPECT_TRUE(b.Allowed("/x"));
  EXPECT_FALSE(c.Allowed("/x"));
}

// Randomised check of the matcher against a simple model: a dynamic
// programme over (pattern, path) that follows RFC 9309 2.2.3 literally.
bool ModelMatch(std::string_view pattern, std::string_view path) {
  bool anchored = !pattern.empty() && pattern.back() == '$';
  if (anchored) pattern.remove_suffix(1);
  // m[i][j]: pattern[0..i) matches path[0..j) exactly.
  std::vector<std::vector<bool>> m(pattern.size() + 1,
                                   std::vector<bool>(path.size() + 1, false));
  m[0][0] = true;
  for (size_t i = 1; i <= pattern.size(); ++i) {
    for (size_t j = 0; j <= path.size(); ++j) {
      if (pattern[i - 1] == '*') {
        m[i][j] = m[i - 1][j] || (j > 0 && m[i][j - 1]);
      } else {
        m[i][j] = j > 0 && m[i - 1][j - 1] && pattern[i - 1] == path[j - 1];
      }
    }
  }
  if (anchored) return m[pattern.size()][path.size()];
  for (size_t j = 0; j <= path.size(); ++j) {
    if (m[pattern.size()][j]) return true;
  }
  return false;
}

TEST(CrawldRobots, MatcherAgreesWithModelOnRandomPatterns) {
  std::mt19937 rng(7);
  auto pick = [&](std::string_view alphabet, size_t max_len) {
    std::string s;
    const size_t len = rng() % (max_len + 1);
    for (size_t i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  int disallowed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string pattern = "/" + pick("ab/**", 7);
    if (rng() % 3 == 0) pattern += '$';
    const std::string path = "/" + pick("ab/", 10);
    Rules rules =
        Rules::Parse("User-agent: crawld\nDisallow: " + pattern + "\n", kAgent);
    const bool expected = !ModelMatch(pattern, path);
    ASSERT_EQ(rules.Allowed(path), expected)
        << "pattern " << pattern << " path " << path;
    disallowed += expected ? 0 : 1;
  }
  // Both outcomes were exercised.
  EXPECT_GT(disallowed, 1000);
  EXPECT_LT(disallowed, 19000);
}

}  // namespace
}  // namespace crawld::robots
