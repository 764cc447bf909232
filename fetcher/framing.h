// fetcher/framing.h: how an HTTP/1.1 response body is delimited (RFC 9112
// section 6.3), and a decoder for the chunked transfer coding (section 7.1).
// Private to fetcher/ (and its tests and fuzz target).
//
// curl frames bodies too, but leniently: it reads a body whose
// Content-Length is not a number to the close, takes the last of two
// differing Content-Length values, and reports a malformed chunk as the same
// CURLE_RECV_ERROR as a reset connection. The fetcher therefore judges the
// framing itself, from the final head and from the raw (still chunked) body
// bytes that curl hands over with CURLOPT_HTTP_TRANSFER_DECODING off, and
// knows when a body is complete without relying on curl's result code.
#ifndef CRAWLD_FETCHER_FRAMING_H_
#define CRAWLD_FETCHER_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace crawld::fetcher::internal {

// How the body of a response ends.
struct BodyFraming {
  enum class Kind {
    kNone,     // no body at all: 1xx, 204, 304 (RFC 9112 6.3 item 1)
    kLength,   // exactly `length` bytes (item 6)
    kChunked,  // the chunked transfer coding, up to its last chunk (item 4)
    kClose,    // until the server closes the connection (item 8); in
               // HTTP/2, until the stream ends (END_STREAM)
  };
  Kind kind = Kind::kClose;
  uint64_t length = 0;  // kLength only
  // A framing oddity the message survives, for logs and counters: ""
  // normally; set when Transfer-Encoding overrode a Content-Length.
  std::string note;
};

// The framing of a final response (status >= 200) from its status code,
// HTTP version ("HTTP/1.1", from the status line; "HTTP/2" as curl writes
// an h2 response, whose body ends with its stream: kClose means "until
// END_STREAM" there) and header fields.
// InvalidArgument, with a message naming the rule, for invalid framing:
// - any Transfer-Encoding in an HTTP/2 response (RFC 9113 8.2.2);
// - Content-Length values that are not 1*DIGIT, or that differ (a list or
//   repeated field of identical values is one value, RFC 9110 8.6);
// - Transfer-Encoding in an HTTP/1.0 response (RFC 9112 6.1: faulty);
// - a transfer coding other than a single "chunked": we send no TE header
//   (RFC 9110 10.1.4), so no other coding may be used, and a body still
//   transfer-coded would be stored as if it were the payload ("identity"
//   is ignored).
// Transfer-Encoding with Content-Length is framed by the Transfer-Encoding
// (RFC 9112 6.3 item 3: it "overrides the Content-Length"), and `note`
// says so: the message "ought to be handled as an error", but the body's
// end is well defined, and a crawler that dropped such pages would lose
// what every browser shows. The checks do not apply to bodyless statuses,
// whose framing headers describe nothing.
[[nodiscard]] Result<BodyFraming> FramingOf(
    int status, std::string_view version,
    const std::vector<std::pair<std::string, std::string>>& headers);

// Incremental decoder of the chunked transfer coding (RFC 9112 7.1):
//   chunked-body = *chunk last-chunk trailer-section CRLF
// Chunk extensions are skipped; a bare LF is accepted where CRLF is
// expected (RFC 9112 2.2); trailer fields are read and dropped. At least as
// strict as curl's own chunk parser (curl 7.88 lib/http_chunks.c), so
// every stream curl rejects is rejected here first. Not thread-safe.
class ChunkedDecoder {
 public:
  // A chunk-size line (size and extensions) longer than this is refused.
  static constexpr size_t kMaxLineBytes = 4096;
  // The trailer section may hold this many bytes at most.
  static constexpr size_t kMaxTrailerBytes = 32 * 1024;

  // Decodes `in`, passing the chunk data, in order, to `sink`. Returns OK
  // (more input may follow, or done()), InvalidArgument naming the defect
  // for a malformed stream (the decoder then stays failed), or the first
  // non-OK status of `sink` (decoding stops there). Bytes after the end of
  // the chunked body are ignored.
  [[nodiscard]] Status Feed(
      std::string_view in, const std::function<Status(std::string_view)>& sink);

  // True once the last chunk and the trailer section have been read.
  [[nodiscard]] bool done() const { return state_ == State::kDone; }

 private:
  enum class State {
    kSize,       // hex digits of chunk-size
    kSizeTail,   // BWS and chunk extensions up to the line end
    kSizeLf,     // CR seen at the end of the size line
    kData,       // `remaining_` bytes of chunk data
    kDataCr,     // CRLF after chunk data
    kDataLf,     // CR seen after chunk data
    kTrailer,    // a trailer line (an empty one ends the body)
    kTrailerLf,  // CR seen in the trailer section
    kDone,
    kFailed,
  };
  Status Fail(std::string why);
  // The size line ended.
  void EndSizeLine();
  // A trailer line ended; returns true at the empty line.
  bool EndTrailerLine();

  State state_ = State::kSize;
  uint64_t size_ = 0;  // chunk-size being read
  int digits_ = 0;     // hex digits read for it
  bool in_extension_ = false;
  size_t line_bytes_ = 0;  // of the current size or trailer line
  size_t trailer_bytes_ = 0;
  uint64_t remaining_ = 0;  // of the current chunk's data
  std::string error_;
};

}  // namespace crawld::fetcher::internal

#endif  // CRAWLD_FETCHER_FRAMING_H_
