// http/options.h: the knobs of the admin HTTP server and of the loopback
// client (http/http.h). Defaults are what crawld uses; docs/API.md lists
// them for operators.
#ifndef CRAWLD_HTTP_OPTIONS_H_
#define CRAWLD_HTTP_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/json.h"

namespace crawld::http {

struct AccessRecord;  // http.h

// Limits the request parser enforces; part of ServerOptions.
struct RequestLimits {
  // Request line plus header names and values, in bytes -> 431.
  size_t max_header_bytes = 16 * 1024;
  // Number of header fields -> 431.
  size_t max_headers = 100;
  // De-chunked body, in bytes -> 413 (checked against Content-Length before
  // the body is read).
  size_t max_body_bytes = 1 << 20;
};

struct ServerOptions {
  // --- behaviour
  // Numeric IPv4 or IPv6 address to listen on. Not a loopback address
  // (127.0.0.0/8, ::1) requires a token.
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 picks a free ephemeral port (see Server::port()).
  uint16_t port = 0;
  // When not empty, requests need "Authorization: Bearer <token>" (401
  // otherwise).
  std::string token;
  // When false, GET and HEAD go without the token and only the other
  // methods (the mutating ones) need it. Ignored without a token.
  bool token_for_reads = true;

  // --- limits
  RequestLimits request;
  // JSON bodies read through Request::JsonBody() in handlers should use
  // these (the server itself never parses bodies).
  json::Limits json;
  // Open connections. When all are open and one more arrives, the open
  // connection that has waited longest for a request (an idle keep-alive
  // one, one that never sent a byte, one whose request is still arriving,
  // or one closing after an error) is closed to make room: connections
  // that only hold a socket cannot lock the API out (issue 19). Only when
  // every connection has a request in a handler or a response being
  // written is the new one answered 503 and closed.
  size_t max_connections = 64;
  // From the first byte of a request to its last (and for writing a
  // response), in ms; then 408 and close. Defeats slowloris.
  uint64_t request_timeout_ms = 10'000;
  // A connection with no request in progress (keep-alive, or new and
  // silent) is closed after this many ms.
  uint64_t idle_timeout_ms = 60'000;
  // A handler that has not responded after this many ms gets a 503 sent
  // on its behalf, and the connection is closed.
  uint64_t handler_timeout_ms = 30'000;
  // listen() backlog.
  int backlog = 128;

  // --- collaborators
  // Called on the loop for every response the server sends (handler
  // answers and the server's own errors), e.g. to count requests by
  // status in metrics or to write an access log. Must not block.
  std::function<void(const AccessRecord&)> on_response;
};

struct ClientOptions {
  // Connect plus the whole exchange, per call, in ms.
  uint64_t timeout_ms = 2000;
  // A longer reply body fails the call (a runaway peer cannot grow memory
  // without bound).
  size_t max_reply_bytes = 64u << 20;
};

}  // namespace crawld::http

#endif  // CRAWLD_HTTP_OPTIONS_H_
