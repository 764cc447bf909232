// frontier/ip_gate.h: politeness per IP address, beside the per-host
// schedule of frontier.h, and the one delay formula both use.
//
// The frontier spaces requests per host; many hosts can live on one address
// (shared hosting), so the worker also holds each resolved request at this
// gate: at most one request in flight per address, and the next one not
// before SuccessDelayUs(min_delay, delay_factor, last response time,
// max_delay). Work that cannot start waits in FIFO order per address.
//
// One gate sees one process. With several worker processes (and several
// machines) the gate also asks a SharedIpSlots, the crawl-wide holder of
// each address: frontier/ip_slots.h on one machine, cluster/ip_leases.h
// across machines (docs/CLUSTER.md, "Per-IP politeness across workers and
// nodes").
#ifndef CRAWLD_FRONTIER_IP_GATE_H_
#define CRAWLD_FRONTIER_IP_GATE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
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

// Who holds each address beyond this process: at most one holder per
// address among every gate that uses the same slots, and the next holder
// not before the time the last one set. Times are monotonic microseconds
// of one clock shared by every user (CLOCK_MONOTONIC on one machine).
// Implementations say their thread and process rules; IpGate calls them
// from its own loop only.
class SharedIpSlots {
 public:
  virtual ~SharedIpSlots() = default;

  struct Attempt {
    bool acquired = false;
    // Not acquired: the earliest time worth trying again (after now): the
    // address's next-allowed time, or a short poll while someone else holds
    // it or a remote answer is awaited.
    int64_t retry_us = 0;
  };

  // Takes `ip` for the caller if nobody else holds it and its next-allowed
  // time has come; then the caller holds it until Release. Never blocks.
  // REQUIRES: the caller does not hold `ip` already.
  [[nodiscard]] virtual Attempt TryAcquire(std::string_view ip,
                                           int64_t now_us) = 0;

  // The caller's request on `ip` ended at `now_us`; nobody may start the
  // next one before `next_us`. Ignored when the caller does not hold `ip`
  // (e.g. its hold was taken over after its lease ran out).
  virtual void Release(std::string_view ip, int64_t now_us,
                       int64_t next_us) = 0;
};

// Owned by one worker loop; not thread-safe.
class IpGate {
 public:
  struct Options {
    bool enabled = true;  // false: Enter() always starts at once
    int64_t min_delay_us = 0;
    double delay_factor = 0;
    int64_t max_delay_us = 60'000'000;
    // The crawl-wide slots, or nullptr: this gate alone decides (one worker
    // process). Not owned; must outlive the gate. With it, an address is
    // started only when both this gate and the shared slots allow it, and
    // each Leave tells the slots the address's next-allowed time.
    SharedIpSlots* shared = nullptr;
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
  // waiters is in flight and Leave will tell). With shared slots, an address
  // held elsewhere is due again at the retry time the slots gave: call
  // RunReady again then.
  int64_t RunReady(int64_t now_us);

  size_t waiting() const { return waiting_; }
  size_t in_flight() const { return in_flight_; }
  // Times a request had to wait for its address (count).
  uint64_t waits() const { return waits_; }
  // Addresses remembered: in flight, waited for, or inside their gap.
  size_t addresses() const { return addresses_.size(); }

 private:
  struct Address {
    bool busy = false;
    int64_t next_us = 0;  // earliest start of the next request
    std::deque<std::function<void()>> waiters;
  };
  using Due = std::pair<int64_t, std::string>;  // (next_us, ip)

  void Start(Address& a, std::function<void()> start);
  // True if the shared slots (if any) give `ip` to us now; otherwise the
  // address's next_us becomes their retry time.
  bool TakeShared(const std::string& ip, Address& a, int64_t now_us);
  // Forgets idle addresses whose gap has passed.
  void Trim(int64_t now_us);

  Options options_;
  std::unordered_map<std::string, Address> addresses_;
  // Addresses with waiters and nothing in flight, by due time. Entries can
  // be stale (checked on pop).
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  // Addresses left idle inside their gap, by the end of the gap: forgotten
  // then, so the map holds only addresses in use or still inside their gap.
  std::priority_queue<Due, std::vector<Due>, std::greater<>> idle_;
  size_t waiting_ = 0;
  size_t in_flight_ = 0;
  uint64_t waits_ = 0;
};

}  // namespace crawld::frontier

#endif  // CRAWLD_FRONTIER_IP_GATE_H_
