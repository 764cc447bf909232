// daemon/processors.h (private to daemon/): document processing by type.
//
// The worker sniffs the real MIME type of every 2xx body with
// parser::SniffMime (the header may be missing or lie) and hands the body to
// the processor registered for that type. HTML goes through
// parser::Extractor; a type without a processor is archived only. Adding a
// type means writing a Processor and registering it, nothing else. A
// registry (and its Extractor) is used by one thread at a time: the worker
// keeps one per parse slot.
#ifndef CRAWLD_DAEMON_PROCESSORS_H_
#define CRAWLD_DAEMON_PROCESSORS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parser/parser.h"
#include "sitemap/sitemap.h"
#include "url/url.h"

namespace crawld::daemon {

class Processor {
 public:
  virtual ~Processor() = default;
  virtual std::string_view name() const = 0;
  // Fills *page (links, robots flags, title, text) from a decoded body.
  virtual void Process(std::string_view body, std::string_view content_type,
                       const url::Url& document_url,
                       std::string_view robots_token,
                       parser::Page* page) const = 0;
};

class HtmlProcessor : public Processor {
 public:
  explicit HtmlProcessor(const parser::Options& options)
      : extractor_(options) {}
  std::string_view name() const override { return "html"; }
  void Process(std::string_view body, std::string_view content_type,
               const url::Url& document_url, std::string_view robots_token,
               parser::Page* page) const override;

 private:
  parser::Extractor extractor_;
};

// Reads a sitemap or feed (sitemap::Reader) into page->links: each
// admitted page as LinkKind::kAnchor, each child of a sitemap index as
// LinkKind::kSitemap, in file order. `cross_submitted_hosts` and `options`
// as sitemap::Reader takes them. Returns what the reader reported.
sitemap::Report ReadSitemapLinks(
    std::string_view body, const url::Url& document_url,
    const std::vector<std::string>& cross_submitted_hosts,
    const sitemap::Options& options, parser::Page* page);

// A feed or sitemap fetched as a page (a link, a seed): its entries are
// links, as a page's are, without the protocol's scope (a feed links
// anywhere). A sitemap named by robots.txt is read by the crawl path
// with the scope instead (docs/SITEMAPS.md). XML of another kind gives
// no links.
class FeedProcessor : public Processor {
 public:
  explicit FeedProcessor(const sitemap::Options& options);
  std::string_view name() const override { return "feed"; }
  void Process(std::string_view body, std::string_view content_type,
               const url::Url& document_url, std::string_view robots_token,
               parser::Page* page) const override;

 private:
  sitemap::Options options_;
};

class ProcessorRegistry {
 public:
  // The registry every worker starts with: HTML (text/html,
  // application/xhtml+xml); feeds and sitemaps (application/rss+xml,
  // application/atom+xml, application/xml, text/xml).
  static ProcessorRegistry Default(const parser::Options& options,
                                   const sitemap::Options& feeds = {});

  // Registers `processor` for a MIME essence (lowercase, "type/subtype").
  // The registry keeps one instance per registration.
  void Register(std::string essence, std::shared_ptr<const Processor> p);
  // The processor for an essence, or nullptr: archive only.
  const Processor* For(std::string_view essence) const;

 private:
  std::map<std::string, std::shared_ptr<const Processor>, std::less<>> by_type_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_PROCESSORS_H_
