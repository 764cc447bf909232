// daemon/control.cc: see control.h.
#include "daemon/control.h"

#include <charconv>
#include <chrono>

namespace crawld::daemon::control {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// "1,2,3" or "-" (none).
bool ParseIds(std::string_view s, std::vector<int>* out) {
  out->clear();
  if (s == "-") return true;
  while (true) {
    const size_t comma = s.find(',');
    int id = 0;
    if (!ParseNumber(s.substr(0, comma), &id) || id < 0) return false;
    out->push_back(id);
    if (comma == std::string_view::npos) return true;
    s.remove_prefix(comma + 1);
  }
}

std::string Ids(const std::vector<int>& ids) {
  if (ids.empty()) return "-";
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

// Splits off the next space-separated word of `*rest`.
std::string_view Word(std::string_view* rest) {
  const size_t sp = rest->find(' ');
  std::string_view w = rest->substr(0, sp);
  rest->remove_prefix(sp == std::string_view::npos ? rest->size() : sp + 1);
  return w;
}

}  // namespace

uint64_t MonotonicMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

Command ParseCommand(std::string_view line) {
  Command c;
  std::string_view rest = line;
  const std::string_view verb = Word(&rest);
  if (verb == "go" && rest.empty()) {
    c.kind = Command::Kind::kGo;
  } else if (verb == "stop" && !rest.empty()) {
    c.kind = Command::Kind::kStop;
    c.reason = std::string(rest);
  } else if (verb == "ring") {
    const std::string_view epoch = Word(&rest);
    const std::string_view live = Word(&rest);
    const std::string_view gone = Word(&rest);
    if (rest.empty() && ParseNumber(epoch, &c.epoch) &&
        ParseIds(live, &c.live) && ParseIds(gone, &c.gone)) {
      c.kind = Command::Kind::kRing;
    }
  } else if (verb == "lease") {
    if (ParseNumber(rest, &c.until_ms)) c.kind = Command::Kind::kLease;
  } else if (verb == "reload") {
    if (ParseNumber(rest, &c.seq)) c.kind = Command::Kind::kReload;
  }
  return c;
}

std::string RingLine(int64_t epoch, const std::vector<int>& live,
                     const std::vector<int>& gone) {
  return "ring " + std::to_string(epoch) + " " + Ids(live) + " " + Ids(gone);
}

std::string LeaseLine(uint64_t until_ms) {
  return "lease " + std::to_string(until_ms);
}

std::string ReloadLine(uint64_t seq) { return "reload " + std::to_string(seq); }

}  // namespace crawld::daemon::control
