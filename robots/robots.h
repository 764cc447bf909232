// robots/robots.h: the robots.txt parser and matcher (Robots Exclusion
// Protocol, RFC 9309, https://www.rfc-editor.org/rfc/rfc9309.html).
//
// A robots.txt body is parsed once for one product token into a Rules value
// that answers "may this path be fetched?" many times, cheaply. The component
// is pure: no network, no files, no clock. The fetcher downloads robots.txt
// and picks Parse / AllowAll / DisallowAll from the access result (RFC 9309
// 2.3.1); the frontier asks Allowed() before each fetch.
//
// What is implemented (RFC 9309 section in brackets):
//  - groups and group selection by product token, case-insensitively; groups
//    that name the same agent are merged; the "*" group applies only when no
//    group names us; no group at all means no rules [2.1, 2.2.1];
//  - Allow/Disallow with longest match, Allow winning a tie, "*" and a final
//    "$"; percent-encoding normalised before matching [2.2.2, 2.2.3];
//  - rules outside any group ignored [2.2.2]; Sitemap lines collected and
//    never ending a group [2.2.4]; unparseable lines skipped, the parseable
//    ones used [2.3.1.5]; a parsing limit of at least 500 KiB [2.5].
//
// How paths are compared. Pattern and path are both brought into one form
// before an octet-by-octet comparison: "%xx" of an unreserved character
// (ALPHA DIGIT - . _ ~) is decoded, any other "%xx" gets upper-case hex, a
// "%" not followed by two hex digits becomes "%25", and every octet that is
// neither unreserved nor reserved (non-ASCII, controls, space, "<>\"{}|\\^`")
// is percent-encoded. Reserved characters are compared as they appear:
// "/a%2Fb" does not match "/a/b". The two special characters are kept apart
// from their literal selves: in a path, "*" and "$" are encoded as %2A and
// %24, so that the RFC's escaped patterns "/file-%2A.html" and "/foo-%24"
// match the URLs "/file-*.html" and "/foo-$" [2.2.3]. The length of a match
// ("most octets", [2.2.2]) is the length of the normalised pattern, "*" and
// "$" included, as in Google's robotstxt.
//
// Deliberate deviations and choices (tests carry the CrawldRobots prefix):
//  - Like Google's robotstxt (github.com/google/robotstxt, robots.cc) we
//    accept the key spellings "useragent" and "user agent" for user-agent;
//    "dissallow", "dissalow", "disalow", "diasllow" and "disallaw" for
//    disallow; "site-map" for sitemap. Keys are otherwise matched exactly
//    (Google matches them as prefixes; we do not).
//  - Like Google, a known key followed by whitespace instead of a colon is
//    accepted when the line holds exactly two words ("Disallow /x").
//  - Like Google, the user-agent value is matched up to its first character
//    that is not [a-zA-Z_-] ("Googlebot/2.1" names "Googlebot"), and "*"
//    followed by whitespace and more text still names every agent. The
//    product token we are given is reduced the same way.
//  - Crawl-delay (not in RFC 9309) is read as decimal seconds for the group
//    it appears in; several values in our group: the largest wins. It ends a
//    run of user-agent lines as a rule does, because sites write
//    "User-agent: *, Crawl-delay: 10, User-agent: x, Disallow: /p" meaning
//    two groups (Google ignores Crawl-delay and merges them). Like any other
//    record it never terminates a group [2.2.4].
//  - A pattern that starts with neither "/" nor "*" gets a "/" prepended
//    ("Disallow: private/" means "/private/"; Google never matches it). A
//    diagnostic is emitted.
//  - "$" is the end anchor only as the last character of a pattern; anywhere
//    else it is a literal "$" (Google does the same).
//  - Lines longer than Options::max_line_bytes are cut to that length, as in
//    Google's robotstxt. When the body is longer than Options::max_bytes, the
//    line cut by the limit is dropped rather than parsed half: half of
//    "Allow: /abc" is "Allow: /", which would allow everything.
//  - In a path, "#" starts the fragment: it and what follows are ignored.
//  - "/robots.txt" (whatever the query) is always allowed, even by
//    DisallowAll(), so that the file itself can always be fetched again.
//  - Duplicate rules of the chosen group are deduplicated [2.2.2 allows it];
//    the earliest line is the one reported.
#ifndef CRAWLD_ROBOTS_ROBOTS_H_
#define CRAWLD_ROBOTS_ROBOTS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crawld::robots {

struct Options {
  // --- behaviour ---

  // Bytes of the body that are parsed; the rest is ignored (RFC 9309 2.5).
  // Clamped to [500 KiB, 64 MiB]: the RFC requires at least 500 KiB.
  size_t max_bytes = 500 * 1024;

  // Bytes of one line that are read; the rest of the line is ignored, as in
  // Google's robotstxt (8 x the 2083-byte URL limit of old browsers).
  // Clamped to [256, max_bytes].
  size_t max_line_bytes = 2083 * 8;

  // Accept the key misspellings and the missing colon listed in the file
  // comment. Off: only the RFC spellings with a colon are read.
  bool accept_typos = true;

  // --- resource bounds ---

  // Diagnostics kept (count); later ones are only counted, see
  // Rules::diagnostic_count(). Clamped to [0, 10000].
  size_t max_diagnostics = 100;
};

// Which group of the robots.txt applies to our product token.
enum class Group {
  kNone,      // no group names us and there is no "*" group: no rules apply
  kGlobal,    // the "*" group(s)
  kSpecific,  // the group(s) naming our product token
};

// The deciding rule of a match, for logs and `crawlctl robots check`.
struct Verdict {
  bool allowed = true;
  // 1-based line in robots.txt of the deciding rule; 0 if none matched, and
  // also 0 for rules that have no line (AddDisallow, DisallowAll).
  int line = 0;
  // The rule as written, with the key spelled canonically, e.g.
  // "Disallow: /private/"; empty if none matched (the default verdict, and
  // the implicit allowance of /robots.txt).
  std::string rule;
  // True when the deciding rule came from AddDisallow().
  bool from_override = false;
  // Where that override was written, as given to AddDisallow(pattern,
  // origin), e.g. "overrides.conf:3"; empty otherwise.
  std::string origin;
};

// The rules of one robots.txt for one product token, parsed once and matched
// many times.
//
// Immutable after Parse (AddDisallow aside, which is meant for setting up);
// thread-compatible: const methods may run concurrently from any thread, and
// no method touches any loop. Cheap to move; copyable.
class Rules {
 public:
  // Parses `body` (the robots.txt bytes, any encoding; UTF-8 expected) and
  // keeps the rules of the group(s) that apply to `product_token` (RFC 9309
  // 2.2.1), e.g. "crawld". Never fails: what cannot be read is skipped and
  // reported in diagnostics(). Copies what it keeps; `body` and
  // `product_token` need not outlive the call. `options` is sanitized (see
  // Options) first.
  static Rules Parse(std::string_view body, std::string_view product_token,
                     const Options& options = {});

  // No rules: everything is allowed (e.g. robots.txt answered 4xx, RFC 9309
  // 2.3.1.3).
  static Rules AllowAll();

  // Everything but /robots.txt is disallowed (e.g. robots.txt unreachable or
  // 5xx, RFC 9309 2.3.1.4). The deciding rule reads "Disallow: /", line 0.
  static Rules DisallowAll();

  Rules();  // the same as AllowAll()
  ~Rules();
  Rules(const Rules&);
  Rules& operator=(const Rules&);
  Rules(Rules&&) noexcept;
  Rules& operator=(Rules&&) noexcept;

  // Whether `path_and_query` may be fetched. `path_and_query` is the URL's
  // path plus "?query" as it appears in the URL, percent-encoded or not
  // ("/a/b?c=d"); an empty string means "/". A "#fragment" is ignored.
  // Cost: linear in the path length times the number of rules, no
  // backtracking; no allocation when the path needs no normalisation.
  [[nodiscard]] bool Allowed(std::string_view path_and_query) const;

  // As Allowed(), and also says which rule decided. Allocates the rule text.
  [[nodiscard]] Verdict Check(std::string_view path_and_query) const;

  // The Crawl-delay of the group that applies to us, in seconds (>= 0), if
  // it has a valid one.
  [[nodiscard]] std::optional<double> crawl_delay_seconds() const {
    return crawl_delay_;
  }

  // All Sitemap: values, in file order, as written (global: whatever group
  // they appear in). The reference stays valid while this Rules lives and is
  // not assigned to.
  [[nodiscard]] const std::vector<std::string>& sitemaps() const {
    return sitemaps_;
  }

  // Skipped or odd lines as "line N: reason", in file order, at most
  // Options::max_diagnostics of them. Same validity as sitemaps().
  [[nodiscard]] const std::vector<std::string>& diagnostics() const {
    return diagnostics_;
  }

  // All diagnostics found, including those not kept (for counters).
  [[nodiscard]] size_t diagnostic_count() const { return diagnostic_count_; }

  // Which group applies to the product token given to Parse().
  [[nodiscard]] Group group() const { return group_; }

  // Allow and Disallow rules in force (after deduplication; empty patterns
  // are not rules), overrides included.
  [[nodiscard]] size_t rule_count() const;

  // Adds an admin override: a Disallow `pattern` (robots.txt syntax, e.g.
  // "/private/" or "/*.pdf$") merged as if written in our group, so the
  // longest-match rule still applies and an equally long Allow still wins.
  // An empty pattern adds nothing. Its Verdict has line 0, from_override.
  // REQUIRES: no other thread uses this Rules during the call.
  void AddDisallow(std::string_view pattern);
  // As above, and remembers `origin` (e.g. "overrides.conf:3", the override
  // file line) for Verdict::origin and Describe().
  void AddDisallow(std::string_view pattern, std::string_view origin);

  // The user-agent lines that selected the group in force, as
  // "line N: User-agent: value" in file order (several when groups naming
  // us are merged); empty for Group::kNone. Same validity as sitemaps().
  [[nodiscard]] const std::vector<std::string>& group_agents() const {
    return group_agents_;
  }

  // The effective rules for our product token as text, for operators
  // (`crawlctl robots show`): the group selected and its user-agent lines,
  // then every Allow/Disallow in match-precedence order (the first one that
  // matches decides), overrides marked with their origin, then the
  // Crawl-delay and the sitemaps. Lines end in '\n'; bytes from the file
  // that are control characters are shown as '?'. Example:
  //   group: specific (names "crawld")
  //     line 3: User-agent: crawld
  //   rules: 2, first match wins
  //     line 5: Allow: /private/public/
  //     override ov.conf:2: Disallow: /tmp/
  //   crawl-delay: 2.5 s
  //   sitemaps: none
  [[nodiscard]] std::string Describe() const;

 private:
  struct Rule;  // a compiled Allow/Disallow pattern, defined in robots.cc
  class Parser;

  void AddRule(Rule rule);
  // The first rule that matches, or nullptr (no match, or /robots.txt).
  [[nodiscard]] const Rule* Decide(std::string_view path_and_query) const;

  // Sorted by match length (descending), Allow before Disallow, then line:
  // the first rule that matches decides.
  std::vector<Rule> rules_;
  std::optional<double> crawl_delay_;
  std::vector<std::string> sitemaps_;
  std::vector<std::string> diagnostics_;
  size_t diagnostic_count_ = 0;
  Group group_ = Group::kNone;
  std::string product_token_;  // as reduced by Parse(); empty otherwise
  std::vector<std::string> group_agents_;
};

}  // namespace crawld::robots

#endif  // CRAWLD_ROBOTS_ROBOTS_H_
