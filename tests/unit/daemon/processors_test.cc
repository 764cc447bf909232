// Processing by type: MIME sniffing (WHATWG MIME Sniffing Standard, "rules
// for identifying an unknown MIME type") and the processor registry.
#include "daemon/processors.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::daemon {
namespace {

TEST(MimeSniff, DeclaredTypeIsKeptWhenPlausible) {
  EXPECT_EQ(SniffMime("text/html; charset=utf-8", "<p>x"), "text/html");
  EXPECT_EQ(SniffMime("Text/HTML", "hello"), "text/html");
  EXPECT_EQ(SniffMime("application/pdf", "%PDF-1.4"), "application/pdf");
  EXPECT_EQ(SniffMime("image/png", std::string("\x89PNG\r\n\x1A\n\0\0", 10)),
            "image/png");
}

TEST(MimeSniff, HtmlHeaderWithBinaryBodyIsALie) {
  std::string binary("<html>\0\x01\x02junk", 14);
  EXPECT_EQ(SniffMime("text/html", binary), "application/octet-stream");
  // UTF-16 with a BOM has NULs and is still text.
  std::string utf16("\xFF\xFE<\0h\0", 6);
  EXPECT_EQ(SniffMime("text/html", utf16), "text/html");
}

TEST(MimeSniff, UnknownTypesAreSniffed) {
  EXPECT_EQ(SniffMime("", "  \n<!DOCTYPE html><html>"), "text/html");
  EXPECT_EQ(SniffMime("", "<HTML><body>"), "text/html");
  EXPECT_EQ(SniffMime("unknown/unknown", "<p>para"), "text/html");
  EXPECT_EQ(SniffMime("*/*", "<!-- c -->"), "text/html");
  EXPECT_EQ(SniffMime("", "%PDF-1.7"), "application/pdf");
  EXPECT_EQ(SniffMime("", "GIF89a...."), "image/gif");
  EXPECT_EQ(SniffMime("", "<?xml version='1.0'?>"), "text/xml");
  EXPECT_EQ(SniffMime("", "plain words"), "text/plain");
  EXPECT_EQ(SniffMime("", std::string("\0\0\x01\x02", 4)),
            "application/octet-stream");
  // "<a" must be followed by a tag-terminating byte: "<abbr" is not HTML
  // by signature.
  EXPECT_EQ(SniffMime("", "<abbr>"), "text/plain");
}

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
