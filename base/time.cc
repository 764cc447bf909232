#include "base/time.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <time.h>

#include <ctime>

namespace crawld {

namespace {

// The second a time falls in, broken down in UTC, and the microseconds
// after it (0..999999). Formatted from std::tm rather than a chrono time
// point: fmt converts a time point to the system clock's nanoseconds, which
// overflow past the year 2262, and a date read from a file (a feed line, a
// CDXJ line) can be anything int64 holds.
std::tm Floor(int64_t unix_us, int* micros) {
  int64_t secs = unix_us / 1000000;
  int64_t frac = unix_us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  if (micros != nullptr) *micros = static_cast<int>(frac);
  return fmt::gmtime(static_cast<std::time_t>(secs));
}

}  // namespace

std::string Iso8601Micros(int64_t unix_us) {
  int micros = 0;
  const std::tm s = Floor(unix_us, &micros);
  // fmt 9's %S prints no fraction for whole seconds: append it ourselves.
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", s, micros);
}

std::string Timestamp14(int64_t unix_us) {
  return fmt::format("{:%Y%m%d%H%M%S}", Floor(unix_us, nullptr));
}

std::string HttpDate(int64_t unix_us) {
  // %a and %b are locale-dependent in strftime; fmt formats them in the
  // "C" locale unless asked for another (the L flag), as IMF-fixdate needs.
  return fmt::format("{:%a, %d %b %Y %H:%M:%S} GMT", Floor(unix_us, nullptr));
}

int64_t WallMicros() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace crawld
