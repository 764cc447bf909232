// base/ascii.h and base/time.h: the helpers every component shares.
#include <gtest/gtest.h>

#include <cstdint>

#include "base/ascii.h"
#include "base/time.h"

namespace crawld {
namespace {

TEST(Ascii, FoldsOnlyAsciiLetters) {
  EXPECT_EQ(ascii::ToLower("HeLLo-Wörld_Z@["), "hello-wörld_z@[");
  EXPECT_EQ(ascii::ToLower('\xC3'), '\xC3');  // a UTF-8 lead byte stays
  EXPECT_EQ(ascii::ToUpper('z'), 'Z');
  EXPECT_EQ(ascii::ToUpper('{'), '{');
}

TEST(Ascii, CompareIgnoringCase) {
  EXPECT_TRUE(ascii::EqualsIgnoreCase("Content-Type", "content-TYPE"));
  EXPECT_FALSE(ascii::EqualsIgnoreCase("Content-Type", "Content-Typ"));
  // 'K' (0x4B) and the Kelvin sign are not folded together: ASCII only.
  EXPECT_FALSE(ascii::EqualsIgnoreCase("k", "\xE2\x84\xAA"));
  EXPECT_TRUE(ascii::StartsWithIgnoreCase("Bearer abc", "bearer "));
  EXPECT_FALSE(ascii::StartsWithIgnoreCase("Bear", "bearer "));
  EXPECT_TRUE(ascii::EndsWithIgnoreCase("index.HTML", ".html"));
}

TEST(Ascii, HexAndSpace) {
  EXPECT_EQ(ascii::HexValue('a'), 10);
  EXPECT_EQ(ascii::HexValue('F'), 15);
  EXPECT_EQ(ascii::HexValue('g'), -1);
  EXPECT_EQ(ascii::HexDigitUpper(0xAB), 'B');
  EXPECT_EQ(ascii::HexDigitLower(10), 'a');
  EXPECT_EQ(ascii::TrimHttpSpace(" \t v \t"), "v");
  EXPECT_EQ(ascii::TrimWhatwgSpace("\f\r\n v\n"), "v");
}

TEST(Time, Iso8601MicrosAsWarcDate) {
  EXPECT_EQ(Iso8601Micros(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(Iso8601Micros(1764125765123456), "2025-11-26T02:56:05.123456Z");
  // Floored: half a second before the epoch is in 23:59:59.
  EXPECT_EQ(Iso8601Micros(-500000), "1969-12-31T23:59:59.500000Z");
}

// A date read from a file can be any int64 (a feed line's time_us, found by
// feed_fuzz): past the year 2262 a nanosecond clock overflows, and the
// formatting must not.
TEST(Time, DatesPastTheNanosecondClockFormat) {
  EXPECT_EQ(Iso8601Micros(17041646455123456), "2510-01-11T06:40:55.123456Z");
  EXPECT_EQ(Timestamp14(17041646455123456), "25100111064055");
  EXPECT_FALSE(Iso8601Micros(INT64_MAX).empty());
  EXPECT_FALSE(HttpDate(INT64_MIN).empty());
}

TEST(Time, Timestamp14) {
  EXPECT_EQ(Timestamp14(1764125765999999), "20251126025605");
}

// RFC 9110 section 5.6.7: IMF-fixdate, always in English.
TEST(Rfc9110, Sec5_6_7_ImfFixdate) {
  EXPECT_EQ(HttpDate(784111777000000), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(Time, WallClockIsNow) { EXPECT_GT(WallMicros(), 1700000000ll * 1000000); }

}  // namespace
}  // namespace crawld
