// robots/robots.h: the robots.txt parser and matcher (Robots Exclusion
// Protocol, RFC 9309, https://www.rfc-editor.org/rfc/rfc9309.html).
//
// A robots.txt body is parsed once for one product token into a Rules value
// that answers "may this path be fetched?" many times, cheaply. The component
// is pure: no network, no files, no clock. The fetcher downloads robots.txt
// and picks Parse / AllowAll / DisallowAll from the access result (RFC 9309
// 2.3.1); the frontier asks Allowed() before each fetch.
//
// The verdicts are those of Google's robots.txt parser, the reference
// implementation of RFC 9309 (github.com/google/robotstxt at 22b355f,
// robots.cc), on every input: a corpus of Google's verdicts is replayed by
// tests/unit/robots/google_corpus_test.cc, see docs/ROBOTS.md. What RFC 9309
// asks (section in brackets):
//  - groups and group selection by product token, case-insensitively; groups
//    that name the same agent are merged; the "*" group applies only when no
//    group names us; no group at all means no rules [2.1, 2.2.1];
//  - Allow/Disallow with longest match (the most octets of the pattern,
//    "*" and "$" counted), Allow winning a tie, "*" and a final "$"
//    [2.2.2, 2.2.3]; rules outside any group ignored [2.2.2]; other records
//    (Sitemap, Crawl-delay, unknown keys) never end a group [2.2.4];
//    unparseable lines skipped, the parseable ones used [2.3.1.5]; a parsing
//    limit of at least 500 KiB [2.5].
//
// Where Google's parser deviates from the RFC text, or the RFC leaves a
// choice, we do as Google does (tests named GoogleOnly_*):
//  - Keys are matched case-insensitively as prefixes: "User-agents",
//    "Disallowed", "Allow-this" are user-agent, disallow and allow. Also read:
//    "useragent" and "user agent" (as prefixes) for user-agent; "dissallow",
//    "dissalow", "disalow", "diasllow" and "disallaw" (as prefixes) for
//    disallow (Google's kAllowFrequentTypos). A key is tried as user-agent,
//    then allow, then disallow.
//  - A line without a colon holding exactly two words is read as key and
//    value ("Disallow /x"); with three or more words it is skipped.
//  - Only Allow and Disallow lines end a group: a User-agent line after any
//    of them starts a new one. Lines of other records between User-agent
//    lines and rules (Crawl-delay, Sitemap, unknown keys) change nothing.
//  - The user-agent value is matched up to its first character that is not
//    [a-zA-Z_-] ("Googlebot/2.1" and "Googlebot Images" name "Googlebot");
//    "*" followed by whitespace and more text is still "*". The product
//    token we are given is compared as given, case-insensitively: a token
//    that is not all [a-zA-Z_-] ("crawld/1.0") is named by no group.
//  - Patterns are not normalised the RFC's way. Each %xx of the pattern gets
//    upper-case hex digits ("%aa" -> "%AA") and each octet >= 0x80 is
//    percent-encoded ("/ツ" -> "/%E3%83%84"); nothing else. The path is
//    compared octet by octet as given: "%aa" in the URL does not match "%aa"
//    in the pattern (now "%AA"), "/ツ" raw in the URL does not match "/ツ",
//    "/%62" does not match "/b". A "*" inside "%*1" is still a wildcard.
//  - "*" is a wildcard wherever it is; "$" anchors only as the last
//    character and is a literal "$" anywhere else.
//  - A pattern that does not start with "/" or "*" ("private/", "$",
//    "http://example.com/x", "?q") never matches, as paths start with "/".
//    An empty pattern matches nothing and still ends the group's User-agent
//    lines. A diagnostic is emitted for the former.
//  - "Allow: /dir/index.html" (any "/index.htm..." after the last "/") also
//    allows "/dir/" exactly, as an Allow of "/dir/$".
//  - /robots.txt has no special case: "Disallow: /" disallows it too (the
//    crawler fetches robots.txt without asking the rules anyway).
//  - A UTF-8 byte order mark, or any leading part of one, is skipped at the
//    start of the body. Lines end at CR, LF or CRLF. A line is read up to
//    its first NUL byte and to at most Options::max_line_bytes (16,663 as in
//    Google); the rest of the line is ignored. "#" starts a comment anywhere.
//  - PathFromUrl() takes the path, params and query out of a URL exactly as
//    Google's GetPathParamsQuery does (fragment dropped, "/" when empty,
//    a leading "//" read as an authority).
// Options::rfc_matching and Options::accept_typos = false give the RFC's
// reading instead, where it differs (see there).
//
// Our own choices, where Google's library has nothing to say:
//  - Crawl-delay (not in RFC 9309) is read as decimal seconds for the agents
//    named so far in its group; several values for us: the largest wins.
//    Sitemap and Site-map lines (keys matched exactly) are collected from
//    anywhere. Neither changes a verdict.
//  - When the body is longer than Options::max_bytes, the line cut by the
//    limit is dropped rather than parsed half: half of "Allow: /abc" is
//    "Allow: /", which would allow everything. (Google's library parses any
//    length; Googlebot reads 500 KiB.)
//  - Duplicate rules of the chosen group are deduplicated [2.2.2 allows it];
//    the earliest line is the one reported.
//  - AllowAll() and DisallowAll() (no robots.txt to read) always allow
//    /robots.txt, and AddDisallow() (admin overrides) never disallows it
//    there, so that the file itself can be fetched again.
//  - An empty product token is named by no group (Google's would match an
//    empty user-agent value).
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

  // Bytes of one line that are read; the rest of the line is ignored. The
  // default is Google's: a buffer of 8 x the 2083-byte URL limit of old
  // browsers, less its terminating NUL. Clamped to [256, max_bytes].
  size_t max_line_bytes = 2083 * 8 - 1;

  // Read keys as Google does: as prefixes ("Disallowed" is Disallow), with
  // the misspellings listed in the file comment, and a space instead of the
  // colon. Off: only "user-agent", "allow", "disallow", "sitemap" and
  // "crawl-delay" exactly (any case), followed by a colon.
  bool accept_typos = true;

  // Match as the RFC 9309 text reads instead of as Google's parser does:
  //  - percent-encoding is normalised on both sides before comparing
  //    [2.2.2]: "%xx" of an unreserved character (ALPHA DIGIT - . _ ~) is
  //    decoded, any other "%xx" gets upper-case hex, a "%" not followed by
  //    two hex digits becomes "%25", and every octet that is neither
  //    unreserved nor reserved is percent-encoded; in the path "*" and "$"
  //    are their literal selves (%2A, %24) [2.2.3];
  //  - /robots.txt (whatever the query) is implicitly allowed [2.2.2];
  //  - no "index.html" alias.
  // Off (the default): Google's reading, see the file comment.
  bool rfc_matching = false;

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

// The path, params and query of `url` as Google's robots.txt matcher sees
// them (robots.cc, GetPathParamsQuery): scheme and authority removed (a
// leading "//" starts an authority; "://" counts only before the first "/",
// "?" or ";"), the fragment removed, "/" prepended when the result would
// start with "?" or ";", and "/" when there is no path at all. No decoding,
// no validation. E.g. "https://h:1/p;x?q#f" -> "/p;x?q", "h/p" -> "/p",
// "http://h?q" -> "/?q", "" -> "/". For `crawlctl robots check`, which takes
// URLs; the crawler has the parsed URL's path and query already.
std::string PathFromUrl(std::string_view url);

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
  // 2.2.1), e.g. "crawld", compared as given (see the file comment). Never
  // fails: what cannot be read is skipped and
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
  // (AllowAll and DisallowAll always allow /robots.txt, overrides or not;
  // rules from Parse() may disallow it, as Google's do.)
  static Rules DisallowAll();

  Rules();  // the same as AllowAll()
  ~Rules();
  Rules(const Rules&);
  Rules& operator=(const Rules&);
  Rules(Rules&&) noexcept;
  Rules& operator=(Rules&&) noexcept;

  // Whether `path_and_query` may be fetched. `path_and_query` is the URL's
  // path plus "?query" as it appears in the URL ("/a/b?c=d"), compared octet
  // by octet as given (see the file comment; Options::rfc_matching
  // normalises it). A "#fragment", and anything after a NUL byte, is
  // ignored; what does not start with "/" is read with a "/" before it ("" is
  // "/"). To ask about a whole URL, pass PathFromUrl(url).
  // Cost: linear in the path length times the number of rules, no
  // backtracking; no allocation when the path starts with "/".
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
  // An empty pattern adds nothing; one that starts with neither "/" nor "*"
  // gets a "/" ("private/" is "/private/"). Its Verdict has line 0,
  // from_override.
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
  std::string product_token_;  // as given to Parse(); empty otherwise
  std::vector<std::string> group_agents_;
  bool rfc_matching_ = false;      // Options::rfc_matching of Parse()
  bool robots_txt_exempt_ = true;  // /robots.txt is always allowed
};

}  // namespace crawld::robots

#endif  // CRAWLD_ROBOTS_ROBOTS_H_
