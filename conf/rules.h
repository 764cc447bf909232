// conf/rules.h: URL filter rules, an ordered list of accept/reject rules
// read from a small line-oriented file (grammar and examples:
// docs/RULES.md).
//
//   # first matching rule decides; no match -> the default
//   reject  regex    ^https?://[^/]+/(cgi-bin|calendar)/
//   accept  domain   example.net
//   reject  depth    > 5
//   recrawl 1h       prefix http://example.com/news/
//   recrawl 1d..30d  any
//   default reject
//
// "recrawl" lines do not accept or reject anything: they are a second
// ordered list, asked by Recrawl() for a URL's revisit interval in a
// continuous crawl (docs/RULES.md, "Recrawl intervals"); the first matching
// recrawl line decides, and Decide() never looks at them.
//
// Rules are matched against the URL as url::Parse() serializes it (WHATWG:
// lowercase scheme and host, punycode hosts, default port dropped), so
// "HTTP://Example.COM" matches "host example.com". Regexes are RE2 (linear
// time in the URL length; no backreferences or lookaround). Registered
// ("registrable") domains come from libpsl's built-in Public Suffix List.
//
// Deliberate strictness (as conf.h): one invalid line rejects the WHOLE file
// with "<source>:<line>: <what>", so that a caller reloading rules keeps its
// previous RuleSet in force rather than running with half a rule file.
#ifndef CRAWLD_CONF_RULES_H_
#define CRAWLD_CONF_RULES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::conf {

// What Decide() looks at. The views must stay valid during the call only.
struct UrlFacts {
  std::string_view url;        // absolute URL, parsed with url::Parse()
  int depth = 0;               // links followed from the seed; seed = 0;
                               // negative counts as 0
  std::string_view seed_host;  // host of the seed this URL descends from
                               // (for "scope"); empty = unknown
};

struct RuleVerdict {
  bool accept = false;
  // 1-based line of the deciding rule in the rule file; 0 when no rule
  // matched ("default") or the URL did not parse ("invalid url").
  int line = 0;
  // The deciding rule as written (whitespace collapsed, comment dropped),
  // "default", or "invalid url".
  std::string rule;
};

// What the first matching "recrawl" line says about a URL's interval
// (simulated seconds, as recrawl::Options): a fixed interval has
// min_s == max_s; a range "1h..1d" bounds the adaptive interval.
struct RecrawlVerdict {
  double min_s = 0;
  double max_s = 0;
  int line = 0;      // 1-based line in the rule file
  std::string rule;  // the line as written (whitespace collapsed)
};

// "30m", "1h", "7d", "2w" (an integer and one unit of s, m, h, d, w) in
// seconds; nullopt when it is not one or lies outside [1 s, 3650 d].
std::optional<double> ParseDuration(std::string_view text);

struct Rule;  // conf/rules.cc

// An immutable, loaded rule file. Decide() and Stats() are safe to call
// from any number of threads at once: hit counters are relaxed atomics
// (one per rule, plus the default and invalid-url outcomes), so Stats()
// read during Decide() calls may be a few hits behind.
class RuleSet {
 public:
  ~RuleSet();
  RuleSet(const RuleSet&) = delete;
  RuleSet& operator=(const RuleSet&) = delete;

  // Parses a rule file's text. `source_name` (usually the path) prefixes
  // error messages. Fails with InvalidArgument "<source>:<line>: <what>"
  // for the first invalid line (unknown action or kind, wrong number of
  // arguments, bad number or operator, RE2 compile error, a "domain" that
  // is not a registrable domain, a second or non-final "default", a
  // "recrawl" line with a bad interval); nothing is returned then.
  [[nodiscard]] static Result<std::unique_ptr<RuleSet>> Parse(
      std::string_view text, std::string_view source_name);

  // Reads `path` (at most 4 MiB) and Parse()s it with `path` as the source
  // name. Fails with IOError when the file cannot be read, else as Parse().
  [[nodiscard]] static Result<std::unique_ptr<RuleSet>> Load(
      const std::string& path);

  // No rules, default accept.
  static std::unique_ptr<RuleSet> AcceptAll();

  // The first rule (in file order) that matches decides; otherwise the
  // "default" line (accept when the file has none). A URL that url::Parse()
  // rejects is rejected with line 0 and rule "invalid url".
  RuleVerdict Decide(const UrlFacts& facts) const;

  struct RuleStats {
    int line;  // 0 for "default" and "invalid url"
    std::string rule;
    uint64_t hits;  // Decide() calls this outcome decided
  };
  // One entry per rule in file order, then "default", then "invalid url".
  std::vector<RuleStats> Stats() const;

  // The first "recrawl" line (in file order) that matches the URL; nullopt
  // when none does (or the URL does not parse): the crawl's own
  // [recrawl] bounds apply.
  std::optional<RecrawlVerdict> Recrawl(const UrlFacts& facts) const;

  // Number of accept/reject rules (without the default and the recrawl
  // lines).
  size_t size() const { return rules_.size(); }
  // Number of "recrawl" lines.
  size_t recrawl_size() const { return recrawl_rules_.size(); }

 private:
  RuleSet();

  std::vector<std::unique_ptr<Rule>> rules_;
  std::vector<std::unique_ptr<Rule>> recrawl_rules_;
  bool default_accept_ = true;
  int default_line_ = 0;  // line of the "default" rule, 0 when absent
  // rules_.size() + 2 counters: rules, default, invalid url.
  std::unique_ptr<std::atomic<uint64_t>[]> hits_;
};

}  // namespace crawld::conf

#endif  // CRAWLD_CONF_RULES_H_
