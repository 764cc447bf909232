// sitemap/dates.cc: the date forms of sitemaps and feeds, parsed into Unix
// seconds (base/time.h only formats dates; nothing in the tree parsed
// these two grammars before).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/ascii.h"
#include "sitemap/sitemap.h"

namespace crawld::sitemap {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil, http://howardhinnant.github.io/date_algorithms.html).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int64_t m) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30,
                                                31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[static_cast<size_t>(m - 1)];
}

// A cursor over the text; every reader advances only on success.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool done() const { return i_ == s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool Eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  // Exactly n decimal digits.
  bool Digits(size_t n, int64_t* out) {
    if (s_.size() - i_ < n) return false;
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = s_[i_ + k];
      if (!ascii::IsDigit(c)) return false;
      v = v * 10 + (c - '0');
    }
    i_ += n;
    *out = v;
    return true;
  }
  // 1..max decimal digits; *count says how many.
  bool SomeDigits(size_t max, int64_t* out, size_t* count) {
    size_t n = 0;
    int64_t v = 0;
    while (n < max && i_ + n < s_.size() && ascii::IsDigit(s_[i_ + n])) {
      v = v * 10 + (s_[i_ + n] - '0');
      ++n;
    }
    if (n == 0) return false;
    i_ += n;
    *out = v;
    *count = n;
    return true;
  }
  void SkipDigits() {
    while (ascii::IsDigit(peek())) ++i_;
  }
  // A run of ASCII letters.
  std::string_view Word() {
    const size_t start = i_;
    while (ascii::IsAlpha(peek())) ++i_;
    return s_.substr(start, i_ - start);
  }
  void SkipSpace() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

std::optional<int64_t> Combine(int64_t y, int64_t mo, int64_t d, int64_t h,
                               int64_t mi, int64_t s, int64_t offset_s) {
  if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
      d > DaysInMonth(y, mo) || h > 23 || mi > 59 || s > 60) {
    return std::nullopt;
  }
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
}

// "+hh:mm", "-hh:mm", also "+hhmm" (common in feeds); *offset_s is east of
// UTC.
bool NumericZone(Cursor* c, bool colon_optional, int64_t* offset_s) {
  int sign = 0;
  if (c->Eat('+')) {
    sign = 1;
  } else if (c->Eat('-')) {
    sign = -1;
  } else {
    return false;
  }
  int64_t hh = 0, mm = 0;
  if (!c->Digits(2, &hh)) return false;
  const bool colon = c->Eat(':');
  if (!colon && !colon_optional) return false;
  if (!c->Digits(2, &mm)) return false;
  if (hh > 23 || mm > 59) return false;
  *offset_s = sign * (hh * 3600 + mm * 60);
  return true;
}

constexpr std::array<std::string_view, 12> kMonths = {
    "jan", "feb", "mar", "apr", "may", "jun",
    "jul", "aug", "sep", "oct", "nov", "dec"};

}  // namespace

std::optional<int64_t> ParseW3cDatetime(std::string_view text) {
  Cursor c(ascii::TrimWhatwgSpace(text));
  int64_t y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0, offset = 0;
  if (!c.Digits(4, &y)) return std::nullopt;
  if (c.done()) return Combine(y, mo, d, h, mi, s, offset);
  if (!c.Eat('-') || !c.Digits(2, &mo)) return std::nullopt;
  if (c.done()) return Combine(y, mo, d, h, mi, s, offset);
  if (!c.Eat('-') || !c.Digits(2, &d)) return std::nullopt;
  if (c.done()) return Combine(y, mo, d, h, mi, s, offset);
  // RFC 3339 5.6 allows 't' and, by its note, a space.
  if (!c.Eat('T') && !c.Eat('t') && !c.Eat(' ')) return std::nullopt;
  if (!c.Digits(2, &h) || !c.Eat(':') || !c.Digits(2, &mi)) {
    return std::nullopt;
  }
  if (c.Eat(':')) {
    if (!c.Digits(2, &s)) return std::nullopt;
    if (c.Eat('.')) {
      int64_t frac = 0;
      size_t n = 0;
      if (!c.SomeDigits(18, &frac, &n)) return std::nullopt;
      c.SkipDigits();  // finer than we keep
    }
  }
  if (c.done()) return Combine(y, mo, d, h, mi, s, 0);  // CrawldOnly: UTC
  if (c.Eat('Z') || c.Eat('z')) {
    offset = 0;
  } else if (!NumericZone(&c, /*colon_optional=*/false, &offset)) {
    return std::nullopt;
  }
  if (!c.done()) return std::nullopt;
  return Combine(y, mo, d, h, mi, s, offset);
}

std::optional<int64_t> ParseRfc822Date(std::string_view text) {
  Cursor c(ascii::TrimWhatwgSpace(text));
  // [ day-of-week "," ]
  c.SkipSpace();
  if (ascii::IsAlpha(c.peek())) {
    const std::string_view day = c.Word();
    if (day.size() < 3) return std::nullopt;
    c.SkipSpace();
    if (!c.Eat(',')) return std::nullopt;
    c.SkipSpace();
  }
  int64_t d = 0, y = 0, h = 0, mi = 0, s = 0, offset = 0;
  size_t n = 0;
  if (!c.SomeDigits(2, &d, &n)) return std::nullopt;
  c.SkipSpace();
  const std::string_view month = c.Word();
  if (month.size() < 3) return std::nullopt;
  int64_t mo = 0;
  for (size_t k = 0; k < kMonths.size(); ++k) {
    if (ascii::EqualsIgnoreCase(month.substr(0, 3), kMonths[k])) mo = k + 1;
  }
  if (mo == 0) return std::nullopt;
  c.SkipSpace();
  if (!c.SomeDigits(4, &y, &n) || n == 1) return std::nullopt;
  // RFC 2822 4.3: two digits are 19xx from 50, 20xx below; three are
  // 1900 + the value.
  if (n == 2) y += y < 50 ? 2000 : 1900;
  if (n == 3) y += 1900;
  c.SkipSpace();
  if (!c.Digits(2, &h) || !c.Eat(':') || !c.Digits(2, &mi)) {
    return std::nullopt;
  }
  if (c.Eat(':') && !c.Digits(2, &s)) return std::nullopt;
  c.SkipSpace();
  if (c.done()) return Combine(y, mo, d, h, mi, s, 0);
  if (c.peek() == '+' || c.peek() == '-') {
    if (!NumericZone(&c, /*colon_optional=*/true, &offset)) {
      return std::nullopt;
    }
  } else {
    const std::string_view zone = c.Word();
    if (zone.empty()) return std::nullopt;
    struct Named {
      std::string_view name;
      int hours;
    };
    static constexpr Named kZones[] = {{"gmt", 0},  {"ut", 0},   {"utc", 0},
                                       {"z", 0},    {"est", -5}, {"edt", -4},
                                       {"cst", -6}, {"cdt", -5}, {"mst", -7},
                                       {"mdt", -6}, {"pst", -8}, {"pdt", -7}};
    // Any other name (military letters, "CET") reads as UTC: RFC 2822
    // 4.3 says to treat unknown zones as -0000.
    for (const Named& z : kZones) {
      if (ascii::EqualsIgnoreCase(zone, z.name)) offset = z.hours * 3600;
    }
  }
  c.SkipSpace();
  if (!c.done()) return std::nullopt;
  return Combine(y, mo, d, h, mi, s, offset);
}

}  // namespace crawld::sitemap
