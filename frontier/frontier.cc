#include "frontier/frontier.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <utility>

namespace crawld::frontier {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// now + delay without overflow: a huge Retry-After means "not in this run",
// never a time in the past.
int64_t SaturatingAdd(int64_t now_us, int64_t delay_us) {
  if (delay_us > 0 && now_us > kNever - delay_us) return kNever;
  return now_us + delay_us;
}

Options Sanitize(Options o) {
  o.min_delay_us = std::max<int64_t>(o.min_delay_us, 0);
  o.max_delay_us = std::max(o.max_delay_us, o.min_delay_us);
  if (!(o.delay_factor >= 0.0)) o.delay_factor = 0.0;  // also catches NaN
  o.delay_factor = std::min(o.delay_factor, 1000.0);
  o.max_crawl_delay_us = std::max<int64_t>(o.max_crawl_delay_us, 0);
  o.max_consecutive_errors = std::max(o.max_consecutive_errors, 1);
  o.error_backoff_base_us = std::max<int64_t>(o.error_backoff_base_us, 0);
  o.max_backoff_us = std::max(o.max_backoff_us, o.error_backoff_base_us);
  return o;
}

}  // namespace

struct Frontier::HostState {
  const std::string* key = nullptr;  // the map's key; nodes never move
  uint64_t seq = 0;                  // creation order, the last tie-break
  std::deque<Item> queue;
  bool in_flight = false;
  bool retired = false;
  int64_t next_fetch_us = 0;
  int64_t last_complete_us = -1;  // -1: never completed
  int64_t crawl_delay_us = 0;
  int consecutive_errors = 0;
  uint64_t fetched = 0;
  uint64_t dropped = 0;
  uint64_t version = 0;  // bumped whenever older heap entries become stale
};

struct Frontier::HeapEntry {
  int64_t next_fetch_us;
  double credit;
  uint64_t seq;
  uint64_t version;
  HostState* host;
};

namespace {

// std::*_heap builds a max-heap; "a < b" here means a is served after b.
struct ServedLater {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    if (a.next_fetch_us != b.next_fetch_us) {
      return a.next_fetch_us > b.next_fetch_us;
    }
    if (a.credit != b.credit) return a.credit < b.credit;
    return a.seq > b.seq;
  }
};

}  // namespace

size_t Frontier::KeyHash::operator()(std::string_view s) const noexcept {
  return std::hash<std::string_view>()(s);
}

Frontier::Frontier(const Options& options) : options_(Sanitize(options)) {}

Frontier::~Frontier() = default;

Frontier::HostState* Frontier::Find(std::string_view host_key) {
  auto it = hosts_.find(host_key);
  return it == hosts_.end() ? nullptr : it->second.get();
}

Frontier::HostState& Frontier::GetOrCreate(std::string_view host_key) {
  auto it = hosts_.find(host_key);
  if (it == hosts_.end()) {
    it = hosts_.emplace(std::string(host_key), std::make_unique<HostState>())
             .first;
    it->second->key = &it->first;
    it->second->seq = next_host_seq_++;
  }
  return *it->second;
}

void Frontier::Reschedule(HostState& host) {
  ++host.version;
  if (!host.in_flight && !host.retired && !host.queue.empty()) {
    heap_.push_back(HeapEntry{host.next_fetch_us, host.queue.front().credit,
                              host.seq, host.version, &host});
    std::push_heap(heap_.begin(), heap_.end(), ServedLater());
  }
  // Each host has at most one valid entry; rebuild once garbage dominates so
  // the heap stays O(hosts) however often heads change.
  if (heap_.size() > 2 * hosts_.size() + 64) {
    std::erase_if(
        heap_, [](const HeapEntry& e) { return e.version != e.host->version; });
    std::make_heap(heap_.begin(), heap_.end(), ServedLater());
  }
  DropStaleTop();
}

void Frontier::DropStaleTop() {
  while (!heap_.empty() &&
         heap_.front().version != heap_.front().host->version) {
    std::pop_heap(heap_.begin(), heap_.end(), ServedLater());
    heap_.pop_back();
  }
}

void Frontier::DropQueue(HostState& host) {
  host.dropped += host.queue.size();
  dropped_ += host.queue.size();
  queued_ -= host.queue.size();
  host.queue.clear();
  host.queue.shrink_to_fit();
}

int64_t Frontier::Gap(const HostState& host) const {
  return std::max(options_.min_delay_us, host.crawl_delay_us);
}

bool Frontier::Push(std::string_view host_key, Item item) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired) {
    ++host.dropped;
    ++dropped_;
    return false;
  }
  if (std::isnan(item.credit)) item.credit = 0.0;  // keeps the heap ordered
  host.queue.push_back(std::move(item));
  ++queued_;
  // Only a new head changes the host's heap entry.
  if (host.queue.size() == 1) Reschedule(host);
  return true;
}

bool Frontier::PushFront(std::string_view host_key, Item item) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired) {
    ++host.dropped;
    ++dropped_;
    return false;
  }
  if (std::isnan(item.credit)) item.credit = 0.0;
  host.queue.push_front(std::move(item));
  ++queued_;
  Reschedule(host);  // the head, and so its credit, changed
  return true;
}

std::optional<Frontier::Ready> Frontier::Pop(int64_t now_us) {
  if (heap_.empty() || heap_.front().next_fetch_us > now_us) {
    return std::nullopt;
  }
  HostState& host = *heap_.front().host;
  std::pop_heap(heap_.begin(), heap_.end(), ServedLater());
  heap_.pop_back();

  Ready ready{*host.key, std::move(host.queue.front())};
  host.queue.pop_front();
  --queued_;
  host.in_flight = true;
  ++in_flight_;
  Reschedule(host);  // in flight: invalidates nothing else, cleans the top
  return ready;
}

void Frontier::Complete(std::string_view host_key, int64_t now_us,
                        const Completion& completion) {
  HostState* found = Find(host_key);
  if (found == nullptr || !found->in_flight) {
    ++ignored_completions_;
    return;
  }
  HostState& host = *found;
  host.in_flight = false;
  --in_flight_;
  ++host.fetched;
  host.last_complete_us = now_us;

  const int64_t gap = Gap(host);
  int64_t delay = gap;
  if (completion.outcome == Outcome::kSuccess) {
    host.consecutive_errors = 0;
    const double scaled =
        options_.delay_factor *
        static_cast<double>(std::max<int64_t>(completion.response_time_us, 0));
    // Compare in double: factor x a huge response time must not overflow.
    if (scaled > static_cast<double>(delay)) {
      delay = scaled >= static_cast<double>(options_.max_delay_us)
                  ? options_.max_delay_us
                  : static_cast<int64_t>(scaled);
    }
    delay = std::min(delay, options_.max_delay_us);
  } else {
    ++host.consecutive_errors;
    if (completion.outcome == Outcome::kRetryLater &&
        completion.retry_after_us >= 0) {
      delay = std::max(gap, completion.retry_after_us);
    } else {
      // base x 2^(errors-1), doubling with a cap check so it never overflows.
      int64_t backoff = options_.error_backoff_base_us;
      for (int i = 1; i < host.consecutive_errors; ++i) {
        if (backoff >= options_.max_backoff_us / 2) {
          backoff = options_.max_backoff_us;
          break;
        }
        backoff *= 2;
      }
      delay = std::max(gap, std::min(backoff, options_.max_backoff_us));
    }
    if (host.consecutive_errors >= options_.max_consecutive_errors &&
        !host.retired) {
      host.retired = true;
      ++retired_hosts_;
      DropQueue(host);
    }
  }
  host.next_fetch_us = SaturatingAdd(now_us, delay);
  Reschedule(host);
}

void Frontier::Release(std::string_view host_key) {
  HostState* host = Find(host_key);
  if (host == nullptr || !host->in_flight) {
    ++ignored_completions_;
    return;
  }
  host->in_flight = false;
  --in_flight_;
  Reschedule(*host);
}

bool Frontier::Acquire(std::string_view host_key, int64_t now_us) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired || host.in_flight || host.next_fetch_us > now_us) {
    return false;
  }
  host.in_flight = true;
  ++in_flight_;
  Reschedule(host);
  return true;
}

void Frontier::SetCrawlDelay(std::string_view host_key,
                             int64_t crawl_delay_us) {
  HostState& host = GetOrCreate(host_key);
  host.crawl_delay_us =
      std::clamp<int64_t>(crawl_delay_us, 0, options_.max_crawl_delay_us);
  if (!host.in_flight && host.last_complete_us >= 0) {
    // Capped like the success delay, so the order of the two calls is moot.
    const int64_t earliest =
        SaturatingAdd(host.last_complete_us,
                      std::min(host.crawl_delay_us, options_.max_delay_us));
    if (earliest > host.next_fetch_us) {
      host.next_fetch_us = earliest;
      Reschedule(host);
    }
  }
}

void Frontier::Retire(std::string_view host_key) {
  HostState& host = GetOrCreate(host_key);
  if (!host.retired) {
    host.retired = true;
    ++retired_hosts_;
  }
  DropQueue(host);
  Reschedule(host);
}

int64_t Frontier::NextReadyUs() const {
  // Reschedule() and Pop() leave a valid entry on top (DropStaleTop).
  return heap_.empty() ? kNever : heap_.front().next_fetch_us;
}

std::optional<HostInfo> Frontier::Host(std::string_view host_key) const {
  auto it = hosts_.find(host_key);
  if (it == hosts_.end()) return std::nullopt;
  const HostState& h = *it->second;
  HostInfo info;
  info.queued = h.queue.size();
  info.in_flight = h.in_flight;
  info.next_fetch_us = h.next_fetch_us;
  info.consecutive_errors = h.consecutive_errors;
  info.retired = h.retired;
  info.crawl_delay_us = h.crawl_delay_us;
  info.fetched = h.fetched;
  info.dropped = h.dropped;
  return info;
}

}  // namespace crawld::frontier
