// daemon/crawl_path_sitemaps.cc: sitemaps in the way of one URL
// (docs/SITEMAPS.md, "What the daemon does with it"). A sitemap is a URL
// like any other from step 1 to step 12, on its own host's politeness and
// robots.txt; only step 13 differs: its body is read by sitemap::Reader
// with the protocol's scope (its host and directory, or the host whose
// robots.txt named it), and step 16 enters what it admits. Where they
// come from: the Sitemap: lines of a robots.txt (step 12 of the robots.txt
// job), /sitemap.xml of every host when probing, and the children of a
// sitemap index.
#include <string>
#include <string_view>

#include "daemon/crawl_job.h"
#include "daemon/crawl_path.h"

namespace crawld::daemon {

void CrawlPath::EnterSitemaps(Job* job) {
  const RobotsFetch& fetch = *job->robots_fetch;
  auto robots_url = url::Parse(job->url);
  auto origin = url::Parse(job->host_key);
  if (!robots_url.ok() || !origin.ok()) return;
  // The host whose robots.txt names a sitemap cross-submits it: the
  // sitemap may list that host's URLs wherever it lives.
  const std::string host(origin->host());
  if (options_.sitemaps_from_robots && fetch.rules.has_value() &&
      fetch.status >= 200 && fetch.status < 300) {
    for (const std::string& line : fetch.rules->sitemaps()) {
      auto target = url::Parse(line, &robots_url.value());
      if (!target.ok() || !target->is_http()) {
        stats_->Count("sitemap_invalid_url");
        continue;
      }
      EnterSitemap(job, target->href(), frontier::ItemKind::kSitemap, host);
    }
  }
  if (options_.sitemaps_probe) {
    // Named by nobody: its own host and directory (all of it) only.
    EnterSitemap(job, job->host_key + "/sitemap.xml",
                 frontier::ItemKind::kSitemap, "");
  }
}

void CrawlPath::EnterChildSitemap(Job* index, std::string_view url) {
  if (index->item.kind == frontier::ItemKind::kChildSitemap) {
    // One level of index, as the protocol allows: an index listed by an
    // index is not read (a loop of indexes ends here too).
    stats_->Count("sitemap_nested_index");
    return;
  }
  EnterSitemap(index, url, frontier::ItemKind::kChildSitemap,
               index->item.sitemap_of);
}

void CrawlPath::EnterSitemap(Job* from, std::string_view url,
                             frontier::ItemKind kind,
                             std::string_view sitemap_of) {
  // A host naming thousands of sitemaps (robots.txt lines or an index's
  // children) gets sitemaps_per_host of them read; each file is bounded
  // by the reader's own caps.
  size_t& entered = sitemaps_entered_[from->host_key];
  if (entered >= options_.sitemaps_per_host) {
    stats_->Count("sitemap_cap");
    return;
  }
  ++entered;
  Candidate c;
  c.url = url;
  c.source = Candidate::Source::kLink;
  c.depth = 0;  // its entries are one hop from it, as from a seed
  c.credit = 0;
  c.seed_host = from->item.seed_host;
  c.from_host_key = from->host_key;
  c.kind = kind;
  c.sitemap_of = sitemap_of;
  const EnterResult r = Enter(c);
  if (r == EnterResult::kQueued || r == EnterResult::kRouted) {
    stats_->Count("sitemaps_entered");
  }
}

void CrawlPath::CountSitemap(Job* job, const sitemap::Report& report) {
  const sitemap::Counters& n = report.counters;
  stats_->Count("sitemap_reads");
  auto count = [this](std::string_view what, uint64_t v) {
    if (v > 0) stats_->Count("sitemap_urls_" + std::string(what), v);
  };
  count("admitted", n.admitted);
  count("no_loc", n.no_loc);
  count("over_limit", n.over_limit);
  count("too_long", n.too_long);
  count("invalid_url", n.invalid_url);
  count("not_http", n.not_http);
  count("other_origin", n.other_origin);
  count("outside_path", n.outside_path);
  if (report.truncated) stats_->Count("sitemap_truncated");
  if (!report.error.ok()) stats_->Count("sitemap_errors");
  log_->Write(report.error.ok() ? Level::kInfo : Level::kWarn, "sitemap_read",
              {{"url", job->url},
               {"format", std::string(sitemap::FormatName(report.format))},
               {"admitted", std::to_string(n.admitted)},
               {"dropped", std::to_string(n.dropped())},
               {"error", report.error.ok() ? "" : report.error.ToString()},
               {"line", std::to_string(report.error_line)},
               {"column", std::to_string(report.error_column)}});
}

}  // namespace crawld::daemon
