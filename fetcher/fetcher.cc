// fetcher/fetcher.cc: curl multi on the worker's libuv loop (the pattern of
// curl's docs/examples/multi-uv.c). docs/LOOP.md describes the callbacks,
// who owns which handle, and the per-fetch state machine.
#include "fetcher/fetcher.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "base/ascii.h"
#include "base/time.h"
#include "fetcher/framing.h"
#include "fetcher/h2_head.h"

namespace crawld::fetcher {
namespace {

using ascii::EqualsIgnoreCase;
using ascii::StartsWithIgnoreCase;

// The watchdog that keeps the time limits ticks this often while transfers
// are in flight (milliseconds): the resolution of total_timeout_ms and of
// the low-speed check.
constexpr uint64_t kWatchdogMs = 100;
// A watchdog tick later than this (milliseconds) means the loop was blocked
// (a long callback): that time is not held against the transfers.
constexpr uint64_t kStallMs = 500;

// Monotonic nanoseconds (not the loop's cached time: a stall must show).
uint64_t MonoNs() { return uv_hrtime(); }

using DoneFn = std::function<void(Response&&)>;

struct Completion {
  DoneFn done;
  Response response;
};

// Runs callbacks without touching the Fetcher, which a callback may destroy.
void Deliver(std::vector<Completion> items) {
  for (Completion& c : items) c.done(std::move(c.response));
}

template <typename Handle>
void CloseAndDelete(Handle* h) {
  uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* handle) {
    delete reinterpret_cast<Handle*>(handle);
  });
}

// Host (lowercase, as written: "[v6]" keeps its brackets) and port of an
// absolute http(s) URL; the scheme's port when none is written.
bool UrlHostPort(std::string_view url, std::string* host, int* port) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return false;
  const std::string_view scheme = url.substr(0, scheme_end);
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    rest.remove_prefix(at + 1);
  }
  size_t colon = std::string_view::npos;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return false;
      colon = close + 1;
    }
  } else {
    colon = rest.find(':');
  }
  host->assign(rest.substr(0, colon));
  ascii::LowerInPlace(host);
  const bool https = scheme.size() == 5;
  *port = https ? 443 : 80;
  if (colon != std::string_view::npos && colon + 1 < rest.size()) {
    int p = 0;
    for (char c : rest.substr(colon + 1)) {
      if (c < '0' || c > '9' || p > 65535) return false;
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return false;
    *port = p;
  }
  return true;
}

bool IsIpv4Literal(const std::string& host) {
  unsigned char addr[4];
  return inet_pton(AF_INET, host.c_str(), addr) == 1;
}

// A header line without its line end and surrounding OWS.
std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return ascii::TrimHttpSpace(s);
}

// "HTTP/1.1 200 OK" -> version "HTTP/1.1" and 200; false when the line is
// not a status line.
bool ParseStatusLine(std::string_view line, std::string* version, int* status) {
  line = Trim(line);
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || line.size() < sp + 4) return false;
  int code = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (!ascii::IsDigit(line[i])) return false;
    code = code * 10 + (line[i] - '0');
  }
  version->assign(line.substr(0, sp));
  *status = code;
  return true;
}

ErrorClass Classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return ErrorClass::kNone;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return ErrorClass::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return ErrorClass::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
      return ErrorClass::kTls;
    case CURLE_FILESIZE_EXCEEDED:
      return ErrorClass::kTooLarge;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_RANGE_ERROR:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return ErrorClass::kProtocol;
    case CURLE_ABORTED_BY_CALLBACK:
      return ErrorClass::kAborted;
    default:
      return ErrorClass::kOther;
  }
}

Options Sanitize(Options o) {
  o.total_timeout_ms = std::max<int64_t>(o.total_timeout_ms, 1);
  o.connect_timeout_ms =
      std::clamp<int64_t>(o.connect_timeout_ms, 1, o.total_timeout_ms);
  o.low_speed_bytes_per_s = std::max<int64_t>(o.low_speed_bytes_per_s, 0);
  o.low_speed_time_s = std::max<int64_t>(o.low_speed_time_s, 0);
  o.max_body_bytes = std::max<uint64_t>(o.max_body_bytes, 1);
  o.max_header_bytes =
      std::clamp<uint64_t>(o.max_header_bytes, 1024, 256 * 1024);
  o.max_connections = std::clamp<size_t>(o.max_connections, 1, 100000);
  o.max_idle_connections = std::min<size_t>(o.max_idle_connections, 100000);
  return o;
}

}  // namespace

std::string_view ErrorClassName(ErrorClass c) {
  switch (c) {
    case ErrorClass::kNone:
      return "none";
    case ErrorClass::kConnect:
      return "connect";
    case ErrorClass::kTimeout:
      return "timeout";
    case ErrorClass::kTls:
      return "tls";
    case ErrorClass::kTooLarge:
      return "too_large";
    case ErrorClass::kProtocol:
      return "protocol";
    case ErrorClass::kHeaderTooLarge:
      return "header_too_large";
    case ErrorClass::kFraming:
      return "framing";
    case ErrorClass::kIncomplete:
      return "incomplete";
    case ErrorClass::kAborted:
      return "aborted";
    case ErrorClass::kOther:
      return "other";
  }
  return "other";
}

std::string Response::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

// The life of one fetch, in the order it moves (like curl's mstate()):
// states only move forward and may skip (an error goes straight to kDone).
// kQueued fetches wait in our FIFO for one of max_connections slots; curl
// sees a transfer from kStarted on, so its timeouts start there.
enum class State { kQueued, kStarted, kRequestSent, kHeaders, kBody, kDone };

std::string_view StateName(State s) {
  switch (s) {
    case State::kQueued:
      return "queued";
    case State::kStarted:
      return "started";
    case State::kRequestSent:
      return "request_sent";
    case State::kHeaders:
      return "headers";
    case State::kBody:
      return "body";
    case State::kDone:
      return "done";
  }
  return "?";
}

struct Fetcher::Impl {
  // One curl multi handle and its timer. The connections are split over
  // several, by origin: curl 7.88 walks the whole pool of a multi handle
  // at each transfer's end (curl_multi_remove_handle looks at every cached
  // connection whenever the transfer's own was kept), so with thousands of
  // idle connections one pool cost a worker 10% of its CPU (perf, a
  // 10,000-host web); over k handles each walk is 1/k as long.
  struct Shard {
    Impl* impl = nullptr;
    CURLM* multi = nullptr;
    uv_timer_t* timer = nullptr;  // CURLMOPT_TIMERFUNCTION's timer
    size_t index = 0;             // in shards
  };

  struct Fetch {
    Impl* impl = nullptr;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;     // CURLOPT_HTTPHEADER, owned
    curl_slist* connect_to = nullptr;  // CURLOPT_CONNECT_TO, owned
    curl_slist* resolve = nullptr;     // CURLOPT_RESOLVE, owned
    CURLSH* dns_cache = nullptr;       // this transfer's own, owned
    Request request;
    Response response;
    DoneFn done;
    State state = State::kQueued;
    uint64_t max_body = 0;
    bool in_multi = false;          // added to the multi handle
    bool request_complete = false;  // request head fully captured
    // What curl's connection pool keys reuse on: scheme, host and port
    // (the address is pinned per transfer, so not the address).
    std::string origin;
    Shard* shard = nullptr;  // the multi handle it runs on (by origin)

    // --- the response head (of the final response once head_final) ---
    bool head_complete = false;  // blank line of the current head seen
    bool head_final = false;     // ... and it is the final (>= 200) head
    std::string version;         // "HTTP/1.1" from the status line
    int status = 0;              // from the status line
    uint64_t head_bytes = 0;     // all heads, interim 1xx included

    // --- the body, judged by its framing (fetcher/framing.h) ---
    internal::BodyFraming framing;
    internal::ChunkedDecoder chunked;
    uint64_t body_in = 0;        // payload bytes taken into the body
    bool body_complete = false;  // the framing says the body ended
    bool header_too_large = false;
    bool framing_error = false;   // the head's framing is invalid
    std::string framing_message;  // why, for framing_error
    std::string chunk_error;      // why the chunked body could not be read
    bool too_large = false;       // max_body reached, transfer stopped
    Status write_error;           // DocBuffer append failure

    // --- time limits, kept by the watchdog (monotonic ns) ---
    uint64_t deadline_ns = 0;
    uint64_t stall_credit_ns = 0;  // left to add for loop stalls
    uint64_t window_start_ns = 0;  // low-speed window
    uint64_t window_bytes = 0;     // bytes received in it
    std::string timeout_message;   // set when the watchdog cut it

    char error_buffer[CURL_ERROR_SIZE] = {};
  };
  // One per socket curl opens, for the socket's life (until OnCloseSocket),
  // not per transfer: a kept-alive connection that the next transfer asks
  // the same readiness of needs no system call (no uv_poll_init's ioctl, no
  // epoll_ctl; issue 16).
  struct SockPoll {
    uv_poll_t poll;
    Impl* impl;
    Shard* shard;  // whose multi handle the socket belongs to
    curl_socket_t fd;
    int events = 0;           // UV_READABLE / UV_WRITABLE being watched
    bool curl_wants = false;  // from curl's IN/OUT up to its REMOVE
  };

  uv_loop_t* loop = nullptr;
  Options options;
  std::vector<std::unique_ptr<Shard>> shards;
  bool shut_down = false;
  uv_timer_t* defer_timer = nullptr;  // delivers `completions`
  uv_timer_t* watchdog = nullptr;     // time limits, while `active`
  uint64_t last_tick_ns = 0;          // the watchdog's previous run
  std::unordered_set<Fetch*> active;  // added to their shard's multi
  // Waiting for a slot. We gate on max_connections ourselves instead of
  // letting curl queue (CURLMOPT_MAX_TOTAL_CONNECTIONS alone): curl counts
  // the time a transfer waits for a connection against its timeout.
  std::deque<Fetch*> queued;
  std::unordered_map<curl_socket_t, SockPoll*> polls;  // by descriptor
  // Every socket curl has open, and its origin (see Keeps()). A socket
  // is one connection, to one origin, for its life.
  std::unordered_map<curl_socket_t, std::string> origin_of_socket;
  std::unordered_map<std::string, int> sockets_of_origin;
  std::vector<Completion> completions;
  Stats stats;
  // Easy handles of finished transfers, reset (curl_easy_reset keeps their
  // buffers): a new transfer takes one instead of allocating and zeroing a
  // fresh handle and its 16 KiB buffer (issue 16). At most max_connections.
  std::vector<CURL*> spare_easy;

  CURL* TakeEasy() {
    if (spare_easy.empty()) return curl_easy_init();
    CURL* e = spare_easy.back();
    spare_easy.pop_back();
    return e;
  }

  // Gives a transfer's handle back once curl no longer holds it. The DNS
  // share is detached first: curl_easy_reset leaves it attached, and a
  // share in use cannot be freed (FreeOwned).
  void ReleaseEasy(Fetch* f) {
    CURL* e = f->easy;
    f->easy = nullptr;
    if (e == nullptr) return;
    if (f->dns_cache != nullptr) {
      curl_easy_setopt(e, CURLOPT_SHARE, static_cast<CURLSH*>(nullptr));
    }
    if (shut_down || spare_easy.size() >= options.max_connections) {
      curl_easy_cleanup(e);
      return;
    }
    curl_easy_reset(e);
    spare_easy.push_back(e);
  }

  // The single transition function: every state change goes through here.
  void SetState(Fetch* f, State to) {
    if (to <= f->state) return;
    if (options.on_state_change) {
      options.on_state_change(f->request.url, StateName(f->state),
                              StateName(to));
    }
    f->state = to;
  }

  void Defer(DoneFn done, Response r) {
    completions.push_back({std::move(done), std::move(r)});
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(defer_timer))) {
      uv_timer_start(defer_timer, OnDeferTimer, 0, 0);
    }
  }

  static void OnDeferTimer(uv_timer_t* t) {
    Impl* impl = static_cast<Impl*>(t->data);
    std::vector<Completion> items = std::move(impl->completions);
    impl->completions.clear();
    impl->stats.completed += items.size();
    Deliver(std::move(items));  // may destroy *impl
  }

  // --- curl callbacks (run inside curl calls: no user code, no re-entry) ---

  static int OnDebug(CURL*, curl_infotype type, char* data, size_t size,
                     void* userp) {
    if (type != CURLINFO_HEADER_OUT) return 0;
    Fetch* f = static_cast<Fetch*>(userp);
    // A request re-sent on a fresh connection (stale keep-alive) replaces
    // the first copy.
    if (f->request_complete) {
      f->response.request_head.clear();
      f->request_complete = false;
    }
    f->response.request_head.append(data, size);
    std::string_view head = f->response.request_head;
    if (head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n") {
      // curl shows an h2 request as "GET /p HTTP/2", which no HTTP message
      // is: kept as the HTTP/1.1 request it stands for (h2_head.h).
      if (internal::IsH2RequestHead(head)) {
        f->response.request_head = internal::Http11RequestHead(head);
      }
      f->request_complete = true;
      f->impl->SetState(f, State::kRequestSent);
    }
    return 0;
  }

  // One line of a response head. Returning anything but `len` stops the
  // transfer (CURLE_WRITE_ERROR); Finish() then reads the flags set here.
  static size_t OnHeader(char* buf, size_t size, size_t n, void* userp) {
    Fetch* f = static_cast<Fetch*>(userp);
    const size_t len = size * n;
    std::string_view line(buf, len);
    Response& r = f->response;
    if (line.empty()) return len;
    f->window_bytes += len;
    if (f->head_final) return len;  // nothing after the final head's end
    f->head_bytes += len;
    if (f->head_bytes > f->impl->options.max_header_bytes) {
      f->header_too_large = true;
      return 0;
    }
    bool status_line = false;
    if (!f->head_complete && !r.response_head.empty()) {
      // A field line of the head being read.
    } else if (StartsWithIgnoreCase(line, "HTTP/")) {
      status_line = true;
      // A new head: an interim 1xx before it is dropped.
      r.response_head.clear();
      r.headers.clear();
      f->head_complete = false;
      f->status = 0;
      f->version.clear();
      ParseStatusLine(line, &f->version, &f->status);
      f->impl->SetState(f, State::kHeaders);
    }
    // A field line follows something of its head (a status line).
    const bool field_line = !status_line && !r.response_head.empty();
    if (status_line && internal::IsH2StatusLine(line)) {
      // "HTTP/2 200 " as curl writes it: stored as "HTTP/1.1 200 "
      // (h2_head.h); f->version stays "HTTP/2" for the framing.
      r.response_head.append(internal::Http11StatusLine(line));
    } else {
      r.response_head.append(line);
    }
    if (line == "\r\n" || line == "\n") {
      f->head_complete = true;
      if (f->status >= 200) return OnFinalHead(f) ? len : 0;
    } else if (field_line) {
      if ((line[0] == ' ' || line[0] == '\t') && !r.headers.empty()) {
        // obs-fold (RFC 9112 5.2): continuation of the previous value.
        std::string& v = r.headers.back().second;
        v += ' ';
        v += Trim(line);
      } else if (size_t colon = line.find(':'); colon != std::string::npos) {
        r.headers.emplace_back(std::string(Trim(line.substr(0, colon))),
                               std::string(Trim(line.substr(colon + 1))));
      }
    }
    return len;
  }

  // The final head is complete: decide how its body is framed. False for
  // invalid framing, which stops the transfer before any body byte.
  static bool OnFinalHead(Fetch* f) {
    f->head_final = true;
    Result<internal::BodyFraming> framing =
        internal::FramingOf(f->status, f->version, f->response.headers);
    if (!framing.ok()) {
      f->framing_error = true;
      f->framing_message = framing.status().message();
      return false;
    }
    f->framing = *framing;
    f->response.framing_note = f->framing.note;
    f->body_complete =
        f->framing.kind == internal::BodyFraming::Kind::kNone ||
        (f->framing.kind == internal::BodyFraming::Kind::kLength &&
         f->framing.length == 0);
    return true;
  }

  // Takes payload bytes into the body up to max_body. Returns
  // ResourceExhausted once the cap is reached (the rest is dropped).
  static Status TakeBody(Fetch* f, std::string_view data) {
    const uint64_t have = f->response.body.size();
    const uint64_t room = have < f->max_body ? f->max_body - have : 0;
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(data.size(), room));
    if (take > 0) {
      if (Status s = f->response.body.Append(data.substr(0, take)); !s.ok()) {
        f->write_error = s;
        return s;
      }
      f->body_in += take;
    }
    if (take < data.size()) {
      f->too_large = true;
      return Status::ResourceExhausted("body cap");
    }
    return Status::Ok();
  }

  // Body bytes as curl received them (chunked coding intact: curl's
  // transfer decoding is off). Returning less than `len` stops the
  // transfer.
  static size_t OnWrite(char* buf, size_t size, size_t n, void* userp) {
    Fetch* f = static_cast<Fetch*>(userp);
    const size_t len = size * n;
    std::string_view data(buf, len);
    f->window_bytes += len;
    f->impl->SetState(f, State::kBody);
    switch (f->framing.kind) {
      case internal::BodyFraming::Kind::kChunked: {
        Status s = f->chunked.Feed(
            data, [f](std::string_view chunk) { return TakeBody(f, chunk); });
        // RFC 9112 8: a chunked coding that fails to decode leaves an
        // incomplete message, to be recorded as such (JudgeBody).
        if (s.code() == Status::Code::kInvalidArgument) {
          f->chunk_error = s.message();
        }
        if (!s.ok()) return 0;
        f->body_complete = f->chunked.done();
        return len;
      }
      case internal::BodyFraming::Kind::kLength: {
        // curl hands over at most Content-Length bytes.
        if (!TakeBody(f, data).ok()) return 0;
        f->body_complete = f->body_in >= f->framing.length;
        return len;
      }
      case internal::BodyFraming::Kind::kNone:
      case internal::BodyFraming::Kind::kClose:
        break;
    }
    return TakeBody(f, data).ok() ? len : 0;
  }

  // --- multi_socket plumbing (multi-uv.c) ---

  static int OnCurlSocket(CURL*, curl_socket_t s, int action, void* userp,
                          void* socketp) {
    Shard* shard = static_cast<Shard*>(userp);
    Impl* impl = shard->impl;
    SockPoll* sp = static_cast<SockPoll*>(socketp);
    if (action == CURL_POLL_REMOVE) {
      // curl stops watching: the connection goes idle (kept alive) or is
      // about to close (OnCloseSocket follows). The poll keeps its events,
      // so that a reuse asking the same costs nothing; an event while idle
      // stops it (OnPoll).
      if (sp != nullptr) {
        sp->curl_wants = false;
        // An idle connection does not keep the loop alive (as before).
        uv_unref(reinterpret_cast<uv_handle_t*>(&sp->poll));
        curl_multi_assign(shard->multi, s, nullptr);
      }
      return 0;
    }
    if (sp == nullptr) {
      auto it = impl->polls.find(s);
      if (it != impl->polls.end()) {
        sp = it->second;
      } else {
        sp = new SockPoll{};
        sp->impl = impl;
        sp->fd = s;
        if (uv_poll_init_socket(impl->loop, &sp->poll, s) != 0) {
          delete sp;
          return -1;
        }
        sp->poll.data = sp;
        impl->polls.emplace(s, sp);
      }
      sp->shard = shard;
      curl_multi_assign(shard->multi, s, sp);
    }
    sp->curl_wants = true;
    uv_ref(reinterpret_cast<uv_handle_t*>(&sp->poll));
    int events = 0;
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT) {
      events |= UV_READABLE;
    }
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT) {
      events |= UV_WRITABLE;
    }
    // uv_poll_start always re-arms (two epoll_ctl calls): only on a change.
    if (events != sp->events) {
      sp->events = events;
      uv_poll_start(&sp->poll, events, OnPoll);
    }
    return 0;
  }

  // CURLOPT_CLOSESOCKETFUNCTION: curl closes a socket (after its REMOVE).
  // The poll goes first (uv_close takes the descriptor out of epoll), so a
  // descriptor number the kernel hands out again never meets a stale
  // watcher.
  static int OnCloseSocket(void* clientp, curl_socket_t s) {
    Impl* impl = static_cast<Impl*>(clientp);
    impl->ForgetSocket(s);
    if (auto it = impl->polls.find(s); it != impl->polls.end()) {
      SockPoll* sp = it->second;
      impl->polls.erase(it);
      uv_poll_stop(&sp->poll);
      CloseAndDelete(sp);
    }
    return ::close(s);
  }

  static int OnCurlTimer(CURLM*, long timeout_ms, void* userp) {
    Shard* shard = static_cast<Shard*>(userp);
    if (shard->impl->shut_down) return 0;
    if (timeout_ms < 0) {
      uv_timer_stop(shard->timer);
    } else {
      // 0 means "now"; 1 ms keeps libuv 1.44 from re-running a re-armed
      // timer in the same timers phase (as multi-uv.c does).
      uv_timer_start(shard->timer, OnUvTimer,
                     std::max<uint64_t>(static_cast<uint64_t>(timeout_ms), 1),
                     0);
    }
    return 0;
  }

  static void OnPoll(uv_poll_t* handle, int status, int events) {
    SockPoll* sp = static_cast<SockPoll*>(handle->data);
    Impl* impl = sp->impl;
    if (!sp->curl_wants) {
      // An idle connection became readable (the server closed it, most
      // likely): curl checks it before any reuse; stop watching until then.
      uv_poll_stop(&sp->poll);
      sp->events = 0;
      return;
    }
    int flags = 0;
    if (status < 0) {
      flags = CURL_CSELECT_ERR;
    } else {
      if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
      if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    }
    int running = 0;
    curl_multi_socket_action(sp->shard->multi, sp->fd, flags, &running);
    impl->CheckMultiInfo();  // may destroy *impl
  }

  static void OnUvTimer(uv_timer_t* t) {
    Shard* shard = static_cast<Shard*>(t->data);
    int running = 0;
    curl_multi_socket_action(shard->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    shard->impl->CheckMultiInfo();  // may destroy *impl
  }

  // --- time limits (see the file comment of fetcher.h) ---

  void StartLimits(Fetch* f) {
    const uint64_t now = MonoNs();
    const int64_t total_ms = f->request.total_timeout_ms > 0
                                 ? f->request.total_timeout_ms
                                 : options.total_timeout_ms;
    f->deadline_ns = now + static_cast<uint64_t>(total_ms) * 1000000;
    // A loop blocked most of the time would otherwise extend a transfer
    // forever: stalls add at most the limit once more.
    f->stall_credit_ns = static_cast<uint64_t>(total_ms) * 1000000;
    f->window_start_ns = now;
    f->window_bytes = 0;
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(watchdog))) {
      last_tick_ns = now;
      uv_timer_start(watchdog, OnWatchdog, kWatchdogMs, kWatchdogMs);
    }
  }

  // Why `f` is over a limit at `now`, or "" when it is not.
  std::string OverLimit(Fetch* f, uint64_t now) {
    if (now >= f->deadline_ns) {
      const int64_t total_ms = f->request.total_timeout_ms > 0
                                   ? f->request.total_timeout_ms
                                   : options.total_timeout_ms;
      return "transfer not complete after " + std::to_string(total_ms) + " ms";
    }
    const uint64_t window_ns = now - f->window_start_ns;
    if (options.low_speed_bytes_per_s <= 0 || options.low_speed_time_s <= 0 ||
        window_ns <
            static_cast<uint64_t>(options.low_speed_time_s) * 1000000000) {
      return "";
    }
    // bytes / seconds < limit, in integers.
    const uint64_t need = static_cast<uint64_t>(options.low_speed_bytes_per_s);
    if (f->window_bytes * 1000000000 < need * window_ns) {
      return "too slow: " + std::to_string(f->window_bytes) + " bytes in " +
             std::to_string(window_ns / 1000000) + " ms (below " +
             std::to_string(need) + " bytes/s)";
    }
    f->window_start_ns = now;
    f->window_bytes = 0;
    return "";
  }

  static void OnWatchdog(uv_timer_t* t) {
    Impl* impl = static_cast<Impl*>(t->data);
    impl->Watch();  // may destroy *impl
  }

  void Watch() {
    const uint64_t now = MonoNs();
    const uint64_t gap = now - last_tick_ns;
    last_tick_ns = now;
    if (active.empty()) {
      uv_timer_stop(watchdog);
      return;
    }
    if (gap > (kWatchdogMs + kStallMs) * 1000000) {
      // The loop did not run for a while (a long callback): the servers
      // were not read meanwhile, so that time is theirs to have back.
      // Nothing is judged in this tick; the poll phase right after reads
      // what waits in the sockets.
      const uint64_t stall = gap - kWatchdogMs * 1000000;
      for (Fetch* f : active) {
        const uint64_t add = std::min(stall, f->stall_credit_ns);
        f->deadline_ns += add;
        f->stall_credit_ns -= add;
        f->window_start_ns = now;
        f->window_bytes = 0;
      }
      ++stats.loop_stalls;
      stats.loop_stall_ms += stall / 1000000;
      return;
    }
    std::vector<Fetch*> over;
    for (Fetch* f : active) {
      if (std::string why = OverLimit(f, now); !why.empty()) {
        f->timeout_message = std::move(why);
        over.push_back(f);
      }
    }
    if (over.empty()) return;
    // Never decide a timeout without reading what is already there: a
    // response may have arrived in full since the last poll.
    std::vector<std::pair<CURLM*, curl_socket_t>> readable;
    for (const auto& [fd, sp] : polls) {
      if (sp->curl_wants && (sp->events & UV_READABLE)) {
        readable.emplace_back(sp->shard->multi, fd);
      }
    }
    int running = 0;
    for (const auto& [m, fd] : readable) {
      curl_multi_socket_action(m, fd, CURL_CSELECT_IN, &running);
    }
    std::vector<Completion> out;
    CollectFinished(&out);
    for (Fetch* f : over) {
      if (active.count(f) == 0) continue;  // finished while draining
      out.push_back(Finish(f, CURLE_OPERATION_TIMEDOUT, false));
    }
    stats.completed += out.size();
    StartQueued();
    Deliver(std::move(out));  // may destroy *this
  }

  // --- completion ---

  // The outcome of a transfer whose final head arrived (head_final).
  void JudgeBody(Fetch* f, CURLcode code) {
    Response& r = f->response;
    const bool close_delimited =
        f->framing.kind == internal::BodyFraming::Kind::kClose;
    if (f->body_complete || (close_delimited && code == CURLE_OK)) return;
    r.truncated = true;
    if (f->too_large) {
      r.error = ErrorClass::kTooLarge;
      r.error_message =
          "body larger than " + std::to_string(f->max_body) + " bytes";
      r.truncated_reason = "length";
    } else if (!f->write_error.ok()) {
      r.error = ErrorClass::kOther;
      r.error_message = f->write_error.ToString();
      r.truncated_reason = "unspecified";
    } else if (!f->chunk_error.empty()) {
      // We stopped reading, not the server: "unspecified", not
      // "disconnect".
      r.error = ErrorClass::kIncomplete;
      r.error_message = "body cut after " + std::to_string(r.body.size()) +
                        " bytes: " + f->chunk_error;
      r.truncated_reason = "unspecified";
    } else if (!f->timeout_message.empty() ||
               code == CURLE_OPERATION_TIMEDOUT) {
      r.error = ErrorClass::kTimeout;
      r.error_message = !f->timeout_message.empty() ? f->timeout_message
                                                    : CurlMessage(f, code);
      r.truncated_reason = "time";
    } else {
      r.error = ErrorClass::kIncomplete;
      r.error_message =
          "body ended after " + std::to_string(r.body.size()) + " bytes";
      if (f->framing.kind == internal::BodyFraming::Kind::kLength) {
        r.error_message += " of " + std::to_string(f->framing.length);
      } else if (f->framing.kind == internal::BodyFraming::Kind::kChunked) {
        r.error_message += ", before the last chunk";
      }
      if (code != CURLE_OK) r.error_message += ": " + CurlMessage(f, code);
      r.truncated_reason = "disconnect";
    }
  }

  static std::string CurlMessage(Fetch* f, CURLcode code) {
    return f->error_buffer[0] != '\0' ? std::string(f->error_buffer)
                                      : std::string(curl_easy_strerror(code));
  }

  // Fills the response of a finished transfer and frees its curl state.
  Completion Finish(Fetch* f, CURLcode code, bool aborted) {
    if (f->in_multi) curl_multi_remove_handle(f->shard->multi, f->easy);
    Response& r = f->response;
    char* ip = nullptr;
    if (curl_easy_getinfo(f->easy, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK &&
        ip != nullptr) {
      r.ip = ip;
    }
    long connects = 0;
    curl_easy_getinfo(f->easy, CURLINFO_NUM_CONNECTS, &connects);
    stats.connections += static_cast<uint64_t>(std::max(connects, 0L));
    stats.connections_by_pool[f->shard->index] +=
        static_cast<uint64_t>(std::max(connects, 0L));
    r.status_code = f->head_final ? f->status : 0;
    if (f->version == "HTTP/2") {
      r.protocol = "h2";
    } else if (f->version == "HTTP/1.0") {
      r.protocol = "http/1.0";
    } else {
      r.protocol = "http/1.1";
    }
    if (aborted) {
      // Cut by us, not by the server: nothing to record (the caller fetches
      // the URL again), whatever had arrived.
      r.error = ErrorClass::kAborted;
      r.error_message = "shutdown";
      r.status_code = 0;
    } else if (f->header_too_large ||
               (!f->head_final && code == CURLE_OUT_OF_MEMORY)) {
      // curl refuses a single header line over 100 KB (CURL_MAX_HTTP_HEADER)
      // with CURLE_OUT_OF_MEMORY before we see the line.
      r.error = ErrorClass::kHeaderTooLarge;
      r.status_code = 0;
      r.error_message =
          f->header_too_large
              ? "response head larger than " +
                    std::to_string(options.max_header_bytes) + " bytes"
              : "response header line too long: " + CurlMessage(f, code);
    } else if (f->framing_error) {
      // RFC 9112 6.3: "the user agent MUST close the connection to the
      // server and discard the received response" (curl closes it: the
      // transfer was stopped).
      r.error = ErrorClass::kFraming;
      r.error_message = "response " + std::to_string(f->status) +
                        " discarded: " + f->framing_message;
      r.status_code = 0;
    } else if (!f->head_final && f->status > 0 &&
               code == CURLE_WEIRD_SERVER_REPLY &&
               std::string_view(f->error_buffer).find("Content-Length") !=
                   std::string_view::npos) {
      // curl refuses a Content-Length it cannot read (curl 7.88 with
      // Debian's fixes: "Invalid Content-Length: value") before we see
      // the line; it is invalid framing all the same.
      r.error = ErrorClass::kFraming;
      r.error_message = "response " + std::to_string(f->status) +
                        " discarded: " + CurlMessage(f, code) +
                        " (RFC 9112 section 6.3)";
    } else if (!f->head_final) {
      if (!f->timeout_message.empty()) {
        r.error = ErrorClass::kTimeout;
        r.error_message = f->timeout_message;
      } else {
        r.error = code == CURLE_OK ? ErrorClass::kProtocol : Classify(code);
        // A connection that ends inside the head is a protocol failure, as
        // an empty reply is.
        if (r.error == ErrorClass::kNone || code == CURLE_WRITE_ERROR) {
          r.error = ErrorClass::kProtocol;
        }
        r.error_message = code == CURLE_OK ? "no complete response head"
                                           : CurlMessage(f, code);
      }
    } else {
      r.error = ErrorClass::kNone;
      JudgeBody(f, code);
    }
    if (r.status_code == 0) {
      // Nothing recordable: no head, no body (see ErrorClass).
      r.protocol.clear();
      r.response_head.clear();
      r.headers.clear();
      r.body.Clear();
      r.truncated = false;
      r.truncated_reason.clear();
    }
    r.end_us = WallMicros();
    SetState(f, State::kDone);
    ReleaseEasy(f);
    FreeOwned(f);
    active.erase(f);
    Completion c{std::move(f->done), std::move(f->response)};
    delete f;
    return c;
  }

  // Finishes every transfer curl reports done, into `out`.
  void CollectFinished(std::vector<Completion>* out) {
    CURLMsg* msg;
    int left = 0;
    // Collect first: Finish() removes handles, which would invalidate the
    // message queue while it is read.
    std::vector<std::pair<Fetch*, CURLcode>> finished;
    for (const auto& shard : shards) {
      while ((msg = curl_multi_info_read(shard->multi, &left)) != nullptr) {
        if (msg->msg != CURLMSG_DONE) continue;
        Fetch* f = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &f);
        finished.emplace_back(f, msg->data.result);
      }
    }
    for (auto& [f, code] : finished) out->push_back(Finish(f, code, false));
  }

  void CheckMultiInfo() {
    std::vector<Completion> out;
    CollectFinished(&out);
    stats.completed += out.size();
    StartQueued();
    Deliver(std::move(out));  // may destroy *this
  }

  // Whether `f`'s connection stays open after it (else curl closes it).
  //
  // Why not curl's own pool limit alone: once its pool is full, curl 7.88
  // walks every connection it holds to find the least recently used one,
  // at each new connection and at each transfer's end. With thousands of
  // hosts in rotation (fetch.max_idle_connections = 4,096) those walks
  // took 30% of a worker's CPU (perf, 10,000 hosts). And least recently
  // used is the worst order for a crawler, which comes back to its hosts
  // in turn: with more hosts in rotation than idle slots it closes the one
  // connection the next page would have used.
  //
  // So the pool never fills. A host whose connection is idle takes it over
  // and keeps it while it has pages queued (the caller's keep_alive); a
  // transfer needing a new connection keeps it only while fewer than
  // max_connections + max_idle_connections are open. The others are
  // closed after their transfer, and the hosts holding one keep theirs.
  bool Keeps(const Fetch* f) const {
    if (!f->request.keep_alive) return false;
    // One transfer per host at a time (the caller's politeness), so a
    // connection open to this origin is idle: curl reuses it (or finds it
    // dead, closes it and connects anew, in the same place).
    return sockets_of_origin.count(f->origin) != 0 ||
           origin_of_socket.size() <
               options.max_connections + options.max_idle_connections;
  }

  // CURLOPT_OPENSOCKETFUNCTION: the socket curl asked for, noted with its
  // origin.
  static curl_socket_t OnOpenSocket(void* clientp, curlsocktype,
                                    curl_sockaddr* addr) {
    Fetch* f = static_cast<Fetch*>(clientp);
    const curl_socket_t s =
        ::socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (s == CURL_SOCKET_BAD) return s;
    Impl* impl = f->impl;
    if (impl->origin_of_socket.emplace(s, f->origin).second) {
      ++impl->sockets_of_origin[f->origin];
      impl->stats.peak_open_connections = std::max<uint64_t>(
          impl->stats.peak_open_connections, impl->origin_of_socket.size());
    }
    return s;
  }

  void ForgetSocket(curl_socket_t s) {
    auto it = origin_of_socket.find(s);
    if (it == origin_of_socket.end()) return;
    if (auto by = sockets_of_origin.find(it->second);
        by != sockets_of_origin.end() && --by->second <= 0) {
      sockets_of_origin.erase(by);
    }
    origin_of_socket.erase(it);
  }

  // Hands queued fetches to curl while slots are free. Failures are
  // delivered through the defer queue, never inline.
  void StartQueued() {
    while (!shut_down && !queued.empty() &&
           active.size() < options.max_connections) {
      Fetch* f = queued.front();
      queued.pop_front();
      active.insert(f);
      SetState(f, State::kStarted);
      StartLimits(f);
      const bool keep = Keeps(f);
      if (!keep && f->request.keep_alive) ++stats.connections_not_kept;
      curl_easy_setopt(f->easy, CURLOPT_FORBID_REUSE, keep ? 0L : 1L);
      CURLMcode mc = curl_multi_add_handle(f->shard->multi, f->easy);
      f->in_multi = mc == CURLM_OK;
      if (mc != CURLM_OK) {
        active.erase(f);
        Completion c = Finish(f, CURLE_OK, false);
        c.response.error = ErrorClass::kOther;
        c.response.error_message =
            std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc);
        Defer(std::move(c.done), std::move(c.response));
      }
    }
  }

  // What a Fetch owns besides its easy handle; called after the handle is
  // cleaned up (it must let go of the DNS cache first).
  static void FreeOwned(Fetch* f) {
    curl_slist_free_all(f->headers);
    curl_slist_free_all(f->connect_to);
    curl_slist_free_all(f->resolve);
    if (f->dns_cache != nullptr) curl_share_cleanup(f->dns_cache);
    f->headers = f->connect_to = f->resolve = nullptr;
    f->dns_cache = nullptr;
  }

  // Pins our resolved address for the URL's host (see docs/LOOP.md,
  // "Pinning the address"). A named host gets it as a CURLOPT_RESOLVE entry
  // in a DNS cache of this transfer's own: curl then keys keep-alive reuse
  // on the host name, and each transfer looks only at idle connections to
  // its own host. With CURLOPT_CONNECT_TO the key was the address: every
  // new transfer polled each idle connection to any host sharing that
  // address (shared hosting, CDNs) for liveness before comparing names.
  Status Pin(Fetch* f, const std::string& ip, bool v6) {
    const std::string addr = v6 ? "[" + ip + "]" : ip;
    std::string host;
    int port = 0;
    const bool parsed = UrlHostPort(f->request.url, &host, &port);
    if (parsed) {
      const bool tls = StartsWithIgnoreCase(f->request.url, "https:");
      f->origin =
          (tls ? "https://" : "http://") + host + ":" + std::to_string(port);
      f->shard =
          shards[std::hash<std::string>()(f->origin) % shards.size()].get();
    }
    if (!parsed || host.empty() || host.front() == '[' || IsIpv4Literal(host)) {
      // An IP literal is never looked up by curl; "::HOST:" = any URL host
      // and port -> this address, same port.
      f->connect_to = curl_slist_append(nullptr, ("::" + addr + ":").c_str());
      return f->connect_to != nullptr
                 ? Status::Ok()
                 : Status::ResourceExhausted("curl_slist_append");
    }
    f->dns_cache = curl_share_init();
    if (f->dns_cache == nullptr) {
      return Status::ResourceExhausted("curl_share_init");
    }
    curl_share_setopt(f->dns_cache, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    const std::string tail = ":" + std::to_string(port) + ":" + addr;
    f->resolve = curl_slist_append(nullptr, (host + tail).c_str());
    // Some curl versions look the name up without its trailing dot.
    if (f->resolve != nullptr && host.size() > 1 && host.back() == '.') {
      host.pop_back();
      f->resolve = curl_slist_append(f->resolve, (host + tail).c_str());
    }
    return f->resolve != nullptr
               ? Status::Ok()
               : Status::ResourceExhausted("curl_slist_append");
  }

  // Refuses any lookup curl would start itself: the name must come from
  // the pin, never from the system resolver (it would bypass the caller's
  // network guard).
  static int OnResolverStart(void*, void*, void*) { return 1; }

  Status Configure(Fetch* f) {
    CURL* e = f->easy;
    const Request& rq = f->request;
    bool v6 = rq.ip.find(':') != std::string::npos;
    std::string ip = rq.ip;
    if (ip.size() >= 2 && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
    if (Status pinned = Pin(f, ip, v6); !pinned.ok()) return pinned;
    bool accept_given = false;
    for (const std::string& h : rq.extra_headers) {
      if (StartsWithIgnoreCase(h, "accept-encoding:")) accept_given = true;
      f->headers = curl_slist_append(f->headers, h.c_str());
    }
    if (!accept_given && !options.accept_encoding.empty()) {
      f->headers = curl_slist_append(
          f->headers, ("Accept-Encoding: " + options.accept_encoding).c_str());
    }

    int64_t total = rq.total_timeout_ms > 0 ? rq.total_timeout_ms
                                            : options.total_timeout_ms;
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption opt, auto value) {
      if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, value);
    };
    set(CURLOPT_URL, rq.url.c_str());
    set(CURLOPT_PRIVATE, static_cast<void*>(f));
    // curl keeps the list pointers, not copies: they live in the Fetch.
    if (f->connect_to != nullptr) set(CURLOPT_CONNECT_TO, f->connect_to);
    if (f->resolve != nullptr) {
      set(CURLOPT_SHARE, f->dns_cache);
      set(CURLOPT_RESOLVE, f->resolve);
      set(CURLOPT_RESOLVER_START_FUNCTION, &Impl::OnResolverStart);
    }
    set(CURLOPT_PROXY, "");  // ignore *_proxy environment variables
    set(CURLOPT_PROTOCOLS_STR, "http,https");
    set(CURLOPT_FOLLOWLOCATION, 0L);
    // 2TLS: "h2" offered by ALPN on https only; plain http stays HTTP/1.1
    // (no h2c upgrade, no prior knowledge).
    set(CURLOPT_HTTP_VERSION,
        static_cast<long>(options.http2 ? CURL_HTTP_VERSION_2TLS
                                        : CURL_HTTP_VERSION_1_1));
    set(CURLOPT_PATH_AS_IS, 1L);
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_HTTP_CONTENT_DECODING, 0L);
    // The raw chunked bytes come to OnWrite, which frames the body itself
    // (fetcher/framing.h); curl still parses the chunks to find the end.
    set(CURLOPT_HTTP_TRANSFER_DECODING, 0L);
    // 64 KiB reads: a 21 KB page in one recvfrom, not two (curl's default
    // is 16 KiB; issue 16, system calls per page).
    set(CURLOPT_BUFFERSIZE, 64L * 1024);
    set(CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::min(options.connect_timeout_ms, total)));
    // No CURLOPT_TIMEOUT_MS or CURLOPT_LOW_SPEED_*: curl checks them before
    // reading what waits in the socket, so a loop blocked past the limit
    // cut responses that had arrived in full. The watchdog keeps both.
    set(CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
    set(CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
    if (!options.ca_file.empty()) set(CURLOPT_CAINFO, options.ca_file.c_str());
    if (!options.user_agent.empty()) {
      set(CURLOPT_USERAGENT, options.user_agent.c_str());
    }
    if (f->headers != nullptr) set(CURLOPT_HTTPHEADER, f->headers);
    set(CURLOPT_OPENSOCKETFUNCTION, &Impl::OnOpenSocket);
    set(CURLOPT_OPENSOCKETDATA, static_cast<void*>(f));
    set(CURLOPT_CLOSESOCKETFUNCTION, &Impl::OnCloseSocket);
    set(CURLOPT_CLOSESOCKETDATA, static_cast<void*>(this));
    set(CURLOPT_ERRORBUFFER, f->error_buffer);
    set(CURLOPT_HEADERFUNCTION, OnHeader);
    set(CURLOPT_HEADERDATA, static_cast<void*>(f));
    set(CURLOPT_WRITEFUNCTION, OnWrite);
    set(CURLOPT_WRITEDATA, static_cast<void*>(f));
    set(CURLOPT_DEBUGFUNCTION, OnDebug);
    set(CURLOPT_DEBUGDATA, static_cast<void*>(f));
    set(CURLOPT_VERBOSE, 1L);  // required for the debug callback
    if (rc != CURLE_OK) {
      return Status::InvalidArgument(std::string("curl_easy_setopt: ") +
                                     curl_easy_strerror(rc));
    }
    return Status::Ok();
  }
};

Fetcher::Fetcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Fetcher::~Fetcher() { Shutdown(); }

Result<std::unique_ptr<Fetcher>> Fetcher::Create(uv_loop_t* loop,
                                                 const Options& options) {
  if (loop == nullptr) return Status::InvalidArgument("fetcher: null loop");
  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = Sanitize(options);
  Impl* p = impl.get();
  // About 256 connections a pool (Shard): a walk of 256 is short, and a
  // multi handle costs little.
  const size_t pools = std::clamp<size_t>(
      (p->options.max_connections + p->options.max_idle_connections) / 256, 1,
      64);
  // Transfers are gated to max_connections by us; idle keep-alive
  // connections stay open besides, up to max_idle_connections (Keeps()).
  // With the cap on open connections equal to the transfer limit, a worker
  // crawling more hosts than it has slots closed every connection after
  // its page and paid a new TCP (and TLS) handshake for each. curl's own
  // limits (its cache counts connections in use too), above Keeps()'s by
  // the transfers that may start at once before their sockets open, are
  // only a backstop.
  const long open_max = static_cast<long>(2 * p->options.max_connections +
                                          p->options.max_idle_connections);
  for (size_t i = 0; i < pools; ++i) {
    auto shard = std::make_unique<Impl::Shard>();
    shard->impl = p;
    shard->index = i;
    shard->multi = curl_multi_init();
    if (shard->multi == nullptr) {
      for (const auto& made : p->shards) {
        curl_multi_cleanup(made->multi);
        CloseAndDelete(made->timer);
      }
      return Status::Internal("curl_multi_init failed");
    }
    CURLM* m = shard->multi;
    void* data = static_cast<void*>(shard.get());
    curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, &Impl::OnCurlSocket);
    curl_multi_setopt(m, CURLMOPT_SOCKETDATA, data);
    curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, &Impl::OnCurlTimer);
    curl_multi_setopt(m, CURLMOPT_TIMERDATA, data);
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, open_max);
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, open_max);
    // No HTTP/2 multiplexing: politeness means one request in flight per
    // host, and the frontier's one fetch per host must not become several
    // streams should two fetches ever meet on one connection. An idle h2
    // connection is still reused, one transfer at a time.
    curl_multi_setopt(m, CURLMOPT_PIPELINING, CURLPIPE_NOTHING);
    // Handles live on the heap and are freed by their close callbacks, so
    // the Fetcher can be destroyed right after Shutdown().
    shard->timer = new uv_timer_t;
    uv_timer_init(loop, shard->timer);
    shard->timer->data = data;
    p->shards.push_back(std::move(shard));
  }
  p->stats.connections_by_pool.assign(pools, 0);
  p->defer_timer = new uv_timer_t;
  p->watchdog = new uv_timer_t;
  uv_timer_init(loop, p->defer_timer);
  uv_timer_init(loop, p->watchdog);
  p->defer_timer->data = p;
  p->watchdog->data = p;
  return std::unique_ptr<Fetcher>(new Fetcher(std::move(impl)));
}

void Fetcher::Submit(Request request, std::function<void(Response&&)> done) {
  Impl* impl = impl_.get();
  ++impl->stats.submitted;
  Response early;
  early.body = DocBuffer(impl->options.body_buffer);
  early.start_us = WallMicros();
  if (impl->shut_down) {
    // No handles left: a one-shot timer keeps the "never inline" promise.
    struct Late {
      uv_timer_t timer;
      DoneFn done;
      Response response;
    };
    early.error = ErrorClass::kAborted;
    early.error_message = "shutdown";
    early.end_us = early.start_us;
    auto* late = new Late{{}, std::move(done), std::move(early)};
    uv_timer_init(impl->loop, &late->timer);
    late->timer.data = late;
    uv_timer_start(
        &late->timer,
        [](uv_timer_t* t) {
          auto* l = static_cast<Late*>(t->data);
          DoneFn cb = std::move(l->done);
          Response r = std::move(l->response);
          CloseAndDelete(l);
          cb(std::move(r));
        },
        0, 0);
    return;
  }
  std::string why;
  std::string ip = request.ip;
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') {
    ip = ip.substr(1, ip.size() - 2);
  }
  unsigned char addr[16];
  if (!StartsWithIgnoreCase(request.url, "http://") &&
      !StartsWithIgnoreCase(request.url, "https://")) {
    why = "not an http(s) URL: " + request.url;
  } else if (inet_pton(AF_INET, ip.c_str(), addr) != 1 &&
             inet_pton(AF_INET6, ip.c_str(), addr) != 1) {
    why = "not an IP address: '" + request.ip + "'";
  } else if (request.url.find_first_of(std::string_view("\0\r\n ", 4)) !=
             std::string::npos) {
    why = "URL contains whitespace or control characters";
  }
  if (!why.empty()) {
    early.error = ErrorClass::kOther;
    early.error_message = "invalid request: " + why;
    early.end_us = early.start_us;
    impl->Defer(std::move(done), std::move(early));
    return;
  }
  auto* f = new Impl::Fetch;
  f->impl = impl;
  f->shard = impl->shards.front().get();  // Pin() picks the origin's
  f->request = std::move(request);
  f->request.ip = ip;
  f->response = std::move(early);
  f->done = std::move(done);
  f->max_body = f->request.max_body_bytes > 0 ? f->request.max_body_bytes
                                              : impl->options.max_body_bytes;
  f->easy = impl->TakeEasy();
  Status s = f->easy != nullptr ? impl->Configure(f)
                                : Status::Internal("curl_easy_init failed");
  if (s.ok()) {
    impl->queued.push_back(f);
    impl->StartQueued();
  } else {
    Response r = std::move(f->response);
    r.error = ErrorClass::kOther;
    r.error_message = s.ToString();
    r.end_us = WallMicros();
    impl->ReleaseEasy(f);
    Impl::FreeOwned(f);
    DoneFn cb = std::move(f->done);
    delete f;
    impl->Defer(std::move(cb), std::move(r));
  }
}

size_t Fetcher::in_flight() const {
  return impl_->active.size() + impl_->queued.size() +
         impl_->completions.size();
}

const Stats& Fetcher::stats() const { return impl_->stats; }

void Fetcher::Shutdown() {
  Impl* impl = impl_.get();
  if (impl->shut_down) return;
  impl->shut_down = true;
  std::vector<Completion> out = std::move(impl->completions);
  impl->completions.clear();
  std::vector<Impl::Fetch*> all(impl->active.begin(), impl->active.end());
  all.insert(all.end(), impl->queued.begin(), impl->queued.end());
  impl->queued.clear();
  for (Impl::Fetch* f : all) out.push_back(impl->Finish(f, CURLE_OK, true));
  impl->stats.completed += out.size();
  // Closes cached connections; the socket callback may run for them.
  for (const auto& shard : impl->shards) {
    curl_multi_cleanup(shard->multi);
    shard->multi = nullptr;
    uv_timer_stop(shard->timer);
    CloseAndDelete(shard->timer);
    shard->timer = nullptr;
  }
  for (CURL* e : impl->spare_easy) curl_easy_cleanup(e);
  impl->spare_easy.clear();
  for (const auto& [fd, sp] : impl->polls) {
    uv_poll_stop(&sp->poll);
    CloseAndDelete(sp);
  }
  impl->polls.clear();
  uv_timer_stop(impl->defer_timer);
  uv_timer_stop(impl->watchdog);
  CloseAndDelete(impl->defer_timer);
  CloseAndDelete(impl->watchdog);
  impl->defer_timer = impl->watchdog = nullptr;
  Deliver(std::move(out));  // may destroy *this
}

}  // namespace crawld::fetcher
