// frontier/ip_slots.h: the per-IP gate shared by every worker process of one
// machine (docs/CLUSTER.md, "Per-IP politeness across workers and nodes").
//
// Hosts are placed on workers by host name, so the hosts of one address
// (shared hosting) are spread over all workers; each worker's IpGate sees
// only its own requests. IpSlotTable is a file (`<data>/run/ip-slots`)
// mapped by every worker of the crawl on the machine: a fixed array of
// buckets, each a robust process-shared mutex and a few address slots. A
// slot says who holds the address (pid, process start time, handle nonce),
// since when, and the address's next-allowed time on CLOCK_MONOTONIC, which
// is one clock for the whole machine on Linux. So at most one request is in
// flight per address on the machine, and the gap after it (computed by the
// gate that made it, frontier::SuccessDelayUs) holds for every process.
//
// Failure rules, each stricter than the promise, never looser:
// - A holder that dies (kill -9) is found by a probe of /proc/<pid>/stat
//   once it held the address longer than probe_after_us (a dead or reused
//   pid frees the slot, after reclaim_gap_us); a holding older than
//   lease_us is taken over whatever the probe says (a stopped process).
// - A process killed inside a bucket's critical section leaves the mutex to
//   the next locker (EOWNERDEAD), which pushes every address of that bucket
//   reclaim_gap_us further before going on.
// - A bucket with no free slot for a new address makes it wait (as if a
//   hash collision shared a slot) until one frees; counted in stats().
//
// Fairness between processes: a process that finds an address held or in
// its gap reserves the next turn (one at a time, for turn_grace_us after the
// address is free), so a worker that releases and re-enters at once does not
// starve the others.
//
// Beside the hold, each slot keeps a "permit": a time-limited right to use
// the address granted by something outside the machine (cluster/ip_leases.h:
// a node's lease in Redis). The table only stores it, shares it between the
// machine's processes and, when asked to, refuses to hand out an address
// without one; see the permit section below.
#ifndef CRAWLD_FRONTIER_IP_SLOTS_H_
#define CRAWLD_FRONTIER_IP_SLOTS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "frontier/ip_gate.h"

namespace crawld::frontier {

// One handle per process (open it after fork: the holder identity is taken
// at Open/Create). Not thread-safe: use it from one loop. Several handles,
// in one process or many, on one file are distinct holders.
class IpSlotTable final : public SharedIpSlots {
 public:
  struct Options {
    // --- Behaviour (per handle; give every process of a crawl the same).

    // The gap set when a dead holder's slot is reclaimed (microseconds): its
    // request ended at an unknown time, so the next one waits this long.
    // Give it the per-IP minimum delay.
    int64_t reclaim_gap_us = 0;
    // A holding older than this (microseconds) is taken over even if its
    // holder looks alive (e.g. stopped). Must exceed the longest request
    // (the fetcher's total timeout) or a slow transfer would lose its hold.
    int64_t lease_us = 70'000'000;
    // A holder is first probed for liveness after holding an address this
    // long, then again every this often (microseconds). Reading
    // /proc/<pid>/stat costs a few microseconds: probing every poll would
    // cost more than the crashes it finds.
    int64_t probe_after_us = 1'000'000;
    // Retry interval while another process holds an address or another
    // process is asking for its permit (microseconds).
    int64_t poll_us = 5'000;
    // A reserved turn lapses this long after the address became free if its
    // process does not come (microseconds). Must exceed poll_us plus the
    // loop's latency.
    int64_t turn_grace_us = 100'000;

    // --- Size (Create only; Open reads it from the file).

    // Buckets, rounded up to a power of two in [1, 1 << 20]; kSlotsPerBucket
    // slots each. 4096 buckets hold 32768 addresses in use or inside their
    // gap at once (a 4.3 MiB file).
    uint32_t buckets = 4096;
  };

  static constexpr int kSlotsPerBucket = 8;

  // Creates a fresh table at `path` (an existing file there is replaced
  // atomically: a new crawl or a new supervisor starts with no holders).
  // REQUIRES: no process of another crawl uses `path`.
  [[nodiscard]] static Result<std::unique_ptr<IpSlotTable>> Create(
      const std::string& path, const Options& options);
  // Maps the table at `path`, created by Create. Fails with Corruption for
  // a file that is not a table of this version or whose size does not
  // match, and FailedPrecondition for a table of an earlier boot (its
  // monotonic times mean nothing now).
  [[nodiscard]] static Result<std::unique_ptr<IpSlotTable>> Open(
      const std::string& path, const Options& options);

  // Maps the table at `path`, or creates it when there is none or the one
  // there cannot be used (Corruption or FailedPrecondition from Open: a
  // damaged file, another version, an earlier boot). Safe to call from
  // several processes at once: they take turns on `path`.lock (flock) and
  // all map the same table. A table left by an earlier crawl of this boot is
  // used as it is: its holders are dead processes, which the probe finds,
  // and its gaps are still on the right clock. Fails with IOError when the
  // directory is not writable.
  [[nodiscard]] static Result<std::unique_ptr<IpSlotTable>> OpenOrCreate(
      const std::string& path, const Options& options);

  ~IpSlotTable() override;
  IpSlotTable(const IpSlotTable&) = delete;
  IpSlotTable& operator=(const IpSlotTable&) = delete;

  // SharedIpSlots: the machine-wide hold, no permit needed. `ip` is an
  // address in text form (IPv4 or IPv6; other text is hashed to a key).
  // The times must be CLOCK_MONOTONIC microseconds (uv_hrtime() / 1000).
  Attempt TryAcquire(std::string_view ip, int64_t now_us) override;
  void Release(std::string_view ip, int64_t now_us, int64_t next_us) override;

  // --- The same with a permit (for cluster/ip_leases.h).

  enum class Verdict {
    kAcquired,    // the caller holds the address
    kHeld,        // another holder has a request in flight
    kGap,         // inside the gap after the last request
    kTurn,        // free, but reserved for another process's turn
    kFull,        // no slot free in the address's bucket
    kAsk,         // no valid permit: the caller must ask for one (and is
                  // now marked as asking, see GrantPermit / DenyPermit)
    kPermitWait,  // no valid permit, and another process is asking, or an
                  // answer said to wait, or the permit is being given back
  };
  struct SlotAttempt {
    Verdict verdict = Verdict::kFull;
    int64_t retry_us = 0;         // not acquired: when to try again (> now)
    int64_t permit_until_us = 0;  // the permit's end as the slot knows it
  };
  struct PermitRule {
    // An acquisition needs a permit valid at least this much longer
    // (microseconds): the permit must outlive the request, or be renewed
    // while it is in flight.
    int64_t min_left_us = 0;
    // How long one process's question stands before another may ask again
    // (the first may have died, or its answer got lost).
    int64_t ask_timeout_us = 2'000'000;
  };
  // TryAcquire, also requiring a permit when `rule` is not null.
  [[nodiscard]] SlotAttempt Acquire(std::string_view ip, int64_t now_us,
                                    const PermitRule* rule);

  struct SlotRelease {
    bool released = false;  // the caller held the address
    // The permit must be given back now (it was contended, see
    // GrantPermit); the slot forgot it and counts the give-back as a
    // question pending (nobody here asks before the caller's EndQuestion),
    // so that no question can overtake the give-back on its way.
    bool give_back = false;
    int64_t permit_until_us = 0;
    int64_t next_us = 0;  // the address's next-allowed time
  };
  // Release, telling what became of the permit. `rule`: as for Acquire.
  SlotRelease ReleaseSlot(std::string_view ip, int64_t now_us, int64_t next_us,
                          const PermitRule& rule);

  // An answer to a question (kAsk) or a renewal sent at `sent_us`: the
  // permit holds until `until_us`. An answer sent before the permit's last
  // give-back is stale and ignored. `contended`: someone outside waits for
  // it, so the machine stops starting requests on the address and gives the
  // permit back after the one in flight: returns true when nothing is in
  // flight, and the caller gives it back now (*next_us: the address's
  // next-allowed time) and calls EndQuestion once that is done; otherwise
  // the holder's ReleaseSlot says give_back.
  bool GrantPermit(std::string_view ip, int64_t now_us, int64_t sent_us,
                   int64_t until_us, bool contended, const PermitRule& rule,
                   int64_t* next_us);
  // An answer "not yours" (or none) to a question or renewal sent at
  // `sent_us`: forget any permit; nobody on this machine asks again before
  // `retry_us`. An answer sent before the permit's last give-back is stale
  // and ignored: it must not end the give-back's wait (a question sent then
  // could reach the outside before the give-back does).
  void DenyPermit(std::string_view ip, int64_t now_us, int64_t sent_us,
                  int64_t retry_us);
  // A give-back is done (or failed; the permit runs out by itself): asking
  // is open again from `retry_us`.
  void EndQuestion(std::string_view ip, int64_t now_us, int64_t retry_us);

  // --- Introspection.

  struct Stats {
    uint64_t acquired = 0;
    uint64_t denied = 0;       // every verdict but kAcquired
    uint64_t full = 0;         // kFull among them
    uint64_t reclaimed = 0;    // dead holders found by a probe
    uint64_t lease_taken = 0;  // holdings taken over after lease_us
    uint64_t repaired = 0;     // buckets whose locker died inside
  };
  // This handle's counters.
  const Stats& stats() const { return stats_; }
  uint32_t buckets() const;
  // This handle's holder identity (pid).
  pid_t pid() const { return self_.pid; }

  // Test hook: locks the bucket of `ip` and never unlocks it, as a process
  // killed inside a critical section would.
  void LockBucketForTest(std::string_view ip);

 private:
  struct Header;
  struct Bucket;
  struct Slot;
  struct Key {
    uint8_t bytes[16];
  };
  struct Holder {
    pid_t pid = 0;
    uint32_t nonce = 0;
    uint64_t start_ticks = 0;
  };
  class Locked;

  IpSlotTable(const Options& options, void* base, size_t size);
  static Key KeyOf(std::string_view ip);
  Bucket& BucketFor(const Key& key) const;
  // The slot of `key` in `b`, or a free one claimed for it, or nullptr.
  Slot* Find(Bucket& b, const Key& key, int64_t now_us, bool claim);
  bool Mine(const Slot& s) const;
  // Frees the slot of a holder that is gone or over its lease.
  void Reclaim(Slot& s, int64_t now_us);
  // Whether the holder in `s` still runs (reads /proc).
  static bool HolderAlive(pid_t pid, uint64_t start_ticks);
  // Reserves the address's next turn for this handle until `until_us`,
  // unless another process's turn is still on.
  void ReserveTurn(Slot& s, int64_t now_us, int64_t until_us);
  // Forgets the permit, which the caller gives back; a question is pending
  // until its EndQuestion.
  void GiveBack(Slot& s, int64_t now_us, const PermitRule& rule);

  Options options_;
  void* base_;
  size_t size_;
  Holder self_;
  Stats stats_;
};

}  // namespace crawld::frontier

#endif  // CRAWLD_FRONTIER_IP_SLOTS_H_
