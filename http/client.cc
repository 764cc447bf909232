// http/client.cc: Client, libcurl multi on the caller's libuv loop (the
// multi_socket pattern of curl's docs/examples/multi-uv.c, as in fetcher/).
// Replies are delivered from a zero timer, never from inside a curl call or
// Start(), so a Done callback may start calls or destroy the Client.
#include <curl/curl.h>
#include <uv.h>

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "http/http.h"

namespace crawld::http {

namespace {

template <typename Handle>
void CloseAndDelete(Handle* h) {
  uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* handle) {
    delete reinterpret_cast<Handle*>(handle);
  });
}

}  // namespace

struct Client::Impl {
  struct Transfer {
    Impl* impl = nullptr;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    Call call;
    Done done;
    Reply reply;
    bool too_large = false;
  };
  struct SockPoll {
    uv_poll_t poll;
    Impl* impl;
    curl_socket_t fd;
  };

  uv_loop_t* loop = nullptr;
  Options options;
  CURLM* multi = nullptr;
  uv_timer_t* curl_timer = nullptr;   // CURLMOPT_TIMERFUNCTION's timer
  uv_timer_t* defer_timer = nullptr;  // delivers `finished`
  std::unordered_set<Transfer*> active;
  std::unordered_set<SockPoll*> polls;
  std::vector<std::unique_ptr<Transfer>> finished;
  // Set to false by ~Impl: a Done callback that destroyed the Client ends
  // the delivery loop.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  ~Impl() {
    *alive = false;
    for (Transfer* t : active) {
      curl_multi_remove_handle(multi, t->easy);
      Free(t);
      delete t;
    }
    active.clear();
    finished.clear();
    // Closes cached connections; the socket callback may run for them.
    curl_multi_cleanup(multi);
    for (SockPoll* sp : polls) {
      uv_poll_stop(&sp->poll);
      CloseAndDelete(sp);
    }
    polls.clear();
    uv_timer_stop(curl_timer);
    uv_timer_stop(defer_timer);
    CloseAndDelete(curl_timer);
    CloseAndDelete(defer_timer);
  }

  static void Free(Transfer* t) {
    if (t->easy != nullptr) curl_easy_cleanup(t->easy);
    t->easy = nullptr;
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
  }

  void Finish(std::unique_ptr<Transfer> t) {
    finished.push_back(std::move(t));
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(defer_timer))) {
      uv_timer_start(defer_timer, OnDeferTimer, 0, 0);
    }
  }

  static void OnDeferTimer(uv_timer_t* timer) {
    Impl* impl = static_cast<Impl*>(timer->data);
    std::vector<std::unique_ptr<Transfer>> batch = std::move(impl->finished);
    impl->finished.clear();
    const std::shared_ptr<bool> alive = impl->alive;
    for (auto& t : batch) {
      Done done = std::move(t->done);
      Reply reply = std::move(t->reply);
      done(std::move(reply));  // may destroy the Client
      if (!*alive) return;
    }
  }

  void CheckMultiInfo() {
    std::vector<std::pair<Transfer*, CURLcode>> done;
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
      if (t != nullptr) done.emplace_back(t, m->data.result);
    }
    for (auto [t, code] : done) {
      active.erase(t);
      curl_multi_remove_handle(multi, t->easy);
      Reply& r = t->reply;
      if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        r.ok = true;
        r.status = static_cast<int>(status);
        char* ct = nullptr;
        curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
        if (ct != nullptr) r.content_type = ct;
      } else {
        r.body.clear();
        r.connect_failed = code == CURLE_COULDNT_CONNECT;
        r.error = t->too_large
                      ? "reply larger than " +
                            std::to_string(options.max_reply_bytes) + " bytes"
                      : curl_easy_strerror(code);
      }
      Free(t);
      Finish(std::unique_ptr<Transfer>(t));
    }
  }

  // --- curl callbacks (inside curl calls: no user code) ---

  static size_t OnBody(char* data, size_t size, size_t n, void* user) {
    Transfer* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    if (t->reply.body.size() + len > t->impl->options.max_reply_bytes) {
      t->too_large = true;
      return 0;  // CURLE_WRITE_ERROR
    }
    t->reply.body.append(data, len);
    return len;
  }

  static int OnCurlSocket(CURL*, curl_socket_t s, int action, void* userp,
                          void* socketp) {
    Impl* impl = static_cast<Impl*>(userp);
    SockPoll* sp = static_cast<SockPoll*>(socketp);
    if (action == CURL_POLL_REMOVE) {
      // Before curl closes the socket: stop watching now, so a reused
      // descriptor number never meets a stale watcher.
      if (sp != nullptr) {
        uv_poll_stop(&sp->poll);
        impl->polls.erase(sp);
        CloseAndDelete(sp);
        curl_multi_assign(impl->multi, s, nullptr);
      }
      return 0;
    }
    if (sp == nullptr) {
      sp = new SockPoll{};
      sp->impl = impl;
      sp->fd = s;
      if (uv_poll_init_socket(impl->loop, &sp->poll, s) != 0) {
        delete sp;
        return -1;
      }
      sp->poll.data = sp;
      impl->polls.insert(sp);
      curl_multi_assign(impl->multi, s, sp);
    }
    int events = 0;
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT) {
      events |= UV_READABLE;
    }
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT) {
      events |= UV_WRITABLE;
    }
    uv_poll_start(&sp->poll, events, OnPoll);
    return 0;
  }

  static int OnCurlTimer(CURLM*, long timeout_ms, void* userp) {
    Impl* impl = static_cast<Impl*>(userp);
    if (!*impl->alive) return 0;
    if (timeout_ms < 0) {
      uv_timer_stop(impl->curl_timer);
    } else {
      // 0 means "now"; 1 ms keeps libuv from re-running a re-armed timer
      // in the same timers phase (as multi-uv.c does).
      uv_timer_start(impl->curl_timer, OnUvTimer,
                     std::max<uint64_t>(static_cast<uint64_t>(timeout_ms), 1),
                     0);
    }
    return 0;
  }

  // --- libuv callbacks ---

  static void OnPoll(uv_poll_t* handle, int status, int events) {
    SockPoll* sp = static_cast<SockPoll*>(handle->data);
    Impl* impl = sp->impl;
    int flags = 0;
    if (status < 0) {
      flags = CURL_CSELECT_ERR;
    } else {
      if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
      if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    }
    int running = 0;
    curl_multi_socket_action(impl->multi, sp->fd, flags, &running);
    impl->CheckMultiInfo();
  }

  static void OnUvTimer(uv_timer_t* timer) {
    Impl* impl = static_cast<Impl*>(timer->data);
    int running = 0;
    curl_multi_socket_action(impl->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    impl->CheckMultiInfo();
  }
};

Result<std::unique_ptr<Client>> Client::Create(uv_loop_s* loop,
                                               const Options& options) {
  if (loop == nullptr) return Status::InvalidArgument("http client: no loop");
  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = options;
  if (impl->options.timeout_ms == 0) impl->options.timeout_ms = 1;
  // Handles first: ~Impl closes them whatever happens below.
  impl->curl_timer = new uv_timer_t;
  impl->defer_timer = new uv_timer_t;
  uv_timer_init(loop, impl->curl_timer);
  uv_timer_init(loop, impl->defer_timer);
  impl->curl_timer->data = impl.get();
  impl->defer_timer->data = impl.get();
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) {
    return Status::Internal("http client: curl_multi_init failed");
  }
  Impl* p = impl.get();
  curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, &Impl::OnCurlSocket);
  curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, static_cast<void*>(p));
  curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, &Impl::OnCurlTimer);
  curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, static_cast<void*>(p));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

size_t Client::in_flight() const {
  return impl_->active.size() + impl_->finished.size();
}

void Client::Start(Call call, Done done) {
  Impl* impl = impl_.get();
  auto t = std::make_unique<Impl::Transfer>();
  t->impl = impl;
  t->call = std::move(call);
  t->done = std::move(done);
  const Call& c = t->call;
  auto fail = [&](std::string why) {
    t->reply.connect_failed = true;
    t->reply.error = std::move(why);
    Impl::Free(t.get());
    impl->Finish(std::move(t));
  };
  if (c.method != "GET" && c.method != "POST") {
    fail("http client: method " + c.method + " is not GET or POST");
    return;
  }
  if (c.token.find_first_of(std::string_view("\r\n\0", 3)) !=
      std::string::npos) {
    fail("http client: the token has a line break");
    return;
  }
  t->easy = curl_easy_init();
  if (t->easy == nullptr) {
    fail("http client: curl_easy_init failed");
    return;
  }
  CURL* e = t->easy;
  const long timeout = static_cast<long>(impl->options.timeout_ms);
  curl_easy_setopt(e, CURLOPT_URL, c.url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  if (c.method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, c.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(c.body.size()));
    t->headers =
        curl_slist_append(t->headers, "Content-Type: application/json");
  }
  // No 100-continue round trip for a small local body.
  t->headers = curl_slist_append(t->headers, "Expect:");
  if (!c.token.empty()) {
    t->headers = curl_slist_append(
        t->headers, ("Authorization: Bearer " + c.token).c_str());
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  if (curl_multi_add_handle(impl->multi, e) != CURLM_OK) {
    fail("http client: curl_multi_add_handle failed");
    return;
  }
  impl->active.insert(t.release());
}

}  // namespace crawld::http
