// daemon/control.h: the protocol between crawld's supervisor and its worker
// processes (docs/CLUSTER.md, "Worker processes"): the command lines the
// supervisor writes on a worker's control socket, and the exit codes by which
// a worker tells the supervisor how it ended.
//
// Commands, one per line (ASCII, '\n'-terminated):
//   go                    start fetching (every worker of the ring is ready)
//   stop REASON           stop at a checkpoint; REASON goes to the summary
//   ring EPOCH LIVE GONE  use the ring of the live workers from now on
//                         (cluster membership changed; LIVE and GONE are
//                         comma-separated global worker ids, GONE may be
//                         "-"): stop fetching, hand over what moved, report
//                         ready at EPOCH, and wait for go
//   lease UNTIL_MS        this node's membership holds until UNTIL_MS on the
//                         machine's monotonic clock (MonotonicMs()); past it
//                         the worker stops at once (it may have been replaced)
//   reload SEQ            reload the rule and override files (SIGHUP to the
//                         supervisor); the report says SEQ and the outcome
// A worker answers with its status line every 200 ms (JSON; fields in
// daemon/worker.cc, Report()).
#ifndef CRAWLD_DAEMON_CONTROL_H_
#define CRAWLD_DAEMON_CONTROL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crawld::daemon::control {

// How a worker process ends (its exit status). Anything else (a signal, 1)
// is a crash: the supervisor restarts the worker from its checkpoint.
enum ExitCode : int {
  kExitOk = 0,  // stopped as told, or a drainer done
  // A fatal store error (e.g. disk full): the whole crawl stops, every other
  // worker at a checkpoint, and crawld exits 1 with stop_reason store_error.
  // Restarting would fetch pages it cannot record.
  kExitStoreError = 3,
  // The worker could not start (e.g. its state cannot be opened): the crawl
  // stops with worker_failed; a restart would fail the same way.
  kExitStartFailed = 4,
  // Its lease ran out (see "lease"): it stopped at once and is started again
  // once the node is back in the crawl. Not a crash.
  kExitFenced = 5,
};

// The stop reason of a worker whose lease ran out. It starts with "signal"
// so that the worker aborts its transfers as on SIGTERM.
inline constexpr std::string_view kStopLeaseExpired = "signal (lease expired)";

// Milliseconds on the machine's monotonic clock (CLOCK_MONOTONIC, the clock
// of std::chrono::steady_clock): the same in every process of the machine,
// so a supervisor can hand a deadline to its workers.
uint64_t MonotonicMs();

struct Command {
  enum class Kind { kUnknown, kGo, kStop, kRing, kLease, kReload };
  Kind kind = Kind::kUnknown;
  std::string reason;           // kStop
  int64_t epoch = 0;            // kRing
  std::vector<int> live, gone;  // kRing, ascending
  uint64_t until_ms = 0;        // kLease
  uint64_t seq = 0;             // kReload
};

// Parses one line (without '\n'). Malformed lines are kUnknown, which a
// worker ignores: the two ends are the same binary, so this is a bug guard.
Command ParseCommand(std::string_view line);

// The lines, without '\n'.
std::string RingLine(int64_t epoch, const std::vector<int>& live,
                     const std::vector<int>& gone);
std::string LeaseLine(uint64_t until_ms);
std::string ReloadLine(uint64_t seq);

}  // namespace crawld::daemon::control

#endif  // CRAWLD_DAEMON_CONTROL_H_
