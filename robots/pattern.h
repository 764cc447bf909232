// robots/pattern.h: private to robots/. Percent-encoding normalisation and
// the compiled form of one Allow/Disallow pattern. See robots/robots.h for
// the normal form and why it is what it is.
#ifndef CRAWLD_ROBOTS_PATTERN_H_
#define CRAWLD_ROBOTS_PATTERN_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace crawld::robots::internal {

// One pattern in normal form: "*" is the only wildcard and a final "$" the
// only anchor, because literal "*" and "$" are held as %2A and %24.
struct Pattern {
  std::string text;        // normal form, "*" and final "$" included
  size_t prefix_len = 0;   // bytes before the first "*" (anchor excluded)
  size_t literal_len = 0;  // bytes that are neither "*" nor the anchor
  bool anchored = false;   // ends with "$"
  bool has_wildcard = false;

  // Compiles a pattern as written in robots.txt (comment and surrounding
  // whitespace already removed).
  static Pattern Compile(std::string_view raw);

  // The match length used for longest-match ("most octets").
  size_t priority() const { return text.size(); }

  // Whether the pattern matches `path` from its first octet.
  // REQUIRES: `path` is in normal form (NormalizePath).
  // Linear in path and pattern length: segments between "*" are placed at
  // their leftmost occurrence, which is optimal when "*" is the only
  // wildcard, so there is no backtracking.
  bool Matches(std::string_view path) const;
};

// Brings a URL path+query into normal form. Returns `path` itself when it is
// already normal (the common case, no allocation); otherwise writes the
// normal form into *scratch and returns a view of it. The result starts
// with "/" and contains no fragment.
std::string_view NormalizePath(std::string_view path, std::string* scratch);

}  // namespace crawld::robots::internal

#endif  // CRAWLD_ROBOTS_PATTERN_H_
