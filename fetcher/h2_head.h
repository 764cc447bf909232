// fetcher/h2_head.h: an HTTP/2 exchange written as HTTP/1.1 messages, the
// form archival tools read (WARC extensions for HTTP/2, iipc
// warc-specifications "warc-http2": the decoded h2 headers in HTTP/1.1
// syntax, the protocol in a WARC-Protocol field). Private to fetcher/ (and
// its tests and fuzz target).
//
// curl shows an h2 exchange in an HTTP/1-like text that is no valid HTTP
// message: its debug callback gives the request as "GET /p HTTP/2", "Host:"
// (its :authority) and the other fields, and its header callback gives the
// response as "HTTP/2 200 " and the fields as received. These functions
// turn that text into HTTP/1.1 syntax, and keep everything else as it is:
// - request line: "METHOD SP path SP HTTP/1.1" (the :method and :path
//   pseudo-headers); :scheme is left out (WARC-Target-URI carries it);
// - "Host:" becomes "host: " + the :authority, in its place;
// - field names lower-case, as HTTP/2 sends them (RFC 9113 8.2.1);
//   values byte for byte;
// - fields curl's h2 layer does not send (RFC 9113 8.2.2 connection-
//   specific fields: Connection, Keep-Alive, Proxy-Connection,
//   Transfer-Encoding, Upgrade, and TE other than "trailers") are left out,
//   so the record holds what went on the wire;
// - status line: "HTTP/1.1" SP status-code SP CRLF: HTTP/2 has no reason
//   phrase and none is invented (RFC 9112 4 allows an empty one).
// Nothing of the binary framing is kept: no HPACK state, no frames,
// settings, stream ids or priorities.
#ifndef CRAWLD_FETCHER_H2_HEAD_H_
#define CRAWLD_FETCHER_H2_HEAD_H_

#include <string>
#include <string_view>

namespace crawld::fetcher::internal {

// True when `line` (a status line as curl gives it, line end included or
// not) is curl's rendering of an HTTP/2 response: "HTTP/2 " then a code.
[[nodiscard]] bool IsH2StatusLine(std::string_view line);

// "HTTP/2 200 \r\n" -> "HTTP/1.1 200 \r\n": the three-digit status code
// kept, the reason phrase empty, CRLF. A line that is not an h2 status line
// (IsH2StatusLine false) is returned unchanged.
[[nodiscard]] std::string Http11StatusLine(std::string_view line);

// True when `head` (curl's request head) has an HTTP/2 request line
// ("... HTTP/2").
[[nodiscard]] bool IsH2RequestHead(std::string_view head);

// curl's h2 request head ("GET /p HTTP/2\r\nHost: a\r\nuser-agent: x\r\n
// \r\n") as an HTTP/1.1 request head (file comment). Lines end in CRLF
// (a bare LF is taken as a line end); the result ends in CRLF CRLF. A head
// that is not an h2 request head (IsH2RequestHead false) is returned
// unchanged. Never fails: a line without a colon is kept as it is.
[[nodiscard]] std::string Http11RequestHead(std::string_view head);

}  // namespace crawld::fetcher::internal

#endif  // CRAWLD_FETCHER_H2_HEAD_H_
