// robots/pattern.h: private to robots/. The compiled form of one
// Allow/Disallow pattern, in Google's reading (the default) or RFC 9309's
// (Options::rfc_matching), and the RFC's percent-encoding normalisation. See
// robots/robots.h for what each reading is and why.
#ifndef CRAWLD_ROBOTS_PATTERN_H_
#define CRAWLD_ROBOTS_PATTERN_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace crawld::robots::internal {

// One compiled pattern: "*" is a wildcard wherever it is, a final "$" the
// anchor, and every other octet (a "$" elsewhere included) stands for
// itself. In the RFC reading the literal "*" and "$" of a path are held as
// %2A and %24, so the same matcher serves both readings.
struct Pattern {
  std::string text;        // as matched, "*" and final "$" included
  size_t prefix_len = 0;   // bytes before the first "*" (anchor excluded)
  size_t literal_len = 0;  // bytes that are neither "*" nor the anchor
  bool anchored = false;   // ends with "$"
  bool has_wildcard = false;

  // Google's reading of a pattern as written in robots.txt (comment and
  // surrounding whitespace already removed): EscapePattern(raw).
  static Pattern Compile(std::string_view raw);

  // RFC 9309's reading: the normal form of NormalizePath's comment.
  static Pattern CompileRfc(std::string_view raw);

  // The match length used for longest-match ("most octets"): the length of
  // `text`, as Google counts it.
  size_t priority() const { return text.size(); }

  // Whether the pattern matches `path` from its first octet.
  // REQUIRES: `path` is in the form the pattern's reading compares (as given
  // for Compile, NormalizePath for CompileRfc).
  // Linear in path and pattern length: segments between "*" are placed at
  // their leftmost occurrence, which is optimal when "*" is the only
  // wildcard, so there is no backtracking.
  bool Matches(std::string_view path) const;
};

// Google's escaping of a pattern (robots.cc, MaybeEscapePattern): the two hex
// digits of each "%xx" upper-cased, each octet >= 0x80 percent-encoded with
// upper-case hex, everything else kept. Idempotent.
std::string EscapePattern(std::string_view raw);

// RFC reading only. Brings a URL path+query into normal form. Returns `path`
// itself when it is already normal (the common case, no allocation); otherwise
// writes the normal form into *scratch and returns a view of it. The result
// starts with "/" and contains no fragment.
std::string_view NormalizePath(std::string_view path, std::string* scratch);

}  // namespace crawld::robots::internal

#endif  // CRAWLD_ROBOTS_PATTERN_H_
