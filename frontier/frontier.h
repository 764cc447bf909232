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
// This first version keeps every queue in memory (std::deque per host). The
// next version spills the middle of long queues to LevelDB and schedules by
// AOPIC credit; the API already carries credit (Item::credit) and breaks
// ties between equally ready hosts by it.
//
// Deliberate choices beyond the one-line rules above:
//   - The minimum gap (max(min_delay, Crawl-delay)) also holds after errors
//     and after a Retry-After shorter than it: no completion ever lets a host
//     be fetched sooner than a success would.
//   - SetCrawlDelay() after a completion also pushes the already scheduled
//     next fetch out to last completion + Crawl-delay, so the result does not
//     depend on whether the worker reports the robots.txt fetch's Complete()
//     before or after it parsed the Crawl-delay.
//   - Hosts are never forgotten (their delays, error counts and retirement
//     must survive an empty queue); a host record is a few dozen bytes.
#ifndef CRAWLD_FRONTIER_FRONTIER_H_
#define CRAWLD_FRONTIER_FRONTIER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
};

// One URL waiting in the frontier.
struct Item {
  std::string url;           // canonical absolute URL
  uint64_t fingerprint = 0;  // url fingerprint (url/), for dedupe and logs
  uint16_t depth = 0;        // links from the seed (count)
  uint8_t redirects = 0;     // redirect hops that led here (count)
  double credit = 1.0;       // AOPIC credit; breaks ties between ready hosts
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
  size_t queued = 0;           // items waiting (count)
  bool in_flight = false;      // a fetch (page or robots.txt) is running
  int64_t next_fetch_us = 0;   // earliest start of the next fetch; 0: any time
  int consecutive_errors = 0;  // non-success completions since last success
  bool retired = false;        // refuses new items
  int64_t crawl_delay_us = 0;  // effective (capped) Crawl-delay
  uint64_t fetched = 0;        // completions of any outcome (count)
  uint64_t dropped = 0;        // items discarded because the host is retired
};

// Owned by one worker loop; not thread-safe. Not copyable.
class Frontier {
 public:
  // Options are sanitized once here (see the clamps on each field).
  explicit Frontier(const Options& options);
  ~Frontier();
  Frontier(const Frontier&) = delete;
  Frontier& operator=(const Frontier&) = delete;

  // Appends `item` to the FIFO of `host_key`, the politeness key
  // ("scheme://host:port"), creating the host record if needed.
  // Returns true when queued; false (item dropped and counted) when the host
  // is retired. The frontier takes ownership of the item.
  bool Push(std::string_view host_key, Item item);

  // Puts `item` back at the HEAD of its host's queue, e.g. a page held while
  // robots.txt is fetched, or a retry after 429/503. Same result and
  // ownership as Push(); does not change the host's politeness time.
  // A NaN credit is stored as 0 (both functions).
  bool PushFront(std::string_view host_key, Item item);

  struct Ready {
    std::string host_key;
    Item item;
  };
  // Takes the head item of the host whose politeness time has come
  // (next_fetch_us <= now_us) and that has nothing in flight, and marks that
  // host in flight. Among ready hosts the earliest next_fetch_us wins; ties go
  // to the most credit of the head item, then to the host seen first.
  // Returns nullopt when no host is ready. The caller owns the returned item
  // and must end the fetch with Complete().
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

  // Retires the host: drops (and counts) its queue and refuses later pushes,
  // e.g. robots.txt disallows everything. A fetch in flight still needs its
  // Complete(). Creates the record if the host was unknown.
  void Retire(std::string_view host_key);

  // The earliest next_fetch_us among hosts with queued items and nothing in
  // flight; INT64_MAX if there is none. Pop(NextReadyUs()) succeeds unless
  // this is INT64_MAX. Use it to arm the worker's timer.
  int64_t NextReadyUs() const;

  // Items queued over all hosts (count).
  size_t queued() const { return queued_; }
  // Hosts with a fetch in flight (count).
  size_t in_flight() const { return in_flight_; }
  // Host records, including retired and empty ones (count).
  size_t hosts() const { return hosts_.size(); }
  // Retired hosts (count).
  size_t retired_hosts() const { return retired_hosts_; }
  // Items discarded because their host was retired (count).
  uint64_t dropped() const { return dropped_; }
  // Complete() calls for a host with nothing in flight (count).
  uint64_t ignored_completions() const { return ignored_completions_; }
  // Nothing queued and nothing in flight.
  bool Idle() const { return queued_ == 0 && in_flight_ == 0; }

  // A snapshot of the host's state; nullopt for a host never seen.
  std::optional<HostInfo> Host(std::string_view host_key) const;

 private:
  struct HostState;
  struct HeapEntry;
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
  // Pushes a heap entry for the host if it can be popped, and invalidates
  // older entries; call after any change of its head, time, or flight.
  void Reschedule(HostState& host);
  // Pops entries that no longer describe their host, so that the top is
  // always valid and NextReadyUs() can stay const.
  void DropStaleTop();
  void DropQueue(HostState& host);
  int64_t Gap(const HostState& host) const;

  Options options_;
  std::unordered_map<std::string, std::unique_ptr<HostState>, KeyHash, KeyEq>
      hosts_;
  // Min-heap (std::push_heap with a "later first" comparator) with lazy
  // deletion: an entry is valid while its version matches the host's.
  std::vector<HeapEntry> heap_;
  uint64_t next_host_seq_ = 0;
  size_t queued_ = 0;
  size_t in_flight_ = 0;
  size_t retired_hosts_ = 0;
  uint64_t dropped_ = 0;
  uint64_t ignored_completions_ = 0;
};

}  // namespace crawld::frontier

#endif  // CRAWLD_FRONTIER_FRONTIER_H_
