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

}  // namespace
}  // namespace crawld::daemon
