// daemon/recorder.h: step 14 of the way of one URL (daemon/crawl_path.h):
// what a fetch becomes in the WARC files. The request and response (or a
// revisit of an exact duplicate of a body stored before), then, for a parsed
// page, its metadata record (robots flags, near-duplicate, canonical,
// outlinks: what recovery reads back) and, when configured, its conversion
// record. Documents (daemon/documents.h) decided, off the loop, whether the
// body is a revisit (PageTask::document); it hears how each write went.
//
// The writes run off the worker's loop (issue 19: gzip and SHA-1 of a
// 10 MiB record held the loop for seconds), one fetch at a time and in the
// order submitted: the store's writer is single-threaded, and a revisit is
// decided only after every earlier body is remembered, exactly as if the
// writes ran in line. Each fetch is decided on the loop (documents, stats),
// written on a pool thread, and completed on the loop.
#ifndef CRAWLD_DAEMON_RECORDER_H_
#define CRAWLD_DAEMON_RECORDER_H_

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "daemon/crawl_stats.h"
#include "daemon/documents.h"
#include "daemon/event_log.h"
#include "daemon/page_task.h"
#include "daemon/ports.h"
#include "dedupe/dedupe.h"
#include "fetcher/fetcher.h"
#include "store/store.h"

namespace crawld::daemon {

// What a fetch's records came to, for the recrawl schedule
// (daemon/crawl_path_recrawl.cc): the payload's digest and the record that
// holds the payload in full (the response just written, or the original a
// revisit refers to). Empty fields: nothing of the kind was written.
struct RecordedPayload {
  std::string payload_digest;  // "sha1:<BASE32>"
  std::string record_id;       // "<urn:uuid:...>"
  std::string record_uri;      // its WARC-Target-URI
  std::string record_date;     // its WARC-Date
  bool not_modified = false;   // a 304 written as a revisit (WARC 6.7.3)
};

// Recrawl (issue 17): what the URL's last capture lets the recorder write
// instead of a response, and where to say what was written. Nothing owned;
// all must live until the write's `done` runs.
struct RecrawlWrite {
  // A 304 to a conditional request: a server-not-modified revisit (WARC
  // 1.1 section 6.7.3) of this capture.
  const store::RevisitOf* not_modified_of = nullptr;
  // A complete 2xx whose payload digest is this capture's: an
  // identical-payload-digest revisit of it (6.7.2), when document dedupe
  // made no claim for the body (dedupe.documents = "off", a full table).
  const store::RevisitOf* unchanged_of = nullptr;
  // Filled before `done` runs.
  RecordedPayload* out = nullptr;
};

// Used on the worker's loop; the store's writer is touched by one write at
// a time, on a pool thread, and by the loop only through WhenIdle().
class Recorder {
 public:
  struct Options {
    bool write_metadata = true;
    bool conversion_records = false;
  };
  // None owned; all must outlive the recorder.
  Recorder(const Options& options, store::WarcWriter* warc,
           Documents* documents, CrawlStats* stats, EventLog* log,
           const Clock* clock, WorkPool* pool);
  ~Recorder();

  // Writes the records of one fetch of `url`, then calls `done` on the loop
  // with the store's first error (what came before it stays written,
  // nothing after it is attempted). `task`: the page's parse and dedupe
  // verdict, or null (not a 2xx page). `response` and `task` must live until
  // `done` runs. After a disk error (IOError) nothing more is written: later
  // fetches are given the same error, so their pages go back to their queues.
  // `recrawl`: the revisits a continuous crawl writes instead (above).
  void Submit(const std::string& url, const fetcher::Response& response,
              const PageTask* task, std::function<void(Status)> done,
              const RecrawlWrite& recrawl = {});

  // Runs `then` on the loop at once when no write is in progress, else
  // after the current one and before the next: the checkpoint reads the
  // writer's position and syncs its files there.
  void WhenIdle(std::function<void()> then);

  // Fetches submitted and not yet done.
  [[nodiscard]] size_t pending() const {
    return queue_.size() + (busy_ ? 1 : 0);
  }

 private:
  struct Write;

  void StartNext();
  void RunIdleWaiters();
  void Decide(Write& w);
  static void Execute(Write& w, store::WarcWriter* warc);
  void Complete(Write& w);
  // Off the loop: the revisit of the capture a 304 or an unchanged 2xx
  // stands for, when there is one (true: w.status says how it went, and
  // *response_id names the revisit).
  static bool WriteRecrawlRevisit(Write& w, store::WarcWriter* warc,
                                  std::string* response_id);
  // Off the loop: a parsed page's metadata and conversion records, after
  // its response or revisit `response_id`.
  static void WritePageRecords(Write& w, store::WarcWriter* warc,
                               const std::string& response_id);

  Options options_;
  store::WarcWriter* warc_;
  Documents* documents_;
  CrawlStats* stats_;
  EventLog* log_;
  const Clock* clock_;
  WorkPool* pool_;
  std::deque<std::unique_ptr<Write>> queue_;
  bool busy_ = false;
  bool holding_ = false;  // idle waiters running: Submit only queues
  std::vector<std::function<void()>> idle_waiters_;
  Status disk_failed_;  // the first IOError; then nothing more is written
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_RECORDER_H_
