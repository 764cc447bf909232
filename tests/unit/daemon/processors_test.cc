// Processing by type: MIME sniffing (WHATWG MIME Sniffing Standard, "rules
// for identifying an unknown MIME type") and the processor registry.
#include "daemon/processors.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::daemon {
namespace {

TEST(Processors, RegistryChoosesByType) {
  ProcessorRegistry r = ProcessorRegistry::Default(parser::Options());
  ASSERT_NE(r.For("text/html"), nullptr);
  EXPECT_EQ(r.For("text/html")->name(), "html");
  EXPECT_NE(r.For("application/xhtml+xml"), nullptr);
  EXPECT_EQ(r.For("application/pdf"), nullptr);
  EXPECT_EQ(r.For("text/plain"), nullptr);

  // Adding a type is registering a processor.
  struct Plain : Processor {
    std::string_view name() const override { return "plain"; }
    void Process(std::string_view body, std::string_view, const url::Url&,
                 std::string_view, parser::Page* page) const override {
      page->text = std::string(body);
    }
  };
  r.Register("Text/Plain", std::make_shared<Plain>());
  const Processor* p = r.For("text/plain");
  ASSERT_NE(p, nullptr);
  parser::Page page;
  p->Process("hi", "text/plain", url::Parse("http://h/").value(), "crawld",
             &page);
  EXPECT_EQ(page.text, "hi");
}

TEST(Processors, HtmlProcessorExtractsLinks) {
  ProcessorRegistry r = ProcessorRegistry::Default(parser::Options());
  parser::Page page;
  r.For("text/html")
      ->Process("<a href=/x>x</a>", "text/html",
                url::Parse("http://h/d/").value(), "crawld", &page);
  ASSERT_EQ(page.links.size(), 1u);
  EXPECT_EQ(page.links[0].url, "http://h/x");
}

// A sitemap's changefreq, priority and lastmod ride on its links (the
// crawl path reads them); HTML links and absent elements give defaults.
TEST(Processors, SitemapHintsRideOnTheLinks) {
  const std::string xml =
      "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
      "<url><loc>http://h/news/</loc><changefreq>hourly</changefreq>"
      "<priority>1.0</priority>"
      "<lastmod>2024-05-01T10:00:00Z</lastmod></url>"
      "<url><loc>http://h/plain</loc></url>"
      "<url><loc>http://h/old</loc><changefreq>never</changefreq>"
      "<priority>0.1</priority><lastmod>1960-01-01</lastmod></url>"
      "</urlset>";
  parser::Page page;
  ReadSitemapLinks(xml, url::Parse("http://h/sitemap.xml").value(), {},
                   sitemap::Options(), &page);
  ASSERT_EQ(page.links.size(), 3u);
  EXPECT_EQ(page.links[0].changefreq,
            static_cast<uint8_t>(sitemap::ChangeFreq::kHourly));
  EXPECT_EQ(page.links[0].priority_pct, 100);
  EXPECT_EQ(page.links[0].lastmod_s, 1714557600u);
  EXPECT_EQ(page.links[1].changefreq, 0);
  EXPECT_EQ(page.links[1].priority_pct, 50);
  EXPECT_EQ(page.links[1].lastmod_s, 0u);
  EXPECT_EQ(page.links[2].changefreq,
            static_cast<uint8_t>(sitemap::ChangeFreq::kNever));
  EXPECT_EQ(page.links[2].priority_pct, 10);
  EXPECT_EQ(page.links[2].lastmod_s, 0u);  // before 1970: no use
  parser::Page html;
  ProcessorRegistry::Default(parser::Options())
      .For("text/html")
      ->Process("<a href=/x>x</a>", "text/html",
                url::Parse("http://h/").value(), "crawld", &html);
  ASSERT_EQ(html.links.size(), 1u);
  EXPECT_EQ(html.links[0].changefreq, 0);
  EXPECT_EQ(html.links[0].priority_pct, 50);
  EXPECT_EQ(html.links[0].lastmod_s, 0u);
}

}  // namespace
}  // namespace crawld::daemon
