// daemon/recorder.h: step 14 of the way of one URL (daemon/crawl_path.h):
// what a fetch becomes in the WARC files. The request and response (or a
// revisit of an exact duplicate of a body stored before), then, for a parsed
// page, its metadata record (robots flags, near-duplicate, canonical,
// outlinks: what recovery reads back) and, when configured, its conversion
// record. Documents (daemon/documents.h) decided, off the loop, whether the
// body is a revisit (PageTask::document); it hears how each write went.
#ifndef CRAWLD_DAEMON_RECORDER_H_
#define CRAWLD_DAEMON_RECORDER_H_

#include <optional>
#include <string>

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

// On the worker's loop.
class Recorder {
 public:
  struct Options {
    bool write_metadata = true;
    bool conversion_records = false;
  };
  // None owned; all must outlive the recorder.
  Recorder(const Options& options, store::WarcWriter* warc,
           Documents* documents, CrawlStats* stats, EventLog* log,
           const Clock* clock)
      : options_(options),
        warc_(warc),
        documents_(documents),
        stats_(stats),
        log_(log),
        clock_(clock) {}

  // Writes the records of one fetch of `url`. `task`: the page's parse
  // and dedupe verdict, or null (not a 2xx page). Returns the store's
  // first error; what came before it stays written, nothing after it is
  // attempted.
  [[nodiscard]] Status Write(const std::string& url,
                             const fetcher::Response& response,
                             const PageTask* task);

 private:
  Options options_;
  store::WarcWriter* warc_;
  Documents* documents_;
  CrawlStats* stats_;
  EventLog* log_;
  const Clock* clock_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_RECORDER_H_
