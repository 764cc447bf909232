// Tests for conf/rules.h: the URL filter rule file (docs/RULES.md).
// All CrawldRules_*: the grammar and semantics are our own.
#include "conf/rules.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace crawld::conf {
namespace {

std::unique_ptr<RuleSet> MustParse(std::string_view text) {
  auto r = RuleSet::Parse(text, "r.rules");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return RuleSet::AcceptAll();
  return std::move(r).value();
}

// "accept"/"reject" + ":" + line, for compact expectations.
std::string D(const RuleSet& rs, std::string_view url, int depth = 0,
              std::string_view seed = "") {
  const RuleVerdict v = rs.Decide({url, depth, seed});
  return std::string(v.accept ? "accept" : "reject") + ":" +
         std::to_string(v.line);
}

std::string ErrorOf(std::string_view text) {
  auto r = RuleSet::Parse(text, "r.rules");
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  return r.status().message();
}

TEST(CrawldRules, FirstMatchingRuleDecides) {
  auto rs = MustParse(
      "accept host example.com\n"
      "reject host example.com\n"
      "reject prefix http://other.com/\n"
      "accept host other.com\n");
  EXPECT_EQ(D(*rs, "http://example.com/x"), "accept:1");
  EXPECT_EQ(D(*rs, "http://other.com/x"), "reject:3");
  // Swapping the order swaps the outcome.
  auto swapped = MustParse(
      "reject host example.com\n"
      "accept host example.com\n");
  EXPECT_EQ(D(*swapped, "http://example.com/x"), "reject:1");
}

TEST(CrawldRules, NoMatchTakesDefaultAcceptWhenAbsent) {
  auto rs = MustParse("reject host a.com\n");
  const RuleVerdict v = rs->Decide({"http://b.com/", 0, ""});
  EXPECT_TRUE(v.accept);
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.rule, "default");
}

TEST(CrawldRules, DefaultRejectApplies) {
  auto rs = MustParse("accept host a.com\ndefault reject\n");
  EXPECT_EQ(D(*rs, "http://a.com/"), "accept:1");
  const RuleVerdict v = rs->Decide({"http://b.com/", 0, ""});
  EXPECT_FALSE(v.accept);
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.rule, "default");
}

TEST(CrawldRules, CommentsBlankLinesAndRuleTextAreNormalized) {
  auto rs = MustParse(
      "# header comment\n"
      "\n"
      "   \t\n"
      "reject    regex   a#b     # trailing comment\r\n");
  EXPECT_EQ(rs->size(), 1u);
  const RuleVerdict v = rs->Decide({"http://x.com/a#b", 0, ""});
  EXPECT_FALSE(v.accept);
  EXPECT_EQ(v.line, 4);
  EXPECT_EQ(v.rule, "reject regex a#b");
}

TEST(CrawldRules, InvalidUrlIsRejected) {
  auto rs = MustParse("accept scope any\n");
  const RuleVerdict v = rs->Decide({"not a url", 0, ""});
  EXPECT_FALSE(v.accept);
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.rule, "invalid url");
}

TEST(CrawldRules, RegexMatchesSerializedUrlUnanchored) {
  auto rs = MustParse("reject regex ^https?://[^/]+/(cgi-bin|calendar)/\n");
  EXPECT_EQ(D(*rs, "https://example.com/cgi-bin/x"), "reject:1");
  EXPECT_EQ(D(*rs, "HTTP://EXAMPLE.COM/calendar/2020"), "reject:1");
  EXPECT_EQ(D(*rs, "https://example.com/x/cgi-bin/"), "accept:0");
  auto unanchored = MustParse("reject regex sessionid=\n");
  EXPECT_EQ(D(*unanchored, "http://a.com/p?x=1&sessionid=2"), "reject:1");
}

TEST(CrawldRules, HostIsExactAndCaseInsensitive) {
  auto rs = MustParse("reject host Example.COM\n");
  EXPECT_EQ(D(*rs, "http://EXAMPLE.com/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://www.example.com/"), "accept:0");
  EXPECT_EQ(D(*rs, "http://example.com.evil.net/"), "accept:0");
}

TEST(CrawldRules, SuffixMatchesSubdomainsAndTheBareName) {
  auto rs = MustParse("reject suffix .example.org\n");
  EXPECT_EQ(D(*rs, "http://a.b.example.org/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://example.org/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://badexample.org/"), "accept:0");
}

TEST(CrawldRules, DomainUsesPublicSuffixList) {
  auto rs = MustParse("reject domain example.co.uk\n");
  EXPECT_EQ(D(*rs, "http://a.b.example.co.uk/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://example.co.uk/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://other.co.uk/"), "accept:0");
  EXPECT_EQ(D(*rs, "http://co.uk/"), "accept:0");
}

TEST(CrawldRules, PrefixComparesSerializedUrl) {
  auto rs = MustParse("reject prefix http://example.com/private/\n");
  EXPECT_EQ(D(*rs, "http://example.com/private/a"), "reject:1");
  EXPECT_EQ(D(*rs, "HTTP://Example.com:80/private/"), "reject:1");
  EXPECT_EQ(D(*rs, "http://example.com/privatex"), "accept:0");
  EXPECT_EQ(D(*rs, "https://example.com/private/a"), "accept:0");
}

TEST(CrawldRules, SchemeMatches) {
  auto rs = MustParse("reject scheme FTP\n");
  EXPECT_EQ(D(*rs, "ftp://example.com/f"), "reject:1");
  EXPECT_EQ(D(*rs, "http://example.com/f"), "accept:0");
}

TEST(CrawldRules, DepthComparesWithOperator) {
  auto rs = MustParse("reject depth > 5\n");
  EXPECT_EQ(D(*rs, "http://a.com/", 5), "accept:0");
  EXPECT_EQ(D(*rs, "http://a.com/", 6), "reject:1");
  auto ops = MustParse(
      "accept depth == 0\n"
      "accept depth <= 2\n"
      "reject depth >= 10\n"
      "accept depth < 4\n"
      "reject depth != 7\n");
  EXPECT_EQ(D(*ops, "http://a.com/", 0), "accept:1");
  EXPECT_EQ(D(*ops, "http://a.com/", 2), "accept:2");
  EXPECT_EQ(D(*ops, "http://a.com/", 11), "reject:3");
  EXPECT_EQ(D(*ops, "http://a.com/", 3), "accept:4");
  EXPECT_EQ(D(*ops, "http://a.com/", 5), "reject:5");
  EXPECT_EQ(D(*ops, "http://a.com/", 7), "accept:0");
}

TEST(CrawldRules, LengthCountsSerializedBytes) {
  auto rs = MustParse("reject length > 20\n");
  EXPECT_EQ(D(*rs, "http://a.com/1234567"), "accept:0");   // 20 bytes
  EXPECT_EQ(D(*rs, "http://a.com/12345678"), "reject:1");  // 21 bytes
}

TEST(CrawldRules, SegmentsCountsNonEmptyPathSegments) {
  auto rs = MustParse("reject segments > 3\n");
  EXPECT_EQ(D(*rs, "http://a.com/1/2/3"), "accept:0");
  EXPECT_EQ(D(*rs, "http://a.com/1//2/3/"), "accept:0");
  EXPECT_EQ(D(*rs, "http://a.com/1/2/3/4"), "reject:1");
}

TEST(CrawldRules, RepeatedCatchesPathLoops) {
  auto rs = MustParse("reject repeated > 3\n");
  EXPECT_EQ(D(*rs, "http://a.com/x/y/x/y/x/y"), "accept:0");  // 3 each
  EXPECT_EQ(D(*rs, "http://a.com/x/y/x/z/x/x"), "reject:1");  // x 4 times
  EXPECT_EQ(D(*rs, "http://a.com/a/b/c/d/e/f/g"), "accept:0");
}

TEST(CrawldRules, ScopeSameHost) {
  auto rs = MustParse("accept scope same-host\ndefault reject\n");
  EXPECT_EQ(D(*rs, "http://www.a.com/x", 1, "www.a.com"), "accept:1");
  EXPECT_EQ(D(*rs, "http://www.a.com/x", 1, "WWW.A.COM"), "accept:1");
  EXPECT_EQ(D(*rs, "http://cdn.a.com/x", 1, "www.a.com"), "reject:0");
  EXPECT_EQ(D(*rs, "http://www.a.com/x", 1, ""), "reject:0");
}

TEST(CrawldRules, ScopeSameDomain) {
  auto rs = MustParse("accept scope same-domain\ndefault reject\n");
  EXPECT_EQ(D(*rs, "http://cdn.a.co.uk/x", 1, "www.a.co.uk"), "accept:1");
  EXPECT_EQ(D(*rs, "http://a.co.uk/x", 1, "www.a.co.uk"), "accept:1");
  EXPECT_EQ(D(*rs, "http://b.co.uk/x", 1, "www.a.co.uk"), "reject:0");
  EXPECT_EQ(D(*rs, "http://127.0.0.1/x", 1, "127.0.0.1"), "accept:1");
  EXPECT_EQ(D(*rs, "http://127.0.0.2/x", 1, "127.0.0.1"), "reject:0");
}

TEST(CrawldRules, ScopeAnyMatchesEverything) {
  auto rs = MustParse("accept scope any\ndefault reject\n");
  EXPECT_EQ(D(*rs, "http://x.org/", 3, "y.net"), "accept:1");
}

TEST(CrawldRules, AcceptAllAcceptsEverythingValid) {
  auto rs = RuleSet::AcceptAll();
  EXPECT_EQ(D(*rs, "ftp://x.org/", 99), "accept:0");
  EXPECT_EQ(rs->size(), 0u);
}

TEST(CrawldRules, HitCountsPerRule) {
  auto rs = MustParse("reject host a.com\naccept host b.com\n");
  (void)rs->Decide({"http://a.com/", 0, ""});
  (void)rs->Decide({"http://a.com/1", 0, ""});
  (void)rs->Decide({"http://b.com/", 0, ""});
  (void)rs->Decide({"http://c.com/", 0, ""});
  (void)rs->Decide({"::bad::", 0, ""});
  const auto s = rs->Stats();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].line, 1);
  EXPECT_EQ(s[0].rule, "reject host a.com");
  EXPECT_EQ(s[0].hits, 2u);
  EXPECT_EQ(s[1].line, 2);
  EXPECT_EQ(s[1].hits, 1u);
  EXPECT_EQ(s[2].rule, "default");
  EXPECT_EQ(s[2].hits, 1u);
  EXPECT_EQ(s[3].rule, "invalid url");
  EXPECT_EQ(s[3].hits, 1u);
}

// Decide() is const and may run on many threads at once; the hit counters
// must not lose increments.
TEST(CrawldRules, ConcurrentDecideCountsEveryHit) {
  auto rs = MustParse("reject host a.com\n");
  constexpr int kPerThread = 2000;
  auto work = [&] {
    for (int i = 0; i < kPerThread; ++i) {
      (void)rs->Decide({(i % 2) ? "http://a.com/" : "http://b.com/", 0, ""});
    }
  };
  std::thread t1(work);
  std::thread t2(work);
  t1.join();
  t2.join();
  const auto s = rs->Stats();
  EXPECT_EQ(s[0].hits, uint64_t{kPerThread});  // half of 2 x kPerThread
  EXPECT_EQ(s[1].hits, uint64_t{kPerThread});  // default
}

TEST(CrawldRules, InvalidLinesRejectWholeFileNamingLine) {
  struct Case {
    const char* line;
    const char* what;
  };
  const Case cases[] = {
      {"allow host a.com", "unknown action 'allow'"},
      {"accept", "missing rule kind"},
      {"accept hostname a.com", "unknown rule kind 'hostname'"},
      {"accept host", "host: expected exactly one argument"},
      {"accept host a.com b.com", "host: expected exactly one argument"},
      {"accept host a.com/x", "is not a host name"},
      {"accept host bücher.de", "punycode"},
      {"accept suffix example.org", "must start with '.'"},
      {"accept domain www.example.co.uk",
       "not a registrable domain (its registrable domain is "
       "'example.co.uk')"},
      {"accept domain co.uk", "not a registrable domain"},
      {"reject scheme 1ttp", "is not a scheme"},
      {"reject depth 5", "expected an operator and a number"},
      {"reject depth >5", "expected an operator and a number"},
      {"reject depth => 5", "unknown operator '=>'"},
      {"reject length > -1", "bad number '-1'"},
      {"reject length > 12x", "bad number '12x'"},
      {"reject segments > 99999999999", "bad number"},
      {"reject repeated > ", "expected an operator and a number"},
      {"accept scope same-site", "unknown preset 'same-site'"},
      {"default maybe", "expected 'default accept' or 'default reject'"},
      {"reject regex a(b", "regex: missing )"},
      {"reject regex (a)\\1", "regex: invalid escape"},
  };
  for (const Case& c : cases) {
    const std::string text =
        std::string("# ok\naccept host ok.com\n") + c.line + "\n";
    const std::string err = ErrorOf(text);
    EXPECT_EQ(err.rfind("r.rules:3: ", 0), 0u) << c.line << " -> " << err;
    EXPECT_NE(err.find(c.what), std::string::npos) << c.line << " -> " << err;
  }
}

// Blank and comment lines count; a NUL byte (a binary file given by
// mistake) stops the parse at its line; CRLF line ends parse as LF.
TEST(CrawldRules, LinesAreNumberedAndANulByteIsAnError) {
  EXPECT_EQ(
      ErrorOf(std::string_view("\n# c\naccept host a.com\nreject\0x\n", 32)),
      "r.rules:4: NUL byte in line");
  EXPECT_EQ(ErrorOf("accept host a.com\r\n\r\nbogus\r\n"),
            "r.rules:3: unknown action 'bogus' (expected accept, reject, "
            "recrawl or default)");
}

TEST(CrawldRules, RuleAfterDefaultOrSecondDefaultIsAnError) {
  EXPECT_EQ(ErrorOf("default reject\naccept host a.com\n"),
            "r.rules:2: rule after 'default' (line 1); 'default' must be "
            "the last rule");
  EXPECT_EQ(ErrorOf("default reject\n\n# c\ndefault accept\n")
                .rfind("r.rules:4: ", 0),
            0u);
}

TEST(CrawldRules, LoadReadsFileAndNamesItInErrors) {
  char dir_template[] = "/tmp/crawld_rules_testXXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string good = std::string(dir_template) + "/good.rules";
  const std::string bad = std::string(dir_template) + "/bad.rules";
  std::ofstream(good) << "reject host a.com\ndefault accept\n";
  std::ofstream(bad) << "reject host a.com\nreject regex (\n";
  auto g = RuleSet::Load(good);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(D(**g, "http://a.com/"), "reject:1");
  auto b = RuleSet::Load(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message().rfind(bad + ":2: regex: ", 0), 0u)
      << b.status().message();
  auto missing = RuleSet::Load(std::string(dir_template) + "/none.rules");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kIOError);
  std::remove(good.c_str());
  std::remove(bad.c_str());
  rmdir(dir_template);
}

// RE2 guarantees time linear in the input: a pattern that backtracks
// exponentially in PCRE must finish on a 100 KB URL. No timing assertion.
TEST(CrawldRules, PathologicalRegexRunsInLinearTime) {
  auto rs = MustParse(
      "reject regex ^https?://a\\.com/(a+)+$\n"
      "reject regex (x*)*y\n");
  std::string url = "http://a.com/" + std::string(100 * 1024, 'a') + "!";
  EXPECT_EQ(D(*rs, url), "accept:0");
  url = "http://a.com/" + std::string(100 * 1024, 'x');
  EXPECT_EQ(D(*rs, url), "accept:0");
  url = "http://a.com/" + std::string(100 * 1024, 'a');
  EXPECT_EQ(D(*rs, url), "reject:1");
}

// --- recrawl lines (docs/RULES.md, "Recrawl intervals") ---

// "min..max@line" of the deciding recrawl line, "none" without one.
std::string R(const RuleSet& rs, std::string_view url, int depth = 0) {
  const std::optional<RecrawlVerdict> v = rs.Recrawl({url, depth, ""});
  if (!v.has_value()) return "none";
  return std::to_string(static_cast<int64_t>(v->min_s)) + ".." +
         std::to_string(static_cast<int64_t>(v->max_s)) + "@" +
         std::to_string(v->line);
}

TEST(CrawldRules, DurationsTakeOneUnit) {
  EXPECT_EQ(ParseDuration("1s"), 1.0);
  EXPECT_EQ(ParseDuration("90m"), 5400.0);
  EXPECT_EQ(ParseDuration("1h"), 3600.0);
  EXPECT_EQ(ParseDuration("7d"), 604800.0);
  EXPECT_EQ(ParseDuration("2w"), 1209600.0);
  EXPECT_EQ(ParseDuration("3650d"), 3650.0 * 86400);
  for (const char* bad : {"", "h", "1", "0s", "1H", "1.5h", "-1h", "1hh", "1 h",
                          "3651d", "99999999999s", "1y"}) {
    EXPECT_FALSE(ParseDuration(bad).has_value()) << bad;
  }
}

TEST(CrawldRules, FirstMatchingRecrawlLineDecides) {
  auto rs = MustParse(
      "reject host spam.com\n"
      "recrawl 1h prefix http://example.com/news/\n"
      "recrawl 6h..2d regex /blog/\n"
      "recrawl 30m prefix http://example.com/news/live/\n"  // never reached
      "recrawl 7d any\n");
  EXPECT_EQ(R(*rs, "http://example.com/news/a"), "3600..3600@2");
  EXPECT_EQ(R(*rs, "http://example.com/news/live/x"), "3600..3600@2");
  EXPECT_EQ(R(*rs, "http://example.com/blog/x"), "21600..172800@3");
  EXPECT_EQ(R(*rs, "http://other.org/"), "604800..604800@5");
  // Every kind an accept rule takes works here, depth included.
  auto deep = MustParse("recrawl 1d depth > 2\n");
  EXPECT_EQ(R(*deep, "http://a.com/", 3), "86400..86400@1");
  EXPECT_EQ(R(*deep, "http://a.com/", 2), "none");
  EXPECT_EQ(R(*deep, "not a url"), "none");
  const std::optional<RecrawlVerdict> v =
      rs->Recrawl({"http://example.com/blog/x", 0, ""});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rule, "recrawl 6h..2d regex /blog/");
}

TEST(CrawldRules, RecrawlLinesNeverAcceptOrReject) {
  const char* filter =
      "reject prefix http://example.com/private/\n"
      "accept host example.com\n"
      "default reject\n";
  auto without = MustParse(filter);
  auto with =
      MustParse(std::string("recrawl 1h any\n") +
                "recrawl 1d prefix http://example.com/private/\n" + filter);
  EXPECT_EQ(with->size(), 2u);
  EXPECT_EQ(with->recrawl_size(), 2u);
  for (const char* url :
       {"http://example.com/private/x", "http://example.com/a",
        "http://other.com/", "nonsense"}) {
    const RuleVerdict a = without->Decide({url, 0, ""});
    const RuleVerdict b = with->Decide({url, 0, ""});
    EXPECT_EQ(a.accept, b.accept) << url;
    EXPECT_EQ(a.rule, b.rule) << url;
  }
  // Hit statistics list the filter rules only.
  EXPECT_EQ(with->Stats().size(), 2u + 2u);
}

TEST(CrawldRules, InvalidRecrawlLinesNameFileAndLine) {
  struct Case {
    const char* line;
    const char* what;
  };
  const Case cases[] = {
      {"recrawl", "recrawl: missing interval"},
      {"recrawl 1h", "missing rule kind after 'recrawl 1h'"},
      {"recrawl hourly any", "recrawl: bad interval 'hourly'"},
      {"recrawl 1 any", "recrawl: bad interval '1'"},
      {"recrawl 0h any", "recrawl: bad interval '0h'"},
      {"recrawl 1y any", "bad interval '1y'"},
      {"recrawl 1h.. any", "bad interval '1h..'"},
      {"recrawl ..1h any", "bad interval '..1h'"},
      {"recrawl 1h..2h..3h any", "bad interval"},
      {"recrawl 1d..1h any", "'1d..1h' has its minimum above its maximum"},
      {"recrawl 1h any thing", "any: takes no argument"},
      {"recrawl 1h hostname a.com", "unknown rule kind 'hostname'"},
      {"recrawl 1h host", "host: expected exactly one argument"},
      {"recrawl 1h regex a(b", "regex: missing )"},
      {"recrawl 1h depth 5", "expected an operator and a number"},
      {"accept any", "unknown rule kind 'any'"},
  };
  for (const Case& c : cases) {
    const std::string text =
        std::string("# ok\nrecrawl 1h any\n") + c.line + "\n";
    const std::string err = ErrorOf(text);
    EXPECT_EQ(err.rfind("r.rules:3: ", 0), 0u) << c.line << " -> " << err;
    EXPECT_NE(err.find(c.what), std::string::npos) << c.line << " -> " << err;
  }
  // "default" stays the last line of the file, recrawl lines included.
  EXPECT_EQ(ErrorOf("default reject\nrecrawl 1h any\n"),
            "r.rules:2: rule after 'default' (line 1); 'default' must be "
            "the last rule");
}

}  // namespace
}  // namespace crawld::conf
