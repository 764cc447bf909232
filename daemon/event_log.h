// daemon/event_log.h: structured JSON-lines log of the crawl (one object per
// line: time, level, event, fields), written to <data>/logs/crawld.jsonl so
// that operators can grep and ship it. Human output goes to the terminal.
#ifndef CRAWLD_DAEMON_EVENT_LOG_H_
#define CRAWLD_DAEMON_EVENT_LOG_H_

#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace crawld::daemon {

enum class Level { kDebug, kInfo, kWarn, kError };

// Owned by one loop; not thread-safe. Each line reaches the OS as it is
// written (line-buffered), so a killed process loses no line it logged.
class EventLog {
 public:
  using Field = std::pair<std::string_view, std::string_view>;

  EventLog() = default;
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Opens (appends to) path. Fails with IOError when it cannot be created.
  [[nodiscard]] Status Open(const std::string& path);
  // Events below min_level are dropped.
  void set_min_level(Level level) { min_level_ = level; }
  // Writes one line; field values are JSON strings (json::AppendQuoted:
  // invalid UTF-8 becomes U+FFFD, so every line parses).
  void Write(Level level, std::string_view event,
             std::initializer_list<Field> fields = {});
  void Flush();

 private:
  FILE* file_ = nullptr;
  Level min_level_ = Level::kInfo;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_EVENT_LOG_H_
