// Tests for robots/, named as Google's robotstxt names its own: one test per
// requirement of RFC 9309 (https://www.rfc-editor.org/rfc/rfc9309.html),
// named after its section; Rfc9309.GoogleOnly_* for Google's behaviour where
// it deviates from the RFC text or the RFC leaves a choice (which is ours
// too); CrawldRobots tests for our own choices. All listed in
// robots/robots.h. Where the RFC text and Google differ, the Rfc9309 test
// reads the RFC's way through Options::rfc_matching and the GoogleOnly test
// asserts the default. google_corpus_test.cc replays Google's recorded
// verdicts on thousands of generated files.
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

// As Allowed(), for a whole URL as `crawlctl robots check` takes it.
bool UrlAllowed(std::string_view body, std::string_view url,
                std::string_view agent = kAgent) {
  return Rules::Parse(body, agent).Allowed(PathFromUrl(url));
}

// The RFC's reading where Google's deviates (Options::rfc_matching).
Options RfcMatching() {
  Options o;
  o.rfc_matching = true;
  return o;
}

bool RfcAllowed(std::string_view body, std::string_view path,
                std::string_view agent = kAgent) {
  return Rules::Parse(body, agent, RfcMatching()).Allowed(path);
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
  EXPECT_TRUE(RfcAllowed(body, "/robots.txt"));
  EXPECT_TRUE(RfcAllowed(body, "/robots.txt?x=1"));
  EXPECT_FALSE(RfcAllowed(body, "/robots.txt.bak"));
  EXPECT_FALSE(RfcAllowed(body, "/robots.txt/x"));
  Verdict v = Rules::Parse(body, kAgent, RfcMatching()).Check("/robots.txt");
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.line, 0);
}

TEST(Rfc9309, Sec2_2_2_NonAsciiPatternMatchesPercentEncodedPath) {
  // "/foo/bar/ツ" is "/foo/bar/%E3%83%84" (the table of section 2.2.2).
  const char* body = "User-agent: crawld\nDisallow: /foo/bar/\xE3\x83\x84\n";
  EXPECT_FALSE(RfcAllowed(body, "/foo/bar/%E3%83%84"));
  EXPECT_FALSE(RfcAllowed(body, "/foo/bar/%e3%83%84"));
  EXPECT_FALSE(RfcAllowed(body, "/foo/bar/\xE3\x83\x84"));
  EXPECT_TRUE(RfcAllowed(body, "/foo/bar/%E3%83"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedPatternMatchesNonAsciiPath) {
  const char* body = "User-agent: crawld\nDisallow: /foo/bar/%E3%83%84\n";
  EXPECT_FALSE(RfcAllowed(body, "/foo/bar/\xE3\x83\x84"));
  EXPECT_FALSE(RfcAllowed(body, "/foo/bar/%E3%83%84"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedUnreservedOctetsAreDecoded) {
  // "/foo/bar/%62%61%7A" is matched as "/foo/bar/baz", both ways.
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /foo/bar/baz\n",
                          "/foo/bar/%62%61%7A"));
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /foo/bar/%62%61%7A\n",
                          "/foo/bar/baz"));
  EXPECT_FALSE(
      RfcAllowed("User-agent: crawld\nDisallow: /%7Euser\n", "/~user"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodedReservedOctetsStayEncoded) {
  const char* body = "User-agent: crawld\nDisallow: /a/b\n";
  EXPECT_TRUE(Allowed(body, "/a%2Fb"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%2fb\n", "/a%2Fb"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /q?a=b\n", "/q%3Fa=b"));
}

TEST(Rfc9309, Sec2_2_2_PercentEncodingHexCaseIsIgnored) {
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a%3cb\n", "/a%3Cb"));
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a%3Cb\n", "/a%3cb"));
  // A character outside the URI set matches its encoded form.
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a<b\n", "/a%3Cb"));
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a%3Cb\n", "/a<b"));
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a%20b\n", "/a b"));
  EXPECT_FALSE(RfcAllowed("User-agent: crawld\nDisallow: /a|b\n", "/a%7cb"));
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
  EXPECT_FALSE(RfcAllowed(body, "/path/file-with-a-*.html"));
  EXPECT_FALSE(RfcAllowed(body, "/path/file-with-a-%2a.html"));
  EXPECT_TRUE(RfcAllowed(body, "/path/file-with-a-x.html"));
}

TEST(Rfc9309, Sec2_2_3_PercentEncodedDollarMatchesLiteralDollar) {
  const char* body = "User-agent: crawld\nDisallow: /path/foo-%24\n";
  EXPECT_FALSE(RfcAllowed(body, "/path/foo-$"));
  EXPECT_FALSE(RfcAllowed(body, "/path/foo-$/more"));
  EXPECT_TRUE(RfcAllowed(body, "/path/foo-"));
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

// Issue 19 item 2: the line the limit cuts in half is dropped, whichever
// rule it holds.
TEST(CrawldRobots, Issue19_LineCutByTheLimitIsDropped_Allow) {
  std::string head = "User-agent: crawld\nDisallow: /\n";
  std::string body =
      head + Padding(500 * 1024 - head.size() - 8) + "Allow: /abc\n";
  // The limit falls inside "Allow: /abc": half of it ("Allow: /") would
  // allow everything.
  ASSERT_GT(body.size(), 500u * 1024);
  ASSERT_EQ(body.substr(500 * 1024 - 8, 8), "Allow: /");
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_FALSE(rules.Allowed("/"));
  EXPECT_FALSE(rules.Allowed("/abc"));
  EXPECT_EQ(rules.rule_count(), 1u);
  ASSERT_FALSE(rules.diagnostics().empty());
  EXPECT_NE(rules.diagnostics().back().find("parsing limit"),
            std::string::npos);
}

TEST(CrawldRobots, Issue19_LineCutByTheLimitIsDropped_Disallow) {
  std::string head = "User-agent: crawld\nDisallow: /tmp/\n";
  std::string body =
      head + Padding(500 * 1024 - head.size() - 11) + "Disallow: /private\n";
  // The limit falls inside "Disallow: /private": half of it
  // ("Disallow: /") would close the whole host.
  ASSERT_EQ(body.substr(500 * 1024 - 11, 11), "Disallow: /");
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_TRUE(rules.Allowed("/"));
  EXPECT_TRUE(rules.Allowed("/public"));
  EXPECT_FALSE(rules.Allowed("/tmp/x"));
  EXPECT_EQ(rules.rule_count(), 1u);
  ASSERT_FALSE(rules.diagnostics().empty());
  EXPECT_NE(rules.diagnostics().back().find("parsing limit"),
            std::string::npos);
  // A line that ends exactly at the limit is whole, and is read.
  std::string whole =
      head + Padding(500 * 1024 - head.size() - 19) + "Disallow: /private\n";
  ASSERT_EQ(whole.size(), 500u * 1024);
  EXPECT_FALSE(Rules::Parse(whole, kAgent).Allowed("/private"));
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

// --- Google's behaviour where RFC 9309 differs or leaves a choice ---
// (robots/robots.h; robots.cc and robots_test.cc of github.com/google/
// robotstxt). One test per family of inputs on which a parser can differ.

// Keys are prefixes, with Google's frequent typos (kAllowFrequentTypos):
// plural, past-tense and misspelt forms of the three group keys are read.
TEST(Rfc9309, GoogleOnly_KeysAreMatchedAsPrefixesWithFrequentTypos) {
  for (std::string_view key :
       {"useragent", "User agent", "USERAGENT", "User-agents", "user-agent-x",
        "Useragents", "user agents", "User-agent foo"}) {
    std::string body = std::string(key) + ": crawld\nDisallow: /x\n";
    EXPECT_FALSE(Allowed(body, "/x")) << key;
  }
  for (std::string_view key :
       {"dissallow", "dissalow", "disalow", "diasllow", "disallaw", "DISALOW",
        "Disallowed", "Disallows", "disalloww", "disallow-x", "Dissallowed",
        "Disalowing", "Disallow this"}) {
    std::string body = "User-agent: crawld\n" + std::string(key) + ": /x\n";
    Rules rules = Rules::Parse(body, kAgent);
    EXPECT_FALSE(rules.Allowed("/x")) << key;
    EXPECT_EQ(rules.Check("/x").rule, "Disallow: /x") << key;
  }
  for (std::string_view key :
       {"Allowed", "Allows", "allow-this", "ALLOWANCE"}) {
    std::string body =
        "User-agent: crawld\nDisallow: /\n" + std::string(key) + ": /x\n";
    EXPECT_TRUE(Allowed(body, "/x")) << key;
  }
  // Near misses that are on no list.
  for (std::string_view key :
       {"user_agent", "User-Agnet", "agent", "Usr-agent", "user  agent"}) {
    std::string body = std::string(key) + ": crawld\nDisallow: /x\n";
    EXPECT_TRUE(Allowed(body, "/x")) << key;
  }
  for (std::string_view key :
       {"Dis-allow", "Disallw", "disallo", "Diaslow", "Dissallaw"}) {
    std::string body = "User-agent: crawld\n" + std::string(key) + ": /x\n";
    EXPECT_TRUE(Allowed(body, "/x")) << key;
  }
  for (std::string_view key : {"Alow", "allo", "Alllow"}) {  // no typos
    std::string body =
        "User-agent: crawld\nDisallow: /\n" + std::string(key) + ": /x\n";
    EXPECT_FALSE(Allowed(body, "/x")) << key;
  }
  // A key read by leniency says so.
  Rules rules = Rules::Parse("User-agent: crawld\nDisallowed: /x\n", kAgent);
  ASSERT_EQ(rules.diagnostics().size(), 1u);
  EXPECT_EQ(rules.diagnostics()[0],
            "line 2: key \"Disallowed\" read as Disallow");
}

// Google-specific: a missing colon is read when the line has exactly two
// words (separated by spaces or tabs).
TEST(Rfc9309, GoogleOnly_MissingColonWithTwoWords) {
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
  // Three words: skipped. Only space and tab separate words.
  Rules three = Rules::Parse(
      "User-agent: crawld\nDisallow /x /y\nFoo /z\nDisallow \v /v\n"
      "Disallow \v/w\n",
      kAgent);
  EXPECT_TRUE(three.Allowed("/x"));
  EXPECT_TRUE(three.Allowed("/y"));
  EXPECT_TRUE(three.Allowed("/v"));
  EXPECT_FALSE(three.Allowed("/w"));
  ASSERT_EQ(three.diagnostics().size(), 3u);
  EXPECT_EQ(three.diagnostics()[0],
            "line 2: no colon, skipped: \"Disallow /x /y\"");
  EXPECT_EQ(three.diagnostics()[1], "line 3: no colon, skipped: \"Foo /z\"");
  // As in Google's robotstxt, a colon later in the line is the separator:
  // "Sitemap https://..." has the key "Sitemap https" and is skipped.
  Rules sitemap = Rules::Parse("Sitemap https://e.com/s.xml\n", kAgent);
  EXPECT_TRUE(sitemap.sitemaps().empty());
  EXPECT_EQ(sitemap.diagnostic_count(), 1u);
}

// Only Allow and Disallow lines end a run of User-agent lines: Crawl-delay,
// Sitemap and unknown records between them leave the group as it is.
TEST(Rfc9309, GoogleOnly_OtherRecordsBetweenUserAgentLinesKeepTheGroup) {
  for (std::string_view other :
       {"Crawl-delay: 10", "Sitemap: https://e.com/s.xml", "Host: e.com",
        "Noindex: /x", "junk", "Request-rate: 1/5"}) {
    std::string body = "User-agent: *\n" + std::string(other) +
                       "\nUser-agent: crawld\nDisallow: /x\n";
    Rules ours = Rules::Parse(body, kAgent);
    EXPECT_EQ(ours.group(), Group::kSpecific) << other;
    EXPECT_FALSE(ours.Allowed("/x")) << other;
    EXPECT_FALSE(Allowed(body, "/x", "other")) << other;
  }
}

// A pattern can only match a path (which starts with "/") if it starts with
// "/" or "*". Google does not repair others.
TEST(Rfc9309, GoogleOnly_PatternNotStartingWithSlashOrStarNeverMatches) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: private/\n"
      "Disallow: ?q\n"
      "Disallow: .html\n"
      "Disallow: ~x\n"
      "Disallow: %2Fa\n";
  Rules rules = Rules::Parse(body, kAgent);
  EXPECT_TRUE(rules.Allowed("/private/x"));
  EXPECT_TRUE(rules.Allowed("private/x"));  // read as "/private/x"
  EXPECT_TRUE(rules.Allowed("/?q"));
  EXPECT_TRUE(rules.Allowed("/a.html"));
  EXPECT_TRUE(rules.Allowed("/a"));
  EXPECT_EQ(rules.rule_count(), 0u);
  ASSERT_EQ(rules.diagnostics().size(), 5u);
  EXPECT_EQ(rules.diagnostics()[0],
            "line 2: pattern \"private/\" starts with neither \"/\" nor "
            "\"*\": it never matches");
  // Such an Allow does not open anything either.
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /\nAllow: a\n", "/a"));
}

// "$" alone is not "/$": it never matches (paths are never empty).
TEST(Rfc9309, GoogleOnly_PatternThatIsOnlyDollarNeverMatches) {
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: $\n", "/"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: $\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nAllow: $\nDisallow: /\n", "/"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /$\n", "/"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /$\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: *$\n", "/x"));
}

// "$" anchors only as the last character; elsewhere it is a literal "$",
// compared with a literal "$" in the path.
TEST(Rfc9309, GoogleOnly_DollarAnchorsOnlyAtTheEnd) {
  const char* body = "User-agent: crawld\nDisallow: /a$b\nDisallow: /c$$\n";
  EXPECT_FALSE(Allowed(body, "/a$b"));
  EXPECT_FALSE(Allowed(body, "/a$bc"));
  EXPECT_TRUE(Allowed(body, "/a%24b"));  // no decoding
  EXPECT_TRUE(Allowed(body, "/a"));
  EXPECT_FALSE(Allowed(body, "/c$"));
  EXPECT_TRUE(Allowed(body, "/c$x"));
  EXPECT_TRUE(Allowed(body, "/c"));
}

// The pattern's percent-escapes get upper-case hex; the URL's are compared
// as they are, and nothing is decoded on either side.
TEST(Rfc9309, GoogleOnly_PercentEscapeCaseIsNormalisedInThePatternOnly) {
  const char* body = "User-agent: crawld\nDisallow: /a%3cb\nDisallow: /c%3Cd\n";
  EXPECT_FALSE(Allowed(body, "/a%3Cb"));
  EXPECT_TRUE(Allowed(body, "/a%3cb"));
  EXPECT_FALSE(Allowed(body, "/c%3Cd"));
  EXPECT_TRUE(Allowed(body, "/c%3cd"));
  EXPECT_TRUE(Allowed(body, "/a<b"));
  const char* encoded = "User-agent: crawld\nDisallow: /foo/bar/%62%61%7A\n";
  EXPECT_TRUE(Allowed(encoded, "/foo/bar/baz"));
  EXPECT_FALSE(Allowed(encoded, "/foo/bar/%62%61%7A"));
  EXPECT_TRUE(Allowed(encoded, "/foo/bar/%62%61%7a"));
  EXPECT_TRUE(
      Allowed("User-agent: crawld\nDisallow: /foo/bar/baz\n", "/foo/bar/%62"));
  // What is no escape stays as it is.
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%zz\n", "/a%zz"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /a%25\n", "/a%"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a%4\n", "/a%4"));
  EXPECT_TRUE(Allowed("User-agent: crawld\nDisallow: /a%2f\n", "/a/"));
}

// A "*" inside what looks like an escape is still a wildcard, and the
// escape is no escape (its hex is not upper-cased).
TEST(Rfc9309, GoogleOnly_WildcardInsidePercentEscape) {
  const char* body = "User-agent: crawld\nDisallow: /a%*b\nDisallow: /c%a*\n";
  EXPECT_FALSE(Allowed(body, "/a%b"));
  EXPECT_FALSE(Allowed(body, "/a%2Fb"));
  EXPECT_FALSE(Allowed(body, "/a%xyzb"));
  EXPECT_TRUE(Allowed(body, "/a"));
  EXPECT_FALSE(Allowed(body, "/c%a"));
  EXPECT_FALSE(Allowed(body, "/c%ab"));
  EXPECT_TRUE(Allowed(body, "/c%A"));
  // "%2A" is three literal octets, not a "*" of the path.
  const char* star = "User-agent: crawld\nDisallow: /x%2a\n";
  EXPECT_FALSE(Allowed(star, "/x%2A"));
  EXPECT_TRUE(Allowed(star, "/x*"));
  EXPECT_TRUE(Allowed(star, "/x%2a"));
}

// A pattern written as a full URL is a pattern like any other: it does not
// start with "/", so it never matches; "//host/x" is a path pattern.
TEST(Rfc9309, GoogleOnly_FullUrlPatternIsNotAUrl) {
  const char* body =
      "User-agent: crawld\n"
      "Disallow: http://example.com/private\n"
      "Disallow: //example.com/x\n";
  EXPECT_TRUE(UrlAllowed(body, "http://example.com/private"));
  EXPECT_TRUE(Allowed(body, "/private"));
  EXPECT_TRUE(Allowed(body, "/http://example.com/private"));
  EXPECT_TRUE(UrlAllowed(body, "http://example.com/x"));
  EXPECT_FALSE(UrlAllowed(body, "http://example.com//example.com/x"));
}

// Google's parser has no implicit allowance for /robots.txt.
TEST(Rfc9309, GoogleOnly_RobotsTxtUrlIsNotSpecial) {
  const char* body = "User-agent: *\nDisallow: /\n";
  EXPECT_FALSE(Allowed(body, "/robots.txt"));
  EXPECT_FALSE(UrlAllowed(body, "https://example.com/robots.txt?x=1"));
  EXPECT_EQ(Rules::Parse(body, kAgent).Check("/robots.txt").line, 2);
  EXPECT_TRUE(Allowed("User-agent: *\nDisallow: /r\nAllow: /robots.txt\n",
                      "/robots.txt"));
  // Without a robots.txt to read, the file stays fetchable.
  EXPECT_TRUE(Rules::DisallowAll().Allowed("/robots.txt"));
}

// Google's "Foo Bar" example: a user-agent value is read up to its first
// character outside [a-zA-Z_-].
TEST(Rfc9309, GoogleOnly_AcceptUserAgentUpToFirstSpace) {
  const char* body =
      "User-Agent: *\n"
      "Disallow: /\n"
      "User-Agent: Foo Bar\n"
      "Allow: /x/\n"
      "Disallow: /\n";
  EXPECT_TRUE(UrlAllowed(body, "http://foo.bar/x/y", "Foo"));
  EXPECT_FALSE(UrlAllowed(body, "http://foo.bar/x/y", "Foo Bar"));
}

// The product token we are given is compared as given (case aside): it is
// not reduced to a token the way user-agent values are.
TEST(Rfc9309, GoogleOnly_ProductTokenIsComparedAsGiven) {
  const char* body =
      "User-agent: crawld\nDisallow: /x\nUser-agent: *\nDisallow: /y\n";
  EXPECT_FALSE(Allowed(body, "/x", "CRAWLD"));
  for (std::string_view agent :
       {"crawld/0.1", " crawld", "crawld ", "crawld bot", "crawld*"}) {
    Rules rules = Rules::Parse(body, agent);
    EXPECT_EQ(rules.group(), Group::kGlobal) << agent;
    EXPECT_TRUE(rules.Allowed("/x")) << agent;
    EXPECT_FALSE(rules.Allowed("/y")) << agent;
  }
}

// "*" followed by whitespace and more is still the global agent; "*bot" is
// no agent at all.
TEST(Rfc9309, GoogleOnly_StarFollowedByWhitespaceIsGlobal) {
  EXPECT_FALSE(Allowed("User-agent: * everyone\nDisallow: /x\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: *\tx\nDisallow: /x\n", "/x"));
  EXPECT_FALSE(Allowed("User-agent: *\vx\nDisallow: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: *bot\nDisallow: /x\n", "/x"));
  EXPECT_TRUE(Allowed("User-agent: **\nDisallow: /x\n", "/x"));
}

// A UTF-8 byte order mark, or the part of one the file starts with, is
// skipped; once, and only at the start.
TEST(Rfc9309, GoogleOnly_ByteOrderMarkPrefixIsSkipped) {
  for (std::string_view bom : {"\xEF\xBB\xBF", "\xEF\xBB", "\xEF"}) {
    Rules rules = Rules::Parse(
        std::string(bom) + "User-agent: crawld\nDisallow: /x\n", kAgent);
    EXPECT_FALSE(rules.Allowed("/x")) << bom.size();
    EXPECT_TRUE(rules.diagnostics().empty()) << bom.size();
    EXPECT_EQ(rules.Check("/x").line, 2) << bom.size();
  }
  EXPECT_TRUE(Allowed(
      "\xEF\xBB\xBF\xEF\xBB\xBFUser-agent: crawld\nDisallow: /x\n", "/x"));
  EXPECT_TRUE(Allowed("\xBB\xBFUser-agent: crawld\nDisallow: /x\n", "/x"));
  EXPECT_TRUE(
      Allowed("User-agent: crawld\n\xEF\xBB\xBF"
              "Disallow: /x\n",
              "/x"));
}

// Google's GoogleOnly_LineTooLong: a line is read up to 2083 * 8 - 1 bytes;
// the rest of it is ignored (and the line used).
TEST(Rfc9309, GoogleOnly_LineTooLong) {
  constexpr size_t kMaxLineLen = 2083 * 8;  // Google's buffer, NUL included
  const std::string disallow = "disallow: ";
  std::string longline = "/x/";
  const size_t max_length = kMaxLineLen - longline.size() - disallow.size() + 1;
  while (longline.size() < max_length) longline += "a";
  const std::string body =
      "user-agent: FooBot\n" + disallow + longline + "/qux\n";
  EXPECT_TRUE(UrlAllowed(body, "http://foo.bar/fux", "FooBot"));
  EXPECT_FALSE(
      UrlAllowed(body, "http://foo.bar" + longline + "/fux", "FooBot"));
  // The exact boundary: 16,663 bytes are read, the 16,664th is not.
  for (size_t len : {kMaxLineLen - 1, kMaxLineLen}) {
    std::string line = "Disallow: /" + std::string(len - 12, 'a') + "b";
    ASSERT_EQ(line.size(), len);
    const std::string path = "/" + std::string(len - 12, 'a') + "c";
    EXPECT_EQ(Allowed("User-agent: crawld\n" + line + "\n", path),
              len == kMaxLineLen - 1)
        << len;
  }
}

// Google reads each line as a C string: a NUL byte ends it. The path too.
TEST(Rfc9309, GoogleOnly_NulByteEndsTheLine) {
  using namespace std::string_literals;
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a\0b\n"s, "/a"));
  EXPECT_TRUE(Allowed("User-agent: crawld\n\0Disallow: /a\n"s, "/a"));
  EXPECT_TRUE(Allowed("User-agent: crawld\0x\nDisallow: /a\n"s, "/a", "x"));
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /a$\n", "/a\0b"s));
  EXPECT_FALSE(UrlAllowed("User-agent: crawld\nDisallow: /a$\n",
                          "http://example.com/a\0b"s));
}

// Octets >= 0x80 of a pattern are percent-encoded (upper-case hex); the
// URL is expected percent-encoded already and is not touched.
TEST(Rfc9309, GoogleOnly_NonAsciiIsEscapedInThePatternOnly) {
  const char* body = "User-agent: crawld\nDisallow: /foo/bar/\xE3\x83\x84\n";
  EXPECT_FALSE(Allowed(body, "/foo/bar/%E3%83%84"));
  EXPECT_TRUE(Allowed(body, "/foo/bar/%e3%83%84"));
  EXPECT_TRUE(Allowed(body, "/foo/bar/\xE3\x83\x84"));
  EXPECT_EQ(Rules::Parse(body, kAgent).Check("/foo/bar/%E3%83%84").rule,
            "Disallow: /foo/bar/\xE3\x83\x84");
  // Any such octet, UTF-8 or not.
  EXPECT_FALSE(Allowed("User-agent: crawld\nDisallow: /caf\xE9\n", "/caf%E9"));
  // The escaped length counts for the longest match: 4 octets beat 3.
  EXPECT_FALSE(
      Allowed("User-agent: crawld\nAllow: /%E\nDisallow: /\xE9\n", "/%E9"));
}

// Google's GetPathParamsQuery, which PathFromUrl is: path, params and query
// of a URL, the fragment dropped, "/" when there is nothing.
TEST(Rfc9309, GoogleOnly_PathParamsQueryOfAUrl) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      // Google's robots_test.cc, TestGetPathParamsQuery.
      {"", "/"},
      {"http://www.example.com", "/"},
      {"http://www.example.com/", "/"},
      {"http://www.example.com/a", "/a"},
      {"http://www.example.com/a/", "/a/"},
      {"http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"},
      {"http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"},
      {"example.com", "/"},
      {"example.com/", "/"},
      {"example.com/a", "/a"},
      {"example.com/a/", "/a/"},
      {"example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"},
      {"a", "/"},
      {"a/", "/"},
      {"/a", "/a"},
      {"a/b", "/b"},
      {"example.com?a", "/?a"},
      {"example.com/a;b#c", "/a;b"},
      {"//a/b/c", "/b/c"},
      // More of the same rules.
      {"http://example.com;p", "/;p"},
      {"http://example.com#/a", "/"},
      {"http://example.com//a", "//a"},
      {"http://example.com/a#b?c", "/a"},
      {"?x", "/?x"},
      {"/a?b://c", "/a?b://c"},
      {"https://u:p@h:8080/p;x?q#f", "/p;x?q"},
      {"//", "/"},
      {"///a", "/a"},
  };
  for (const auto& [url, path] : cases) {
    EXPECT_EQ(PathFromUrl(url), path) << url;
  }
  const char* body = "User-agent: crawld\nDisallow: /a;\nDisallow: /$\n";
  EXPECT_FALSE(UrlAllowed(body, "http://example.com/a;p=1?q"));
  EXPECT_TRUE(UrlAllowed(body, "http://example.com/a?q"));
  EXPECT_FALSE(UrlAllowed(body, "http://example.com"));
  EXPECT_FALSE(UrlAllowed(body, "http://example.com/#x"));
}

// Google's GoogleOnly_IndexHTMLisDirectory: allowing ".../index.html" also
// allows the directory itself, exactly.
TEST(Rfc9309, GoogleOnly_IndexHtmlIsDirectory) {
  const char* body =
      "User-Agent: *\n"
      "Allow: /allowed-slash/index.html\n"
      "Disallow: /\n";
  EXPECT_TRUE(UrlAllowed(body, "http://foo.com/allowed-slash/", "foobot"));
  EXPECT_FALSE(
      UrlAllowed(body, "http://foo.com/allowed-slash/index.htm", "foobot"));
  EXPECT_TRUE(
      UrlAllowed(body, "http://foo.com/allowed-slash/index.html", "foobot"));
  EXPECT_FALSE(UrlAllowed(body, "http://foo.com/anyother-url", "foobot"));
  EXPECT_FALSE(UrlAllowed(body, "http://foo.com/allowed-slash/x", "foobot"));
  const Verdict v = Rules::Parse(body, "foobot").Check("/allowed-slash/");
  EXPECT_EQ(v.line, 2);
  EXPECT_EQ(v.rule, "Allow: /allowed-slash/index.html (as /allowed-slash/$)");
  // Only for Allow, and not in the RFC reading.
  EXPECT_TRUE(Allowed("User-agent: *\nDisallow: /a/index.html\n", "/a/"));
  EXPECT_FALSE(RfcAllowed(body, "/allowed-slash/", "foobot"));
}

// --- Our own choices (robots/robots.h) ---

TEST(CrawldRobots, StrictKeysWhenTyposAreOff) {
  Options strict;
  strict.accept_typos = false;
  for (std::string_view body : {"User-agent: crawld\ndisalow: /x\n",
                                "useragent: crawld\nDisallow: /x\n",
                                "User-agent: crawld\nDisallow /x\n",
                                "User-agent: crawld\nDisallowed: /x\n",
                                "User-agents: crawld\nDisallow: /x\n"}) {
    EXPECT_TRUE(Rules::Parse(body, kAgent, strict).Allowed("/x")) << body;
    EXPECT_FALSE(Rules::Parse(body, kAgent).Allowed("/x")) << body;
  }
  EXPECT_FALSE(
      Rules::Parse("user-agent: crawld\nDISALLOW: /x\n", kAgent, strict)
          .Allowed("/x"));
  EXPECT_TRUE(Rules::Parse("Site-map: https://e.com/s.xml\n", kAgent, strict)
                  .sitemaps()
                  .empty());
}

TEST(CrawldRobots, AcceptsSiteMapMisspelling) {
  Rules rules = Rules::Parse("Site-map: https://e.com/s.xml\n", kAgent);
  EXPECT_EQ(rules.sitemaps(), std::vector<std::string>{"https://e.com/s.xml"});
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

// A Crawl-delay is for the agents its group has named so far; it does not
// end the group (Google's grouping decides the verdicts).
TEST(CrawldRobots, CrawlDelayIsForTheAgentsNamedSoFar) {
  const char* body =
      "User-agent: *\n"
      "Crawl-delay: 10\n"
      "User-agent: crawld\n"
      "Disallow: /x\n";
  Rules ours = Rules::Parse(body, kAgent);
  EXPECT_FALSE(ours.Allowed("/x"));
  EXPECT_FALSE(ours.crawl_delay_seconds().has_value());
  Rules other = Rules::Parse(body, "other");
  EXPECT_FALSE(other.Allowed("/x"));
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
  Rules rules = Rules::Parse(std::string("\x01\x7f\xff\x80zz", 6), kAgent);
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
  // (As in Google's parser, a NUL ends the line: the rule is "/a".)
  std::string nul("User-agent: crawld\nDisallow: /a\0b\n", 32);
  Rules rules = Rules::Parse(nul, kAgent);
  EXPECT_FALSE(rules.Allowed(std::string("/a\0b", 4)));
  EXPECT_FALSE(rules.Allowed("/a%00b"));
  EXPECT_FALSE(rules.Allowed("/a"));
  EXPECT_TRUE(rules.Allowed("/b"));
  // Random binary junk, several seeds.
  std::mt19937 rng(42);
  for (int round = 0; round < 50; ++round) {
    std::string junk(4096, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    Rules r = Rules::Parse("User-agent: *\n" + junk, kAgent);
    (void)r.Allowed("/");
    (void)r.Allowed(junk);
    Rules rfc = Rules::Parse("User-agent: *\n" + junk, kAgent, RfcMatching());
    (void)rfc.Allowed(junk);
    EXPECT_TRUE(rfc.Allowed("/robots.txt"));
  }
  // A huge line far past the line limit, and a huge path.
  std::string huge = "User-agent: crawld\nDisallow: /" +
                     std::string(3 * 1024 * 1024, '*') + "x\n";
  Options big;
  big.max_bytes = 4 * 1024 * 1024;
  Rules stars = Rules::Parse(huge, kAgent, big);
  EXPECT_FALSE(stars.Allowed("/" + std::string(1 << 20, 'y')));
  EXPECT_FALSE(stars.Allowed("/robots.txt"));  // Google's: no exemption
  big.rfc_matching = true;
  EXPECT_TRUE(Rules::Parse(huge, kAgent, big).Allowed("/robots.txt"));
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
