// The pass before Gumbo (parser/prescan.h): depth estimate and flattening,
// attribute caps, <noscript> as raw text, control characters in attribute
// values. What it means for links is checked end to end in parser_test.cc
// and the links corpus; these tests pin the pass itself.
#include "parser/prescan.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::parser::internal {
namespace {

struct Scanned {
  std::string storage;
  Prescan pre;
};

Scanned Scan(std::string_view html, size_t max_depth = 16,
             size_t max_attributes = 256) {
  Scanned r;
  PrescanLimits limits;
  limits.max_depth = max_depth;
  limits.max_attributes = max_attributes;
  RunPrescan(html, limits, NoscriptDecisions(), &r.storage, &r.pre);
  return r;
}

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Prescan, UnchangedInputIsNotCopied) {
  const std::string html = "<p class=x>hello <a href='/a'>a</a></p>";
  Scanned r = Scan(html);
  EXPECT_EQ(r.pre.html.data(), html.data());
  EXPECT_EQ(r.pre.elements_flattened, 0u);
  EXPECT_EQ(r.pre.attributes_dropped, 0u);
}

TEST(Prescan, DepthCountsOnlyNestableElements) {
  EXPECT_EQ(Scan(Repeat("<div>", 16)).pre.elements_flattened, 0u);
  Scanned deep =
      Scan(Repeat("<div>", 20) + "<a href=/x>x</a>" + Repeat("</div>", 20));
  EXPECT_EQ(deep.pre.elements_flattened, 4u);
  // The flattened start tags and their end tags are gone; the link is not.
  EXPECT_EQ(deep.pre.html,
            Repeat("<div>", 16) + "<a href=/x>x</a>" + Repeat("</div>", 16));
  // Closed elements, void elements, implied end tags: flat.
  EXPECT_EQ(Scan(Repeat("<div><br><img src=x><p><li></div>", 100))
                .pre.elements_flattened,
            0u);
  // An end tag that a special element stops does not pop it.
  EXPECT_GT(Scan(Repeat("<div></span>", 20)).pre.elements_flattened, 0u);
  // An end tag pops up to its element (unclosed inline children with it).
  EXPECT_EQ(Scan(Repeat("<div><font><b>x</div>", 100)).pre.elements_flattened,
            0u);
  // Comments, raw text and quoted attributes hide markup.
  std::string hidden = "<!--" + Repeat("<div>", 50) + "--><script>" +
                       Repeat("<div>", 50) + "</script><p title='" +
                       Repeat("<div>", 50) + "'>";
  EXPECT_EQ(Scan(hidden).pre.elements_flattened, 0u);
  // Self-closing counts as closed only in foreign content.
  EXPECT_EQ(
      Scan("<svg>" + Repeat("<path d='M0 0'/>", 100)).pre.elements_flattened,
      0u);
  EXPECT_GT(Scan(Repeat("<div/>", 100)).pre.elements_flattened, 0u);
  EXPECT_GT(Scan("<svg>" + Repeat("<div/>", 100)).pre.elements_flattened, 0u);
}

TEST(Prescan, ElementsThatChangeParsingAreNeverFlattened) {
  for (const char* tag : {"<template>", "<object>", "<svg>", "<table>",
                          "<select>", "<a href=/x>"}) {
    Scanned r = Scan(Repeat("<div>", 40) + tag + "<a href=/in>i</a>");
    EXPECT_NE(r.pre.html.find(tag), std::string_view::npos) << tag;
  }
}

TEST(Prescan, AttributesPastTheCapDroppedButReadOnesKept) {
  std::string tag = "<a";
  for (int i = 0; i < 40; ++i) tag += " data-" + std::to_string(i) + "=v";
  tag += " href=/late rel=nofollow data-x=1 href=/dup>";
  Scanned r = Scan(tag, 16, 20);
  EXPECT_EQ(r.pre.attributes_dropped, 22u);  // 20 data-*, data-x, 2nd href
  EXPECT_NE(r.pre.html.find("href=/late"), std::string_view::npos);
  EXPECT_NE(r.pre.html.find("rel=nofollow"), std::string_view::npos);
  EXPECT_EQ(r.pre.html.find("href=/dup"), std::string_view::npos);
  EXPECT_NE(r.pre.html.find("data-19=v"), std::string_view::npos);
  EXPECT_EQ(r.pre.html.find("data-20=v"), std::string_view::npos);
  // End tags lose all their attributes.
  Scanned e = Scan("<p>x</p a=1 b='>'>y");
  EXPECT_EQ(e.pre.attributes_dropped, 2u);
  EXPECT_EQ(e.pre.html, "<p>x</p>y");
}

TEST(Prescan, NoscriptContentBecomesRawText) {
  const std::string html =
      "<p><noscript class=n><a href=/in></noscript x='>'><a href=/out>";
  Scanned r = Scan(html);
  EXPECT_EQ(r.pre.html, "<p><noframes></noframes><a href=/out>");
  ASSERT_EQ(r.pre.noscript_in.size(), 1u);
  EXPECT_EQ(r.pre.noscript_in[0], 3u);
  EXPECT_EQ(r.pre.noscript_out[0], 3u);
  EXPECT_EQ(r.pre.ToInput(r.pre.html.find("<a")), html.find("<a href=/out"));
  // Unclosed: the rest of the document is its text.
  EXPECT_EQ(Scan("<noscript><a href=/x>").pre.html, "<noframes>");
  // "</noscriptx>" does not end it; "</NOSCRIPT/" does.
  EXPECT_EQ(Scan("<noscript></noscriptx><a></NOSCRIPT/>y").pre.html,
            "<noframes></noframes>y");
  // Forced decisions: this one is markup after all.
  Scanned f;
  NoscriptDecisions d;
  d.forced = true;
  RunPrescan("<noscript><a href=/x></noscript>", PrescanLimits(), d, &f.storage,
             &f.pre);
  EXPECT_EQ(f.pre.html, "<noscript><a href=/x></noscript>");
}

TEST(Prescan, ControlCharactersInAttributeValuesBecomeReferences) {
  Scanned r = Scan("<a href='/x\x01y\x7F' title=\"\xC2\x85\xC2\x81\">\x01</a>");
  EXPECT_EQ(
      r.pre.html,
      "<a href='/x&#x1;y&#x7F;' title=\"\xF4\x8F\xBE\x85&#x81;\">\x01</a>");
  std::string restored = "\xF4\x8F\xBE\x85/\xF4\x8F\xBE\x9F";
  EXPECT_TRUE(RestoreC1(&restored));
  EXPECT_EQ(restored, "\xC2\x85/\xC2\x9F");
}

}  // namespace
}  // namespace crawld::parser::internal
