#include "daemon/processors.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/ascii.h"

namespace crawld::daemon {

void HtmlProcessor::Process(std::string_view body,
                            std::string_view content_type,
                            const url::Url& document_url,
                            std::string_view robots_token,
                            parser::Page* page) const {
  extractor_.ExtractInto(body, content_type, document_url, robots_token, page);
}

sitemap::Report ReadSitemapLinks(
    std::string_view body, const url::Url& document_url,
    const std::vector<std::string>& cross_submitted_hosts,
    const sitemap::Options& options, parser::Page* page) {
  sitemap::Contents c =
      sitemap::Read(body, document_url, cross_submitted_hosts, options);
  page->links.reserve(page->links.size() + c.entries.size());
  for (sitemap::Entry& e : c.entries) {
    parser::Link link{std::move(e.url),
                      e.kind == sitemap::EntryKind::kSitemap
                          ? parser::LinkKind::kSitemap
                          : parser::LinkKind::kAnchor,
                      false};
    link.changefreq = static_cast<uint8_t>(e.changefreq);
    link.priority_pct = static_cast<uint8_t>(
        std::lround(std::clamp(e.priority, 0.0, 1.0) * 100));
    // Unix seconds in 32 bits (until 2106); a lastmod before 1970 says
    // nothing a crawl can use.
    if (e.lastmod.has_value() && *e.lastmod > 0) {
      link.lastmod_s = static_cast<uint32_t>(
          std::min<int64_t>(*e.lastmod, std::numeric_limits<uint32_t>::max()));
    }
    page->links.push_back(std::move(link));
  }
  return c.report;
}

FeedProcessor::FeedProcessor(const sitemap::Options& options)
    : options_(options) {
  options_.enforce_scope = false;
}

void FeedProcessor::Process(std::string_view body, std::string_view,
                            const url::Url& document_url, std::string_view,
                            parser::Page* page) const {
  page->base_url = std::string(document_url.href());
  ReadSitemapLinks(body, document_url, {}, options_, page);
}

ProcessorRegistry ProcessorRegistry::Default(const parser::Options& options,
                                             const sitemap::Options& feeds) {
  ProcessorRegistry r;
  auto html = std::make_shared<HtmlProcessor>(options);
  r.Register("text/html", html);
  r.Register("application/xhtml+xml", html);
  auto feed = std::make_shared<FeedProcessor>(feeds);
  for (const char* type : {"application/rss+xml", "application/atom+xml",
                           "application/xml", "text/xml"}) {
    r.Register(type, feed);
  }
  return r;
}

void ProcessorRegistry::Register(std::string essence,
                                 std::shared_ptr<const Processor> p) {
  by_type_[ascii::ToLower(essence)] = std::move(p);
}

const Processor* ProcessorRegistry::For(std::string_view essence) const {
  auto it = by_type_.find(essence);
  return it == by_type_.end() ? nullptr : it->second.get();
}

}  // namespace crawld::daemon
