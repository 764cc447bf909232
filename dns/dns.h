// dns/dns.h: asynchronous host name resolution on a worker's libuv loop,
// with a TTL cache, negative caching, coalescing of concurrent lookups and
// the private-network guard.
//
// Backed by c-ares (ares_getaddrinfo, RFC 1034/1035 stub resolution) driven
// by the loop: c-ares sockets are watched with uv_poll through its
// socket-state callback and its retransmission timer is one uv_timer fed by
// ares_timeout(). The pattern follows curl's lib/vdns/asyn-ares.c; the loop
// design is written up in docs/LOOP.md.
//
// Deliberate deviations from a system resolver (getaddrinfo(3)):
// - Search domains and ndots are ignored: a crawler's host names are fully
//   qualified, and appending a local search domain would fetch the wrong
//   site. A trailing dot is accepted and dropped.
// - /etc/hosts is not consulted unless Options::use_hosts_file is set.
// - Addresses are returned IPv4 first, then IPv6, each in the server's
//   order; no RFC 6724 sorting (that would cost a connect() per address).
// - TTLs are clamped to [min_ttl_s, max_ttl_s]; NXDOMAIN and "no address"
//   answers are cached for negative_ttl_s regardless of the SOA minimum.
// - The private-network guard refuses loopback, RFC 1918, link-local,
//   CGNAT (RFC 6598), ULA (RFC 4193), unspecified, multicast and reserved
//   addresses, also when embedded in IPv4-mapped or NAT64 IPv6 addresses
//   (it is the crawler's SSRF defence, see IsPrivateAddress).
#ifndef CRAWLD_DNS_DNS_H_
#define CRAWLD_DNS_DNS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

typedef struct uv_loop_s uv_loop_t;

namespace crawld::dns {

struct Options {
  // --- behaviour ---

  // DNS servers as "ip:port", "ip" (port 53) or "[ipv6]:port". Empty: the
  // system's servers from /etc/resolv.conf.
  std::vector<std::string> servers;
  // Consult /etc/hosts before DNS (c-ares lookups "fb" instead of "b").
  bool use_hosts_file = false;
  // Clamp of positive-answer TTLs, seconds. min_ttl_s >= 0 and
  // max_ttl_s >= min_ttl_s after sanitizing.
  int64_t min_ttl_s = 60;
  int64_t max_ttl_s = 3600;
  // How long NXDOMAIN and "name exists but has no address" answers are
  // cached, seconds (0 = not cached).
  int64_t negative_ttl_s = 60;
  // Per-try timeout, milliseconds, clamped to [10, 60000]. A lookup fails
  // with Unavailable at the latest after timeout_ms * tries from when its
  // query was sent (time spent waiting for a slot does not count).
  int64_t timeout_ms = 5000;
  // Attempts per server, clamped to [1, 10].
  int tries = 2;
  // When false, answers are filtered through IsPrivateAddress() and a name
  // whose every address is private fails with FailedPrecondition.
  bool allow_private = false;

  // --- performance ---

  // Cached names (positive and negative), least recently used evicted
  // first; clamped to >= 1.
  size_t max_cache_entries = 100000;
  // Names being queried at once, clamped to [1, 100000]; more lookups wait
  // in FIFO order for a free slot. A crawl that starts on thousands of
  // hosts would otherwise send thousands of queries in one burst, and the
  // answers overflow the socket's receive buffer (each lost answer costs a
  // retry timeout) or the server's rate limit.
  size_t max_queries_in_flight = 64;

  // --- seams ---

  // Monotonic time in milliseconds used for cache expiry. Empty: uv_now() of
  // the loop. Tests inject a fake clock here.
  std::function<uint64_t()> now_ms;
};

// The addresses of one name after the private-network guard.
struct Answer {
  std::vector<std::string> addresses;  // textual IPs, IPv4 first, no dups
  bool from_cache = false;             // no query was sent for this call
};

// Counters for tests and metrics; monotonic over the Resolver's life.
struct Stats {
  uint64_t lookups = 0;     // Resolve() calls
  uint64_t literals = 0;    // answered as IP literals
  uint64_t cache_hits = 0;  // answered from the cache (positive or negative)
  uint64_t coalesced = 0;   // joined a lookup already in flight
  uint64_t queries = 0;     // ares_getaddrinfo calls (one per name lookup)
  uint64_t queued = 0;      // queries that waited for a free slot
  uint64_t timeouts = 0;    // lookups failed by our deadline
  uint64_t evictions = 0;   // cache entries dropped for space
};

// One Resolver per worker loop. Not thread-safe: every call, and every
// callback, happens on the loop passed to Create(). Not copyable.
class Resolver {
 public:
  // Creates a resolver attached to `loop` (not owned; must outlive the
  // Resolver and stay open until the Resolver is destroyed and the loop has
  // run its close callbacks). Options are sanitized here (see Options).
  // Fails with InvalidArgument for an unparsable server address and with
  // Internal when c-ares cannot set up a channel (e.g. unreadable
  // resolv.conf). REQUIRES: ares_library_init() was called by main().
  [[nodiscard]] static Result<std::unique_ptr<Resolver>> Create(
      uv_loop_t* loop, const Options& options);

  // Calls Shutdown() if it was not called.
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Resolves `host`: a name, an IPv4 literal or an IPv6 literal (with or
  // without [brackets]); case-insensitive, trailing dot ignored. `done`
  // runs exactly once, later on the loop, never inside Resolve() (also for
  // cache hits, literals and argument errors). Literals send no query but
  // still pass the private-network guard.
  // Errors: NotFound ("NXDOMAIN ..." or "no address ..."), Unavailable
  // (server failure, refusal, timeout, or "shutdown"), FailedPrecondition
  // ("private address blocked: ..."), InvalidArgument (empty or over-long
  // name). Concurrent lookups of one name share one query.
  // After Shutdown(), `done` receives Unavailable "shutdown".
  // It is allowed to call Resolve, Shutdown or destroy the Resolver from
  // inside `done`.
  void Resolve(const std::string& host,
               std::function<void(Result<Answer>)> done);

  // Cancels every pending lookup (callbacks run with Unavailable
  // "shutdown", before Shutdown returns), destroys the c-ares channel and
  // closes the uv handles. Idempotent. The loop must run once more
  // (uv_run) to finish closing the handles before uv_loop_close().
  void Shutdown();

  // Names held in the cache, including expired entries not yet dropped.
  [[nodiscard]] size_t cache_size() const;
  [[nodiscard]] Stats stats() const;

 private:
  struct Impl;
  explicit Resolver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The private-network guard's predicate: true for addresses a public
// crawler must never connect to. IPv4: 0/8, 10/8, 100.64/10, 127/8,
// 169.254/16, 172.16/12, 192.0.0/24, 192.168/16, 198.18/15, 224/4, 240/4
// (incl. broadcast). IPv6: ::, ::1, fc00::/7, fe80::/10, fec0::/10, ff00::/8,
// and IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96) and NAT64
// (64:ff9b::/96) addresses whose embedded IPv4 is private. Brackets around
// an IPv6 literal are accepted. Anything that is not an IP literal is
// reported private (fail closed).
bool IsPrivateAddress(std::string_view ip);

}  // namespace crawld::dns

#endif  // CRAWLD_DNS_DNS_H_
