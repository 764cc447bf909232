// frontier/frontier.h: the URL frontier of one worker: per-host FIFO queues
// and the politeness scheduler that decides which host may be fetched next.
//
// Politeness rules (docs: /work/shared/ARCHITECTURE.md, "Politeness, the
// rules that never bend"):
//   - at most one request in flight per host key;
//   - between two requests to a host: max(min_delay, Crawl-delay,
//     delay_factor x last response time), capped by max_delay;
//   - Retry-After on 429/503 (RFC 9110 section 10.2.3,
//     https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3) is obeyed, even
//     above max_delay;
//   - consecutive errors back off exponentially and finally retire the host.
// Crawl-delay is the robots.txt extension (not part of RFC 9309,
// https://www.rfc-editor.org/rfc/rfc9309); the caller parses it.
//
// Time is always passed in as `now_us`, monotonic microseconds (>= 0); the
// frontier never reads a clock, so schedules are deterministic in tests.
//
// Queues and disk spill: each host's FIFO is a memory head (the next items
// to pop), a memory tail (the newest pushes) and, between them, chunks
// spilled to append-only segment files under Options::spill_dir. The head is
// refilled from disk when it drops below a low-water mark, so Pop() always
// returns an item that was already in memory. Checkpoint() makes the whole
// queue durable; Open() on the same directory recovers it in order.
// Disk I/O is synchronous: a refill reads inside the Pop() that took the
// item, so the popped item never waits for it; its cost is in
// docs/bench/frontier.md, with why segment files and not LevelDB key ranges.
// Disk errors never crash and never lose silently: a failed spill write
// keeps the items in memory (spill_errors()); once memory is over twice the
// budget that way, TryPush() refuses with ResourceExhausted; a chunk that
// cannot be read back is counted in lost_items(); last_spill_error() says
// why.
//
// Scheduling (AOPIC, Abiteboul, Preda, Cobena, "Adaptive On-Line Page
// Importance Computation", WWW 2003, https://doi.org/10.1145/775152.775192):
// credit is kept per HOST, not per URL (a host-level approximation):
//   - a host's credit is the credit of the items pushed to it plus any
//     AddCredit() it received, including credit for URLs it already had
//     queued or fetched (so a link to an already-seen URL still raises its
//     host), minus what its fetched pages took;
//   - Pop() takes the page's share, credit / queued, from the host; the tax
//     fraction of it goes to the lambda account and the rest is returned in
//     Ready::item.credit for the caller to spread over the page's outlinks;
//   - every lambda_interval pops the lambda account is shared out EQUALLY
//     over all hosts with queued items (not by queue length: a trap host
//     with a million URLs must not get a million shares);
//   - among hosts that politeness allows now, the one with the most credit
//     is served (ties: earliest ready, then the host seen first);
//   - a host stops being scheduled after base_page_budget pages plus
//     budget_pages_per_credit x the credit received from OTHER hosts; its
//     remaining items wait (counted in queued(), not dropped) until more
//     credit comes in, so a trap host cannot eat the crawl.
// With credit_scheduling = false the scheduler is the earliest-ready-first
// one of the first version, with no budget.
//
// Deliberate choices beyond the one-line rules above:
//   - The minimum gap (max(min_delay, Crawl-delay)) also holds after errors
//     and after a Retry-After shorter than it: no completion ever lets a host
//     be fetched sooner than a success would.
//   - SetCrawlDelay() after a completion also pushes the already scheduled
//     next fetch out to last completion + Crawl-delay, so the result does not
//     depend on whether the worker reports the robots.txt fetch's Complete()
//     before or after it parsed the Crawl-delay.
//   - Hosts are never forgotten (their delays, error counts, credit and
//     retirement must survive an empty queue); an empty host record costs
//     about 400 bytes (its queues are vectors, which allocate nothing when
//     empty, not std::deques, which allocate about 500 bytes each).
//   - Memory is bounded by memory_budget_bytes however many hosts have
//     queues: tails are spilled first, heads are lowered (down to one item)
//     when the active hosts' heads would take more than half of it, and a
//     refill under that pressure reads only part of a chunk (ChunkRef::taken).
//     10 M URLs over 100,000 hosts: 203 MiB peak RSS (docs/bench/frontier.md).
#ifndef CRAWLD_FRONTIER_FRONTIER_H_
#define CRAWLD_FRONTIER_FRONTIER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace crawld::frontier {

struct Options {
  // --- Behaviour: politeness ---

  // Minimum gap between the end of one request to a host and the start of
  // the next (microseconds). Clamped to >= 0.
  int64_t min_delay_us = 1'000'000;
  // Cap of the computed delay after a success (microseconds); does not cap
  // Retry-After or error backoff. Raised to min_delay_us if below it.
  int64_t max_delay_us = 60'000'000;
  // Multiplier applied to the last response time (dimensionless); a slow
  // server gets proportionally fewer requests. Clamped to [0, 1000].
  double delay_factor = 2.0;
  // Cap for a robots.txt Crawl-delay (microseconds). Clamped to >= 0.
  int64_t max_crawl_delay_us = 30'000'000;

  // --- Behaviour: errors ---

  // Consecutive non-success completions (count) after which the host is
  // retired: its queue is dropped (counted in dropped()) and later pushes
  // are refused. Clamped to >= 1.
  int max_consecutive_errors = 5;
  // First backoff after an error (microseconds); doubles per consecutive
  // error, capped by max_backoff_us. Clamped to >= 0.
  int64_t error_backoff_base_us = 2'000'000;
  // Cap of the exponential backoff (microseconds). Raised to
  // error_backoff_base_us if below it.
  int64_t max_backoff_us = 600'000'000;

  // --- Behaviour: AOPIC credit (see the file comment) ---

  // Schedule the ready host with the most credit and enforce page budgets;
  // false: earliest ready first, no budget (the first version).
  bool credit_scheduling = true;
  // Credit a host record starts with when it is created (credit units).
  // Clamped to >= 0; NaN becomes 0.
  double seed_credit = 1.0;
  // Fraction of each fetched page's credit paid to the lambda account
  // (dimensionless). Clamped to [0, 1].
  double tax = 0.10;
  // Pops between two share-outs of the lambda account (count). Clamped to
  // >= 1.
  uint64_t lambda_interval = 1000;
  // Pages a host may have popped before any credit from other hosts
  // (count); 0: no budget at all.
  uint64_t base_page_budget = 100'000;
  // Extra pages per unit of credit received from other hosts (pages per
  // credit unit). Clamped to >= 0.
  double budget_pages_per_credit = 100.0;

  // --- Behaviour: disk spill ---

  // Directory of the spill segments and the checkpoint manifest; created if
  // missing. Empty: every queue stays in memory (the head grows without
  // bound, nothing touches the disk). Honoured only by Frontier::Open(): the
  // constructor cannot report errors and always builds a memory frontier.
  std::string spill_dir;

  // --- Performance: disk spill (ignored without spill_dir) ---

  // Items a host's head is refilled to (count). Clamped to >= 1. With many
  // active hosts it is lowered (down to 1) so that the heads take at most
  // about half of memory_budget_bytes.
  size_t head_items = 32;
  // Refill the head when it holds fewer items than this (count). Clamped to
  // [1, head_items].
  size_t low_water_items = 8;
  // A host's tail is written out as one chunk when it reaches this many
  // items (count). Clamped to >= 1.
  size_t chunk_items = 128;
  // Bytes of queued items kept in memory over all hosts (estimate: Item
  // plus URL heap bytes). Above it, tails are spilled early, oldest first.
  // Heads are never spilled; they are lowered instead (head_items), so the
  // budget holds however many hosts have queues: 10 M URLs over 100,000
  // hosts stay in it (docs/bench/frontier.md).
  size_t memory_budget_bytes = 64u << 20;
  // A segment file is closed for appends at this size (bytes) and deleted
  // when no live queue or checkpoint refers to it. Clamped to >= 4 KiB.
  uint64_t segment_bytes = 64u << 20;
};

// What a queued URL is fetched as.
enum class ItemKind : uint8_t {
  kPage = 0,
  kSitemap = 1,       // a sitemap or sitemap index (named by robots.txt)
  kChildSitemap = 2,  // a child of a sitemap index: its children are not
                      // read (one level of index, as the protocol allows)
};

// One URL waiting in the frontier.
struct Item {
  std::string url;           // canonical absolute URL
  uint64_t fingerprint = 0;  // url fingerprint (url/), for dedupe and logs
  uint16_t depth = 0;        // links from the seed (count)
  uint8_t redirects = 0;     // redirect hops that led here (count)
  // Transient failures of this URL so far (count); the caller gives up
  // after its own limit.
  uint8_t retries = 0;
  // What the URL is fetched as: a page, or a sitemap (docs/SITEMAPS.md),
  // whose entries are read as the sitemaps.org protocol admits them.
  ItemKind kind = ItemKind::kPage;
  // A sitemap's <changefreq> for this page (sitemap::ChangeFreq as an
  // integer, 0: none): its first recrawl interval (recrawl::Steer). One
  // byte, in what was padding: the frontier holds millions of items.
  uint8_t changefreq = 0;
  // A revisit of a page this host's queue gave before (a continuous crawl,
  // recrawl/): it does not count against the host's page budget, which
  // bounds the distinct pages a host may take (a trap), not how often the
  // pages it has are kept fresh; and it may go while the host is at its
  // budget. Without it every host of a continuous crawl stopped being
  // revisited once its pops reached the budget.
  bool revisit = false;
  // AOPIC credit (credit units). Push() adds it to the host's credit; Pop()
  // returns here the after-tax share the fetched page passes to its
  // outlinks. With credit_scheduling off it only breaks ties between hosts
  // ready at the same time (by the head item's credit).
  double credit = 1.0;
  // The fingerprint of the URL whose redirect led here; 0: none.
  uint64_t redirect_from = 0;
  // The host of the seed this URL descends from, for the filter's scope
  // rules (conf/rules.h); carried along links, redirects and the exchange.
  std::string seed_host;
  // A sitemap's cross-submitting host: the host whose robots.txt named it
  // (or named the index it is a child of); its URLs are admitted whatever
  // the sitemap's own host and directory. Empty for pages and for
  // sitemaps no robots.txt named (a configured /sitemap.xml).
  std::string sitemap_of;
};

// How a fetch ended, as far as politeness is concerned.
enum class Outcome {
  kSuccess,       // any HTTP response other than the ones below (incl. 4xx)
  kServerError,   // 5xx other than 503
  kNetworkError,  // connect, TLS, timeout, DNS failure
  kRetryLater,    // 429 or 503: honour Retry-After when given
};

struct Completion {
  Outcome outcome = Outcome::kSuccess;
  // Time the fetch took (microseconds); scales the next delay on success.
  int64_t response_time_us = 0;
  // From Retry-After (microseconds); -1: none. Obeyed even above max_delay.
  int64_t retry_after_us = -1;
};

// A snapshot of one host's scheduling state (for status pages and tests).
struct HostInfo {
  size_t queued = 0;            // items waiting (count)
  bool in_flight = false;       // a fetch (page or robots.txt) is running
  int max_in_flight = 1;        // fetches allowed at once (an override)
  int64_t next_fetch_us = 0;    // earliest start of the next fetch; 0: any time
  int consecutive_errors = 0;   // non-success completions since last success
  bool retired = false;         // refuses new items
  int64_t crawl_delay_us = 0;   // effective (capped) Crawl-delay
  uint64_t fetched = 0;         // completions of any outcome (count)
  uint64_t dropped = 0;         // items discarded because the host is retired
  size_t in_memory = 0;         // of `queued`, items held in memory (count)
  double credit = 0.0;          // current AOPIC credit (credit units)
  double inbound_credit = 0.0;  // credit received from other hosts, ever
  uint64_t pages = 0;           // items popped (count), against the budget
  uint64_t page_budget = 0;     // pages allowed now; 0: unlimited
};

// Owned by one worker loop; not thread-safe. Not copyable. Disk I/O (spill
// writes, head refills, Checkpoint) happens synchronously inside the calls.
class Frontier {
 public:
  // A memory-only frontier (options.spill_dir is ignored; use Open() to
  // spill). Options are sanitized once here (see the clamps on each field).
  explicit Frontier(const Options& options);
  ~Frontier();
  Frontier(const Frontier&) = delete;
  Frontier& operator=(const Frontier&) = delete;

  // Opens a frontier. With an empty spill_dir, the same as the constructor.
  // Otherwise creates spill_dir if needed and, if it holds a manifest from
  // Checkpoint(), recovers every host's queue in its order, its retirement,
  // Crawl-delay, credit, page count and the lambda account (politeness
  // times restart at 0: they are monotonic times of the old process).
  // Segment files the manifest does not refer to (written after the last
  // checkpoint) are deleted. Errors: IOError (directory, files),
  // Corruption (bad manifest). REQUIRES: one Frontier per spill_dir.
  static Result<std::unique_ptr<Frontier>> Open(const Options& options);

  // Appends `item` to the FIFO of `host_key`, the politeness key
  // ("scheme://host:port"), creating the host record if needed, and adds
  // item.credit to the host's credit. `from_host_key` is the host of the
  // page the link was found on; credit from another host (or from no host:
  // seeds, empty) also raises the page budget, credit from the host itself
  // does not. Returns OK when queued. Errors (the item is dropped and
  // counted in dropped()): FailedPrecondition when the host is retired;
  // ResourceExhausted when the spill store is failing and memory is over
  // twice memory_budget_bytes (the frontier never drops silently, and never
  // grows without bound on a broken disk). Takes ownership of the item.
  Status TryPush(std::string_view host_key, Item item,
                 std::string_view from_host_key = {});
  // TryPush() that returns true when queued.
  bool Push(std::string_view host_key, Item item,
            std::string_view from_host_key = {});

  // Puts `item` back at the HEAD of its host's queue, e.g. a page held while
  // robots.txt is fetched, or a retry after 429/503. Same result and
  // ownership as Push(); does not change the host's politeness time. With
  // credit scheduling, item.credit goes back to the host (not as credit from
  // another host) and the page back to the budget, so a popped page that is
  // put back costs nothing but the tax. A NaN or negative credit is stored
  // as 0 (all push functions).
  bool PushFront(std::string_view host_key, Item item);

  // Adds `amount` (credit units; ignored if NaN or <= 0) to the host's
  // credit, creating the host record if needed, e.g. for a link to a URL
  // already seen. Credit from another host (from_host_key != host_key)
  // raises the page budget as in TryPush().
  void AddCredit(std::string_view host_key, double amount,
                 std::string_view from_host_key = {});

  struct Ready {
    std::string host_key;
    Item item;
  };
  // Takes the head item of a host whose politeness time has come
  // (next_fetch_us <= now_us), that has nothing in flight and is within its
  // page budget, and marks that host in flight. With credit scheduling the
  // host with the most credit wins (ties: earliest next_fetch_us, then the
  // host seen first) and item.credit is set to the page's after-tax credit;
  // without it the earliest next_fetch_us wins, ties to the most credit of
  // the head item, then the host seen first. Returns nullopt when no host is
  // ready. The caller owns the returned item and must end the fetch with
  // Complete() or Release().
  std::optional<Ready> Pop(int64_t now_us);

  // Ends the fetch in flight for `host_key` and schedules the host's next
  // fetch at now_us + delay, where (gap = max(min_delay, crawl_delay)):
  //   kSuccess:     min(max(gap, delay_factor x response_time), max_delay);
  //                 resets the consecutive error count;
  //   kRetryLater:  max(gap, retry_after) if retry_after >= 0, otherwise the
  //                 error backoff below;
  //   errors:       max(gap, min(error_backoff_base x 2^(errors-1),
  //                 max_backoff)).
  // Every non-success completion counts as a consecutive error; the
  // max_consecutive_errors-th retires the host (queue dropped and counted).
  // REQUIRES: host_key has a fetch in flight (from Pop or Acquire). Calls
  // that break this are ignored (and counted in ignored_completions()).
  void Complete(std::string_view host_key, int64_t now_us,
                const Completion& completion);

  // Ends the slot held by `host_key` when no request was sent after all,
  // e.g. robots.txt disallows the popped URL. Nothing else changes: the
  // politeness time, error count and fetched count stay as they were, so the
  // host's next item may go as soon as that time allows.
  // REQUIRES: host_key has a fetch in flight; otherwise ignored (and counted
  // in ignored_completions()).
  void Release(std::string_view host_key);

  // True when `host_key` has taken as many pages as its budget allows now
  // (its new URLs wait for credit; Item::revisit items still go). False
  // for an unknown host or without a budget.
  [[nodiscard]] bool AtPageBudget(std::string_view host_key) const;

  // Marks `host_key` in flight without taking an item (the worker fetches
  // its robots.txt), creating the host record if needed. Returns false, and
  // changes nothing, if the host is retired, already in flight, or
  // next_fetch_us > now_us. On true, the caller must call Complete().
  bool Acquire(std::string_view host_key, int64_t now_us);

  // Sets the host's Crawl-delay from robots.txt (microseconds; negative
  // means none), capped at max_crawl_delay_us. Applies to every later
  // completion, and, when nothing is in flight, moves an already scheduled
  // next fetch out to (last completion + min(Crawl-delay, max_delay)) if
  // that is later. A negative value clears the Crawl-delay.
  void SetCrawlDelay(std::string_view host_key, int64_t crawl_delay_us);

  // An admin override for one host: `delay_us` >= 0 replaces the gap
  // max(min_delay, Crawl-delay) for later completions (lower or higher);
  // negative restores the config's rule. `max_in_flight` (>= 1) fetches may
  // run at once (1 is the rule for every other host). Creates the record.
  void SetHostPoliteness(std::string_view host_key, int64_t delay_us,
                         int max_in_flight);

  // Retires the host: drops (and counts) its queue, spilled chunks included,
  // and refuses later pushes, e.g. robots.txt disallows everything. A fetch
  // in flight still needs its Complete(). Creates the record if the host
  // was unknown.
  void Retire(std::string_view host_key);

  // Removes every queued item of `host_key` (memory and spilled, in queue
  // order) and hands each to `out`, e.g. to move the host to the worker
  // that owns it now. The host record stays (its politeness time, errors
  // and credit); a fetch in flight still needs its Complete(). Chunks that
  // cannot be read are counted as in Pop() and make the result IOError,
  // after every readable item was handed out. OK for an unknown host.
  Status TakeQueue(std::string_view host_key,
                   const std::function<void(Item&&)>& out);

  // Calls `visit` with every queued item of every host (memory and
  // spilled; spilled chunks are read back, the queues stay as they are),
  // for a recovery that must know what is queued. O(queued items) and
  // their spill reads: not for the crawl path. A chunk that cannot be read
  // makes the result IOError after every readable item was visited (it is
  // counted when its queue reaches it). `visit` must not change the
  // frontier.
  [[nodiscard]] Status ForEachQueued(
      const std::function<void(std::string_view host_key, const Item&)>& visit)
      const;

  // The keys of every host with queued items (any order).
  std::vector<std::string> QueuedHosts() const;

  // Makes everything queued durable in spill_dir: memory heads and tails
  // are written as chunks, segment files synced, and a new manifest
  // atomically replaces the old one, so that Open() after a crash recovers
  // exactly the queues as of this call. The memory buffers stay as they
  // are. OK and a no-op without spill_dir. Errors: IOError; the previous
  // manifest then stays valid and the frontier keeps working.
  // in_flight: (host key, item) pairs the caller holds (popped, not done).
  // They are written at the head of their hosts' queues in the manifest
  // only, so that the manifest alone says what a restart must fetch: a
  // list kept elsewhere could not be replaced in the same atomic step, and
  // a crash between the two would lose the pages in flight. Items of a
  // host the frontier does not know are left out.
  Status Checkpoint(
      const std::vector<std::pair<std::string, Item>>& in_flight = {});

  // The earliest next_fetch_us among hosts that can be popped (queued
  // items, nothing in flight, within budget); INT64_MAX if there is none.
  // With credit scheduling, once a Pop() has seen hosts ready this may be
  // the time of one of them rather than the earliest, always <= that Pop's
  // now_us. Pop(NextReadyUs()) succeeds unless this is INT64_MAX. Use it to
  // arm the worker's timer.
  int64_t NextReadyUs() const;

  // Items queued over all hosts, in memory or spilled (count); includes
  // items of hosts over their page budget.
  size_t queued() const { return queued_; }
  // Hosts with a fetch in flight (count).
  size_t in_flight() const { return in_flight_; }
  // Host records, including retired and empty ones (count).
  size_t hosts() const { return hosts_.size(); }
  // Retired hosts (count).
  size_t retired_hosts() const { return retired_hosts_; }
  // Items discarded because their host was retired, or refused by TryPush()
  // (count).
  uint64_t dropped() const { return dropped_; }
  // Complete() calls for a host with nothing in flight (count).
  uint64_t ignored_completions() const { return ignored_completions_; }
  // Nothing in flight and no host that Pop() could ever serve: every queued
  // item (if any) belongs to a host over its page budget. Without credit
  // scheduling, the same as queued() == 0 && in_flight() == 0.
  bool Idle() const;

  // The lambda account not yet shared out (credit units).
  double lambda() const { return lambda_; }
  // Items written to spill segments (count, cumulative).
  uint64_t spilled_items() const { return spilled_items_; }
  // Failed spill writes, refills or syncs (count).
  uint64_t spill_errors() const { return spill_errors_; }
  // Queued items lost because a spilled chunk could not be read back
  // (count); each also counts in spill_errors().
  uint64_t lost_items() const { return lost_items_; }
  // The most recent spill error; OK if there was none.
  const Status& last_spill_error() const { return last_spill_error_; }
  // Estimated bytes of queued items held in memory.
  size_t memory_bytes() const { return memory_bytes_; }

  // A snapshot of the host's state; nullopt for a host never seen.
  std::optional<HostInfo> Host(std::string_view host_key) const;
  // Calls fn(host_key, snapshot) for every host record, retired and empty
  // ones included, in no particular order. O(hosts): for the admin API's
  // host list and host counts by state, not for the crawl path. fn must
  // not change the frontier.
  void ForEachHost(
      const std::function<void(std::string_view, const HostInfo&)>& fn) const;

 private:
  struct HostState;
  struct HeapEntry;
  struct SpillStore;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept;
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const noexcept {
      return a == b;
    }
  };

  HostState& GetOrCreate(std::string_view host_key);
  HostState* Find(std::string_view host_key);
  bool Schedulable(const HostState& host) const;
  uint64_t PageBudget(const HostState& host) const;
  double CreditOf(const HostState& host) const;
  // Pushes a heap entry for the host if it can be popped, and invalidates
  // older entries; call after any change of its head, time, flight, credit
  // or budget.
  void Reschedule(HostState& host);
  // Pops entries that no longer describe their host, so that the tops are
  // always valid and NextReadyUs() can stay const.
  void DropStaleTops();
  void DropQueue(HostState& host);
  void OnQueuedChange(HostState& host, size_t before);
  void AddItemBytes(const Item& item);
  void SubItemBytes(const Item& item);
  // How many items a host's head holds before its next pushes go to the
  // tail (and a refill stops): head_items, or less when the active hosts'
  // heads would take more than their share of memory_budget_bytes.
  size_t HeadCap() const;
  // Spill helpers (no-ops without a store).
  void SpillTail(HostState& host);
  // Writes a run of small chunks at the end of the host's queue as one.
  void MergeSmallChunks(HostState& host);
  void EnforceBudget();
  void Refill(HostState& host);
  void ShareLambda();
  int64_t Gap(const HostState& host) const;

  Options options_;
  std::unique_ptr<SpillStore> store_;  // null: memory only
  std::unordered_map<std::string, std::unique_ptr<HostState>, KeyHash, KeyEq>
      hosts_;
  // Min-heaps (std::push_heap with "served later" comparators) with lazy
  // deletion: an entry is valid while its version matches the host's. Each
  // host has at most one valid entry over both. Without credit scheduling
  // only time_heap_ is used; with it, Pop() moves hosts whose time has come
  // from time_heap_ to ready_heap_, ordered by credit.
  std::vector<HeapEntry> time_heap_;
  std::vector<HeapEntry> ready_heap_;
  uint64_t next_host_seq_ = 0;
  size_t queued_ = 0;
  size_t in_flight_ = 0;
  size_t retired_hosts_ = 0;
  size_t active_hosts_ = 0;  // hosts with queued items
  uint64_t dropped_ = 0;
  uint64_t ignored_completions_ = 0;
  // AOPIC: lambda account, and the running sum of equal shares given to
  // every active host (a host stores credit minus the sum at activation,
  // so a share-out is O(1) and keeps the credit order of the heaps).
  double lambda_ = 0.0;
  double shared_sum_ = 0.0;
  uint64_t pops_since_share_ = 0;
  // Hosts whose memory tail holds items, oldest first: spilled first when
  // memory_bytes_ is over budget. Records never die, so pointers are safe.
  std::deque<HostState*> tail_hosts_;
  // Spill accounting.
  size_t memory_bytes_ = 0;
  size_t memory_items_ = 0;  // the items memory_bytes_ counts
  uint64_t spilled_items_ = 0;
  uint64_t spill_errors_ = 0;
  uint64_t lost_items_ = 0;
  uint64_t pushes_ = 0;
  uint64_t spill_retry_at_push_ = 0;  // after a failed write, retry later
  bool spill_failing_ = false;        // the last spill write failed
  Status last_spill_error_;
};

}  // namespace crawld::frontier

#endif  // CRAWLD_FRONTIER_FRONTIER_H_
