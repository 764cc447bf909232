// http/http.h: the admin HTTP/1.1 server of crawld on the caller's libuv
// loop, and the small loopback client the supervisor asks its workers with.
//
// HTTP/1.1 per RFC 9112 (message syntax, parsed by Joyent's http-parser)
// and RFC 9110 (semantics). JSON bodies use base/json.h. Conventions,
// limits and the endpoint list: docs/API.md. Deliberate choices:
//  - Only origin-form request targets ("/path?query"); anything else is 400.
//  - Requests on one connection are answered strictly in order, one at a
//    time: the next pipelined request is parsed only once the previous
//    response is written, which is also the connection's backpressure.
//  - Every error is a JSON object {"error": "...", "status": N}, and every
//    error found while parsing (400, 408, 413, 431) closes the connection,
//    since the rest of the byte stream can no longer be trusted.
//  - A protocol upgrade (an Upgrade header, e.g. a websocket handshake) is
//    400: RFC 9110 section 7.8 lets a server ignore Upgrade, and answering
//    it with a plain 200 would tell the client the switch happened.
//  - Bearer token auth (RFC 6750) with a constant-time compare; a server on
//    a non-loopback address without a token refuses to start.
//  - Connections that only hold a socket never lock others out: when the
//    connection cap is reached, the one that has waited longest for a
//    request makes room (ServerOptions::max_connections).
#ifndef CRAWLD_HTTP_HTTP_H_
#define CRAWLD_HTTP_HTTP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "http/options.h"

struct uv_loop_s;  // uv_loop_t, from <uv.h>

namespace crawld::http {

// ---------------------------------------------------------------------------
// Messages

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One parsed request. Handlers get it by const reference, valid only during
// the handler call: an asynchronous handler copies what it needs.
struct Request {
  std::string method;  // as sent, e.g. "GET"
  std::string target;  // the raw request-target, e.g. "/api/docs?limit=5"
  std::string path;    // target up to '?', still percent-encoded
  // path split on '/' (after the leading one), each segment percent-decoded,
  // so "/api/hosts/a%2Fb" has segments {"api", "hosts", "a/b"}.
  std::vector<std::string> segments;
  // Query parameters in order, '+' and %XX decoded (form-urlencoded);
  // a parameter without '=' has an empty value.
  std::vector<std::pair<std::string, std::string>> query;
  HeaderList headers;  // names lower-cased, values trimmed, in order
  // Path parameters filled in by the route, e.g. {"host", "example.com"}.
  std::vector<std::pair<std::string, std::string>> params;
  std::string body;    // de-chunked
  int http_minor = 1;  // HTTP/1.<minor>

  // The first value of query parameter `key`, or nullptr.
  [[nodiscard]] const std::string* QueryValue(std::string_view key) const;
  // The first header named `name` (case-insensitive), or nullptr.
  [[nodiscard]] const std::string* Header(std::string_view name) const;
  // The path parameter `name` of the matched route, or nullptr.
  [[nodiscard]] const std::string* Param(std::string_view name) const;
  // The body parsed by json::Parse; an empty body is an error.
  [[nodiscard]] Result<Json> JsonBody(const json::Limits& limits = {}) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers. Content-Length, Content-Type, Connection and Date are
  // written by the server and must not be given here. Cache-Control
  // (default "no-store") and Content-Security-Policy (default
  // "default-src 'none'; frame-ancestors 'none'") given here replace the
  // server's defaults; X-Content-Type-Options: nosniff is always sent.
  HeaderList headers;

  // body = json::Dump(body).
  static Response MakeJson(int status, const Json& body);
  // {"error": message, "status": status}.
  static Response MakeError(int status, std::string_view message);
  static Response MakeText(int status, std::string body,
                           std::string content_type = "text/plain");
};

// The reason phrase for a status code ("Not Found"), "" if unknown.
std::string_view StatusReason(int status);

// The server's incremental request parser, without sockets: bytes in,
// requests or an error out. Exposed so that tests and the fuzz target drive
// exactly the code the server runs. Not thread-safe.
class RequestReader {
 public:
  enum class State {
    kNeedMore,  // everything fed so far is (part of) a valid request
    kRequest,   // a whole request is ready in TakeRequest()
    kError,     // the stream is broken; error_status() says how
  };

  explicit RequestReader(const RequestLimits& limits);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Parses from the front of data, stopping right after the end of one
  // request. Returns the bytes consumed: fewer than data.size() only when
  // the state became kRequest (the rest belongs to the next request) or
  // kError. REQUIRES: state() == kNeedMore.
  size_t Feed(std::string_view data);

  [[nodiscard]] State state() const;
  // True once any byte of the current request has been consumed.
  [[nodiscard]] bool started() const;
  // REQUIRES: state() == kRequest. Returns the request and readies the
  // reader for the next one on the same connection (state kNeedMore).
  Request TakeRequest(bool* keep_alive);
  // True, once per request, when the request's headers asked for
  // "Expect: 100-continue" and its body has not started: the server then
  // sends "100 Continue" so that clients such as curl do not wait.
  bool TakeExpectContinue();
  // For kError: the HTTP status to answer (400, 413, 431) and why.
  [[nodiscard]] int error_status() const;
  [[nodiscard]] const std::string& error_message() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// The server

// The way back to the client for one request. Copyable (handlers are
// std::function); every copy refers to the same pending request. If the last
// copy is destroyed before anything was sent, the client gets a 500.
// Loop affinity: use only on the server's loop.
class Responder {
 public:
  // Sends the response. Returns false, sending nothing, when a response was
  // already sent for this request, when the connection has gone away or
  // timed out in the meantime, or when the server was destroyed.
  bool Send(Response response) const;
  bool SendJson(int status, const Json& body) const {
    return Send(Response::MakeJson(status, body));
  }
  bool SendError(int status, std::string_view message) const {
    return Send(Response::MakeError(status, message));
  }

  struct Pending;  // internal
  explicit Responder(std::shared_ptr<Pending> pending)
      : pending_(std::move(pending)) {}

 private:
  std::shared_ptr<Pending> pending_;
};

using Handler = std::function<void(const Request&, Responder)>;

// One answered request, for ServerOptions::on_response. The views are
// valid only during the call.
struct AccessRecord {
  std::string_view method;  // empty when the request could not be parsed
  std::string_view path;    // raw (percent-encoded) path, or empty
  int status = 0;
  size_t body_bytes = 0;     // response body size
  uint64_t duration_ms = 0;  // from the complete request to the response
};

// An HTTP/1.1 server with a routing table, on one libuv loop.
//
// Loop affinity: every method, every handler call and every Responder use
// happens on the loop given to Create(); nothing here starts a thread.
class Server {
 public:
  using Options = ServerOptions;

  // Validates options, binds and starts listening on loop.
  // Fails with InvalidArgument for an unparsable address or a zero limit,
  // FailedPrecondition for a non-loopback address without a token, IOError
  // when bind/listen fails (e.g. the port is taken).
  // REQUIRES: loop outlives the server and is run by the caller.
  [[nodiscard]] static Result<std::unique_ptr<Server>> Create(
      uv_loop_s* loop, const Options& options);

  // Closes the listener and every connection at once (in-flight requests
  // are dropped; their Responders then return false). The loop must run
  // once more afterwards to release the handles.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Adds a route: method (exact, e.g. "GET"; a GET route also answers
  // HEAD) and a pattern of '/'-separated segments, each literal or
  // "{name}", which matches one non-empty decoded segment and is passed as
  // Request::Param(name). Among matching routes the one with the most
  // literal segments wins. A path that matches no pattern is 404; one that
  // matches only under other methods is 405 with an Allow header.
  // Fails with InvalidArgument for a bad pattern or a duplicate route.
  // May be called at any time on the loop.
  [[nodiscard]] Status Route(std::string_view method, std::string_view pattern,
                             Handler handler);

  // A GET route (HEAD too) served without the bearer token even when one
  // is configured: only for content that is the same in every crawld build
  // and tells nothing about the crawl (the console's static files, see
  // console/console.h). Listening rules and the browser checks apply as to
  // any route. Fails like Route().
  [[nodiscard]] Status PublicRoute(std::string_view pattern, Handler handler);

  // The bound port (the chosen one when Options::port was 0).
  [[nodiscard]] uint16_t port() const;
  // Open connections now.
  [[nodiscard]] size_t connection_count() const;
  // Connections closed so far to make room for a new one.
  [[nodiscard]] uint64_t evicted_count() const;

  struct Impl;  // internal

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 written as numeric
// addresses; false for anything else, including names.
[[nodiscard]] bool IsLoopbackAddress(std::string_view numeric_address);

// ---------------------------------------------------------------------------
// Browser checks (docs/API.md, "Cross-site requests"; docs/SECURITY.md)
//
// The server runs both on every request, in this order: CheckBrowserRequest
// before the token (a forged request is refused whatever it carries), and
// CheckJsonContentType once a route matched (so that 404 and 405 stay as
// they were). Public so that the unit tests and the request fuzz target
// drive the server's own code; a handler never needs them.

// 0 when req may go on, else 403 with the reason in *why:
//  - without a token (token_configured false), a Host header that names
//    neither a loopback address nor "localhost": a page whose DNS name was
//    rebound to 127.0.0.1 would otherwise be same-origin with the API;
//  - for a method other than GET and HEAD, Sec-Fetch-Site other than
//    "same-origin" or "none" (typed by the user), or an Origin header that
//    is not this server as named by Host ("null" included).
// Requests without these headers (curl, crawlctl, the supervisor) pass.
[[nodiscard]] int CheckBrowserRequest(const Request& req, bool token_configured,
                                      std::string* why);

// 0 for GET and HEAD, or when Content-Type's media type is
// application/json (any parameters); else 415 with the reason in *why. No
// cross-site form can send that type, and a cross-origin fetch() of it
// needs a CORS preflight that this server never answers.
[[nodiscard]] int CheckJsonContentType(const Request& req, std::string* why);

// ---------------------------------------------------------------------------
// The client

// HTTP calls on a libuv loop, without blocking it: libcurl's multi
// interface driven by the loop's poll handles and a timer, the pattern of
// fetcher/ (curl docs/examples/multi-uv.c). Meant for crawld's own
// loopback calls (the supervisor asking its workers): no proxy, no
// redirects, http:// only.
//
// Loop affinity: every method and every callback on the loop given to
// Create(). REQUIRES: curl_global_init() was called.
class Client {
 public:
  using Options = ClientOptions;

  struct Call {
    std::string method = "GET";  // GET or POST
    std::string url;             // e.g. "http://127.0.0.1:40123/api/status"
    std::string body;            // POST body, sent as application/json
    std::string token;           // bearer token; empty = none
  };

  struct Reply {
    bool ok = false;  // a whole response arrived (any status)
    // Nothing reached the server (refused, bad URL): the call may be
    // tried elsewhere without having acted twice.
    bool connect_failed = false;
    int status = 0;
    std::string content_type;  // as sent, may be empty
    std::string body;
    std::string error;  // why not ok
  };

  using Done = std::function<void(Reply)>;

  // Fails with Internal when curl's multi handle cannot be made.
  [[nodiscard]] static Result<std::unique_ptr<Client>> Create(
      uv_loop_s* loop, const Options& options);

  // Abandons the calls in flight: their Done is never called. The loop
  // must run once more afterwards to release the handles.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts a call. done runs exactly once, later, on the loop (never
  // inside Start), unless the Client is destroyed first. done may destroy
  // the Client.
  void Start(Call call, Done done);

  // Calls started and not yet delivered.
  [[nodiscard]] size_t in_flight() const;

  struct Impl;  // internal

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawld::http

#endif  // CRAWLD_HTTP_HTTP_H_
