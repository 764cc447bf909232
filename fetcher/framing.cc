// fetcher/framing.cc: response framing (RFC 9112 section 6.3) and the
// chunked decoder (section 7.1). See framing.h.
#include "fetcher/framing.h"

#include <algorithm>

#include "base/ascii.h"

namespace crawld::fetcher::internal {
namespace {

// Calls `each` with every non-empty, trimmed element of the comma-separated
// lists in the fields named `name` (RFC 9110 5.6.1).
template <typename Fn>
void ForEachListElement(
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::string_view name, Fn each) {
  for (const auto& [n, v] : headers) {
    if (!ascii::EqualsIgnoreCase(n, name)) continue;
    std::string_view rest = v;
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view item = ascii::TrimHttpSpace(rest.substr(0, comma));
      each(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
}

bool HasField(const std::vector<std::pair<std::string, std::string>>& headers,
              std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) {
    return ascii::EqualsIgnoreCase(h.first, name);
  });
}

}  // namespace

Result<BodyFraming> FramingOf(
    int status, std::string_view version,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  BodyFraming framing;
  if (status < 200 || status == 204 || status == 304) {
    framing.kind = BodyFraming::Kind::kNone;
    return framing;
  }
  const bool has_length = HasField(headers, "Content-Length");
  if (version == "HTTP/2" && HasField(headers, "Transfer-Encoding")) {
    // curl's nghttp2 refuses such a response first; checked here as well,
    // since a body still transfer-coded would be stored as the payload.
    return Status::InvalidArgument(
        "HTTP/2 response with Transfer-Encoding (RFC 9113 section 8.2.2)");
  }
  std::vector<std::string> codings;
  ForEachListElement(headers, "Transfer-Encoding", [&](std::string_view c) {
    if (!c.empty() && !ascii::EqualsIgnoreCase(c, "identity")) {
      codings.push_back(ascii::ToLower(c));
    }
  });
  if (!codings.empty()) {
    if (version == "HTTP/1.0") {
      return Status::InvalidArgument(
          "HTTP/1.0 response with Transfer-Encoding (RFC 9112 section 6.1)");
    }
    if (codings.size() != 1 || codings[0] != "chunked") {
      std::string list;
      for (const std::string& c : codings)
        list += (list.empty() ? "" : ", ") + c;
      return Status::InvalidArgument(
          "transfer coding '" + list +
          "' not supported: only chunked, as no TE was sent (RFC 9110 "
          "section 10.1.4, RFC 9112 section 6.1)");
    }
    framing.kind = BodyFraming::Kind::kChunked;
    if (has_length) {
      framing.note =
          "both Transfer-Encoding and Content-Length: Transfer-Encoding "
          "wins (RFC 9112 section 6.3)";
    }
    return framing;
  }
  if (!has_length) return framing;  // kClose

  // RFC 9110 8.6: Content-Length = 1*DIGIT; several identical values (in a
  // list or in repeated fields) count as one.
  std::string error;
  bool first = true;
  ForEachListElement(headers, "Content-Length", [&](std::string_view v) {
    if (!error.empty()) return;
    uint64_t n = 0;
    bool ok = !v.empty() && v.size() <= 18;  // < 10^18: no overflow
    for (char c : v) ok = ok && ascii::IsDigit(c);
    if (ok) {
      for (char c : v) n = n * 10 + static_cast<uint64_t>(c - '0');
    } else {
      error = "invalid Content-Length '" + std::string(v.substr(0, 40)) +
              "' (RFC 9112 section 6.3)";
      return;
    }
    if (!first && n != framing.length) {
      error = "Content-Length values " + std::to_string(framing.length) +
              " and " + std::to_string(n) + " differ (RFC 9112 section 6.3)";
      return;
    }
    framing.length = n;
    first = false;
  });
  if (!error.empty()) return Status::InvalidArgument(error);
  framing.kind = BodyFraming::Kind::kLength;
  return framing;
}

Status ChunkedDecoder::Fail(std::string why) {
  state_ = State::kFailed;
  error_ = "invalid chunked body: " + why + " (RFC 9112 section 7.1)";
  return Status::InvalidArgument(error_);
}

void ChunkedDecoder::EndSizeLine() {
  line_bytes_ = 0;
  in_extension_ = false;
  if (size_ == 0) {
    state_ = State::kTrailer;
  } else {
    remaining_ = size_;
    state_ = State::kData;
  }
}

bool ChunkedDecoder::EndTrailerLine() {
  const bool empty = line_bytes_ == 0;
  line_bytes_ = 0;
  state_ = empty ? State::kDone : State::kTrailer;
  return empty;
}

Status ChunkedDecoder::Feed(
    std::string_view in, const std::function<Status(std::string_view)>& sink) {
  if (state_ == State::kFailed) return Status::InvalidArgument(error_);
  size_t i = 0;
  while (i < in.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - i));
      remaining_ -= take;
      if (remaining_ == 0) state_ = State::kDataCr;
      if (Status s = sink(in.substr(i, take)); !s.ok()) return s;
      i += take;
      continue;
    }
    const char c = in[i++];
    switch (state_) {
      case State::kSize:
        if (const int v = ascii::HexValue(c); v >= 0) {
          // 15 hex digits stay below 2^60; curl refuses more than 16.
          if (++digits_ > 15) return Fail("chunk size too large");
          size_ = size_ * 16 + static_cast<uint64_t>(v);
          if (++line_bytes_ > kMaxLineBytes) return Fail("line too long");
          break;
        }
        if (digits_ == 0) return Fail("chunk size is not a hex number");
        state_ = State::kSizeTail;
        [[fallthrough]];
      case State::kSizeTail:
        if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (c == '\n') {
          EndSizeLine();
        } else if (c == ';') {
          in_extension_ = true;
        } else if (!in_extension_ && !ascii::IsHttpSpace(c)) {
          return Fail("chunk size is not a hex number");
        } else if (++line_bytes_ > kMaxLineBytes) {
          return Fail("chunk extensions too long");
        }
        break;
      case State::kSizeLf:
        if (c != '\n') return Fail("CR without LF after the chunk size");
        EndSizeLine();
        break;
      case State::kDataCr:
        if (c == '\r') {
          state_ = State::kDataLf;
        } else if (c == '\n') {
          state_ = State::kSize;
          size_ = 0;
          digits_ = 0;
        } else {
          return Fail("chunk data longer than its size");
        }
        break;
      case State::kDataLf:
        if (c != '\n') return Fail("chunk data longer than its size");
        state_ = State::kSize;
        size_ = 0;
        digits_ = 0;
        break;
      case State::kTrailer:
        if (c == '\r') {
          state_ = State::kTrailerLf;
        } else if (c == '\n') {
          EndTrailerLine();
        } else {
          ++line_bytes_;
          if (++trailer_bytes_ > kMaxTrailerBytes) {
            return Fail("trailer section too large");
          }
        }
        break;
      case State::kTrailerLf:
        if (c != '\n') return Fail("CR without LF in the trailer section");
        EndTrailerLine();
        break;
      case State::kData:
      case State::kDone:
      case State::kFailed:
        break;  // handled above
    }
  }
  return Status::Ok();
}

}  // namespace crawld::fetcher::internal
