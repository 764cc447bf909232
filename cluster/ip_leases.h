// cluster/ip_leases.h: per-IP politeness across the nodes of a cluster
// (docs/CLUSTER.md, "Per-IP politeness across workers and nodes").
//
// On one machine, frontier::IpSlotTable keeps one request in flight per
// address among the node's worker processes. Across machines, a node takes
// a lease on an address in Redis before its first request there, and keeps
// it while it uses the address:
//
//   crawld:<crawl>:ip:<address>      the holder node's id, PX lease_ttl_ms;
//                                    "gap:<id>" for the gap after a give-back
//   crawld:<crawl>:ipwant:<address>  the node waiting for it, PX short
//
// The lease is the node's, not a process's: it is recorded in the address's
// slot of the machine's table (the slot's permit), so every worker of the
// node uses it without asking again. A request needs no round trip to Redis
// while the permit is valid. The worker that uses it renews it (one round
// trip about every lease_ttl_ms / 4 of use, and while a request is in
// flight); a worker that stopped using it checks it once every
// lease_ttl_ms / 4 while the permit lasts (the first three checks
// 4 x contend_poll_ms apart if another node wanted the address within the
// last lease).
//
// Only an address that hosts of two nodes want at once costs more: the
// waiting node leaves its id in `ipwant` and asks again every
// contend_poll_ms; the holder, told so at its next renewal or check, starts
// nothing new there and gives the lease back after its request in flight,
// leaving a "gap" value that lives for the per-IP gap after that request.
// So nodes that share an address take turns of about a quarter lease, and
// an address a node stopped using waits at most about a quarter lease for
// another node (a few polls if that node had wanted it lately). The gap is
// timed by Redis's clock alone: the nodes' clocks may disagree by any
// amount; only their rates are assumed equal (within a quarter of the
// lease, the margin each node keeps).
//
// A node that dies holds its leases until they expire (lease_ttl_ms). A
// node that cannot reach Redis renews nothing: its permits lapse and it
// starts no new request on a leased address; a request it already has in
// flight is covered because its supervisor's membership lease (3/4 of
// heartbeat_ttl_ms, docs/CLUSTER.md "Fencing") stops every worker of the
// node first, provided lease_ttl_ms exceeds heartbeat_ttl_ms by the
// renewal period and the workers' 200 ms lease check (the worker gives it
// heartbeat_ttl_ms + 1 s).
#ifndef CRAWLD_CLUSTER_IP_LEASES_H_
#define CRAWLD_CLUSTER_IP_LEASES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "frontier/ip_gate.h"
#include "frontier/ip_slots.h"

typedef struct uv_loop_s uv_loop_t;

namespace crawld::cluster {

struct IpLeaseOptions {
  // --- Where.
  std::string host = "127.0.0.1";  // Redis
  int port = 6379;
  std::string crawl;  // the crawl name, the key prefix (cluster.name)
  int node_id = 0;    // this node (--node-id): the lease's value

  // --- Behaviour.

  // Life of a lease in Redis (milliseconds) and so the longest a dead
  // node blocks an address. Must exceed the membership's heartbeat_ttl_ms
  // (see above); give every node the same value.
  int lease_ttl_ms = 10'000;
  // A node waiting for an address another node holds asks again this often
  // (milliseconds); its claim (`ipwant`) lives 5 times as long.
  int contend_poll_ms = 100;
  // How long one worker's question stands before another worker of the
  // node asks again (milliseconds).
  int ask_timeout_ms = 2'000;
  // Redis reconnects, doubling from min to max (milliseconds).
  int reconnect_min_ms = 50;
  int reconnect_max_ms = 2'000;
};

// Counters of one process's leases.
struct IpLeaseStats {
  uint64_t asked = 0;        // questions for a lease sent to Redis
  uint64_t granted = 0;      // answered "yours"
  uint64_t denied = 0;       // answered "another node's" (or its gap)
  uint64_t renewed = 0;      // renewals sent
  uint64_t checked = 0;      // checks sent for idle leases (below)
  uint64_t given_back = 0;   // leases given back to a waiting node
  uint64_t lost = 0;         // renewals answered "no longer yours"
  uint64_t unreachable = 0;  // questions not sent or not answered
};

// A frontier::SharedIpSlots for IpGate::Options::shared: the machine's
// table plus the node's leases. Lives on one loop and is used from that
// loop's thread only; the times given to it must be CLOCK_MONOTONIC
// microseconds (uv_hrtime() / 1000, what SystemClock::MonotonicUs gives).
class IpLeases : public frontier::SharedIpSlots {
 public:
  ~IpLeases() override = default;
  IpLeases(const IpLeases&) = delete;
  IpLeases& operator=(const IpLeases&) = delete;

  [[nodiscard]] virtual const IpLeaseStats& stats() const = 0;
  // Whether the Redis connection is up.
  [[nodiscard]] virtual bool connected() const = 0;

  // Stops the renewal timer and drops the Redis connection, so that the
  // loop can run dry at the worker's end. Afterwards nothing more is
  // acquired on a leased address; Release still frees the machine's slot,
  // and the node's leases expire in Redis by themselves (lease_ttl_ms).
  // Idempotent; the destructor does it too.
  virtual void Close() = 0;

 protected:
  IpLeases() = default;
};

// Connects to Redis at once (reconnecting with backoff) on `loop`, with a
// timer there that renews the leases of requests in flight. `table` is the
// machine's table of this node's data directory; not owned, must outlive
// the result. Until Redis answers, no address is acquired.
// REQUIRES: `loop` outlives the result.
[[nodiscard]] Result<std::unique_ptr<IpLeases>> NewRedisIpLeases(
    uv_loop_t* loop, frontier::IpSlotTable* table,
    const IpLeaseOptions& options);

}  // namespace crawld::cluster

#endif  // CRAWLD_CLUSTER_IP_LEASES_H_
