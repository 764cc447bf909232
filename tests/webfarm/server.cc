// tests/webfarm/server.cc: the webfarm's HTTP/1.1 server on libuv, and main.
//
// One loop, one thread. Each connection handles its requests strictly in
// order (pipelining-safe: later requests wait in the input buffer until the
// current response is fully written), responses always carry Content-Length,
// and every completed (or aborted) exchange is appended to requests.jsonl.
// Contract and formats: docs/WEBFARM.md.
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "tests/webfarm/farm.h"

namespace crawld::webfarm {
namespace {

constexpr size_t kMaxHead = 16 << 10;       // request head bytes
constexpr int64_t kMaxBody = 1 << 20;       // request body bytes
constexpr size_t kMaxBuffered = 256 << 10;  // unparsed input per conn
constexpr size_t kStreamChunk = 64 << 10;   // streamed body write size
constexpr uint64_t kTrickleTickMs = 50;     // trickle timer period
constexpr uint64_t kHoldMs = 90000;         // robots "timeout" hold
constexpr uint64_t kLogFlushMs = 100;       // log flush period

std::string_view Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 301:
      return "Moved Permanently";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool IsTchar(char c) {
  return isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (tolower(static_cast<unsigned char>(a[i])) !=
        tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

void JsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      // Bytes, not code points: keeps the log valid JSON whatever a client
      // sends (a non-ASCII byte b is logged as \u00bb).
      *out += "\\u00";
      *out += kHex[c >> 4];
      *out += kHex[c & 15];
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, p);
}

struct Server;

// One accepted connection. Owned by the Server's set; deleted when both of
// its handles are closed.
struct Conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  Server* srv = nullptr;
  uint64_t id = 0;
  std::string local_ip;
  std::string in;
  int handles_open = 0;
  bool closing = false;
  bool reading = false;
  bool peer_eof = false;  // the client half-closed its side
  // The exchange in progress.
  bool busy = false;
  bool keep_alive = true;
  bool head_only = false;
  bool head_sent = false;
  int host = -1;
  std::string host_name, method, target, ua;
  std::string if_none_match, if_modified_since;  // conditional requests
  int64_t start_us = 0;
  Response resp;
  int64_t body_queued = 0;  // body bytes handed to uv_write
  int64_t body_done = 0;    // body bytes whose write completed
  int64_t body_total = 0;
  int pending_writes = 0;
  size_t trickle_chunk = 0;  // bytes per tick; 0 = no trickling
  // When the last completed write's bytes reached the kernel (end_us).
  int64_t handed_us = 0;
};

struct WriteReq {
  uv_write_t req;
  Conn* conn;
  std::string head;
  std::string owned;
  std::string_view body;  // into owned or Site-owned storage
  // Set when uv_write handed every byte to the kernel at once: the clock
  // just before that call. 0 otherwise.
  int64_t handed_us = 0;
};

struct Server {
  uv_loop_t* loop = nullptr;
  Site* site = nullptr;
  int port = 0;
  std::vector<uv_tcp_t*> listeners;
  std::unordered_set<Conn*> conns;
  uint64_t next_conn = 1;
  std::unordered_map<std::string, int> error_counts;  // "host path" -> n
  FILE* log = nullptr;
  std::string log_buf;
  uv_timer_t flush_timer;
  uv_timer_t max_timer;
  uv_signal_t sigterm, sigint;
  bool stopping = false;
};

void ProcessInput(Conn* c);
void Pump(Conn* c);
void StartReading(Conn* c);
void ShutdownConn(Conn* c);

void FlushLog(Server* s) {
  if (s->log_buf.empty()) return;
  fwrite(s->log_buf.data(), 1, s->log_buf.size(), s->log);
  fflush(s->log);
  s->log_buf.clear();
}

void LogExchange(Conn* c, bool aborted) {
  std::string& b = c->srv->log_buf;
  b += "{\"host\":";
  JsonString(&b, c->host_name);
  b += ",\"ip\":";
  JsonString(&b, c->local_ip);
  b += ",\"port\":";
  AppendInt(&b, c->srv->port);
  b += ",\"method\":";
  JsonString(&b, c->method);
  b += ",\"path\":";
  JsonString(&b, c->target);
  b += ",\"start_us\":";
  AppendInt(&b, c->start_us);
  b += ",\"end_us\":";
  AppendInt(&b, !aborted && c->handed_us > 0 ? c->handed_us : NowMicros());
  b += ",\"status\":";
  AppendInt(&b, c->head_sent ? c->resp.status : 0);
  b += ",\"bytes\":";
  AppendInt(&b, c->body_done);
  b += ",\"conn\":";
  AppendInt(&b, static_cast<int64_t>(c->id));
  b += ",\"ua\":";
  JsonString(&b, c->ua);
  // Conditional requests and their validators (docs/WEBFARM.md).
  if (!c->if_none_match.empty()) {
    b += ",\"if_none_match\":";
    JsonString(&b, c->if_none_match);
  }
  if (!c->if_modified_since.empty()) {
    b += ",\"if_modified_since\":";
    JsonString(&b, c->if_modified_since);
  }
  if (!c->resp.etag.empty()) {
    b += ",\"etag\":";
    JsonString(&b, c->resp.etag);
  }
  if (aborted) b += ",\"aborted\":true";
  b += "}\n";
}

void OnHandleClosed(uv_handle_t* h) {
  Conn* c = static_cast<Conn*>(h->data);
  if (--c->handles_open == 0) delete c;
}

void CloseConn(Conn* c) {
  if (c->closing) return;
  c->closing = true;
  if (c->busy) LogExchange(c, /*aborted=*/true);
  c->busy = false;
  c->srv->conns.erase(c);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), OnHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), OnHandleClosed);
}

void OnShutdown(uv_shutdown_t* req, int /*status*/) {
  Conn* c = static_cast<Conn*>(req->data);
  delete req;
  CloseConn(c);
}

// Half-closes after queued writes so the client reads the whole response
// before seeing EOF.
void ShutdownConn(Conn* c) {
  if (c->closing) return;
  auto* req = new uv_shutdown_t;
  req->data = c;
  if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->tcp), OnShutdown) !=
      0) {
    delete req;
    CloseConn(c);
  }
}

void Finish(Conn* c) {
  LogExchange(c, /*aborted=*/false);
  c->handed_us = 0;
  c->busy = false;
  c->resp = Response{};
  if (!c->keep_alive) {
    ShutdownConn(c);
    return;
  }
  ProcessInput(c);
}

void OnWrite(uv_write_t* w, int status) {
  auto* req = reinterpret_cast<WriteReq*>(w);
  Conn* c = req->conn;
  const int64_t body = static_cast<int64_t>(req->body.size());
  // The callback runs a loop iteration after a write that went out at once;
  // stamping then (or even right after the write, when the scheduler may
  // run the client first) would make end_us late by however busy the
  // machine is, and a client's politeness gap look shorter than it was.
  c->handed_us = req->handed_us > 0 ? req->handed_us : NowMicros();
  delete req;
  --c->pending_writes;
  if (c->closing) return;
  if (status < 0) {
    CloseConn(c);
    return;
  }
  c->body_done += body;
  if (c->body_done == c->body_total) {
    if (c->pending_writes == 0) Finish(c);
    return;
  }
  if (c->trickle_chunk == 0) Pump(c);
}

void Write(Conn* c, WriteReq* req) {
  uv_buf_t bufs[2];
  unsigned n = 0;
  if (!req->head.empty()) {
    bufs[n++] =
        uv_buf_init(req->head.data(), static_cast<unsigned>(req->head.size()));
  }
  if (!req->body.empty()) {
    bufs[n++] = uv_buf_init(const_cast<char*>(req->body.data()),
                            static_cast<unsigned>(req->body.size()));
  }
  req->conn = c;
  ++c->pending_writes;
  c->body_queued += static_cast<int64_t>(req->body.size());
  // Read before the write: no client can have these bytes earlier, so a gap
  // measured from here is never longer than the one the client saw.
  const int64_t before_us = NowMicros();
  int rc = uv_write(&req->req, reinterpret_cast<uv_stream_t*>(&c->tcp), bufs, n,
                    OnWrite);
  if (rc != 0) {
    --c->pending_writes;
    delete req;
    CloseConn(c);
    return;
  }
  if (uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(&c->tcp)) ==
      0) {
    req->handed_us = before_us;
  }
}

// Queues the next piece of body: the rest at full speed (chunked only for
// streamed pages) or one trickle tick's worth.
void Pump(Conn* c) {
  if (c->closing || c->body_queued >= c->body_total) return;
  const int64_t left = c->body_total - c->body_queued;
  const size_t want = static_cast<size_t>(std::min<int64_t>(
      left, c->trickle_chunk > 0        ? c->trickle_chunk
            : c->resp.stream_bytes >= 0 ? static_cast<int64_t>(kStreamChunk)
                                        : left));
  auto* req = new WriteReq;
  const size_t off = static_cast<size_t>(c->body_queued);
  if (c->resp.stream_bytes >= 0) {
    Site::LargeChunk(c->body_queued, want, &req->owned);
    req->body = req->owned;
  } else if (!c->resp.shared_body.empty()) {
    req->body = c->resp.shared_body.substr(off, want);
  } else {
    req->body = std::string_view(c->resp.body).substr(off, want);
  }
  Write(c, req);
}

void OnTrickle(uv_timer_t* t) {
  Conn* c = static_cast<Conn*>(t->data);
  if (c->closing) return;
  if (c->pending_writes == 0) Pump(c);
  if (c->body_queued >= c->body_total) uv_timer_stop(t);
}

void SendHead(Conn* c) {
  const Response& r = c->resp;
  const int trickle =
      c->host >= 0
          ? c->srv->site->config().profiles[c->host].trickle_bytes_per_s
          : 0;
  c->body_total = c->head_only ? 0 : r.length();
  auto* req = new WriteReq;
  std::string& h = req->head;
  h.reserve(256);
  h += "HTTP/1.1 ";
  AppendInt(&h, r.status);
  h += ' ';
  h += Reason(r.status);
  h += "\r\nServer: webfarm\r\n";
  if (!r.content_type.empty()) {
    h += "Content-Type: ";
    h += r.content_type;
    h += "\r\n";
  }
  if (r.status != 304) {  // RFC 9110 8.6: a 304 need not say the length
    h += "Content-Length: ";
    AppendInt(&h, r.length());
    h += "\r\n";
  }
  if (!r.etag.empty()) {
    h += "ETag: ";
    h += r.etag;
    h += "\r\nLast-Modified: ";
    h += r.last_modified;
    h += "\r\n";
  }
  if (r.gzip) h += "Content-Encoding: gzip\r\n";
  if (!r.location.empty()) {
    h += "Location: ";
    h += r.location;
    h += "\r\n";
  }
  if (r.retry_after >= 0) {
    h += "Retry-After: ";
    AppendInt(&h, r.retry_after);
    h += "\r\n";
  }
  if (!r.x_robots_tag.empty()) {
    h += "X-Robots-Tag: ";
    h += r.x_robots_tag;
    h += "\r\n";
  }
  if (r.status == 405) h += "Allow: GET, HEAD\r\n";
  if (!c->keep_alive) h += "Connection: close\r\n";
  h += "\r\n";
  c->head_sent = true;
  if (c->body_total > 0 && trickle > 0) {
    c->trickle_chunk = std::max<size_t>(
        1, static_cast<size_t>(trickle) * kTrickleTickMs / 1000);
    Write(c, req);
    if (!c->closing) {
      uv_update_time(c->srv->loop);
      uv_timer_start(&c->timer, OnTrickle, kTrickleTickMs, kTrickleTickMs);
    }
    return;
  }
  c->trickle_chunk = 0;
  // Small bodies go out with the head in one write.
  if (c->body_total > 0 && r.stream_bytes < 0) {
    req->body =
        r.shared_body.empty() ? std::string_view(r.body) : r.shared_body;
  }
  Write(c, req);
}

void OnFirstByteTimer(uv_timer_t* t) {
  Conn* c = static_cast<Conn*>(t->data);
  if (!c->closing) SendHead(c);
}

void OnHoldTimer(uv_timer_t* t) { CloseConn(static_cast<Conn*>(t->data)); }

// Starts an exchange whose response is already in c->resp.
void Respond(Conn* c) {
  c->busy = true;
  c->head_sent = false;
  c->body_queued = c->body_done = c->body_total = 0;
  c->trickle_chunk = 0;
  // Timers count from the loop's cached clock, which can lag far behind
  // on a loaded machine; refresh it so delays are never shorter than asked.
  uv_update_time(c->srv->loop);
  if (c->resp.hold) {
    uv_timer_start(&c->timer, OnHoldTimer, kHoldMs, 0);
    return;
  }
  const int delay =
      c->host >= 0 ? c->srv->site->config().profiles[c->host].first_byte_ms : 0;
  if (delay > 0) {
    // +1: the loop clock is in whole milliseconds (truncated), so a timer
    // can fire up to 1 ms before `delay` has passed on the wall clock.
    uv_timer_start(&c->timer, OnFirstByteTimer,
                   static_cast<uint64_t>(delay) + 1, 0);
    return;
  }
  SendHead(c);
}

// Answers a protocol error and closes after it.
void ProtocolError(Conn* c, int status) {
  c->keep_alive = false;
  c->resp = Response{};
  c->resp.status = status;
  c->resp.content_type = "text/plain";
  c->resp.body = std::string(Reason(status)) + "\n";
  c->in.clear();
  if (c->reading) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
    c->reading = false;
  }
  Respond(c);
}

bool ValidRequestLine(std::string_view line, std::string_view* method,
                      std::string_view* target, bool* http10) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return false;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
  *method = line.substr(0, sp1);
  *target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!std::all_of(method->begin(), method->end(), IsTchar)) return false;
  for (char ch : *target) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return false;
  }
  if (version == "HTTP/1.1") {
    *http10 = false;
  } else if (version == "HTTP/1.0") {
    *http10 = true;
  } else {
    return false;
  }
  return target->starts_with("/") || target->starts_with("http://");
}

void ProcessInput(Conn* c) {
  Server* s = c->srv;
  while (!c->busy && !c->closing) {
    // RFC 9112 sec. 2.2: ignore empty lines before a request line.
    size_t skip = 0;
    while (skip + 1 < c->in.size() && c->in[skip] == '\r' &&
           c->in[skip + 1] == '\n') {
      skip += 2;
    }
    if (skip > 0) c->in.erase(0, skip);
    c->host = -1;
    c->host_name.clear();
    c->method.clear();
    c->target.clear();
    c->ua.clear();
    c->if_none_match.clear();
    c->if_modified_since.clear();
    c->head_only = false;
    size_t end = c->in.find("\r\n\r\n");
    if (end == std::string::npos) {
      size_t eol = c->in.find("\r\n");
      std::string_view m, t;
      bool h10 = false;
      if (eol != std::string::npos &&
          !ValidRequestLine(std::string_view(c->in).substr(0, eol), &m, &t,
                            &h10)) {
        c->start_us = NowMicros();
        ProtocolError(c, 400);
      } else if (c->in.size() > kMaxHead) {
        c->start_us = NowMicros();
        ProtocolError(c, 431);
      }
      break;
    }
    c->start_us = NowMicros();
    if (end + 4 > kMaxHead) {
      ProtocolError(c, 431);
      break;
    }
    std::string_view head(c->in.data(), end);
    size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    std::string_view method, target;
    bool http10 = false;
    if (!ValidRequestLine(line, &method, &target, &http10)) {
      ProtocolError(c, 400);
      break;
    }
    c->method = std::string(method);
    c->target = std::string(target);
    bool bad = false, has_host = false, conn_close = false, conn_keep = false,
         chunked = false;
    int64_t content_length = 0;
    bool has_cl = false;
    std::string_view host_value;
    size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
    while (pos < head.size() && !bad) {
      size_t next = head.find("\r\n", pos);
      if (next == std::string_view::npos) next = head.size();
      std::string_view h = head.substr(pos, next - pos);
      pos = next + 2;
      size_t colon = h.find(':');
      if (colon == std::string_view::npos || colon == 0 ||
          !std::all_of(h.begin(), h.begin() + colon, IsTchar)) {
        bad = true;
        break;
      }
      std::string_view name = h.substr(0, colon);
      std::string_view value = Trim(h.substr(colon + 1));
      if (IEquals(name, "host")) {
        if (has_host) bad = true;
        has_host = true;
        host_value = value;
      } else if (IEquals(name, "user-agent")) {
        c->ua = std::string(value);
      } else if (IEquals(name, "if-none-match")) {
        c->if_none_match = std::string(value);
      } else if (IEquals(name, "if-modified-since")) {
        c->if_modified_since = std::string(value);
      } else if (IEquals(name, "connection")) {
        std::string_view rest = value;
        while (!rest.empty()) {
          size_t comma = rest.find(',');
          std::string_view tok = Trim(rest.substr(0, comma));
          if (IEquals(tok, "close")) conn_close = true;
          if (IEquals(tok, "keep-alive")) conn_keep = true;
          rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
        }
      } else if (IEquals(name, "transfer-encoding")) {
        chunked = true;
      } else if (IEquals(name, "content-length")) {
        int64_t v = -1;
        auto [p, ec] =
            std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < 0 ||
            (has_cl && v != content_length)) {
          bad = true;
        }
        has_cl = true;
        content_length = v;
      }
    }
    // Absolute-form target: the authority wins over Host (RFC 9112 3.2.2).
    std::string_view authority = host_value;
    if (!bad && target.starts_with("http://")) {
      size_t slash = target.find('/', 7);
      authority = target.substr(7, slash == std::string_view::npos
                                       ? std::string_view::npos
                                       : slash - 7);
      c->target = slash == std::string_view::npos
                      ? "/"
                      : std::string(target.substr(slash));
    }
    std::string host(
        authority.substr(0, authority.rfind(':') == std::string_view::npos
                                ? authority.size()
                                : authority.rfind(':')));
    for (char& ch : host) {
      ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
    }
    c->host_name = host;
    c->keep_alive = http10 ? conn_keep && !conn_close : !conn_close;
    if (bad || (!http10 && !has_host)) {
      ProtocolError(c, 400);
      break;
    }
    if (chunked) {
      ProtocolError(c, 501);
      break;
    }
    if (content_length > kMaxBody) {
      ProtocolError(c, 413);
      break;
    }
    if (c->in.size() < end + 4 + static_cast<size_t>(content_length)) {
      break;  // wait for the (discarded) body
    }
    c->in.erase(0, end + 4 + static_cast<size_t>(content_length));
    if (c->method == "HEAD") c->head_only = true;
    std::optional<int> h = s->site->FindHost(host);
    c->resp = Response{};
    if (c->method != "GET" && c->method != "HEAD") {
      c->resp.status = 405;
      c->resp.content_type = "text/plain";
      c->resp.body = "method not allowed\n";
    } else if (!h) {
      c->resp.status = 404;
      c->resp.content_type = "text/plain";
      c->resp.body = "unknown host\n";
    } else {
      c->host = *h;
      Route r = s->site->Classify(*h, c->target);
      int count = 1;
      // Only the responses that change with repetition are counted, so
      // the map stays small on big farms.
      const Profile& prof = s->site->config().profiles[*h];
      if (r.kind == Kind::kError ||
          (r.kind == Kind::kRobots && prof.robots == Robots::kFlaky) ||
          (r.kind == Kind::kPage && prof.etag_per_request)) {
        count = ++s->error_counts[host + " " + c->target];
      }
      s->site->Respond(*h, r, count, &c->resp, NowMicros());
      Site::NotModified(c->if_none_match, c->if_modified_since, &c->resp);
    }
    Respond(c);
  }
  // Resume reading once there is room; pause when a pipelining client runs
  // far ahead of us.
  if (!c->closing) {
    if (c->in.size() > kMaxBuffered && c->reading) {
      uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
      c->reading = false;
    } else if (c->in.size() <= kMaxBuffered && !c->reading && c->keep_alive) {
      // keep_alive false means an error response is pending: stop reading.
      if (!c->peer_eof) StartReading(c);
    }
    // The client half-closed: answer what it sent, then close.
    if (c->peer_eof && !c->busy) ShutdownConn(c);
  }
}

void OnAlloc(uv_handle_t* /*h*/, size_t /*suggested*/, uv_buf_t* buf) {
  static thread_local char* kBuf = new char[64 << 10];
  *buf = uv_buf_init(kBuf, 64 << 10);
}

void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  Conn* c = static_cast<Conn*>(stream->data);
  if (nread == UV_EOF && !c->closing) {
    if (c->busy && c->resp.hold) {  // nobody left to hold the line for
      CloseConn(c);
      return;
    }
    c->peer_eof = true;
    uv_read_stop(stream);
    c->reading = false;
    if (!c->busy) ProcessInput(c);
    return;
  }
  if (nread < 0) {
    CloseConn(c);
    return;
  }
  if (nread == 0 || c->closing) return;
  c->in.append(buf->base, static_cast<size_t>(nread));
  if (!c->busy) {
    ProcessInput(c);
  } else if (c->in.size() > kMaxBuffered && c->reading) {
    uv_read_stop(stream);
    c->reading = false;
  }
}

void StartReading(Conn* c) {
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(&c->tcp), OnAlloc, OnRead) ==
      0) {
    c->reading = true;
  }
}

void OnConnection(uv_stream_t* listener, int status) {
  if (status < 0) return;
  Server* s = static_cast<Server*>(listener->data);
  auto* c = new Conn;
  c->srv = s;
  c->id = s->next_conn++;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->handles_open = 2;
  s->conns.insert(c);
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
    CloseConn(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getsockname(&c->tcp, reinterpret_cast<sockaddr*>(&addr), &len) ==
      0) {
    char ip[64] = {0};
    uv_ip4_name(reinterpret_cast<sockaddr_in*>(&addr), ip, sizeof ip);
    c->local_ip = ip;
  }
  StartReading(c);
}

void Stop(Server* s) {
  if (s->stopping) return;
  s->stopping = true;
  FlushLog(s);
  std::vector<Conn*> conns(s->conns.begin(), s->conns.end());
  for (Conn* c : conns) CloseConn(c);
  FlushLog(s);  // aborted exchanges logged by CloseConn
  uv_walk(
      s->loop,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
}

// Binds every listener on one port. Port 0: the kernel picks a port for
// 127.0.0.1 and the host addresses reuse it; a clash on one of them retries
// with a fresh port.
Status Listen(Server* s, const std::vector<std::string>& ips, int want_port) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int port = want_port;
    bool ok = true;
    std::string err;
    for (const std::string& ip : ips) {
      auto* t = new uv_tcp_t;
      uv_tcp_init(s->loop, t);
      t->data = s;
      s->listeners.push_back(t);
      sockaddr_in addr{};
      uv_ip4_addr(ip.c_str(), port, &addr);
      int rc = uv_tcp_bind(t, reinterpret_cast<const sockaddr*>(&addr), 0);
      if (rc == 0) {
        rc = uv_listen(reinterpret_cast<uv_stream_t*>(t), 1024, OnConnection);
      }
      if (rc != 0) {
        err = ip + ":" + std::to_string(port) + ": " + uv_strerror(rc);
        ok = false;
        break;
      }
      if (port == 0) {
        sockaddr_storage bound{};
        int len = sizeof bound;
        uv_tcp_getsockname(t, reinterpret_cast<sockaddr*>(&bound), &len);
        port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      }
    }
    if (ok) {
      s->port = port;
      return Status::Ok();
    }
    for (uv_tcp_t* t : s->listeners) {
      uv_close(reinterpret_cast<uv_handle_t*>(t),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    }
    s->listeners.clear();
    uv_run(s->loop, UV_RUN_NOWAIT);
    if (want_port != 0) return Status::IOError("listen " + err);
  }
  return Status::IOError("listen: no common free port after 50 attempts");
}

Status WriteFile(const std::string& path, const std::string& data) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError(path + ": " + strerror(errno));
  bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = fclose(f) == 0 && ok;
  return ok ? Status::Ok() : Status::IOError(path + ": write failed");
}

std::string Lines(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    out += s;
    out += '\n';
  }
  return out;
}

int Usage(const char* msg) {
  if (msg != nullptr) fprintf(stderr, "webfarm: %s\n", msg);
  fprintf(stderr,
          "usage: webfarm --config FILE --dir OUTDIR [--port N] "
          "[--max-seconds S]\n");
  return 2;
}

int Main(int argc, char** argv) {
  std::string config_path, dir;
  int64_t port = 0, max_seconds = 600;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      Usage(nullptr);
      return 0;
    }
    if (i + 1 >= argc) return Usage("missing value");
    std::string_view v = argv[++i];
    auto num = [&](int64_t* out, int64_t lo, int64_t hi) {
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
      return ec == std::errc() && p == v.data() + v.size() && *out >= lo &&
             *out <= hi;
    };
    if (a == "--config") {
      config_path = v;
    } else if (a == "--dir") {
      dir = v;
    } else if (a == "--port") {
      if (!num(&port, 0, 65535)) return Usage("bad --port");
    } else if (a == "--max-seconds") {
      if (!num(&max_seconds, 1, 86400 * 7)) return Usage("bad --max-seconds");
    } else {
      return Usage("unknown option");
    }
  }
  if (config_path.empty() || dir.empty()) {
    return Usage("--config and --dir are required");
  }
  Result<Config> config = LoadConfig(config_path);
  if (!config.ok()) {
    fprintf(stderr, "webfarm: %s\n", config.status().ToString().c_str());
    return 2;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  Server s;
  s.loop = &loop;
  // Address list first, so the Site (which needs the port) can be built
  // after binding.
  std::vector<std::string> ips = {"127.0.0.1"};
  {
    Site probe(*config, 1);
    for (const std::string& ip : probe.DistinctIps()) ips.push_back(ip);
  }
  if (Status st = Listen(&s, ips, static_cast<int>(port)); !st.ok()) {
    fprintf(stderr, "webfarm: %s\n", st.ToString().c_str());
    return 2;
  }
  Site site(std::move(*config), s.port);
  s.site = &site;

  std::string hosts;
  for (int i = 0; i < site.host_count(); ++i) {
    hosts += site.HostIp(i) + " " + site.HostName(i) + "\n";
  }
  std::string farm_hosts;
  for (int h : site.LinkFarmHosts()) farm_hosts += site.HostName(h) + "\n";
  std::vector<std::string> manifest, disallowed, sitemap_only;
  site.ComputeManifest(&manifest, &disallowed, &sitemap_only);
  for (const auto& [name, data] :
       std::vector<std::pair<std::string, std::string>>{
           {"hosts", hosts},
           {"manifest.txt", Lines(manifest)},
           {"disallowed.txt", Lines(disallowed)},
           {"seeds.txt", Lines(site.Seeds())},
           {"link_farm.txt", farm_hosts},
           {"sitemap_only.txt", Lines(sitemap_only)},
           {"sitemap_never.txt", Lines(site.SitemapNever())},
           {"sitemaps.txt", Lines(site.SitemapFiles())}}) {
    if (Status st = WriteFile(dir + "/" + name, data); !st.ok()) {
      fprintf(stderr, "webfarm: %s\n", st.ToString().c_str());
      return 2;
    }
  }
  s.log = fopen((dir + "/requests.jsonl").c_str(), "ab");
  if (s.log == nullptr) {
    fprintf(stderr, "webfarm: requests.jsonl: %s\n", strerror(errno));
    return 2;
  }

  uv_timer_init(&loop, &s.flush_timer);
  s.flush_timer.data = &s;
  uv_timer_start(
      &s.flush_timer,
      [](uv_timer_t* t) { FlushLog(static_cast<Server*>(t->data)); },
      kLogFlushMs, kLogFlushMs);
  uv_timer_init(&loop, &s.max_timer);
  s.max_timer.data = &s;
  uv_timer_start(
      &s.max_timer, [](uv_timer_t* t) { Stop(static_cast<Server*>(t->data)); },
      static_cast<uint64_t>(max_seconds) * 1000, 0);
  for (uv_signal_t* sig : {&s.sigterm, &s.sigint}) {
    uv_signal_init(&loop, sig);
    sig->data = &s;
    uv_signal_start(
        sig, [](uv_signal_t* h, int) { Stop(static_cast<Server*>(h->data)); },
        sig == &s.sigterm ? SIGTERM : SIGINT);
  }

  // "port" last, atomically: its presence means every file above is
  // complete and the listeners accept.
  std::string port_line = std::to_string(s.port) + "\n";
  if (Status st = WriteFile(dir + "/port.tmp", port_line);
      !st.ok() ||
      rename((dir + "/port.tmp").c_str(), (dir + "/port").c_str()) != 0) {
    fprintf(stderr, "webfarm: cannot write %s/port\n", dir.c_str());
    return 2;
  }
  fprintf(stderr, "webfarm: %d hosts on port %d, %zu manifest URLs\n",
          site.host_count(), s.port, manifest.size());

  uv_run(&loop, UV_RUN_DEFAULT);
  // Stop() closed every handle; run once more to deliver close callbacks.
  uv_run(&loop, UV_RUN_DEFAULT);
  FlushLog(&s);
  fclose(s.log);
  for (uv_tcp_t* t : s.listeners) delete t;
  uv_loop_close(&loop);
  return 0;
}

}  // namespace
}  // namespace crawld::webfarm

int main(int argc, char** argv) { return crawld::webfarm::Main(argc, argv); }
