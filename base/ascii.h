// base/ascii.h: ASCII-only character and string helpers, written once for
// the whole tree.
//
// Every protocol crawld speaks (HTTP field names, robots.txt directives,
// URL schemes and hosts, MIME types, WARC headers, HTML tag names) folds
// case over ASCII only, never by locale: <cctype> depends on the C locale
// and is undefined for negative chars, so nothing in crawld uses it for
// protocol text. These helpers are constexpr, locale-free and total (any
// byte is a valid input; bytes >= 0x80 are left as they are).
#ifndef CRAWLD_BASE_ASCII_H_
#define CRAWLD_BASE_ASCII_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace crawld::ascii {

// 'A'..'Z' to 'a'..'z'; every other byte unchanged.
[[nodiscard]] constexpr char ToLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c | 0x20) : c;
}

// 'a'..'z' to 'A'..'Z'; every other byte unchanged.
[[nodiscard]] constexpr char ToUpper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c & ~0x20) : c;
}

[[nodiscard]] constexpr bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
[[nodiscard]] constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
[[nodiscard]] constexpr bool IsAlnum(char c) {
  return IsAlpha(c) || IsDigit(c);
}
[[nodiscard]] constexpr bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// HTTP's optional whitespace (RFC 9110 section 5.6.3): SP and HTAB.
[[nodiscard]] constexpr bool IsHttpSpace(char c) {
  return c == ' ' || c == '\t';
}
// The WHATWG Infra "ASCII whitespace": TAB, LF, FF, CR, SP.
[[nodiscard]] constexpr bool IsWhatwgSpace(char c) {
  return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

// The value 0..15 of a hex digit, or -1 for any other byte.
[[nodiscard]] constexpr int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The upper-case hex digit of the low four bits of `nibble`.
[[nodiscard]] constexpr char HexDigitUpper(unsigned nibble) {
  return "0123456789ABCDEF"[nibble & 0xF];
}
// The lower-case hex digit of the low four bits of `nibble`.
[[nodiscard]] constexpr char HexDigitLower(unsigned nibble) {
  return "0123456789abcdef"[nibble & 0xF];
}

// True if a and b are equal after ASCII lower-casing.
[[nodiscard]] constexpr bool EqualsIgnoreCase(std::string_view a,
                                              std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

// True if `s` starts with `prefix`, ASCII case-insensitively.
[[nodiscard]] constexpr bool StartsWithIgnoreCase(std::string_view s,
                                                  std::string_view prefix) {
  return s.size() >= prefix.size() &&
         EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// True if `s` ends with `suffix`, ASCII case-insensitively.
[[nodiscard]] constexpr bool EndsWithIgnoreCase(std::string_view s,
                                                std::string_view suffix) {
  return s.size() >= suffix.size() &&
         EqualsIgnoreCase(s.substr(s.size() - suffix.size()), suffix);
}

// Lower-cases `s` in place (ASCII letters only).
inline void LowerInPlace(std::string* s) {
  for (char& c : *s) c = ToLower(c);
}

// A lower-cased copy of `s` (ASCII letters only).
[[nodiscard]] inline std::string ToLower(std::string_view s) {
  std::string out(s);
  LowerInPlace(&out);
  return out;
}

// `s` without leading and trailing SP and HTAB (HTTP OWS).
[[nodiscard]] constexpr std::string_view TrimHttpSpace(std::string_view s) {
  while (!s.empty() && IsHttpSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsHttpSpace(s.back())) s.remove_suffix(1);
  return s;
}

// `s` without leading and trailing WHATWG ASCII whitespace.
[[nodiscard]] constexpr std::string_view TrimWhatwgSpace(std::string_view s) {
  while (!s.empty() && IsWhatwgSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsWhatwgSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace crawld::ascii

#endif  // CRAWLD_BASE_ASCII_H_
