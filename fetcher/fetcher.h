// fetcher/fetcher.h: HTTP/1.1 and HTTP/2 fetches on a worker's libuv loop,
// and the
// Content-Encoding decoder for what they bring back.
//
// Backed by curl's multi interface driven by the loop (the multi_socket
// pattern of curl's docs/examples/multi-uv.c: CURLMOPT_SOCKETFUNCTION and
// CURLMOPT_TIMERFUNCTION with a context pointer, one uv_poll per socket, one
// uv_timer). The design, the callbacks and the per-fetch state machine are
// written up in docs/LOOP.md. HTTP semantics: RFC 9110/9112
// (https://www.rfc-editor.org/rfc/rfc9110, rfc9112).
//
// Deliberate choices, each differing from curl's defaults:
// - Redirects are never followed; the caller sees the 3xx and its Location
//   and sends the target through canonicalization, filters and politeness.
// - curl does no DNS: the caller resolves with dns::Resolver and passes the
//   address, which is pinned in a DNS cache of the transfer's own
//   (CURLOPT_RESOLVE; CURLOPT_CONNECT_TO for IP-literal hosts), so that
//   keep-alive reuse is keyed on the host name; TLS still verifies the URL's
//   host name. Proxies from the environment are ignored.
// - Bodies are kept raw as received (no Content-Encoding decoding by curl),
//   because the WARC record must hold the bytes on the wire; DecodeBody()
//   decodes for the parser. The chunked transfer coding is undone by the
//   fetcher itself (fetcher/framing.h), not by curl.
// - A response is judged by its framing (RFC 9112 section 6.3), not by
//   curl's result alone: a head with invalid framing (differing or
//   malformed Content-Length) is discarded as RFC 9112 requires; a chunked
//   body that fails to decode is kept as incomplete (RFC 9112 section 8);
//   Transfer-Encoding overrides a Content-Length (6.3 item 3, noted in
//   framing_note); and a body is complete exactly when its Content-Length
//   is reached, its last chunk was read, or (close-delimited) the server
//   closed the connection.
// - The whole-transfer and low-speed limits are kept by the fetcher, not by
//   curl (curl 7.88 checks CURLOPT_TIMEOUT before it reads, so a loop
//   blocked past the limit cut responses that had arrived in full, issue
//   19): a watchdog timer ticks every 100 ms while transfers are in flight;
//   a transfer over a limit is cut only after every readable socket has
//   been read; and a tick that comes over half a second late means the
//   loop was blocked, so that time is added to every transfer's deadline
//   and the low-speed windows start again. curl keeps the connect timeout.
// - Only http and https; the URL path is sent as given
//   (CURLOPT_PATH_AS_IS), since it is canonical already. HTTP/1.1, with
//   keep-alive reuse; with Options::http2, HTTP/2 (RFC 9113) where a TLS
//   server picks "h2" by ALPN, never over plain http (no h2c upgrade).
//   Never several transfers on one h2 connection at once (curl's
//   multiplexing is off, CURLPIPE_NOTHING): the caller's one fetch per host
//   stays one request in flight, and an idle h2 connection is reused by
//   the host's next fetch as a keep-alive one is. An h2 exchange is handed
//   over in HTTP/1.1 syntax (fetcher/h2_head.h: "HTTP/1.1 200 ", names
//   lower-case as received) with Response::protocol "h2".
#ifndef CRAWLD_FETCHER_FETCHER_H_
#define CRAWLD_FETCHER_FETCHER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/doc_buffer.h"
#include "base/status.h"

typedef struct uv_loop_s uv_loop_t;

namespace crawld::fetcher {

struct Options {
  // --- behaviour ---

  // User-Agent header value; empty sends none.
  std::string user_agent;
  // Time to establish TCP (and TLS), milliseconds, clamped to [1, total].
  int64_t connect_timeout_ms = 10000;
  // Whole transfer, milliseconds, clamped to >= 1. Time during which the
  // loop was blocked (a callback ran for long) is added to it, up to the
  // same amount again.
  int64_t total_timeout_ms = 60000;
  // A transfer that receives fewer than low_speed_bytes_per_s (bytes per
  // second) on average over low_speed_time_s (seconds) of loop time is cut
  // off with kTimeout; 0 in either disables the check.
  int64_t low_speed_bytes_per_s = 100;
  int64_t low_speed_time_s = 30;
  // Body cap, bytes (after the chunked coding is undone). A larger body is
  // stopped; the response is kept with what fit, truncated = true and
  // error kTooLarge. Clamped to >= 1.
  uint64_t max_body_bytes = 10 << 20;
  // Cap on the response head, bytes: status line and header lines of the
  // final head and of any interim 1xx heads before it. A larger head fails
  // with kHeaderTooLarge and nothing of it is kept. Clamped to
  // [1 KiB, 256 KiB] (curl refuses 300 KB on its own, and any single line
  // over 100 KB, which is reported as kHeaderTooLarge too).
  uint64_t max_header_bytes = 128 * 1024;
  // Verify the server certificate and host name (https). ca_file: PEM
  // bundle path; empty = the system store.
  bool verify_tls = true;
  std::string ca_file;
  // Accept-Encoding header value; empty sends none. Bodies are NOT decoded
  // while fetched; DecodeBody() undoes every coding listed here by default
  // (kDecodableCodings).
  std::string accept_encoding = "gzip, deflate, br, zstd";
  // Offer HTTP/2 in the TLS handshake (ALPN "h2", then "http/1.1") and use
  // it when the server picks it; false: HTTP/1.1 everywhere. Plain http is
  // always HTTP/1.1.
  bool http2 = true;

  // --- performance ---

  // Transfers in progress at most. Further transfers wait in a FIFO in the
  // Fetcher; their timeouts start when they leave it. Clamped to
  // [1, 100000].
  size_t max_connections = 64;
  // Idle keep-alive connections kept for the next request to their host,
  // least recently used closed first; open connections are at most
  // max_connections + max_idle_connections. Clamped to [0, 100000].
  size_t max_idle_connections = 64;
  // Memory threshold (bytes) and spill directory of each response body.
  DocBuffer::Options body_buffer;

  // --- seams ---

  // Called on every state change of a fetch, for debug logs; may be empty.
  // The views are valid during the call only.
  std::function<void(std::string_view url, std::string_view from,
                     std::string_view to)>
      on_state_change;
};

// Why a fetch failed. kNone with any status code (404 included) is a
// successful transfer: the whole response arrived, framed as it said.
//
// What the caller may record depends on the class and on status_code:
//   status_code == 0  no response to record (no complete head, a head
//                     whose framing is invalid, or a transfer we aborted):
//                     kConnect, kTimeout, kTls, kProtocol, kHeaderTooLarge,
//                     kFraming, kAborted (always), kOther
//   status_code  > 0  a complete head, with the body as far as it arrived:
//                     kNone (complete), or kTooLarge, kTimeout, kIncomplete,
//                     kOther with truncated = true
// docs/STORE.md ("Failed transfers") says what the WARC gets for each.
enum class ErrorClass {
  kNone,
  kConnect,         // TCP connect refused/unreachable, connection reset or lost
                    // before the head completed
  kTimeout,         // connect, total or low-speed timeout
  kTls,             // handshake failure, certificate verification
  kTooLarge,        // body over max_body_bytes (what fit is kept)
  kProtocol,        // malformed response head (bad status line), empty reply,
                    // connection closed before the head completed
  kHeaderTooLarge,  // the head was over max_header_bytes (or one line over
                    // curl's 100 KB): nothing of it is kept
  kFraming,         // invalid message framing in the head (RFC 9112 6.3):
                    // differing or malformed Content-Length,
                    // Transfer-Encoding in HTTP/1.0, a transfer coding other
                    // than chunked; the response is discarded
  kIncomplete,      // the head arrived but not the whole body its framing
                    // announced: closed or reset before Content-Length or
                    // the last chunk (truncated "disconnect"), or a chunked
                    // coding that failed to decode, which RFC 9112 8 says to
                    // record as incomplete (truncated "unspecified"); what
                    // arrived is kept
  kAborted,         // Shutdown() cancelled the transfer
  kOther,           // bad request arguments, out of memory, local I/O errors
};

// Stable lower-case name: "none", "connect", "timeout", "tls", "too_large",
// "protocol", "header_too_large", "framing", "incomplete", "aborted",
// "other". The view is static.
std::string_view ErrorClassName(ErrorClass c);

// One GET.
struct Request {
  // Absolute http(s) URL, already canonical; sent as is.
  std::string url;
  // IPv4 or IPv6 literal to connect to (from our resolver); required.
  std::string ip;
  // Extra request headers, "Name: value". An Accept-Encoding here replaces
  // Options::accept_encoding.
  std::vector<std::string> extra_headers;
  // Per-request overrides; 0 = the Options value (bytes, milliseconds).
  uint64_t max_body_bytes = 0;
  int64_t total_timeout_ms = 0;
  // false: close the connection after this transfer instead of keeping it
  // idle (the caller has nothing more for this host). An idle connection
  // that no transfer will reuse only waits for the server to close it, and
  // curl then probes it for liveness with every other idle one.
  bool keep_alive = true;
};

struct Response {
  ErrorClass error = ErrorClass::kNone;
  std::string error_message;  // what went wrong; empty on success
  // The final status code, or 0 when there is no response to record: no
  // complete head arrived, or the head's framing was invalid (kFraming;
  // RFC 9112 6.3 requires discarding such a response). When 0, the head,
  // headers and body are empty.
  int status_code = 0;
  // Raw request head as sent on the wire (from the debug callback); for
  // HTTP/2, the request as sent in HTTP/1.1 syntax (fetcher/h2_head.h).
  std::string request_head;
  // Raw status line + header lines + CRLF CRLF of the final response
  // (interim 1xx heads and trailers are dropped); for HTTP/2, the status
  // line is "HTTP/1.1 NNN " and the fields are as received (lower-case).
  std::string response_head;
  // The protocol of the exchange, as an ALPN id: "http/1.1", "http/1.0" or
  // "h2"; "" when status_code is 0.
  std::string protocol;
  // Parsed response_head fields in order, names as sent.
  std::vector<std::pair<std::string, std::string>> headers;
  // First value of header `name` (case-insensitive); "" if absent.
  std::string Header(std::string_view name) const;
  // The body as received, transfer coding (chunked) undone, content coding
  // (gzip, br, ...) intact.
  DocBuffer body;
  // The head arrived but not the whole body its framing announced: cap
  // hit, timeout, connection lost. Set also when not one body byte came.
  bool truncated = false;
  // WARC-Truncated reason when truncated: "length" (kTooLarge), "time"
  // (kTimeout), "disconnect" (kIncomplete: the server closed),
  // "unspecified" (kIncomplete: a malformed chunk; kOther: a local failure
  // such as a full spill disk).
  std::string truncated_reason;
  // A framing oddity the response survived, for logs and counters; ""
  // normally. Today: Transfer-Encoding with Content-Length, framed by the
  // Transfer-Encoding (RFC 9112 6.3 item 3).
  std::string framing_note;
  std::string ip;                    // the address actually connected
  int64_t start_us = 0, end_us = 0;  // wall clock, epoch microseconds
};

// Counters for tests and metrics; monotonic over the Fetcher's life.
struct Stats {
  uint64_t submitted = 0;
  uint64_t completed = 0;    // done callbacks run (any outcome)
  uint64_t connections = 0;  // new connections opened (not reused)
  // Transfers asked to keep their connection (keep_alive: the host has
  // more pages queued) that closed it after them instead, because
  // max_connections + max_idle_connections were open: the idle pool was
  // full. Each costs the host's next page a new handshake.
  uint64_t connections_not_kept = 0;
  // Most connections open at once (in use and idle): at most
  // max_connections + max_idle_connections, plus the max_connections
  // transfers that close theirs after their page.
  uint64_t peak_open_connections = 0;
  // New connections by connection pool (one curl multi handle each; a
  // host's origin picks its pool), one entry per pool: how evenly the
  // origins spread.
  std::vector<uint64_t> connections_by_pool;
  // Times the loop was found blocked for over half a second while
  // transfers were in flight, and the total of those blocks (ms); their
  // time was added to the transfers' limits.
  uint64_t loop_stalls = 0;
  uint64_t loop_stall_ms = 0;
};

// One Fetcher per worker loop. Not thread-safe: every call and every
// callback happens on the loop passed to Create(). Not copyable.
class Fetcher {
 public:
  // Attaches a curl multi handle to `loop` (not owned; must outlive the
  // Fetcher and stay open until the loop has run the close callbacks after
  // Shutdown). Options are sanitized here. Fails with Internal if curl
  // cannot create a multi handle.
  // REQUIRES: curl_global_init() was called by main().
  [[nodiscard]] static Result<std::unique_ptr<Fetcher>> Create(
      uv_loop_t* loop, const Options& options);

  // Calls Shutdown() if it was not called.
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // Starts fetching `request` (taken over). `done` runs exactly once, later
  // on the loop, never inside Submit(); it receives the Response by rvalue
  // and may keep it. An invalid request (not http(s), ip not a literal)
  // completes with kOther. After Shutdown(), `done` receives kAborted.
  // It is allowed to Submit, Shutdown or destroy the Fetcher from `done`.
  void Submit(Request request, std::function<void(Response&&)> done);

  // Transfers submitted whose `done` has not run yet.
  [[nodiscard]] size_t in_flight() const;
  // Live counters, valid as long as the Fetcher.
  [[nodiscard]] const Stats& stats() const;

  // Aborts every transfer (each `done` runs with kAborted and status_code
  // 0, before Shutdown returns: nothing of a cut transfer is to be
  // recorded), cleans up curl and closes the uv handles. Idempotent. The loop
  // must run once more (uv_run) to finish closing the handles before
  // uv_loop_close().
  void Shutdown();

 private:
  struct Impl;
  explicit Fetcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Retry-After (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date
// (IMF-fixdate). Returns microseconds from `now_epoch_s`, 0 for a date in
// the past, capped at one day; -1 when absent or unreadable (the caller
// then backs off on its own).
[[nodiscard]] int64_t ParseRetryAfter(std::string_view value,
                                      int64_t now_epoch_s);

// The content codings DecodeBody() undoes, as an Accept-Encoding value.
inline constexpr std::string_view kDecodableCodings = "gzip, deflate, br, zstd";

// Decodes the Content-Encoding of `response` (RFC 9110 8.4.1: gzip, x-gzip,
// deflate as zlib or raw DEFLATE; br, RFC 7932; zstd, RFC 8878 with a
// window of at most 8 MiB; identity; a list is undone right to left, at
// most 4 codings) into at most `max_bytes` of output.
// Decompression-bomb safe: it stops at the cap and then sets *capped (if
// given) to true; the prefix is returned as success. A body cut short
// (response.truncated) yields what could be decoded. An empty body is
// empty whatever its coding.
// Errors (the body is undecodable; nothing of it is returned):
// InvalidArgument for an unsupported coding (e.g. "compress") or more than
// 4; Corruption for a damaged or (untruncated but) incomplete stream;
// IOError when the body's spill file cannot be read.
[[nodiscard]] Result<std::string> DecodeBody(const Response& response,
                                             size_t max_bytes,
                                             bool* capped = nullptr);

// DecodeBody() without a copy where none is needed: when the body has no
// content coding and is in memory, the result is a view of (a prefix of)
// response.body; otherwise the decoded bytes go into `*storage` (cleared
// first) and the result views it. The view is valid while both `response`
// and `*storage` are unchanged. Same results and errors as DecodeBody().
// REQUIRES: storage != nullptr.
[[nodiscard]] Result<std::string_view> DecodeBodyView(const Response& response,
                                                      size_t max_bytes,
                                                      std::string* storage,
                                                      bool* capped = nullptr);

}  // namespace crawld::fetcher

#endif  // CRAWLD_FETCHER_FETCHER_H_
