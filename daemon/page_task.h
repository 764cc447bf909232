// daemon/page_task.h: step 13 of the way of one URL (daemon/crawl_path.h),
// the part that runs off the worker's loop: decode the body, sniff its type,
// parse it with the processor of that type, SimHash its text, then the
// document dedupe check (the body's digest claimed in the crawl's claim
// store, daemon/documents.h), which may block.
//
// A task owns everything it writes; it reads only the response it points
// to, which the loop leaves alone while the task runs. One task at a time
// uses a ProcessorRegistry (its Extractor holds Gumbo's scratch memory).
#ifndef CRAWLD_DAEMON_PAGE_TASK_H_
#define CRAWLD_DAEMON_PAGE_TASK_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "daemon/crawl_stats.h"
#include "daemon/documents.h"
#include "daemon/ports.h"
#include "daemon/processors.h"
#include "fetcher/fetcher.h"
#include "parser/parser.h"
#include "sitemap/sitemap.h"

namespace crawld::daemon {

struct PageTask {
  // In.
  const fetcher::Response* response = nullptr;  // not owned
  std::string url;
  std::string robots_token;
  size_t max_decoded = 0;     // bytes of decoded body handed to the parser
  bool want_simhash = false;  // near-duplicates are checked
  ProcessorRegistry* parsers = nullptr;  // not owned; this task's alone
  // Dedupe (Documents::Prepare sets it; null: no dedupe, e.g. replay).
  const Documents* documents = nullptr;  // not owned
  // A sitemap job (docs/SITEMAPS.md): the body is read as a sitemap with
  // the protocol's scope whatever its type, `sitemap_hosts` as the
  // cross-submitted hosts. Null for a page. Not owned.
  const sitemap::Options* sitemap = nullptr;
  std::vector<std::string> sitemap_hosts;

  // Out.
  Status decode;        // the Content-Encoding could not be undone
  bool capped = false;  // the decoded body reached max_decoded
  bool parsed = false;  // a processor took it (else archived only)
  parser::Page page;
  parser::RobotsDirectives header_robots;         // from X-Robots-Tag
  std::optional<sitemap::Report> sitemap_report;  // a sitemap job's reading
  std::optional<uint64_t> simhash;
  // In and out: Prepare's record id for a new body, then the verdict.
  DocumentVerdict document;

  // Runs the steps above on whichever thread calls it.
  void Run();

 private:
  void Parse();
};

// The parse slots of one worker: at most `slots` tasks run at once on the
// pool, each with a ProcessorRegistry of its own. Big bodies (over
// big_body_bytes) take at most all slots but one and get their share before
// small ones: a small page never waits behind a page that takes seconds to
// parse (issue 19), and a big one is never starved by a stream of small
// ones. With one slot, they share it in turn. On the worker's loop.
class ParseSlots {
 public:
  struct Options {
    size_t slots = 2;  // >= 1
    uint64_t big_body_bytes = 1u << 20;
    parser::Options parser;
    sitemap::Options feeds;  // FeedProcessor's bounds
  };
  ParseSlots(const Options& options, WorkPool* pool);

  // Runs `task` (its inputs set, `parsers` aside) when a slot is free, then
  // `done` on the loop. The task must live until then.
  void Run(PageTask* task, std::function<void()> done);

 private:
  struct Waiting {
    PageTask* task;
    std::function<void()> done;
    bool big;
  };
  void StartQueued();
  void Start(Waiting w);

  Options options_;
  WorkPool* pool_;
  std::vector<std::unique_ptr<ProcessorRegistry>> free_;
  std::deque<Waiting> small_, big_;
  size_t big_running_ = 0;
};

// Counts what the parser's bounds cut on `page` (parse_* events) and its
// invalid links: never silent (issue 19).
void CountParseCuts(const parser::Page& page, CrawlStats* stats);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_PAGE_TASK_H_
