// conf/overrides.h: per-host admin overrides of robots.txt and politeness,
// read from a small line-oriented file (grammar and examples:
// docs/OVERRIDES.md).
//
//   # selector          directive      [argument]
//   intranet.example    ignore-robots
//   *.example.org       disallow       /private/*
//   slow.example.net    delay-ms       5000
//   big.example.com     concurrency    4
//
// Selectors: an exact host ("example.com", an IPv4 address, "[::1]"), a
// domain with its subdomains (".example.org" or its synonym
// "*.example.org"), or "*" for every host. Selectors are brought into
// url::Parse()'s host form (lowercase, punycode), so "Bücher.Example" is
// "xn--bcher-kva.example", and the hosts given to For() must be in that
// form too (url::Url::host()).
//
// Precedence: per directive, the most specific selector that sets it
// decides: exact host, then the longest domain selector, then "*".
// "disallow" lines do not compete: every matching one applies.
//
// Deliberate strictness (as conf/rules.h): one invalid line rejects the
// WHOLE file with "<source>:<line>: <what>", so that a caller reloading
// overrides keeps its previous set in force rather than running with half
// of an override file.
#ifndef CRAWLD_CONF_OVERRIDES_H_
#define CRAWLD_CONF_OVERRIDES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::conf {

// One extra robots.txt Disallow pattern and the file line it comes from.
struct OverrideDisallow {
  std::string pattern;  // robots.txt syntax ("*", final "$"), starts '/' or '*'
  int line = 0;
};

// What the override file says about one host. A default-constructed value
// means "no override": obey robots.txt and the config.
struct HostOverride {
  // Skip robots.txt for this host (treat it as allow-all). Extra disallows
  // below still apply.
  bool ignore_robots = false;
  // Extra Disallow patterns to add on top of the host's robots.txt rules
  // (robots::Rules::AddDisallow), in file order.
  std::vector<OverrideDisallow> disallow;
  // Minimum delay between two requests to the host, in ms; replaces the
  // config's min_delay and the robots.txt Crawl-delay.
  std::optional<int64_t> delay_ms;
  // Requests in flight to the host at once (>= 1).
  std::optional<int> concurrency;
  // The deciding lines (ascending, no duplicates), for logs; empty when no
  // line applies.
  std::vector<int> lines;

  bool empty() const { return lines.empty(); }
};

struct OverrideEntry;  // conf/overrides.cc

// An immutable, loaded override file. For() and Stats() are safe to call
// from any number of threads at once: hit counters are relaxed atomics, so
// Stats() read during For() calls may be a few hits behind.
class Overrides {
 public:
  // Bounds of the numeric arguments.
  static constexpr int64_t kMaxDelayMs = 3600 * 1000;  // one hour
  static constexpr int kMaxConcurrency = 1000;

  ~Overrides();
  Overrides(const Overrides&) = delete;
  Overrides& operator=(const Overrides&) = delete;

  // Parses an override file's text. `source_name` (usually the path)
  // prefixes error messages and Describe(). Fails with InvalidArgument
  // "<source>:<line>: <what>" for the first invalid line: a selector that is
  // not a host, an unknown directive, a missing or extra argument, a number
  // out of range, a disallow pattern that does not start with '/' or '*',
  // the same directive twice for one selector (disallow aside), or a NUL
  // byte. Nothing is returned then.
  [[nodiscard]] static Result<std::unique_ptr<Overrides>> Parse(
      std::string_view text, std::string_view source_name);

  // Reads `path` (at most 4 MiB) and Parse()s it with `path` as the source
  // name. Fails with IOError when the file cannot be read, else as Parse().
  [[nodiscard]] static Result<std::unique_ptr<Overrides>> Load(
      const std::string& path);

  // No overrides: For() is empty for every host.
  static std::unique_ptr<Overrides> None();

  // The override for `host` (as url::Url::host() serializes it). Cost:
  // a few hash lookups per label of `host`; meant to be called once per host
  // and cached by the caller. Each call counts one hit for each line in the
  // result's `lines`.
  HostOverride For(std::string_view host) const;

  struct LineStats {
    int line;
    std::string text;  // as written, whitespace collapsed, comment dropped
    uint64_t hits;     // For() results this line was part of
  };
  // One entry per directive line, in file order.
  std::vector<LineStats> Stats() const;

  // "<source>:<line> <directive>" for each deciding line of `o`, joined by
  // "; ", e.g. "ov.conf:2 *.example.org disallow /private/*; ov.conf:4
  // big.example.com concurrency 4". Empty for an empty override.
  std::string Describe(const HostOverride& o) const;

  // "<source>:<line>", e.g. for robots::Rules::AddDisallow's origin.
  std::string Where(int line) const;

  const std::string& source() const { return source_; }
  // Number of directive lines.
  size_t size() const { return entries_.size(); }

 private:
  struct Index;  // selector -> entries, conf/overrides.cc

  Overrides();

  std::string source_;
  std::vector<std::unique_ptr<OverrideEntry>> entries_;  // file order
  std::unique_ptr<Index> index_;
  std::unique_ptr<std::atomic<uint64_t>[]> hits_;  // one per entry
};

}  // namespace crawld::conf

#endif  // CRAWLD_CONF_OVERRIDES_H_
