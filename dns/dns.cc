// dns/dns.cc: c-ares on the worker's libuv loop. See docs/LOOP.md for the
// handle ownership rules that this file follows.
#include "dns/dns.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <list>
#include <unordered_map>
#include <utility>

namespace crawld::dns {
namespace {

using Callback = std::function<void(Result<Answer>)>;

// A callback with the result it is to receive; delivered outside of any
// c-ares call so that callbacks may re-enter the Resolver.
struct Completion {
  Callback done;
  Result<Answer> result;
};

// Runs callbacks without touching the Resolver, which a callback may destroy.
void Deliver(std::vector<Completion> items) {
  for (Completion& c : items) c.done(std::move(c.result));
}

template <typename Handle>
void CloseAndDelete(Handle* h) {
  uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* handle) {
    delete reinterpret_cast<Handle*>(handle);
  });
}

// Textual IP in canonical inet_ntop form if `s` (brackets allowed for IPv6)
// is an IP literal; empty otherwise. *family receives AF_INET or AF_INET6.
std::string CanonicalLiteral(std::string_view s, int* family) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    s = s.substr(1, s.size() - 2);
  }
  if (s.empty() || s.size() > INET6_ADDRSTRLEN) return "";
  std::string z(s);
  char out[INET6_ADDRSTRLEN];
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, z.c_str(), &a4) == 1) {
    *family = AF_INET;
    return inet_ntop(AF_INET, &a4, out, sizeof(out));
  }
  if (inet_pton(AF_INET6, z.c_str(), &a6) == 1) {
    *family = AF_INET6;
    return inet_ntop(AF_INET6, &a6, out, sizeof(out));
  }
  return "";
}

bool PrivateV4(const uint8_t b[4]) {
  uint32_t a = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
               (uint32_t{b[2]} << 8) | b[3];
  struct Net {
    uint32_t base;
    int bits;
  };
  static constexpr Net kNets[] = {
      {0x00000000, 8},   // 0/8 "this network", incl. unspecified
      {0x0A000000, 8},   // 10/8 RFC 1918
      {0x64400000, 10},  // 100.64/10 CGNAT, RFC 6598
      {0x7F000000, 8},   // 127/8 loopback
      {0xA9FE0000, 16},  // 169.254/16 link-local
      {0xAC100000, 12},  // 172.16/12 RFC 1918
      {0xC0000000, 24},  // 192.0.0/24 IETF protocol assignments
      {0xC0A80000, 16},  // 192.168/16 RFC 1918
      {0xC6120000, 15},  // 198.18/15 benchmarking
      {0xE0000000, 4},   // 224/4 multicast
      {0xF0000000, 4},   // 240/4 reserved, incl. broadcast
  };
  for (const Net& n : kNets) {
    uint32_t mask = ~uint32_t{0} << (32 - n.bits);
    if ((a & mask) == n.base) return true;
  }
  return false;
}

bool PrivateV6(const uint8_t b[16]) {
  static constexpr uint8_t kZero[16] = {};
  bool first10_zero = std::memcmp(b, kZero, 10) == 0;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) carry an IPv4
  // address that the kernel may route as such; judge the embedded one.
  // :: and ::1 fall in the "compatible" range and are private as 0/8.
  if (first10_zero &&
      ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
    return PrivateV4(b + 12);
  }
  static constexpr uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b};
  if (std::memcmp(b, kNat64, 12) == 0) return PrivateV4(b + 12);
  if ((b[0] & 0xfe) == 0xfc) return true;                  // fc00::/7 ULA
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  // fec0::/10
  if (b[0] == 0xff) return true;                           // multicast
  return false;
}

// Lower-cases and validates a host name (RFC 1123 letters, digits, hyphen;
// underscore tolerated as it appears in the wild). Empty on error.
std::string NormalizeName(std::string_view host, std::string* why) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty()) {
    *why = "empty host name";
    return "";
  }
  if (host.size() > 253) {
    *why = "host name longer than 253 bytes";
    return "";
  }
  std::string out;
  out.reserve(host.size());
  size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) {
        *why = "empty label in host name";
        return "";
      }
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_') {
      ++label;
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
      ++label;
    } else {
      *why = "invalid character in host name";
      return "";
    }
    if (label > 63) {
      *why = "host name label longer than 63 bytes";
      return "";
    }
    out.push_back(c);
  }
  return out;
}

// Parses "ip", "ip:port", "[v6]" or "[v6]:port" into a c-ares server node.
Status ParseServer(const std::string& s, ares_addr_port_node* node) {
  std::string host = s;
  int port = 53;
  std::string port_str;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos) {
      return Status::InvalidArgument("dns server: missing ']' in " + s);
    }
    host = s.substr(1, close - 1);
    if (close + 1 < s.size()) {
      if (s[close + 1] != ':') {
        return Status::InvalidArgument("dns server: junk after ']' in " + s);
      }
      port_str = s.substr(close + 2);
    }
  } else if (std::count(s.begin(), s.end(), ':') == 1) {
    size_t colon = s.find(':');
    host = s.substr(0, colon);
    port_str = s.substr(colon + 1);
  }
  if (!port_str.empty() || (s.size() && s.back() == ':')) {
    if (port_str.empty() || port_str.size() > 5 ||
        port_str.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument("dns server: bad port in " + s);
    }
    port = std::stoi(port_str);
    if (port < 1 || port > 65535) {
      return Status::InvalidArgument("dns server: port out of range in " + s);
    }
  }
  std::memset(node, 0, sizeof(*node));
  if (inet_pton(AF_INET, host.c_str(), &node->addr.addr4) == 1) {
    node->family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), &node->addr.addr6) == 1) {
    node->family = AF_INET6;
  } else {
    return Status::InvalidArgument("dns server: not an IP address: " + s);
  }
  node->udp_port = port;
  node->tcp_port = port;
  return Status::Ok();
}

Options Sanitize(Options o) {
  o.min_ttl_s = std::clamp<int64_t>(o.min_ttl_s, 0, int64_t{1} << 31);
  o.max_ttl_s = std::clamp<int64_t>(o.max_ttl_s, o.min_ttl_s, int64_t{1} << 31);
  o.negative_ttl_s = std::clamp<int64_t>(o.negative_ttl_s, 0, int64_t{1} << 31);
  o.timeout_ms = std::clamp<int64_t>(o.timeout_ms, 10, 60000);
  o.tries = std::clamp(o.tries, 1, 10);
  o.max_cache_entries = std::max<size_t>(o.max_cache_entries, 1);
  o.max_queries_in_flight =
      std::clamp<size_t>(o.max_queries_in_flight, 1, 100000);
  return o;
}

}  // namespace

struct Resolver::Impl {
  // What a finished query taught us about a name: addresses, or an error
  // (NotFound is cacheable, anything else is not).
  struct Outcome {
    std::vector<std::string> addresses;
    Status error;
    int64_t ttl_s = 0;
  };
  struct CacheEntry {
    std::string name;
    std::vector<std::string> addresses;  // raw, before the guard
    Status error;                        // NotFound for negative entries
    uint64_t expires_ms = 0;
  };
  struct DeadlineTimer {
    uv_timer_t timer;
    Impl* impl;
    std::string name;
    uint64_t id;
  };
  // One lookup, queued or in flight, and everyone waiting for it.
  struct Pending {
    uint64_t id = 0;
    std::vector<Callback> waiters;
    DeadlineTimer* deadline = nullptr;  // null while queued
  };
  struct QueryArg {
    Impl* impl;
    std::string name;
    uint64_t id;
  };
  struct SockPoll {
    uv_poll_t poll;
    Impl* impl;
    ares_socket_t fd;
  };

  uv_loop_t* loop = nullptr;
  Options options;
  ares_channel channel = nullptr;
  bool shut_down = false;
  uv_timer_t* ares_timer = nullptr;   // drives ares_timeout(); heap, see Close
  uv_timer_t* defer_timer = nullptr;  // delivers `completions`
  std::unordered_map<ares_socket_t, SockPoll*> polls;
  std::list<CacheEntry> lru;  // front = most recently used
  std::unordered_map<std::string, std::list<CacheEntry>::iterator> cache;
  std::unordered_map<std::string, Pending> pending;
  // Names of pending lookups without a query yet, oldest first.
  std::deque<std::string> queued;
  size_t in_flight = 0;  // ares_getaddrinfo calls not yet answered
  bool sending_queued = false;
  // Per query: timeout_ms * tries (c-ares alone would double its timeout
  // on each round; see docs/LOOP.md).
  uint64_t deadline_ms = 0;
  std::vector<Completion> completions;
  uint64_t next_id = 1;
  Stats stats;

  uint64_t Now() const {
    return options.now_ms ? options.now_ms() : uv_now(loop);
  }

  Result<Answer> Guard(const std::string& name,
                       const std::vector<std::string>& addrs,
                       bool from_cache) const {
    Answer a;
    a.from_cache = from_cache;
    for (const std::string& ip : addrs) {
      if (options.allow_private || !IsPrivateAddress(ip)) {
        a.addresses.push_back(ip);
      }
    }
    if (a.addresses.empty()) {
      std::string list;
      for (const std::string& ip : addrs)
        list += (list.empty() ? "" : ",") + ip;
      return Status::FailedPrecondition("private address blocked: " + name +
                                        " -> " + list);
    }
    return a;
  }

  void Defer(Callback done, Result<Answer> result) {
    completions.push_back({std::move(done), std::move(result)});
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(defer_timer))) {
      uv_timer_start(defer_timer, OnDeferTimer, 0, 0);
    }
  }

  static void OnDeferTimer(uv_timer_t* t) {
    Impl* impl = static_cast<Impl*>(t->data);
    Deliver(std::move(impl->completions));  // may destroy *impl
  }

  // --- cache ---

  const CacheEntry* CacheGet(const std::string& name) {
    auto it = cache.find(name);
    if (it == cache.end()) return nullptr;
    if (it->second->expires_ms <= Now()) {
      lru.erase(it->second);
      cache.erase(it);
      return nullptr;
    }
    lru.splice(lru.begin(), lru, it->second);
    return &*it->second;
  }

  void CachePut(const std::string& name, const Outcome& out) {
    int64_t ttl_s;
    if (out.error.ok()) {
      ttl_s = std::clamp(out.ttl_s, options.min_ttl_s, options.max_ttl_s);
    } else if (out.error.code() == Status::Code::kNotFound) {
      ttl_s = options.negative_ttl_s;
    } else {
      return;  // server failures are retried, not remembered
    }
    if (ttl_s <= 0) return;
    CacheEntry e{name, out.addresses, out.error,
                 Now() + static_cast<uint64_t>(ttl_s) * 1000};
    auto it = cache.find(name);
    if (it != cache.end()) {
      *it->second = std::move(e);
      lru.splice(lru.begin(), lru, it->second);
      return;
    }
    lru.push_front(std::move(e));
    cache.emplace(name, lru.begin());
    while (cache.size() > options.max_cache_entries) {
      cache.erase(lru.back().name);
      lru.pop_back();
      ++stats.evictions;
    }
  }

  // --- c-ares plumbing (the asyn-ares.c pattern) ---

  static void OnSockState(void* data, ares_socket_t fd, int readable,
                          int writable) {
    Impl* impl = static_cast<Impl*>(data);
    auto it = impl->polls.find(fd);
    if (!readable && !writable) {
      // c-ares is about to close fd: stop watching before the number can be
      // reused by another socket.
      if (it != impl->polls.end()) {
        uv_poll_stop(&it->second->poll);
        CloseAndDelete(it->second);
        impl->polls.erase(it);
      }
      return;
    }
    SockPoll* sp;
    if (it == impl->polls.end()) {
      sp = new SockPoll{};
      sp->impl = impl;
      sp->fd = fd;
      if (uv_poll_init_socket(impl->loop, &sp->poll, fd) != 0) {
        delete sp;  // c-ares will time the query out
        return;
      }
      sp->poll.data = sp;
      impl->polls.emplace(fd, sp);
    } else {
      sp = it->second;
    }
    int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
    uv_poll_start(&sp->poll, events, OnPoll);
  }

  static void OnPoll(uv_poll_t* handle, int status, int events) {
    SockPoll* sp = static_cast<SockPoll*>(handle->data);
    Impl* impl = sp->impl;
    ares_socket_t fd = sp->fd;  // sp may be closed inside ares_process_fd
    ares_socket_t rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;
    if (status < 0) {
      rfd = wfd = fd;  // let c-ares read the error and fail over
    } else {
      if (events & UV_READABLE) rfd = fd;
      if (events & UV_WRITABLE) wfd = fd;
    }
    ares_process_fd(impl->channel, rfd, wfd);
    impl->RescheduleAresTimer();
  }

  static void OnAresTimer(uv_timer_t* t) {
    Impl* impl = static_cast<Impl*>(t->data);
    ares_process_fd(impl->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    impl->RescheduleAresTimer();
  }

  void RescheduleAresTimer() {
    if (shut_down) return;
    timeval tv;
    if (ares_timeout(channel, nullptr, &tv) == nullptr) {
      uv_timer_stop(ares_timer);
      return;
    }
    uint64_t ms = static_cast<uint64_t>(tv.tv_sec) * 1000 +
                  static_cast<uint64_t>(tv.tv_usec + 999) / 1000;
    // Never 0: libuv 1.44 would run a re-armed 0 ms timer again in the same
    // timers phase, starving I/O.
    uv_timer_start(ares_timer, OnAresTimer, std::max<uint64_t>(ms, 1), 0);
  }

  static Outcome MakeOutcome(const std::string& name, int status,
                             ares_addrinfo* res) {
    Outcome out;
    if (status == ARES_SUCCESS && res != nullptr) {
      std::vector<std::string> v4, v6;
      int64_t ttl = std::numeric_limits<int64_t>::max();
      for (ares_addrinfo_node* n = res->nodes; n != nullptr; n = n->ai_next) {
        char buf[INET6_ADDRSTRLEN];
        if (n->ai_family == AF_INET) {
          auto* sa = reinterpret_cast<sockaddr_in*>(n->ai_addr);
          inet_ntop(AF_INET, &sa->sin_addr, buf, sizeof(buf));
          if (std::find(v4.begin(), v4.end(), buf) == v4.end())
            v4.push_back(buf);
        } else if (n->ai_family == AF_INET6) {
          auto* sa = reinterpret_cast<sockaddr_in6*>(n->ai_addr);
          inet_ntop(AF_INET6, &sa->sin6_addr, buf, sizeof(buf));
          if (std::find(v6.begin(), v6.end(), buf) == v6.end())
            v6.push_back(buf);
        } else {
          continue;
        }
        ttl = std::min<int64_t>(ttl, std::max(n->ai_ttl, 0));
      }
      out.addresses = std::move(v4);
      out.addresses.insert(out.addresses.end(), v6.begin(), v6.end());
      out.ttl_s = ttl;
      if (out.addresses.empty()) {
        out.error = Status::NotFound("no address for " + name);
      }
      return out;
    }
    switch (status) {
      case ARES_ENOTFOUND:
        out.error = Status::NotFound("NXDOMAIN " + name);
        break;
      case ARES_ENODATA:
      case ARES_SUCCESS:
        out.error = Status::NotFound("no address for " + name);
        break;
      case ARES_EBADNAME:
        out.error = Status::InvalidArgument("bad host name " + name);
        break;
      default:
        out.error = Status::Unavailable("DNS lookup of " + name +
                                        " failed: " + ares_strerror(status));
    }
    return out;
  }

  static void OnAddrInfo(void* arg, int status, int /*timeouts*/,
                         ares_addrinfo* res) {
    std::unique_ptr<QueryArg> q(static_cast<QueryArg*>(arg));
    Impl* impl = q->impl;
    if (impl->in_flight > 0) --impl->in_flight;
    Outcome out = MakeOutcome(q->name, status, res);
    if (res != nullptr) ares_freeaddrinfo(res);
    // During Shutdown (ares_destroy) the waiters were taken already.
    if (impl->shut_down) return;
    impl->CachePut(q->name, out);
    impl->SendQueued();
    auto it = impl->pending.find(q->name);
    if (it == impl->pending.end() || it->second.id != q->id)
      return;  // timed out
    Pending p = std::move(it->second);
    impl->pending.erase(it);
    uv_timer_stop(&p.deadline->timer);
    CloseAndDelete(p.deadline);
    for (Callback& cb : p.waiters) {
      if (out.error.ok()) {
        impl->Defer(std::move(cb), impl->Guard(q->name, out.addresses, false));
      } else {
        impl->Defer(std::move(cb), out.error);
      }
    }
  }

  static void OnDeadline(uv_timer_t* t) {
    auto* d = static_cast<DeadlineTimer*>(t->data);
    Impl* impl = d->impl;
    auto it = impl->pending.find(d->name);
    if (it == impl->pending.end() || it->second.id != d->id) return;
    Pending p = std::move(it->second);
    impl->pending.erase(it);
    ++impl->stats.timeouts;
    Status err =
        Status::Unavailable("DNS lookup of " + d->name + " timed out after " +
                            std::to_string(impl->deadline_ms) + " ms");
    CloseAndDelete(d);
    for (Callback& cb : p.waiters) impl->Defer(std::move(cb), err);
  }

  void StartQuery(const std::string& name, Callback done) {
    Pending& p = pending[name];
    p.id = next_id++;
    p.waiters.push_back(std::move(done));
    if (in_flight >= options.max_queries_in_flight) {
      queued.push_back(name);
      ++stats.queued;
      return;
    }
    Send(name, p);
  }

  // Starts queued lookups while there are free slots. Not re-entered: a
  // query answered synchronously inside Send frees its slot for this loop.
  void SendQueued() {
    if (sending_queued) return;
    sending_queued = true;
    while (!queued.empty() && in_flight < options.max_queries_in_flight) {
      std::string name = std::move(queued.front());
      queued.pop_front();
      auto it = pending.find(name);
      if (it != pending.end() && it->second.deadline == nullptr) {
        Send(name, it->second);
      }
    }
    sending_queued = false;
  }

  void Send(const std::string& name, Pending& p) {
    const uint64_t id = p.id;
    auto* d = new DeadlineTimer{{}, this, name, id};
    uv_timer_init(loop, &d->timer);
    d->timer.data = d;
    // The loop's clock is stale after a long callback (start-up work);
    // the deadline must run from now, as c-ares's own timeouts do.
    uv_update_time(loop);
    uv_timer_start(&d->timer, OnDeadline, deadline_ms, 0);
    p.deadline = d;
    ++in_flight;
    ++stats.queries;
    ares_addrinfo_hints hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_flags = ARES_AI_NOSORT;
    // May call OnAddrInfo synchronously; `p` must not be used afterwards.
    ares_getaddrinfo(channel, name.c_str(), nullptr, &hints, OnAddrInfo,
                     new QueryArg{this, name, id});
    RescheduleAresTimer();
  }
};

Resolver::Resolver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Resolver::~Resolver() { Shutdown(); }

Result<std::unique_ptr<Resolver>> Resolver::Create(uv_loop_t* loop,
                                                   const Options& options) {
  if (loop == nullptr) return Status::InvalidArgument("dns: null loop");
  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = Sanitize(options);

  std::vector<ares_addr_port_node> servers(impl->options.servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    Status s = ParseServer(impl->options.servers[i], &servers[i]);
    if (!s.ok()) return s;
    servers[i].next = i + 1 < servers.size() ? &servers[i + 1] : nullptr;
  }

  ares_options opts;
  std::memset(&opts, 0, sizeof(opts));
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
             ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS;
  opts.sock_state_cb = &Impl::OnSockState;
  opts.sock_state_cb_data = impl.get();
  opts.timeout = static_cast<int>(impl->options.timeout_ms);
  opts.tries = impl->options.tries;
  opts.domains = nullptr;  // no search list: names are fully qualified
  opts.ndomains = 0;
  std::string lookups = impl->options.use_hosts_file ? "fb" : "b";
  opts.lookups = lookups.data();
  int rc = ares_init_options(&impl->channel, &opts, mask);
  if (rc != ARES_SUCCESS) {
    return Status::Internal(std::string("ares_init_options: ") +
                            ares_strerror(rc));
  }
  if (!servers.empty()) {
    rc = ares_set_servers_ports(impl->channel, servers.data());
    if (rc != ARES_SUCCESS) {
      ares_destroy(impl->channel);
      return Status::Internal(std::string("ares_set_servers_ports: ") +
                              ares_strerror(rc));
    }
  }
  impl->deadline_ms = static_cast<uint64_t>(impl->options.timeout_ms) *
                      static_cast<uint64_t>(impl->options.tries);
  // Handles live on the heap and are freed by their close callbacks, so the
  // Resolver can be destroyed right after Shutdown().
  impl->ares_timer = new uv_timer_t;
  impl->defer_timer = new uv_timer_t;
  uv_timer_init(loop, impl->ares_timer);
  uv_timer_init(loop, impl->defer_timer);
  impl->ares_timer->data = impl.get();
  impl->defer_timer->data = impl.get();
  return std::unique_ptr<Resolver>(new Resolver(std::move(impl)));
}

void Resolver::Resolve(const std::string& host, Callback done) {
  Impl* impl = impl_.get();
  ++impl->stats.lookups;
  if (impl->shut_down) {
    // No handles left: a one-shot timer keeps the "never inline" promise.
    struct Late {
      uv_timer_t timer;
      Callback done;
    };
    auto* late = new Late{{}, std::move(done)};
    uv_timer_init(impl->loop, &late->timer);
    late->timer.data = late;
    uv_timer_start(
        &late->timer,
        [](uv_timer_t* t) {
          auto* l = static_cast<Late*>(t->data);
          Callback cb = std::move(l->done);
          CloseAndDelete(l);
          cb(Status::Unavailable("shutdown"));
        },
        0, 0);
    return;
  }
  int family = 0;
  std::string literal = CanonicalLiteral(host, &family);
  if (!literal.empty()) {
    ++impl->stats.literals;
    impl->Defer(std::move(done), impl->Guard(literal, {literal}, false));
    return;
  }
  std::string why;
  std::string name = NormalizeName(host, &why);
  if (name.empty()) {
    impl->Defer(std::move(done), Status::InvalidArgument(why + ": " + host));
    return;
  }
  if (const Impl::CacheEntry* e = impl->CacheGet(name)) {
    ++impl->stats.cache_hits;
    if (e->error.ok()) {
      impl->Defer(std::move(done), impl->Guard(name, e->addresses, true));
    } else {
      impl->Defer(std::move(done), e->error);
    }
    return;
  }
  auto it = impl->pending.find(name);
  if (it != impl->pending.end()) {
    ++impl->stats.coalesced;
    it->second.waiters.push_back(std::move(done));
    return;
  }
  impl->StartQuery(name, std::move(done));
}

void Resolver::Shutdown() {
  Impl* impl = impl_.get();
  if (impl->shut_down) return;
  impl->shut_down = true;
  std::vector<Completion> out = std::move(impl->completions);
  impl->completions.clear();
  impl->queued.clear();
  for (auto& [name, p] : impl->pending) {
    if (p.deadline != nullptr) {
      uv_timer_stop(&p.deadline->timer);
      CloseAndDelete(p.deadline);
    }
    for (Callback& cb : p.waiters) {
      out.push_back({std::move(cb), Status::Unavailable("shutdown")});
    }
  }
  impl->pending.clear();
  // Runs OnAddrInfo (ARES_EDESTRUCTION) for each query and OnSockState for
  // each socket, which closes the polls.
  ares_destroy(impl->channel);
  impl->channel = nullptr;
  for (auto& [fd, sp] : impl->polls) {
    uv_poll_stop(&sp->poll);
    CloseAndDelete(sp);
  }
  impl->polls.clear();
  uv_timer_stop(impl->ares_timer);
  uv_timer_stop(impl->defer_timer);
  CloseAndDelete(impl->ares_timer);
  CloseAndDelete(impl->defer_timer);
  impl->ares_timer = impl->defer_timer = nullptr;
  Deliver(std::move(out));  // may destroy *this
}

size_t Resolver::cache_size() const { return impl_->cache.size(); }

Stats Resolver::stats() const { return impl_->stats; }

bool IsPrivateAddress(std::string_view ip) {
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') {
    ip = ip.substr(1, ip.size() - 2);
  }
  if (ip.empty() || ip.size() > INET6_ADDRSTRLEN) return true;
  std::string z(ip);
  uint8_t buf[16];
  if (inet_pton(AF_INET, z.c_str(), buf) == 1) return PrivateV4(buf);
  if (inet_pton(AF_INET6, z.c_str(), buf) == 1) return PrivateV6(buf);
  return true;
}

}  // namespace crawld::dns
