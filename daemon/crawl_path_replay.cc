// daemon/crawl_path_replay.cc: what recovery asks of the crawl path
// (crawl_path.h): the records written after the last checkpoint replayed,
// and the pages in flight for the next checkpoint.
#include <memory>
#include <string>

#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"

namespace crawld::daemon {

// --- recovery ---------------------------------------------------------------

void CrawlPath::Replay(const std::string& uri, fetcher::Response* response,
                       const store::PageMetadata* metadata) {
  auto u = url::Parse(uri);
  if (!u.ok()) return;
  if (response == nullptr && metadata == nullptr) {
    // A revisit's body is in another record: fetch it again rather than
    // lose its links (it is still queued as of the checkpoint).
    stats_->Count("replay_refetch");
    return;
  }
  SkipOnce(url::Fingerprint(uri));
  if (u->path() == "/robots.txt") return;
  ++stats_->pages;
  Job job;
  job.url = uri;
  job.host_key = u->origin_key();
  job.item.url = uri;
  job.item.fingerprint = url::Fingerprint(uri);
  job.item.seed_host = std::string(u->host());
  job.item.depth = 0;  // not in the WARC; depth limits restart here
  job.item.credit = 0;
  job.task = std::make_unique<PageTask>();
  if (metadata != nullptr) {
    // The outlinks as the metadata record lists them: no parse needed.
    job.task->page.meta_nofollow = metadata->nofollow;
    for (const store::PageMetadata::Outlink& link : metadata->outlinks) {
      job.task->page.links.push_back(
          {link.url, parser::LinkKind::kAnchor, link.nofollow});
    }
    FollowLinks(&job, /*all_now=*/true);
    return;
  }
  job.response = std::move(*response);
  const int status = job.response.status_code;
  if (status >= 300 && status < 400) {
    FollowRedirect(&job);
  } else if (status >= 200 && status < 300) {
    PageTask& t = *job.task;
    t.response = &job.response;
    t.url = uri;
    t.robots_token = options_.robots_token;
    t.max_decoded = options_.max_decoded_page_bytes;
    // On the loop, before it runs: no parse slot is in use.
    if (replay_parsers_ == nullptr) {
      replay_parsers_ = std::make_unique<ProcessorRegistry>(
          ProcessorRegistry::Default(options_.parser, options_.sitemap));
    }
    t.parsers = replay_parsers_.get();
    t.Run();
    if (t.parsed) FollowLinks(&job, /*all_now=*/true);
  }
}

void CrawlPath::ForEachInFlight(
    const std::function<void(const std::string&, const frontier::Item&)>& visit)
    const {
  for (const auto& [id, job] : jobs_) {
    if (!job->robots) visit(job->host_key, job->item);
  }
}

}  // namespace crawld::daemon
