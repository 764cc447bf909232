// daemon/crawl_path_links.cc: steps 15 and 16 of the way of one URL
// (crawl_path.h): a parsed page's credit shared among its links (AOPIC),
// each link (and, with path_ascending, its parents) and a redirect's target
// entered again at step 1. They run right after the parse (13), before
// the record (14) is written.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"
#include "parser/parser.h"

namespace crawld::daemon {

namespace {

// A link's share of its page's credit (FollowLinks): 0.5 + its sitemap
// priority, 1 for a link without one.
double LinkWeight(const parser::Link& link) {
  return 0.5 + std::min<double>(link.priority_pct, 100) / 100.0;
}

}  // namespace

// --- 15. credit, 16. links --------------------------------------------------

void CrawlPath::FollowRedirect(Job* job) {
  const std::string location = job->response.Header("Location");
  if (location.empty()) return;
  if (job->item.redirects >= options_.max_redirects) {
    stats_->Count("too_many_redirects");
    log_->Write(Level::kWarn, "too_many_redirects", {{"url", job->url}});
    return;
  }
  auto base = url::Parse(job->url);
  if (!base.ok()) return;
  auto target = parts_.canonicalizer->Canonicalize(location, &base.value());
  if (!target.ok()) {
    stats_->Count("invalid_url");
    return;
  }
  const uint64_t fp = url::Fingerprint(target->href());
  // To itself or back to the URL that redirected here: a loop. (A longer
  // cycle ends at the seen test: its first URL is known.)
  if (fp == job->item.fingerprint || fp == job->item.redirect_from) {
    stats_->Count("redirect_loop");
    log_->Write(Level::kWarn, "redirect_loop",
                {{"url", job->url}, {"location", location}});
    return;
  }
  Candidate c;
  c.url = target->href();
  c.source = Candidate::Source::kRedirect;
  c.depth = job->item.depth;
  c.redirects = static_cast<uint8_t>(job->item.redirects + 1);
  c.credit = job->item.credit;
  c.seed_host = job->item.seed_host;
  c.from_host_key = job->host_key;
  c.redirect_from = job->item.fingerprint;
  Enter(c);
}

void CrawlPath::FollowLinks(Job* job, bool all_now) {
  const parser::Page& page = job->task->page;
  const PageTask& t = *job->task;
  std::vector<const parser::Link*>& links = job->links;
  links.clear();
  job->next_link = 0;
  if (t.header_robots.nofollow || page.meta_nofollow) {
    stats_->Count("meta_nofollow_pages");
    FollowSomeLinks(job, all_now);  // none: straight to after_links
    return;
  }
  const uint16_t depth = static_cast<uint16_t>(job->item.depth + 1);
  if (options_.max_depth > 0 && depth > options_.max_depth) {
    stats_->Count("max_depth", page.links.size() + page.other_links.size());
    FollowSomeLinks(job, all_now);
    return;
  }
  // Each URL once: a page that links one URL 20,000 times (issue 19) costs
  // one step, not 20,000.
  std::unordered_set<std::string_view> distinct;
  auto add = [&](const parser::Link& link) {
    if (link.nofollow && !options_.follow_rel_nofollow) {
      stats_->Count("nofollow_links");
      return;
    }
    if (distinct.insert(link.url).second) links.push_back(&link);
  };
  for (const parser::Link& link : page.links) add(link);
  if (options_.follow_other_links) {
    for (const parser::Link& link : page.other_links) add(link);
  }
  // AOPIC: the page's after-tax credit is shared among the URLs it passes
  // on (a link to a URL already queued still credits its host): equally,
  // unless a sitemap gave priorities. A link's weight is 0.5 + priority,
  // from 0.5 to 1.5 (1 for the default 0.5 and for every HTML link), so a
  // priority-1.0 page gets three times the credit of a priority-0.0 one
  // and the sum stays the page's credit.
  double weights = 0;
  for (const parser::Link* link : links) weights += LinkWeight(*link);
  job->link_share = weights > 0 ? job->item.credit / weights : 0.0;
  FollowSomeLinks(job, all_now);
}

void CrawlPath::FollowSomeLinks(Job* job, bool all_now) {
  // A slice per loop turn: the loop serves other hosts, the API and the
  // control socket between slices of a page with thousands of links.
  constexpr size_t kLinksPerTurn = 256;
  Candidate c;
  c.source = Candidate::Source::kLink;
  c.depth = static_cast<uint16_t>(job->item.depth + 1);
  c.seed_host = job->item.seed_host;
  c.from_host_key = job->host_key;
  const size_t end =
      all_now ? job->links.size()
              : std::min(job->links.size(), job->next_link + kLinksPerTurn);
  for (; job->next_link < end; ++job->next_link) {
    const parser::Link& link = *job->links[job->next_link];
    if (link.kind == parser::LinkKind::kSitemap &&
        job->item.kind != frontier::ItemKind::kPage) {
      EnterChildSitemap(job, link.url);
      continue;
    }
    c.url = link.url;
    c.credit = job->link_share * LinkWeight(link);
    c.changefreq = link.changefreq;
    c.lastmod_s = link.lastmod_s;
    Enter(c);
    if (options_.path_ascending) EnterParents(c);
  }
  if (job->next_link < job->links.size()) {
    parts_.pool->Run([] {}, [this, job] { FollowSomeLinks(job, false); });
    return;
  }
  Pump();  // they may be due now, not only when the job ends
  if (job->after_links) {
    auto then = std::move(job->after_links);
    job->after_links = nullptr;
    then(job);
  }
}

// /a/b/page offers /a/b/, /a/ and /: parents are cheap to test and often
// list what no link points to.
void CrawlPath::EnterParents(Candidate c) {
  auto u = url::Parse(c.url);
  if (!u.ok()) return;
  const std::string_view path = u->path();
  const std::string origin = u->origin_key();
  size_t end = path.size();
  if (end > 0 && path.back() == '/') --end;
  while (end > 0) {
    const size_t slash = path.rfind('/', end - 1);
    if (slash == std::string_view::npos) break;
    std::string parent = origin;
    parent.append(path.substr(0, slash + 1));
    c.url = parent;
    c.credit = 0;
    c.changefreq = 0;  // the hints were the child's
    c.lastmod_s = 0;
    if (Enter(c) == EnterResult::kQueued) {
      stats_->Count("path_ascending_added");
    }
    end = slash;
  }
}

}  // namespace crawld::daemon
