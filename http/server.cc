// http/server.cc: the admin server's listener, routing and the
// per-connection state machine on libuv. See http.h and docs/API.md.
#include <uv.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "base/ascii.h"
#include "base/time.h"
#include "http/http.h"
#include "http/internal.h"

namespace crawld::http {

// ---------------------------------------------------------------------------
// The server

namespace {

bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  const unsigned char* b = a6->sin6_addr.s6_addr;
  static constexpr unsigned char kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0,    0,
                                                0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(b, b + 16, kLoop)) return true;
  return std::equal(b, b + 12, kMapped) && b[12] == 127;
}

// Compares in time that depends only on the expected token's length, so a
// client cannot find the token byte by byte from response times.
bool TokenMatches(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : 0;
    diff |= static_cast<unsigned char>(g ^ expected[i]);
  }
  return diff == 0;
}

bool HasCrOrLf(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

std::string Serialize(const Response& r, bool close, bool head) {
  std::string out;
  out.reserve(256 + (head ? 0 : r.body.size()));
  std::string_view reason = StatusReason(r.status);
  out.append("HTTP/1.1 ").append(std::to_string(r.status)).push_back(' ');
  out.append(reason.empty() ? "Unknown" : reason).append("\r\n");
  out.append("Date: ").append(HttpDate(WallMicros())).append("\r\n");
  if (!HasCrOrLf(r.content_type)) {
    out.append("Content-Type: ").append(r.content_type).append("\r\n");
  }
  // A 304 has no body; its Content-Length would have to be the 200's.
  if (r.status != 304) {
    out.append("Content-Length: ")
        .append(std::to_string(r.body.size()))
        .append("\r\n");
  }
  auto given = [&r](std::string_view name) {
    return std::any_of(r.headers.begin(), r.headers.end(),
                       [name](const auto& h) {
                         return ascii::EqualsIgnoreCase(h.first, name);
                       });
  };
  // JSON is never a page: should a browser be made to render a response,
  // it runs nothing and cannot be framed. The console's assets say what
  // they need instead.
  if (!given("cache-control")) out.append("Cache-Control: no-store\r\n");
  if (!given("content-security-policy")) {
    out.append(
        "Content-Security-Policy: default-src 'none'; "
        "frame-ancestors 'none'\r\n");
  }
  out.append("X-Content-Type-Options: nosniff\r\n");
  out.append(close ? "Connection: close\r\n" : "Connection: keep-alive\r\n");
  for (const auto& [name, value] : r.headers) {
    // A handler echoing client input must not be able to split the response.
    if (name.empty() || HasCrOrLf(name) || HasCrOrLf(value) ||
        name.find(':') != std::string::npos) {
      continue;
    }
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out.append("\r\n");
  if (!head) out.append(r.body);
  return out;
}

struct RouteEntry {
  std::string method;
  std::string pattern;
  // Literal segments, or "{name}" captures (stored as name, capture=true).
  std::vector<std::pair<std::string, bool>> segments;
  int literals = 0;
  bool is_public = false;  // GET without the token (PublicRoute)
  Handler handler;
};

class Conn;

}  // namespace

struct Server::Impl {
  uv_loop_t* loop = nullptr;
  Options options;
  uv_tcp_t* listener = nullptr;  // heap: freed by its close callback
  uint16_t port = 0;
  std::vector<RouteEntry> routes;
  std::map<Conn*, std::shared_ptr<Conn>> conns;
  uint64_t evicted = 0;

  ~Impl();
  void OnConnection();
  // Closes the connection that has waited longest for a request; false
  // when every connection is busy with one.
  bool EvictOne();
  void Dispatch(Conn* conn, uint64_t seq, Request req);
  void RejectConnection();
};

namespace {

// One client connection. Phases, in order for each request:
//   kReading -> kHandling (a handler holds a Responder) -> kWriting ->
//   kReading again on keep-alive, or kLingering (shut down our side, drain
//   the client's until EOF or a short timer) -> closed.
// One timer serves every phase; timer_kind_ says what its expiry means.
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  explicit Conn(Server::Impl* server)
      : server_(server), reader_(server->options.request) {}
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Accepts from the listener and starts reading. On failure the caller
  // must Close().
  bool Start(uv_stream_t* listener) {
    uv_tcp_init(server_->loop, &tcp_);
    uv_timer_init(server_->loop, &timer_);
    tcp_.data = this;
    timer_.data = this;
    open_handles_ = 2;
    waiting_since_ms_ = uv_now(server_->loop);
    if (uv_accept(listener, Stream()) != 0) return false;
    if (!StartReading()) return false;
    UpdateReadTimer();
    return true;
  }

  // Closes at once; idempotent. The object lives on until both handles'
  // close callbacks have run.
  void Close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    self_ = shared_from_this();
    uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &Conn::OnHandleClosed);
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_), &Conn::OnHandleClosed);
    if (server_ != nullptr) {
      Server::Impl* server = server_;
      server_ = nullptr;
      server->conns.erase(this);  // self_ keeps us alive
    }
  }

  // The server is going away: no more calls into it.
  void Detach() {
    server_ = nullptr;
    Close();
  }

  // Sends r for request seq; see Responder::Send.
  bool Reply(uint64_t seq, const Response& r, bool close) {
    if (server_ == nullptr || phase_ != Phase::kHandling || seq != seq_) {
      return false;
    }
    const bool close_after = close || !keep_alive_;
    out_ = Serialize(r, close_after, head_);
    if (server_->options.on_response) {
      AccessRecord rec;
      rec.method = method_;
      rec.path = path_;
      rec.status = r.status;
      rec.body_bytes = r.body.size();
      rec.duration_ms = uv_now(server_->loop) - started_ms_;
      server_->options.on_response(rec);
      if (server_ == nullptr || phase_ != Phase::kHandling) return true;
    }
    phase_ = Phase::kWriting;
    close_after_write_ = close_after;
    write_req_.data = this;
    uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
    if (uv_write(&write_req_, Stream(), &buf, 1, &Conn::OnWritten) != 0) {
      Close();
      return true;  // the response was accepted; the peer is just gone
    }
    ArmTimer(server_->options.request_timeout_ms, TimerKind::kWrite);
    return true;
  }

  uint64_t seq() const { return seq_; }

  // Whether closing this connection loses no request the server has
  // accepted: it is waiting for one (idle, or its bytes still arriving) or
  // closing after an error. A request in a handler or a response being
  // written is never cut.
  bool Evictable() const {
    return phase_ == Phase::kReading || phase_ == Phase::kLingering;
  }
  // Since when (loop ms) it has waited for its current request; a closing
  // one counts as waiting since forever.
  uint64_t waiting_since_ms() const {
    return phase_ == Phase::kLingering ? 0 : waiting_since_ms_;
  }

 private:
  enum class Phase { kReading, kHandling, kWriting, kLingering, kClosed };
  enum class TimerKind { kNone, kIdle, kRequest, kHandler, kWrite, kLinger };

  uv_stream_t* Stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }

  bool StartReading() {
    if (reading_) return true;
    if (uv_read_start(Stream(), &Conn::OnAlloc, &Conn::OnRead) != 0) {
      return false;
    }
    reading_ = true;
    return true;
  }
  void StopReading() {
    if (!reading_) return;
    uv_read_stop(Stream());
    reading_ = false;
  }

  void ArmTimer(uint64_t ms, TimerKind kind) {
    timer_kind_ = kind;
    uv_timer_start(&timer_, &Conn::OnTimer, ms, 0);
  }

  // Idle until a byte of the next request arrives, then the request clock,
  // which is armed once per request and not pushed back by more bytes.
  void UpdateReadTimer() {
    if (server_ == nullptr) return;
    if (reader_.started() || inpos_ < in_.size()) {
      if (timer_kind_ != TimerKind::kRequest) {
        ArmTimer(server_->options.request_timeout_ms, TimerKind::kRequest);
      }
    } else if (timer_kind_ != TimerKind::kIdle) {
      ArmTimer(server_->options.idle_timeout_ms, TimerKind::kIdle);
    }
  }

  void ProcessInput() {
    while (phase_ == Phase::kReading && inpos_ < in_.size()) {
      const size_t n = reader_.Feed(std::string_view(in_).substr(inpos_));
      inpos_ += n;
      const RequestReader::State st = reader_.state();
      if (st == RequestReader::State::kError) {
        SendFinal(reader_.error_status(), reader_.error_message());
        return;
      }
      if (st == RequestReader::State::kRequest) {
        bool keep_alive = false;
        Request req = reader_.TakeRequest(&keep_alive);
        Dispatch(std::move(req), keep_alive);
      } else if (reader_.TakeExpectContinue()) {
        SendContinue();
      }
    }
    if (phase_ == Phase::kClosed) return;
    in_.erase(0, inpos_);
    inpos_ = 0;
    if (phase_ == Phase::kReading) UpdateReadTimer();
  }

  void SendContinue() {
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    continue_req_.data = this;
    uv_buf_t buf =
        uv_buf_init(const_cast<char*>(kContinue), sizeof(kContinue) - 1);
    // Ordered before any later write on the stream; a failure shows up
    // there too, so the callback has nothing to do.
    if (uv_write(&continue_req_, Stream(), &buf, 1, [](uv_write_t*, int) {}) !=
        0) {
      Close();
    }
  }

  void Dispatch(Request req, bool keep_alive) {
    phase_ = Phase::kHandling;
    method_ = req.method;
    path_ = req.path;
    started_ms_ = uv_now(server_->loop);
    keep_alive_ = keep_alive;
    head_ = req.method == "HEAD";
    StopReading();
    ++seq_;
    ArmTimer(server_->options.handler_timeout_ms, TimerKind::kHandler);
    // Keep this alive even if the handler's response closes it.
    std::shared_ptr<Conn> keep = shared_from_this();
    server_->Dispatch(this, seq_, std::move(req));
  }

  // An error on the connection's byte stream: answer it and close.
  void SendFinal(int status, std::string_view message) {
    phase_ = Phase::kHandling;
    method_.clear();
    path_.clear();
    started_ms_ = uv_now(server_->loop);
    keep_alive_ = false;
    head_ = false;
    StopReading();
    ++seq_;
    Reply(seq_, Response::MakeError(status, message), /*close=*/true);
  }

  void AfterWrite(int status) {
    if (phase_ == Phase::kClosed) return;  // cancelled by Close()
    out_.clear();
    if (status < 0 || server_ == nullptr) {
      Close();
      return;
    }
    if (close_after_write_) {
      BeginLinger();
      return;
    }
    phase_ = Phase::kReading;
    waiting_since_ms_ = uv_now(server_->loop);
    timer_kind_ = TimerKind::kNone;
    if (!StartReading()) {
      Close();
      return;
    }
    ProcessInput();
  }

  // Closing right after the response would reset the connection if the
  // client is still sending (an oversized body), and a reset can destroy
  // the response before the client reads it. So: shut down our side, read
  // and drop until the client closes, for a bounded time.
  void BeginLinger() {
    phase_ = Phase::kLingering;
    shutdown_req_.data = this;
    if (uv_shutdown(&shutdown_req_, Stream(), &Conn::OnShutdown) != 0 ||
        !StartReading()) {
      Close();
      return;
    }
    ArmTimer(std::min<uint64_t>(server_->options.request_timeout_ms, 2000),
             TimerKind::kLinger);
  }

  void Expire() {
    switch (timer_kind_) {
      case TimerKind::kRequest:
        if (phase_ == Phase::kReading) {
          SendFinal(408, "request not received in time");
          return;
        }
        break;
      case TimerKind::kHandler:
        if (phase_ == Phase::kHandling) {
          Reply(seq_,
                Response::MakeError(503, "handler did not respond in time"),
                /*close=*/true);
          return;
        }
        break;
      default:
        break;
    }
    Close();
  }

  static void OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
    Conn* c = static_cast<Conn*>(h->data);
    *buf = uv_buf_init(c->read_buf_, sizeof(c->read_buf_));
  }

  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
    Conn* c = static_cast<Conn*>(s->data);
    if (nread == 0 || c->phase_ == Phase::kClosed) return;
    if (nread < 0) {
      // EOF or error: with a partial request there is no one to answer.
      c->Close();
      return;
    }
    if (c->phase_ != Phase::kReading) return;  // lingering: drop
    c->in_.append(c->read_buf_, static_cast<size_t>(nread));
    c->ProcessInput();
  }

  static void OnWritten(uv_write_t* req, int status) {
    static_cast<Conn*>(req->data)->AfterWrite(status);
  }

  static void OnShutdown(uv_shutdown_t* req, int status) {
    Conn* c = static_cast<Conn*>(req->data);
    if (status < 0 && c->phase_ != Phase::kClosed) c->Close();
  }

  static void OnTimer(uv_timer_t* t) { static_cast<Conn*>(t->data)->Expire(); }

  static void OnHandleClosed(uv_handle_t* h) {
    Conn* c = static_cast<Conn*>(h->data);
    if (--c->open_handles_ == 0) {
      // Drops the last reference: c is destroyed when `last` goes.
      std::shared_ptr<Conn> last = std::move(c->self_);
    }
  }

  Server::Impl* server_;
  uv_tcp_t tcp_{};
  uv_timer_t timer_{};
  uv_write_t write_req_{};
  uv_write_t continue_req_{};
  uv_shutdown_t shutdown_req_{};
  int open_handles_ = 0;
  std::shared_ptr<Conn> self_;  // set while closing

  Phase phase_ = Phase::kReading;
  TimerKind timer_kind_ = TimerKind::kNone;
  bool reading_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  bool close_after_write_ = false;
  uint64_t seq_ = 0;
  uint64_t waiting_since_ms_ = 0;  // entered kReading (loop ms)
  std::string method_, path_;      // of the request being handled
  uint64_t started_ms_ = 0;
  RequestReader reader_;
  std::string in_;  // received, not yet parsed (pipelined requests)
  size_t inpos_ = 0;
  std::string out_;  // the response being written
  char read_buf_[16 * 1024];
};

}  // namespace

// Shared by every copy of one Responder.
struct Responder::Pending {
  Pending(std::weak_ptr<Conn> c, uint64_t s) : conn(std::move(c)), seq(s) {}
  ~Pending() {
    if (done) return;
    if (std::shared_ptr<Conn> c = conn.lock()) {
      c->Reply(seq, Response::MakeError(500, "the handler dropped the request"),
               /*close=*/false);
    }
  }
  std::weak_ptr<Conn> conn;
  uint64_t seq;
  bool done = false;
};

bool Responder::Send(Response response) const {
  if (!pending_ || pending_->done) return false;
  pending_->done = true;
  std::shared_ptr<Conn> c = pending_->conn.lock();
  return c != nullptr && c->Reply(pending_->seq, response, /*close=*/false);
}

namespace {

void OnListenerClosed(uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); }

void OnNewConnection(uv_stream_t* listener, int status) {
  if (status < 0) return;
  static_cast<Server::Impl*>(listener->data)->OnConnection();
}

// Matches req.segments against a route; fills params on success.
bool MatchRoute(const RouteEntry& route, const std::vector<std::string>& segs,
                std::vector<std::pair<std::string, std::string>>* params) {
  if (route.segments.size() != segs.size()) return false;
  std::vector<std::pair<std::string, std::string>> found;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& [text, capture] = route.segments[i];
    if (capture) {
      if (segs[i].empty()) return false;
      found.emplace_back(text, segs[i]);
    } else if (text != segs[i]) {
      return false;
    }
  }
  if (params != nullptr) *params = std::move(found);
  return true;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Server::Impl::~Impl() {
  for (auto& [raw, conn] : std::map<Conn*, std::shared_ptr<Conn>>(conns)) {
    conn->Detach();
  }
  conns.clear();
  if (listener != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(listener), &OnListenerClosed);
  }
}

void Server::Impl::RejectConnection() {
  auto* tcp = new uv_tcp_t;
  uv_tcp_init(loop, tcp);
  if (uv_accept(reinterpret_cast<uv_stream_t*>(listener),
                reinterpret_cast<uv_stream_t*>(tcp)) == 0) {
    // Best effort and never blocking: a fresh socket's send buffer takes
    // this at once, and if not the client just sees the close.
    std::string msg = Serialize(
        Response::MakeError(503, "too many connections"), true, false);
    uv_buf_t buf = uv_buf_init(msg.data(), static_cast<unsigned>(msg.size()));
    uv_try_write(reinterpret_cast<uv_stream_t*>(tcp), &buf, 1);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(tcp), &OnListenerClosed);
  if (options.on_response) {
    AccessRecord rec;
    rec.status = 503;
    options.on_response(rec);
  }
}

bool Server::Impl::EvictOne() {
  Conn* victim = nullptr;
  for (const auto& [raw, conn] : conns) {
    if (conn->Evictable() &&
        (victim == nullptr ||
         conn->waiting_since_ms() < victim->waiting_since_ms())) {
      victim = raw;
    }
  }
  if (victim == nullptr) return false;
  // No response: there is no request to answer (or it is still arriving,
  // for longer than any other client has waited).
  victim->Close();
  ++evicted;
  return true;
}

void Server::Impl::OnConnection() {
  // Eviction instead of refusal: a client that only holds a socket must
  // not lock out the next one (issue 19). Only requests in progress count.
  if (conns.size() >= options.max_connections && !EvictOne()) {
    RejectConnection();
    return;
  }
  auto conn = std::make_shared<Conn>(this);
  conns.emplace(conn.get(), conn);
  if (!conn->Start(reinterpret_cast<uv_stream_t*>(listener))) conn->Close();
}

void Server::Impl::Dispatch(Conn* conn, uint64_t seq, Request req) {
  const bool is_read = req.method == "GET" || req.method == "HEAD";
  std::string why;
  if (const int refused =
          CheckBrowserRequest(req, !options.token.empty(), &why)) {
    conn->Reply(seq, Response::MakeError(refused, why), false);
    return;
  }
  // Public routes (the console's static files) go without the token;
  // any other path, known or not, needs it before routing says more.
  const bool is_public =
      is_read && std::any_of(routes.begin(), routes.end(),
                             [&req](const RouteEntry& route) {
                               return route.is_public &&
                                      MatchRoute(route, req.segments, nullptr);
                             });
  if (!options.token.empty() && !is_public &&
      (options.token_for_reads || !is_read)) {
    const std::string* auth = req.Header("authorization");
    std::string_view given;
    if (auth != nullptr && auth->size() > 7 &&
        ascii::StartsWithIgnoreCase(*auth, "bearer ")) {
      given = ascii::TrimHttpSpace(std::string_view(*auth).substr(7));
    }
    if (!TokenMatches(given, options.token)) {
      Response r = Response::MakeError(
          401, auth == nullptr ? "missing bearer token" : "invalid token");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"crawld\"");
      conn->Reply(seq, r, false);
      return;
    }
  }

  const RouteEntry* best = nullptr;
  std::set<std::string> allowed;
  for (const RouteEntry& route : routes) {
    if (!MatchRoute(route, req.segments, nullptr)) continue;
    allowed.insert(route.method);
    if (route.method == "GET") allowed.insert("HEAD");
    const bool method_ok = route.method == req.method ||
                           (req.method == "HEAD" && route.method == "GET");
    if (method_ok &&
        (best == nullptr || route.literals > best->literals ||
         (route.literals == best->literals && route.method == req.method &&
          best->method != req.method))) {
      best = &route;
    }
  }
  if (best == nullptr) {
    if (allowed.empty()) {
      conn->Reply(seq,
                  Response::MakeError(404, "no such endpoint: " + req.path),
                  false);
      return;
    }
    std::string allow;
    for (const std::string& m : allowed) {
      if (!allow.empty()) allow += ", ";
      allow += m;
    }
    Response r = Response::MakeError(
        405, "method " + req.method + " not allowed on " + req.path);
    r.headers.emplace_back("Allow", allow);
    conn->Reply(seq, r, false);
    return;
  }
  if (const int refused = CheckJsonContentType(req, &why)) {
    conn->Reply(seq, Response::MakeError(refused, why), false);
    return;
  }
  MatchRoute(*best, req.segments, &req.params);
  // A copy: the handler may add routes, which would move the vector.
  const Handler handler = best->handler;
  Responder responder(
      std::make_shared<Responder::Pending>(conn->weak_from_this(), seq));
  try {
    handler(req, std::move(responder));
  } catch (...) {
    // Exceptions must not cross into libuv; the Pending left behind by the
    // handler (if it did not answer) reports 500 when released.
  }
}

Result<std::unique_ptr<Server>> Server::Create(uv_loop_s* loop,
                                               const Options& options) {
  if (loop == nullptr) return Status::InvalidArgument("admin: no loop");
  if (options.max_connections == 0 || options.request_timeout_ms == 0 ||
      options.idle_timeout_ms == 0 || options.handler_timeout_ms == 0 ||
      options.request.max_header_bytes == 0 ||
      options.request.max_headers == 0 || options.backlog <= 0) {
    return Status::InvalidArgument("admin: limits and timeouts must be > 0");
  }
  sockaddr_storage addr{};
  if (uv_ip4_addr(options.bind_address.c_str(), options.port,
                  reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(options.bind_address.c_str(), options.port,
                  reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    return Status::InvalidArgument("admin: bind address '" +
                                   options.bind_address +
                                   "' is not a numeric IP address");
  }
  if (!IsLoopback(addr) && options.token.empty()) {
    return Status::FailedPrecondition(
        "admin: refusing to listen on non-loopback address " +
        options.bind_address + " without a token");
  }

  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = options;
  impl->listener = new uv_tcp_t;
  uv_tcp_init(loop, impl->listener);
  impl->listener->data = impl.get();
  int rc =
      uv_tcp_bind(impl->listener, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(impl->listener),
                   options.backlog, &OnNewConnection);
  }
  if (rc != 0) {
    // ~Impl closes the listener.
    return Status::IOError("admin: cannot listen on " + options.bind_address +
                           ":" + std::to_string(options.port) + ": " +
                           uv_strerror(rc));
  }
  sockaddr_storage bound{};
  int len = sizeof(bound);
  uv_tcp_getsockname(impl->listener, reinterpret_cast<sockaddr*>(&bound), &len);
  impl->port = ntohs(bound.ss_family == AF_INET
                         ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                         : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Status Server::PublicRoute(std::string_view pattern, Handler handler) {
  Status s = Route("GET", pattern, std::move(handler));
  if (s.ok()) impl_->routes.back().is_public = true;
  return s;
}

Status Server::Route(std::string_view method, std::string_view pattern,
                     Handler handler) {
  if (method.empty() || !handler) {
    return Status::InvalidArgument("admin: route needs a method and handler");
  }
  if (pattern.empty() || pattern.front() != '/') {
    return Status::InvalidArgument("admin: route pattern '" +
                                   std::string(pattern) +
                                   "' must start with '/'");
  }
  RouteEntry entry;
  entry.method = std::string(method);
  entry.pattern = std::string(pattern);
  std::set<std::string_view> names;
  for (std::string_view seg : internal::Split(pattern.substr(1), '/')) {
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      std::string_view name = seg.substr(1, seg.size() - 2);
      if (!IsIdentifier(name) || !names.insert(name).second) {
        return Status::InvalidArgument("admin: bad parameter '" +
                                       std::string(seg) + "' in route " +
                                       std::string(pattern));
      }
      entry.segments.emplace_back(std::string(name), true);
    } else {
      if (seg.find_first_of("{}%?") != std::string_view::npos) {
        return Status::InvalidArgument("admin: bad segment '" +
                                       std::string(seg) + "' in route " +
                                       std::string(pattern));
      }
      entry.segments.emplace_back(std::string(seg), false);
      ++entry.literals;
    }
  }
  for (const RouteEntry& r : impl_->routes) {
    if (r.method != entry.method || r.segments.size() != entry.segments.size())
      continue;
    bool same = true;
    for (size_t i = 0; i < r.segments.size() && same; ++i) {
      // Two captures at the same place match the same paths.
      same = r.segments[i].second == entry.segments[i].second &&
             (r.segments[i].second ||
              r.segments[i].first == entry.segments[i].first);
    }
    if (same) {
      return Status::InvalidArgument("admin: duplicate route " + entry.method +
                                     " " + entry.pattern);
    }
  }
  entry.handler = std::move(handler);
  impl_->routes.push_back(std::move(entry));
  return Status::Ok();
}

bool IsLoopbackAddress(std::string_view numeric_address) {
  const std::string text(numeric_address);
  sockaddr_storage addr{};
  if (uv_ip4_addr(text.c_str(), 0, reinterpret_cast<sockaddr_in*>(&addr)) !=
          0 &&
      uv_ip6_addr(text.c_str(), 0, reinterpret_cast<sockaddr_in6*>(&addr)) !=
          0) {
    return false;
  }
  return IsLoopback(addr);
}

uint16_t Server::port() const { return impl_->port; }
size_t Server::connection_count() const { return impl_->conns.size(); }
uint64_t Server::evicted_count() const { return impl_->evicted; }

}  // namespace crawld::http
