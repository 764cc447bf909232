// cluster/cluster.h: which worker owns a host, and the exchange that carries
// a discovered URL to its owner.
//
// Ring is a consistent-hash ring (Karger et al., "Consistent Hashing and
// Random Trees", STOC 1997, https://dl.acm.org/doi/10.1145/258533.258660)
// with virtual nodes: worker w places `virtual_nodes` points on a 64-bit
// circle at XXH3-64("w#v") for v = 0..virtual_nodes-1, and a host belongs to
// the worker of the first point at or after XXH3-64(host), wrapping around.
// Adding a worker therefore moves only the hosts that the new worker's points
// capture, about 1/(W+1) of them, and none between the old workers.
//
// Every process that computes a ring from the same (workers, virtual_nodes)
// gets the same owners: XXH3-64 (seed 0) is specified and stable across
// platforms (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md).
//
// Exchange moves batches of URLs between workers, with two implementations
// behind one interface (design, wire format and delivery guarantees:
// docs/CLUSTER.md):
//   - local: a mesh of Unix-domain stream sockets, one listener per worker
//     at <run_dir>/worker-<i>.sock (single machine, no external service);
//   - redis: one Redis Stream inbox per worker, read with a consumer group.
//
// Membership (several machines) says which nodes are in the crawl: each
// node's supervisor renews a heartbeat key in Redis, and one Lua script per
// heartbeat computes the live set and bumps the ring epoch when it changes,
// so Redis alone decides the view (docs/CLUSTER.md, "Membership").
// Both are at-least-once: a batch stays with the sender until the receiver's
// inbox acknowledges it (i.e. the URLs are durable in its frontier), and
// nothing is dropped. When a destination's bound is reached, Send refuses
// with ResourceExhausted ("wait") and the caller keeps the URL; it does not
// spill to disk, because the caller (the parser feeding the worker) can
// simply pause, and a second spill format would duplicate the frontier's.
#ifndef CRAWLD_CLUSTER_CLUSTER_H_
#define CRAWLD_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

typedef struct uv_loop_s uv_loop_t;

namespace crawld::cluster {

struct Options {
  // --- Behaviour (all processes of a crawl must agree on it) ---

  // Points per worker on the ring (count). More points even out the load:
  // a worker's share deviates from the mean by about 1/sqrt(points). 128
  // left the busiest of 10 workers at 1.15x the mean over 100,000 hosts;
  // 1024 keeps it within 1.10x (1.06x measured; worst 1.085x over 2 to 32
  // workers). The cost is 16 bytes per point and a binary search over all
  // points per lookup. Clamped to [1, 65536].
  int virtual_nodes = 1024;
};

// The largest worker id + 1 of a crawl (count): every exchange accepts
// destinations below it.
inline constexpr int kMaxWorkers = 65536;

// Immutable after construction, so safe to share between threads.
// Copyable (a sorted vector of points).
class Ring {
 public:
  // Builds the ring for workers 0..workers-1. `workers` is clamped to >= 1.
  Ring(int workers, const Options& options);

  // Builds the ring for the given worker ids (e.g. the workers of the live
  // nodes). A worker's points depend only on its id, so two rings that
  // share workers agree on every host the others' points do not capture:
  // removing a worker moves only its hosts, adding one moves hosts only to
  // it. An empty list is treated as {0}.
  Ring(const std::vector<int>& workers, const Options& options);

  // The worker that owns `host`: one of the ring's ids (0..workers()-1 for
  // the first constructor). Pass the host exactly as the politeness key
  // uses it (lower-case, punycode, no port): different spellings of one
  // host would land on different workers.
  int Owner(std::string_view host) const;

  // Number of workers (count).
  int workers() const { return workers_; }

 private:
  struct Point {
    uint64_t hash;
    int worker;
  };
  void Build(const std::vector<int>& workers, const Options& options);
  int workers_;
  std::vector<Point> points_;  // sorted by (hash, worker)
};

// ---------------------------------------------------------------------------
// The exchange.

// One URL travelling to the worker that owns its host.
struct UrlMessage {
  UrlMessage() = default;
  UrlMessage(std::string u, uint16_t d, double c, std::string seed = {},
             bool mark = false)
      : url(std::move(u)),
        depth(d),
        credit(c),
        seed_host(std::move(seed)),
        seen_mark(mark) {}

  std::string url;     // canonical absolute URL (url/ output)
  uint16_t depth = 0;  // link depth from the seed (hops)
  double credit = 0;   // AOPIC cash carried to the owner
  // The host of the seed the URL descends from (the filter's scope rules);
  // empty: the URL's own host.
  std::string seed_host;
  // Not a URL to crawl: a URL its previous owner already fetched (a host
  // moved to this worker); the owner only remembers it as seen.
  bool seen_mark = false;
  // A sitemap to read, not a page (frontier::ItemKind: 1 a sitemap, 2 a
  // child of a sitemap index; 0 a page), and the host whose robots.txt
  // named it (cross-submission; at most 255 bytes).
  uint8_t sitemap_kind = 0;
  std::string sitemap_of;

  // --- Recrawl hand-off (issue 17; docs/CLUSTER.md, "What travels") ---
  // Not empty: the URL's recrawl schedule entry moving to the host's new
  // owner (recrawl::EncodeCapture bytes, opaque here; at most
  // MaxCaptureBytes()). The owner stores it in its schedule rather than
  // queue the URL.
  std::string capture;
  // --- Sitemap hints (docs/SITEMAPS.md, "What the schedule takes from
  // it"); on the wire behind kHintsFlag (cluster/wire.cc). ---
  // <changefreq> as sitemap::ChangeFreq's integer (0: none, at most 7):
  // the page's first recrawl interval.
  uint8_t changefreq = 0;
  // <lastmod> in Unix seconds (0: none): a page the owner captured before
  // it is due again now.
  uint32_t lastmod_s = 0;
};

// The largest capture a message may carry (bytes): two URLs (the page's and
// the record's) and the rest, validators included, well under 64 KiB.
[[nodiscard]] constexpr size_t MaxCaptureBytes(size_t max_url_bytes) {
  return 2 * max_url_bytes + (64u << 10);
}

// Called by the inbox owner once a batch is durable (in the frontier). May be
// called later, from any loop callback of the owner's loop, at most once;
// calling it after the exchange is destroyed is harmless. Never calling it
// keeps the batch unacknowledged: the sender keeps it and resends it.
using AckFn = std::function<void()>;

// Receives one batch. `from_worker` is the sender's worker id.
using InboxFn = std::function<void(int from_worker,
                                   std::vector<UrlMessage>&& batch, AckFn ack)>;

// Called when a destination that refused a Send (ResourceExhausted) has room
// again.
using WritableFn = std::function<void(int to_worker)>;

// Counters since construction (counts).
struct ExchangeStats {
  uint64_t urls_sent = 0;       // accepted by Send
  uint64_t batches_sent = 0;    // first transmissions
  uint64_t batches_resent = 0;  // after a reconnect (local) or failed XADD
  // Acknowledged: by the receiving worker (local), or stored in the
  // destination's stream by Redis (redis; the receiver's ack is then XACK).
  uint64_t batches_acked = 0;
  uint64_t urls_received = 0;       // delivered to the inbox
  uint64_t batches_received = 0;    // delivered to the inbox
  uint64_t duplicates_dropped = 0;  // resent batches already delivered
  uint64_t send_refused = 0;        // Send returned ResourceExhausted
  uint64_t reconnects = 0;          // connections re-established
  uint64_t protocol_errors = 0;     // malformed frames or entries (skipped)
};

// Knobs shared by both implementations.
struct ExchangeOptions {
  // --- Behaviour ---

  // This worker's id, in [0, workers).
  int self = 0;
  // Number of workers of the crawl (count, >= 1).
  int workers = 1;

  // --- Performance ---

  // A batch is sealed and sent at this many URLs (count), clamped to
  // [1, 65536]...
  int batch_urls = 512;
  // ...or when its oldest URL has waited this long (milliseconds, >= 1).
  // Also the period of the exchange's timer.
  int flush_interval_ms = 20;
  // Bound per destination on URLs accepted but not yet acknowledged (count,
  // >= batch_urls). At the bound Send returns ResourceExhausted.
  int max_pending_urls = 65536;
  // Longest URL accepted by Send (bytes); longer ones are InvalidArgument.
  int max_url_bytes = 8192;
  // First and largest delay between reconnect attempts (milliseconds); the
  // delay doubles after each failure and resets after a success.
  int reconnect_min_ms = 50;
  int reconnect_max_ms = 2000;
};

// Options of the local (Unix socket mesh) exchange.
struct LocalOptions {
  ExchangeOptions exchange;
  // Directory of the listening sockets, usually <data>/run. Created if
  // missing (one level). Paths must fit in sockaddr_un (107 bytes).
  std::string run_dir;
  // Largest frame read from a peer (bytes); a bigger length prefix is a
  // protocol error and closes the connection.
  uint32_t max_frame_bytes = 64u << 20;
};

// Options of the Redis Streams exchange.
struct RedisOptions {
  ExchangeOptions exchange;
  // --- Behaviour ---
  std::string host = "127.0.0.1";
  int port = 6379;
  // Crawl name used in every key: crawld:<crawl>:inbox:<worker>, ...
  std::string crawl = "default";
  // Consumer group on each inbox stream.
  std::string group = "crawld";
  // Pending entries idle this long are claimed from their consumer (dead or
  // stuck) by the reading worker (milliseconds).
  int claim_min_idle_ms = 30000;
  // Keep acknowledged entries in the inbox stream (XACK without XDEL), so
  // that another worker can read everything sent to this one again should
  // its node leave the crawl (Exchange::Adopt). The backlog the senders
  // poll is then the stream length minus an acknowledged-entries counter.
  // Every worker of a crawl must agree. Costs Redis memory for every URL
  // routed between workers until the keys are deleted.
  bool retain_acked = false;

  // --- Performance ---

  // Entries per XREADGROUP / XAUTOCLAIM (count) and the XREADGROUP BLOCK
  // time (milliseconds).
  int read_count = 64;
  int read_block_ms = 100;
  // Delivered but unacknowledged batches at which the reader stops reading
  // (count): the inbox's back-pressure on the stream.
  int max_unacked_batches = 256;
  // A destination whose inbox stream holds this many entries (delivered or
  // not, unacknowledged) refuses Send: a slow receiver slows its senders.
  int max_backlog_batches = 1024;
  // How often the senders poll their destinations' backlog, and the
  // claiming period (milliseconds).
  int backlog_poll_ms = 100;
  int claim_interval_ms = 1000;
};

// Sends URLs to other workers and delivers the ones sent to this worker.
// Lives on one uv_loop_t and is used only from that loop's thread; it never
// blocks and creates no threads. Destroying it closes its handles; run the
// loop afterwards (e.g. uv_run NOWAIT until uv_loop_alive is false) so libuv
// can free them. Not copyable.
//
// REQUIRES: SIGPIPE is ignored in the process (main() calls
// signal(SIGPIPE, SIG_IGN) once, before the loop): neither libuv nor hiredis
// 0.14 writes with MSG_NOSIGNAL, so a write to a peer that just died would
// kill the worker instead of returning EPIPE.
// REQUIRES: not destroyed from inside one of its own callbacks.
class Exchange {
 public:
  virtual ~Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Queues `m` for `to_worker`; it travels in the next batch. OK: accepted,
  // the exchange owns a copy until the receiver acknowledges it.
  // ResourceExhausted: the destination is at its bound (Backpressured); the
  // URL was not taken, retry after the WritableFn fires. InvalidArgument:
  // `to_worker` out of range or is self, or the URL is empty or too long.
  virtual Status Send(int to_worker, const UrlMessage& m) = 0;

  // Sets the receiver of this worker's inbox. REQUIRES: called before the
  // loop runs; batches arriving with no inbox stay unacknowledged.
  virtual void SetInbox(InboxFn inbox) = 0;

  // Sets the callback for a destination leaving back-pressure.
  virtual void SetOnWritable(WritableFn fn) = 0;

  // True when Send(to_worker, ...) would return ResourceExhausted.
  virtual bool Backpressured(int to_worker) const = 0;

  // URLs accepted for `to_worker` and not yet acknowledged (count): not yet
  // acked by the receiver (local) or not yet stored by Redis (redis).
  virtual size_t Pending(int to_worker) const = 0;

  // Seals every partial batch now (e.g. before a checkpoint or shutdown).
  virtual void Flush() = 0;

  // Calls `fn` with every URL accepted by Send and not yet acknowledged, in
  // send order per destination. A checkpoint saves them: after a crash of
  // this process they are sent again (the receiver's seen test drops the
  // ones that did arrive), so a kill loses none.
  virtual void ForEachUnacked(
      const std::function<void(int to_worker, const UrlMessage& m)>& fn)
      const = 0;

  // Also delivers, to this worker's inbox, every batch ever sent to these
  // workers (gone from the crawl: their frontiers died with them), from the
  // first, and then what still arrives for them; replaces the previous
  // list. Redis with retain_acked only (the local exchange has no
  // membership and ignores it). An adopted batch is done once the inbox
  // acknowledged it; it stays in its stream for the next adopter.
  virtual void Adopt(const std::vector<int>& workers) = 0;

  // Calls `fn` (on the loop, at most once, never after the exchange is
  // destroyed) once every batch that was in this worker's inbox when it was
  // called has been delivered to the inbox. Local: at once (a batch is
  // delivered as it arrives); redis: once the reader reached the stream's
  // end as it was then.
  virtual void WhenCaughtUp(std::function<void()> fn) = 0;

  virtual ExchangeStats stats() const = 0;

  // Test hook: drops every connection as a crash of the network would.
  virtual void TEST_DropConnections() = 0;

 protected:
  Exchange() = default;
};

// Creates the local exchange and starts listening at
// <run_dir>/worker-<self>.sock (a stale socket file there is replaced).
// Connections to peers are made on first use and retried with backoff.
// Errors: InvalidArgument for bad options, IOError if the socket cannot be
// created or bound. REQUIRES: `loop` outlives the exchange.
[[nodiscard]] Result<std::unique_ptr<Exchange>> NewLocalExchange(
    uv_loop_t* loop, const LocalOptions& options);

// Creates the Redis exchange and starts connecting (two connections: one
// for the blocking inbox reads, one for everything else); a connection that
// fails or drops is retried with backoff, and batches not yet stored in
// Redis are kept and resent. Errors: InvalidArgument for bad options.
// REQUIRES: `loop` outlives the exchange.
[[nodiscard]] Result<std::unique_ptr<Exchange>> NewRedisExchange(
    uv_loop_t* loop, const RedisOptions& options);

// ---------------------------------------------------------------------------
// Membership: which nodes are in the crawl (docs/CLUSTER.md, "Membership").

// What a node tells the others with each heartbeat.
struct NodeReport {
  // The newest epoch whose ring all of this node's workers use, with what
  // they handed over stored (0: none yet).
  int64_t acked_epoch = 0;
  bool going = false;     // its workers fetch (had go at acked_epoch)
  bool idle = false;      // nothing queued, in flight or in transit
  uint64_t sent = 0;      // URLs its workers sent (exchange counters)
  uint64_t received = 0;  // URLs its workers received
  uint64_t pages = 0;     // pages its workers recorded
  // Milliseconds since the node last renewed its heartbeat, as Redis saw it
  // (in a view; ignored by Publish). A node whose report is old may have
  // died since: its report is not to be trusted for the end of the crawl.
  int64_t age_ms = 0;
};

// The membership as Redis last answered a heartbeat.
struct MembershipView {
  // Bumped by Redis on every change of `live`. Treat any change as a new
  // ring: it restarts from 1 if Redis loses its data.
  int64_t epoch = 0;
  std::vector<int> live;  // node ids with a live heartbeat, ascending
  std::vector<int> gone;  // node ids that joined once and are not live
  std::map<int, NodeReport> reports;  // of the live nodes
  std::string done;  // the crawl-wide stop reason once set, else ""
  // This node's lease: until then (std::chrono::steady_clock milliseconds,
  // CLOCK_MONOTONIC: the same clock in every process of the machine) its
  // heartbeat key surely lives, so no other node can have been given its
  // hosts. 0 when this heartbeat did not renew the key (an observer, a
  // displaced node). The margin to the key's real expiry is a quarter of
  // the TTL.
  uint64_t lease_until_ms = 0;
  // Another process took this node id (its key holds another incarnation):
  // this one must stop.
  bool displaced = false;
};

struct MembershipOptions {
  // --- Behaviour ---
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string crawl = "default";  // the key prefix, crawld:<crawl>:
  int node_id = 0;                // >= 0
  // Lifetime of the heartbeat key (milliseconds, clamped to [100, 3600000]):
  // a node silent this long is out of the view.
  int heartbeat_ttl_ms = 10000;

  // --- Performance ---
  // Heartbeat period (milliseconds, clamped to [10, ttl/4]).
  int period_ms = 200;
  int reconnect_min_ms = 50;
  int reconnect_max_ms = 2000;
};

// A node's heartbeat. Lives on one uv_loop_t, used only from that loop's
// thread; never blocks, creates no threads. Not copyable.
class Membership {
 public:
  // Called (on the loop) after every answered heartbeat.
  using ViewFn = std::function<void(const MembershipView& view)>;

  virtual ~Membership() = default;
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Joins the view: from the next heartbeat on, this node renews its key
  // (the first one claims it whoever held it: the caller owns the node's
  // data directory, so an older process of this node is dead). Until then
  // it only observes: it reads the view and never appears in it (a node
  // still starting its workers, or one that only hands its hosts over).
  virtual void Join() = 0;
  // The report sent with the next heartbeats.
  virtual void Publish(const NodeReport& report) = 0;
  // Sets the crawl-wide done key (kept a minute) with the next heartbeat.
  virtual void SetDone(const std::string& reason) = 0;
  // Stops the heartbeat and deletes this node's key (the others see it gone
  // at their next heartbeat). `done` runs from the loop once Redis answered,
  // or after a second without an answer; it may destroy this object.
  virtual void Leave(std::function<void()> done) = 0;

 protected:
  Membership() = default;
};

// Starts the heartbeat: every period_ms one Lua script renews this node's
// key once it joined (Join), computes the live set from every member's key
// and bumps the epoch if it changed, and returns the view. Reconnects with
// backoff. Errors: InvalidArgument for bad options. REQUIRES: `loop` outlives
// the result.
[[nodiscard]] Result<std::unique_ptr<Membership>> NewRedisMembership(
    uv_loop_t* loop, const MembershipOptions& options,
    Membership::ViewFn on_view);

// The global worker ids of `nodes` (node n has ids n x workers_per_node ..
// + workers_per_node - 1), ascending.
std::vector<int> WorkersOf(const std::vector<int>& nodes, int workers_per_node);

// True when every live node reported view.epoch as its acked epoch: every
// old owner of a host that moved in this epoch has stopped fetching it and
// handed it over, so the new owners may start.
bool EpochSettled(const MembershipView& view);

// True when `self` is live and the crawl may start: at least
// `expected_nodes` nodes are live, or another live node already fetches
// (a node joining or coming back to a running crawl).
bool QuorumMet(const MembershipView& view, int self, int expected_nodes);

// The worker of `ring` that reads the inbox of `gone_worker` (Adopt): one
// per gone worker, the same in every process.
int AdopterOf(const Ring& ring, int gone_worker);

}  // namespace crawld::cluster

#endif  // CRAWLD_CLUSTER_CLUSTER_H_
