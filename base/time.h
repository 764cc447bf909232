// base/time.h: the date formats crawld writes, formatted in one place (with
// fmt's chrono support, UTC, locale-free).
//
//   Iso8601Micros   2026-11-22T15:04:05.123456Z   WARC-Date (WARC/1.1
//                   section 5.4 allows fractions), logs, the admin API
//   Timestamp14     20261122150405                CDXJ keys, WARC file names
//                   (the 14-digit form of the Wayback machine)
//   HttpDate        Sun, 06 Nov 1994 08:49:37 GMT IMF-fixdate, RFC 9110
//                   section 5.6.7 (Date, If-Modified-Since)
//
// Times are Unix epoch microseconds (int64_t), floored towards minus
// infinity, so a negative time prints the second it falls in.
#ifndef CRAWLD_BASE_TIME_H_
#define CRAWLD_BASE_TIME_H_

#include <cstdint>
#include <string>

namespace crawld {

// "YYYY-MM-DDThh:mm:ss.ffffffZ".
[[nodiscard]] std::string Iso8601Micros(int64_t unix_us);
// "YYYYMMDDhhmmss".
[[nodiscard]] std::string Timestamp14(int64_t unix_us);
// "Www, DD Mmm YYYY hh:mm:ss GMT".
[[nodiscard]] std::string HttpDate(int64_t unix_us);

// The wall clock (CLOCK_REALTIME) in Unix epoch microseconds. Components
// that schedule take time as a parameter instead; this is for the places
// that stamp a record with the time it was made.
[[nodiscard]] int64_t WallMicros();

}  // namespace crawld

#endif  // CRAWLD_BASE_TIME_H_
