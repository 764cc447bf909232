#include "daemon/event_log.h"

#include <errno.h>
#include <string.h>

#include "base/json.h"
#include "base/time.h"

namespace crawld::daemon {

namespace {
std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}
}  // namespace

EventLog::~EventLog() {
  if (file_ != nullptr) fclose(file_);
}

Status EventLog::Open(const std::string& path) {
  file_ = fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    return Status::IOError(path + ": " + strerror(errno));
  }
  // Each line goes to the OS as it is written: a kill -9 must not take the
  // last second of the log with it (a run killed within its first second
  // left no line at all), and that last second is what an operator reads
  // after a crash. Events are rare (a few per second, not per page), so a
  // write per line costs nothing measurable.
  setvbuf(file_, nullptr, _IOLBF, 0);
  return Status::Ok();
}

void EventLog::Write(Level level, std::string_view event,
                     std::initializer_list<Field> fields) {
  if (file_ == nullptr || level < min_level_) return;
  // Laid out here rather than built as a Json object: the line is written
  // for every logged event, and its layout is fixed.
  std::string line = "{\"time\":\"";
  line += Iso8601Micros(WallMicros());
  line += "\",\"level\":\"";
  line += LevelName(level);
  line += "\",\"event\":";
  json::AppendQuoted(&line, event);
  for (const Field& f : fields) {
    line.push_back(',');
    json::AppendQuoted(&line, f.first);
    line.push_back(':');
    json::AppendQuoted(&line, f.second);
  }
  line += "}\n";
  fwrite(line.data(), 1, line.size(), file_);
}

void EventLog::Flush() {
  if (file_ != nullptr) fflush(file_);
}

}  // namespace crawld::daemon
