// daemon/worker.h: one crawl worker: the event loop that wires the
// components together (the way of one URL in ../docs/LOOP.md and
// ARCHITECTURE.md): canonicalize -> seen test -> frontier -> robots gate ->
// resolve -> fetch -> record -> parse -> links back to the start.
//
// The worker owns its libuv loop and everything attached to it. Components
// talk to each other only through the worker; none of them knows another.
#ifndef CRAWLD_DAEMON_WORKER_H_
#define CRAWLD_DAEMON_WORKER_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "conf/conf.h"

namespace crawld::daemon {

struct WorkerOptions {
  conf::Config config;  // effective config (data_dir already resolved)
  int worker_id = 0;
  std::vector<std::string> seeds;  // seed URLs (already validated)
  // Progress output: a single updating line when `tty` is true, otherwise
  // one plain line per progress interval. nullptr disables progress.
  FILE* progress = stderr;
  bool progress_tty = false;

  // --- One of several worker processes (daemon/supervisor.h) ---
  // Workers of the crawl, each owning the hosts the ring gives it (count).
  // With 1 the worker owns every host and needs no exchange.
  int workers = 1;
  // Socket to the supervisor (-1: none, a stand-alone crawl). The worker
  // reports a status line every 200 ms and obeys "go" (start fetching:
  // every worker has handed over the hosts it no longer owns) and
  // "stop REASON". Without a supervisor the worker starts at once and ends
  // when its frontier is empty; with one, only on "stop".
  int control_fd = -1;
};

// What a finished (or stopped) crawl did; printed at the end and written to
// <data>/summary.json.
struct CrawlSummary {
  uint64_t pages = 0;  // responses recorded in the WARCs (not robots.txt)
  uint64_t robots_fetches = 0;
  uint64_t bytes = 0;  // body bytes received
  double seconds = 0;
  uint64_t queued_left = 0;  // URLs still queued when the crawl stopped
  std::string stop_reason;   // "done", "max_pages", "max_duration", "signal"
  // Counted events by class: fetch errors ("dns", "connect", "timeout",
  // "tls", "too_large", ...), HTTP status classes ("http_4xx", "http_5xx"),
  // and URL-level drops ("invalid_url", "robots_disallowed", "redirect_loop",
  // "too_many_redirects", "blocked_private", "max_depth").
  std::map<std::string, uint64_t> counts;

  std::string ToJson() const;
  std::string ToText() const;
  // Adds the figures and counts of another summary's ToJson() (a worker's,
  // for the supervisor's sum); text that is not such JSON adds nothing.
  void AddFiguresOf(std::string_view json_text);
};

// Runs on the calling thread; create, Run() once, destroy.
class Worker {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Worker>> Create(
      const WorkerOptions& options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Crawls until the frontier is empty, a limit is reached, or SIGINT /
  // SIGTERM arrives. Returns the summary; fails only on a fatal local error
  // (e.g. the WARC directory is not writable).
  [[nodiscard]] Result<CrawlSummary> Run();

  class Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_WORKER_H_
