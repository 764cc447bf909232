// fetcher/h2_head.cc: see h2_head.h.
#include "fetcher/h2_head.h"

#include "base/ascii.h"

namespace crawld::fetcher::internal {
namespace {

using ascii::EqualsIgnoreCase;

constexpr std::string_view kH2 = "HTTP/2";

// `line` without its CR LF / LF end.
std::string_view Chomp(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// RFC 9113 8.2.2: fields an HTTP/2 message must not carry; curl's h2
// layer drops them from the request it was given.
bool ConnectionSpecific(std::string_view name, std::string_view value) {
  if (EqualsIgnoreCase(name, "te")) {
    return !EqualsIgnoreCase(ascii::TrimHttpSpace(value), "trailers");
  }
  return EqualsIgnoreCase(name, "connection") ||
         EqualsIgnoreCase(name, "keep-alive") ||
         EqualsIgnoreCase(name, "proxy-connection") ||
         EqualsIgnoreCase(name, "transfer-encoding") ||
         EqualsIgnoreCase(name, "upgrade");
}

}  // namespace

bool IsH2StatusLine(std::string_view line) {
  line = Chomp(line);
  if (line.size() < kH2.size() + 4 || line.substr(0, kH2.size()) != kH2 ||
      line[kH2.size()] != ' ') {
    return false;
  }
  for (size_t i = kH2.size() + 1; i < kH2.size() + 4; ++i) {
    if (!ascii::IsDigit(line[i])) return false;
  }
  // Three digits exactly: a fourth is no status code.
  return line.size() == kH2.size() + 4 || line[kH2.size() + 4] == ' ';
}

std::string Http11StatusLine(std::string_view line) {
  if (!IsH2StatusLine(line)) return std::string(line);
  std::string out = "HTTP/1.1 ";
  out.append(line.substr(kH2.size() + 1, 3));
  out.append(" \r\n");
  return out;
}

bool IsH2RequestHead(std::string_view head) {
  std::string_view first = Chomp(head.substr(0, head.find('\n')));
  return first.size() > kH2.size() + 1 &&
         first.substr(first.size() - kH2.size() - 1) == " HTTP/2";
}

std::string Http11RequestHead(std::string_view head) {
  if (!IsH2RequestHead(head)) return std::string(head);
  std::string out;
  out.reserve(head.size() + 8);
  size_t pos = 0;
  bool first = true;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    const size_t next = end == std::string_view::npos ? head.size() : end + 1;
    const std::string_view line = Chomp(head.substr(pos, next - pos));
    pos = next;
    if (first) {
      first = false;
      out.append(line.substr(0, line.size() - kH2.size()));
      out.append("HTTP/1.1\r\n");
      continue;
    }
    if (line.empty()) break;  // the end of the head
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      out.append(line);
      out.append("\r\n");
      continue;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (ConnectionSpecific(name, value)) continue;
    std::string lower(name);
    ascii::LowerInPlace(&lower);
    out.append(lower);
    out.push_back(':');
    out.append(value);
    out.append("\r\n");
  }
  out.append("\r\n");
  return out;
}

}  // namespace crawld::fetcher::internal
