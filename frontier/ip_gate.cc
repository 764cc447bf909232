#include "frontier/ip_gate.h"

#include <algorithm>
#include <climits>

namespace crawld::frontier {

int64_t SuccessDelayUs(int64_t gap_us, double delay_factor, int64_t response_us,
                       int64_t max_delay_us) {
  int64_t delay = gap_us;
  const double scaled =
      delay_factor * static_cast<double>(std::max<int64_t>(response_us, 0));
  if (scaled > static_cast<double>(delay)) {
    delay = scaled >= static_cast<double>(max_delay_us)
                ? max_delay_us
                : static_cast<int64_t>(scaled);
  }
  return std::min(delay, max_delay_us);
}

void IpGate::Start(Address& a, std::function<void()> start) {
  a.busy = true;
  ++in_flight_;
  start();  // may call Leave() synchronously (e.g. an immediate failure)
}

void IpGate::Enter(const std::string& ip, int64_t now_us,
                   std::function<void()> start) {
  if (!options_.enabled || ip.empty()) {
    start();
    return;
  }
  Address& a = addresses_[ip];
  if (!a.busy && a.waiters.empty() && a.next_us <= now_us) {
    Start(a, std::move(start));
    return;
  }
  ++waits_;
  ++waiting_;
  a.waiters.push_back(std::move(start));
  if (!a.busy && a.waiters.size() == 1) due_.emplace(a.next_us, ip);
}

void IpGate::Leave(const std::string& ip, int64_t now_us, int64_t response_us) {
  if (!options_.enabled || ip.empty()) return;
  auto it = addresses_.find(ip);
  if (it == addresses_.end() || !it->second.busy) return;
  Address& a = it->second;
  a.busy = false;
  --in_flight_;
  a.next_us =
      now_us + SuccessDelayUs(options_.min_delay_us, options_.delay_factor,
                              response_us, options_.max_delay_us);
  if (!a.waiters.empty()) {
    due_.emplace(a.next_us, ip);
  } else if (a.next_us <= now_us) {
    // Nothing remembers this address: forget it, so the map holds only
    // addresses in use or still inside their gap.
    addresses_.erase(it);
  }
}

int64_t IpGate::RunReady(int64_t now_us) {
  while (!due_.empty()) {
    auto [when, ip] = due_.top();
    auto it = addresses_.find(ip);
    if (it == addresses_.end() || it->second.busy ||
        it->second.waiters.empty() || it->second.next_us != when) {
      due_.pop();  // stale: the address changed since this entry
      continue;
    }
    if (when > now_us) return when;
    due_.pop();
    Address& a = it->second;
    std::function<void()> start = std::move(a.waiters.front());
    a.waiters.pop_front();
    --waiting_;
    // `a` may be invalidated by start() (it can Enter/Leave and rehash).
    Start(a, std::move(start));
  }
  return INT64_MAX;
}

}  // namespace crawld::frontier
