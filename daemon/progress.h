// daemon/progress.h: what a person watching the terminal sees: the live
// progress line (one updating line on a terminal, a plain line per
// interval otherwise) and the crawl's summary.
#ifndef CRAWLD_DAEMON_PROGRESS_H_
#define CRAWLD_DAEMON_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "daemon/crawl_stats.h"

namespace crawld::daemon {

// "12.3 kB", "4.5 MB", "1.23 GB".
[[nodiscard]] std::string FormatBytes(uint64_t bytes);

// True for the counted events that are failures an operator should look
// at (fetch error classes, HTTP error classes, our own I/O failures); the
// others are events (revisits, routed URLs, traps, robots decisions).
[[nodiscard]] bool IsErrorCount(std::string_view name);

// The figures of one progress line.
struct ProgressFigures {
  uint64_t pages = 0;  // Print(stats, ...) takes these two from the stats
  uint64_t bytes = 0;
  size_t queued = 0;
  size_t hosts = 0;
  size_t active = 0;
  // Between the hosts and the bytes: "errors 3" (a worker's line),
  // "workers 2/2 | restarts 0" (the supervisor's).
  std::string middle;
};

// Prints progress lines to `out` (not owned; null: nothing).
class ProgressLine {
 public:
  ProgressLine(FILE* out, bool tty) : out_(out), tty_(tty) {}
  // `final_line`: the rate over the whole crawl, and a newline on a tty.
  void Print(const CrawlStats& stats, const ProgressFigures& figures,
             int64_t now_us, int64_t start_us, bool final_line);
  // The line of `figures` as they are (pages and bytes included).
  void PrintFigures(const ProgressFigures& figures, int64_t now_us,
                    int64_t start_us, bool final_line);
  // A message on a line of its own (clearing an updating line first).
  void Message(const std::string& text);

 private:
  FILE* out_;
  bool tty_;
  uint64_t last_pages_ = 0;
  int64_t last_us_ = 0;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_PROGRESS_H_
