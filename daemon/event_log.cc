#include "daemon/event_log.h"

#include <errno.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

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

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          // Bytes >= 0x80 pass through: URLs and messages are UTF-8 or
          // percent-encoded; invalid UTF-8 is the reader's to tolerate.
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

EventLog::~EventLog() {
  if (file_ != nullptr) fclose(file_);
}

Status EventLog::Open(const std::string& path) {
  file_ = fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    return Status::IOError(path + ": " + strerror(errno));
  }
  return Status::Ok();
}

void EventLog::Write(Level level, std::string_view event,
                     std::initializer_list<Field> fields) {
  if (file_ == nullptr || level < min_level_) return;
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char ts[96];
  snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
           tm.tm_sec, static_cast<long>(tv.tv_usec));
  std::string line = "{\"time\":\"";
  line += ts;
  line += "\",\"level\":\"";
  line += LevelName(level);
  line += "\",\"event\":";
  AppendJsonString(&line, event);
  for (const Field& f : fields) {
    line.push_back(',');
    AppendJsonString(&line, f.first);
    line.push_back(':');
    AppendJsonString(&line, f.second);
  }
  line += "}\n";
  fwrite(line.data(), 1, line.size(), file_);
}

void EventLog::Flush() {
  if (file_ != nullptr) fflush(file_);
}

}  // namespace crawld::daemon
