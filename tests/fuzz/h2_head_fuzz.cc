// Fuzz target for the h2 -> HTTP/1.1 head conversion (fetcher/h2_head.h).
// The first byte picks the function ('S': status line, else request head);
// the rest is its input. Invariants checked, beyond not crashing:
// 1. A head that is not curl's h2 text comes back byte for byte (HTTP/1.x
//    exchanges are recorded as before).
// 2. An h2 request head becomes one HTTP/1.1 request head: first line ends
//    in " HTTP/1.1", every LF is part of a CRLF, one blank line at the
//    very end, no field name with an upper-case letter.
// 3. Converting twice gives what converting once gave.
// 4. An h2 status line becomes exactly "HTTP/1.1 DDD \r\n" with its code.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "fetcher/h2_head.h"

namespace {

using crawld::fetcher::internal::Http11RequestHead;
using crawld::fetcher::internal::Http11StatusLine;
using crawld::fetcher::internal::IsH2RequestHead;
using crawld::fetcher::internal::IsH2StatusLine;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "h2_head_fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

void CheckRequest(std::string_view in) {
  const std::string out = Http11RequestHead(in);
  if (!IsH2RequestHead(in)) {
    Check(out == in, "a non-h2 request head is unchanged");
    return;
  }
  Check(out.size() >= 4 && out.compare(out.size() - 4, 4, "\r\n\r\n") == 0,
        "ends in CRLF CRLF");
  const size_t first_end = out.find("\r\n");
  Check(first_end != std::string::npos && first_end >= 9 &&
            out.compare(first_end - 9, 9, " HTTP/1.1") == 0,
        "request line ends in HTTP/1.1");
  size_t pos = 0;
  bool request_line = true;
  while (pos < out.size()) {
    const size_t end = out.find("\r\n", pos);
    Check(end != std::string::npos, "every line ends in CRLF");
    const std::string_view line(out.data() + pos, end - pos);
    Check(line.find('\n') == std::string_view::npos, "no bare LF");
    if (line.empty()) {
      Check(end + 2 == out.size(), "the blank line is the last");
      break;
    }
    if (!request_line) {
      const std::string_view name = line.substr(0, line.find(':'));
      if (name.size() < line.size()) {
        for (char c : name) Check(c < 'A' || c > 'Z', "lower-case names");
      }
    }
    request_line = false;
    pos = end + 2;
  }
  Check(Http11RequestHead(out) == out, "idempotent");
}

void CheckStatus(std::string_view in) {
  const std::string out = Http11StatusLine(in);
  if (!IsH2StatusLine(in)) {
    Check(out == in, "a non-h2 status line is unchanged");
    return;
  }
  Check(out.size() == 15 && out.compare(0, 9, "HTTP/1.1 ") == 0 &&
            out.compare(12, 3, " \r\n") == 0 &&
            out.compare(9, 3, in.substr(7, 3)) == 0,
        "HTTP/1.1 DDD SP CRLF with the code");
  Check(!IsH2StatusLine(out) && Http11StatusLine(out) == out, "idempotent");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // An exact-size copy, so that ASan sees any read past the end.
  auto copy = std::make_unique<char[]>(size - 1);
  if (size > 1) std::memcpy(copy.get(), data + 1, size - 1);
  const std::string_view input(copy.get(), size - 1);
  if (data[0] == 'S') {
    CheckStatus(input);
  } else {
    CheckRequest(input);
  }
  return 0;
}
