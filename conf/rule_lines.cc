#include "conf/rule_lines.h"

#include <algorithm>

namespace crawld::conf::internal {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::vector<std::string_view> Tokenize(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    if (i >= line.size() || line[i] == '#') break;
    const size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string JoinTokens(const std::vector<std::string_view>& t) {
  std::string out;
  for (std::string_view s : t) {
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

bool LooksLikeIp(std::string_view host) {
  if (!host.empty() && host.front() == '[') return true;
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  });
}

bool RuleLines::Next() {
  while (status_.ok() && pos_ < text_.size()) {
    size_t eol = text_.find('\n', pos_);
    if (eol == std::string_view::npos) eol = text_.size();
    const std::string_view line = text_.substr(pos_, eol - pos_);
    pos_ = eol + 1;
    ++number_;
    if (line.find('\0') != std::string_view::npos) {
      status_ = Error("NUL byte in line");
      return false;
    }
    tokens_ = Tokenize(line);
    if (!tokens_.empty()) return true;
  }
  return false;
}

Status RuleLines::Error(std::string_view what) const {
  return Status::InvalidArgument(std::string(source_) + ":" +
                                 std::to_string(number_) + ": " +
                                 std::string(what));
}

}  // namespace crawld::conf::internal
