// frontier/ip_gate.h: politeness per IP address, beside the per-host
// schedule of frontier.h, and the one delay formula both use.
//
// The frontier spaces requests per host; many hosts can live on one address
// (shared hosting), so the worker also holds each resolved request at this
// gate: at most one request in flight per address, and the next one not
// before SuccessDelayUs(min_delay, delay_factor, last response time,
// max_delay). Work that cannot start waits in FIFO order per address.
#ifndef CRAWLD_FRONTIER_IP_GATE_H_
#define CRAWLD_FRONTIER_IP_GATE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace crawld::frontier {

// The gap after a successful request (microseconds), the rule of
// ARCHITECTURE.md "Politeness": max(gap, delay_factor x response time),
// capped by max_delay. `gap` is the floor the caller computed (min_delay,
// Crawl-delay or an override); the cap applies to it too. Computed in double
// so that a factor times a huge response time cannot overflow. Used by
// Frontier::Complete (per host) and IpGate::Leave (per address): one
// formula, two keys.
[[nodiscard]] int64_t SuccessDelayUs(int64_t gap_us, double delay_factor,
                                     int64_t response_us, int64_t max_delay_us);

// Owned by one worker loop; not thread-safe.
class IpGate {
 public:
  struct Options {
    bool enabled = true;  // false: Enter() always starts at once
    int64_t min_delay_us = 0;
    double delay_factor = 0;
    int64_t max_delay_us = 60'000'000;
  };

  explicit IpGate(const Options& options) : options_(options) {}

  // Runs `start` now if `ip` has nothing in flight and its gap has passed
  // (then `ip` is in flight until Leave), otherwise queues it behind the
  // address's earlier waiters; RunReady() starts it later.
  void Enter(const std::string& ip, int64_t now_us,
             std::function<void()> start);

  // The request in flight on `ip` ended after `response_us`. Ignored when
  // nothing is in flight there (or when disabled).
  void Leave(const std::string& ip, int64_t now_us, int64_t response_us);

  // Starts waiters whose address is free and due. Returns the earliest time
  // a waiter becomes due (INT64_MAX: none waits, or every address with
  // waiters is in flight and Leave will tell).
  int64_t RunReady(int64_t now_us);

  size_t waiting() const { return waiting_; }
  size_t in_flight() const { return in_flight_; }
  // Times a request had to wait for its address (count).
  uint64_t waits() const { return waits_; }

 private:
  struct Address {
    bool busy = false;
    int64_t next_us = 0;  // earliest start of the next request
    std::deque<std::function<void()>> waiters;
  };
  using Due = std::pair<int64_t, std::string>;  // (next_us, ip)

  void Start(Address& a, std::function<void()> start);

  Options options_;
  std::unordered_map<std::string, Address> addresses_;
  // Addresses with waiters and nothing in flight, by due time. Entries can
  // be stale (checked on pop).
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  size_t waiting_ = 0;
  size_t in_flight_ = 0;
  uint64_t waits_ = 0;
};

}  // namespace crawld::frontier

#endif  // CRAWLD_FRONTIER_IP_GATE_H_
