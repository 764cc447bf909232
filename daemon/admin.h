// daemon/admin.h: the admin HTTP/1.1 server of crawld, on the caller's
// libuv loop, and the small strict JSON value it reads and writes.
//
// HTTP/1.1 per RFC 9112 (message syntax, parsed by Joyent's http-parser)
// and RFC 9110 (semantics); JSON per RFC 8259. Conventions, limits and the
// endpoint list: docs/API.md. Deliberate choices:
//  - Only origin-form request targets ("/path?query"); anything else is 400.
//  - Requests on one connection are answered strictly in order, one at a
//    time: the next pipelined request is parsed only once the previous
//    response is written, which is also the connection's backpressure.
//  - Every error is a JSON object {"error": "...", "status": N}, and every
//    error found while parsing (400, 408, 413, 431) closes the connection,
//    since the rest of the byte stream can no longer be trusted.
//  - Bearer token auth (RFC 6750) with a constant-time compare; a server on
//    a non-loopback address without a token refuses to start.
//  - JSON duplicate object keys are an error, and strings must be UTF-8.
#ifndef CRAWLD_DAEMON_ADMIN_H_
#define CRAWLD_DAEMON_ADMIN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"

struct uv_loop_s;  // uv_loop_t, from <uv.h>

namespace crawld::daemon {

// ---------------------------------------------------------------------------
// JSON

// Limits applied by Json::Parse to untrusted text.
struct JsonLimits {
  // Longest accepted input, in bytes.
  size_t max_bytes = 1 << 20;
  // Deepest nesting of arrays and objects; 1 is a flat array or object.
  // Bounds the parser's recursion and the value's destructor's.
  int max_depth = 64;
};

// A JSON value: null, bool, number (a double), string (UTF-8), array or
// object (members kept in insertion order). A plain value type; copies are
// deep.
class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Object = std::vector<Member>;

  Json() = default;                                 // null
  Json(std::nullptr_t) {}                           // NOLINT
  Json(bool b) : v_(b) {}                           // NOLINT
  Json(int n) : v_(static_cast<double>(n)) {}       // NOLINT
  Json(int64_t n) : v_(static_cast<double>(n)) {}   // NOLINT
  Json(uint64_t n) : v_(static_cast<double>(n)) {}  // NOLINT
  Json(double n) : v_(n) {}                         // NOLINT
  Json(const char* s) : v_(std::string(s)) {}       // NOLINT
  Json(std::string_view s) : v_(std::string(s)) {}  // NOLINT
  Json(std::string s) : v_(std::move(s)) {}         // NOLINT
  Json(Array a) : v_(std::move(a)) {}               // NOLINT
  static Json MakeObject() { return Json(Object()); }
  static Json MakeArray() { return Json(Array()); }

  // Parses one JSON text (RFC 8259: any value at the top, surrounding
  // whitespace allowed). Fails with InvalidArgument naming the byte offset
  // on a syntax error, invalid UTF-8 or a lone surrogate, a duplicate object
  // key, a number out of double range, or trailing bytes; with
  // ResourceExhausted past the limits. Never crashes on any input.
  [[nodiscard]] static Result<Json> Parse(std::string_view text,
                                          const JsonLimits& limits = {});

  // Compact JSON text. Non-finite numbers are written as null, and invalid
  // UTF-8 in strings as U+FFFD, so the output always parses.
  [[nodiscard]] std::string Dump() const;

  [[nodiscard]] Type type() const { return static_cast<Type>(v_.index()); }
  [[nodiscard]] bool is_null() const { return type() == Type::kNull; }
  [[nodiscard]] bool is_bool() const { return type() == Type::kBool; }
  [[nodiscard]] bool is_number() const { return type() == Type::kNumber; }
  [[nodiscard]] bool is_string() const { return type() == Type::kString; }
  [[nodiscard]] bool is_array() const { return type() == Type::kArray; }
  [[nodiscard]] bool is_object() const { return type() == Type::kObject; }

  // Accessors. REQUIRES: the matching type (asserted).
  [[nodiscard]] bool as_bool() const { return std::get<bool>(v_); }
  [[nodiscard]] double as_number() const { return std::get<double>(v_); }
  [[nodiscard]] const std::string& as_string() const {
    return std::get<std::string>(v_);
  }
  [[nodiscard]] const Array& items() const { return std::get<Array>(v_); }
  [[nodiscard]] const Object& members() const { return std::get<Object>(v_); }

  // The member named key of an object, or nullptr when absent or when this
  // is not an object. The pointer is valid until this value is modified.
  [[nodiscard]] const Json* Find(std::string_view key) const;

  // Sets member key of an object, replacing an existing one in place.
  // REQUIRES: is_object(). Returns *this for chaining.
  Json& Set(std::string_view key, Json value);
  // Appends to an array. REQUIRES: is_array(). Returns *this.
  Json& Push(Json value);

  friend bool operator==(const Json& a, const Json& b) { return a.v_ == b.v_; }

 private:
  explicit Json(Object o) : v_(std::move(o)) {}
  friend class JsonParser;

  std::variant<std::monostate, bool, double, std::string, Array, Object> v_;
};

// ---------------------------------------------------------------------------
// HTTP messages

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
  // The body parsed as JSON; an empty body is an error.
  [[nodiscard]] Result<Json> JsonBody(const JsonLimits& limits = {}) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers. Content-Length, Content-Type, Connection and Date are
  // written by the server and must not be given here.
  HeaderList headers;

  static Response MakeJson(int status, const Json& body);
  // {"error": message, "status": status}.
  static Response MakeError(int status, std::string_view message);
  static Response MakeText(int status, std::string body,
                           std::string content_type = "text/plain");
};

// The reason phrase for a status code ("Not Found"), "" if unknown.
std::string_view StatusReason(int status);

// Limits the request parser enforces; part of AdminServer::Options.
struct RequestLimits {
  // Request line plus header names and values, in bytes -> 431.
  size_t max_header_bytes = 16 * 1024;
  // Number of header fields -> 431.
  size_t max_headers = 100;
  // De-chunked body, in bytes -> 413 (checked against Content-Length before
  // the body is read).
  size_t max_body_bytes = 1 << 20;
};

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

// One answered request, for AdminServer::Options::on_response. The views
// are valid only during the call.
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
class AdminServer {
 public:
  struct Options {
    // --- behaviour
    // Numeric IPv4 or IPv6 address to listen on. Not a loopback address
    // (127.0.0.0/8, ::1) requires a token.
    std::string bind_address = "127.0.0.1";
    // TCP port; 0 picks a free ephemeral port (see port()).
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
    JsonLimits json;
    // Open connections; one more is answered 503 and closed.
    size_t max_connections = 64;
    // From the first byte of a request to its last (and for writing a
    // response), in ms; then 408 and close. Defeats slowloris.
    uint64_t request_timeout_ms = 10'000;
    // A keep-alive connection with no request in progress is closed after
    // this many ms.
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

  // Validates options, binds and starts listening on loop.
  // Fails with InvalidArgument for an unparsable address or a zero limit,
  // FailedPrecondition for a non-loopback address without a token, IOError
  // when bind/listen fails (e.g. the port is taken).
  // REQUIRES: loop outlives the server and is run by the caller.
  [[nodiscard]] static Result<std::unique_ptr<AdminServer>> Create(
      uv_loop_s* loop, const Options& options);

  // Closes the listener and every connection at once (in-flight requests
  // are dropped; their Responders then return false). The loop must run
  // once more afterwards to release the handles.
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

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

  // The bound port (the chosen one when Options::port was 0).
  [[nodiscard]] uint16_t port() const;
  // Open connections now.
  [[nodiscard]] size_t connection_count() const;

  struct Impl;  // internal

 private:
  explicit AdminServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_ADMIN_H_
