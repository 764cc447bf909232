// daemon/crawl_job.h: the job of one fetch on its way through CrawlPath
// (crawl_path.h). Internal to daemon/: crawl_path.cc and its slices
// (crawl_path_*.cc) share it.
#ifndef CRAWLD_DAEMON_CRAWL_JOB_H_
#define CRAWLD_DAEMON_CRAWL_JOB_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/crawl_path.h"

namespace crawld::daemon {

// One page or robots.txt fetch, from dispatch (step 8) to its end.
struct CrawlPath::Job {
  uint64_t id = 0;
  bool robots = false;
  Stage stage = Stage::kResolving;
  std::string host_key;  // the politeness key whose slot it holds
  frontier::Item item;   // a page: the URL and what travels with it
  std::string url;       // what is fetched: item.url, or a robots.txt hop
  int64_t started_us = 0;
  std::string ip;          // the address held at the IP gate ("": none)
  bool holds_slot = true;  // the host's frontier slot is not released yet
  fetcher::Response response;
  std::unique_ptr<PageTask> task;
  std::unique_ptr<RobotsFetch> robots_fetch;  // a robots.txt's answer
  // Step 16 in slices (FollowSomeLinks): the distinct links to follow.
  std::vector<const parser::Link*> links;
  size_t next_link = 0;
  double link_share = 0;
  std::function<void(Job*)> after_links;  // once the last slice is in
  // Recrawl: the URL's last capture (a revisit), whether the request was
  // conditional, the revisit a 304 is written as, what was recorded.
  std::optional<recrawl::Capture> capture;
  bool conditional = false;
  std::optional<store::RevisitOf> not_modified_of;
  std::optional<store::RevisitOf> unchanged_of;
  RecordedPayload recorded;
  // A sitemap's lastmod, read while this fetch was under way, is later
  // than the fetch's start: the capture is stale at birth (DueByLastmod).
  bool stale_by_lastmod = false;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_CRAWL_JOB_H_
