// daemon/supervisor.h: crawld with several worker processes
// (ARCHITECTURE.md, Processes; docs/CLUSTER.md, "Worker processes").
//
// The supervisor starts `workers` copies of crawld in worker mode, each
// owning the hosts the consistent-hash ring gives it, with its own loop,
// frontier, LevelDB state and WARC files; the workers exchange URLs among
// themselves over the local exchange (a mesh of Unix sockets in
// <data>/run). Each worker reports on a socket to the supervisor every
// 200 ms. The supervisor
//   - says "go" once every worker has handed over the hosts it no longer
//     owns (a restart with another worker count), so that an old owner
//     never fetches a host after its new owner started on it;
//   - restarts a worker that crashed, with a growing delay (it resumes from
//     its checkpoint; the others keep its URLs until it acknowledges them);
//     a worker's fatal error (a WARC write failed, it cannot start: exit
//     codes in daemon/control.h) instead stops the whole crawl;
//   - ends the crawl when every worker is idle with nothing in transit for
//     a second (or at max_pages), and on SIGINT/SIGTERM asks every worker to
//     stop at a checkpoint and waits for them;
//   - on SIGHUP checks the rule and override files and has every worker
//     reload them (or reports the bad file and changes nothing);
//   - sums the workers' progress and summaries; its own events go to
//     <data>/logs/supervisor.jsonl.
// In a cluster (config cluster.redis) the supervisor is also its node's
// member of the crawl's membership (daemon/membership.h): it tells its
// workers the ring of each epoch, their lease and when to go, and stops
// them when the crawl is done everywhere (docs/CLUSTER.md, "Membership").
#ifndef CRAWLD_DAEMON_SUPERVISOR_H_
#define CRAWLD_DAEMON_SUPERVISOR_H_

#include <cstdio>
#include <string>

#include "base/status.h"
#include "conf/conf.h"
#include "daemon/worker.h"

namespace crawld::daemon {

struct SupervisorOptions {
  conf::Config config;      // effective config (data_dir resolved)
  std::string crawld_path;  // the crawld executable the workers run
  std::string config_file;  // the effective config as a file, for workers
  std::string seeds_file;   // seed URLs, one per line, for workers
  int workers = 2;          // worker processes on this node (count)
  // More worker processes, after those, that are no longer on the ring:
  // each hands everything it holds to the ring's workers and stops
  // (fewer workers than before, or a node leaving the crawl).
  int drainers = 0;
  // The descriptor holding the data directory's lock (<data>/run/lock):
  // every worker inherits it (as its descriptor 4), so that the lock holds
  // while any process of the crawl lives, a killed supervisor included.
  // -1: none.
  int data_lock_fd = -1;
  // Global id of this node's first worker and the ring's size (all nodes'
  // workers); one node: 0 and `workers`.
  int first_worker = 0;
  int total_workers = 2;
  FILE* progress = stderr;  // nullptr: no progress lines
  bool progress_tty = false;
  // Delay before restarting a crashed worker (milliseconds): doubles after
  // each crash of that worker, up to the maximum; back to the minimum once
  // it reported ready again.
  int restart_min_ms = 250;
  int restart_max_ms = 30000;
};

// Runs the crawl to its end on the calling thread; returns the summed
// summary (also written to <data>/summary.json by the caller). Fails if a
// worker cannot be started at all.
[[nodiscard]] Result<CrawlSummary> RunSupervisor(
    const SupervisorOptions& options);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_SUPERVISOR_H_
