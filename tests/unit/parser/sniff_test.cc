// MIME sniffing (WHATWG MIME Sniffing Standard,
// https://mimesniff.spec.whatwg.org/), parser::SniffMime. The first three
// tests are ported from tests/unit/daemon/processors_test.cc (where
// SniffMime lived), with issue 19's change: an HTML page with NUL bytes is
// HTML.
#include "parser/sniff.h"

#include <gtest/gtest.h>

#include <string>

#include "parser/parser.h"

namespace crawld::parser {
namespace {

TEST(MimeSniff, DeclaredTypeIsKeptWhenPlausible) {
  EXPECT_EQ(SniffMime("text/html; charset=utf-8", "<p>x"), "text/html");
  EXPECT_EQ(SniffMime("Text/HTML", "hello"), "text/html");
  EXPECT_EQ(SniffMime("application/pdf", "%PDF-1.4"), "application/pdf");
  EXPECT_EQ(SniffMime("image/png", std::string("\x89PNG\r\n\x1A\n\0\0", 10)),
            "image/png");
}

// Issue 19 item 9: a browser parses an HTML page with NUL bytes (NUL as
// U+FFFD); only a real binary signature makes the declaration a lie.
TEST(MimeSniff, Issue19_HtmlWithNulBytesIsHtmlButBinariesAreNot) {
  std::string nul("<html>\0\x01\x02junk<a href=/x>x</a>", 28);
  EXPECT_EQ(SniffMime("text/html", nul), "text/html");
  // UTF-16 with a BOM has NULs and is still text.
  std::string utf16("\xFF\xFE<\0h\0", 6);
  EXPECT_EQ(SniffMime("text/html", utf16), "text/html");
  // Section 6.1: a PNG, a GIF and a JPEG served as text/html.
  EXPECT_EQ(
      SniffMime("text/html", std::string("\x89PNG\r\n\x1A\n\0\0\0\rIHDR", 16)),
      "image/png");
  EXPECT_EQ(SniffMime("text/html", std::string("GIF89a\x01\0\x01\0", 10)),
            "image/gif");
  EXPECT_EQ(
      SniffMime("text/html", std::string("\xFF\xD8\xFF\xE0\0\x10JFIF", 10)),
      "image/jpeg");
  // Sections 6.2-6.4 and 7.1.
  EXPECT_EQ(SniffMime("text/html", std::string("PK\x03\x04\x14\0\0\0", 8)),
            "application/zip");
  EXPECT_EQ(SniffMime("text/plain", std::string("\x1F\x8B\x08\0\0\0", 6)),
            "application/x-gzip");
  EXPECT_EQ(SniffMime("text/html", "%PDF-1.7\n1 0 obj"), "application/pdf");
  EXPECT_EQ(SniffMime("text/html", std::string("OggS\0\x02\0\0", 8)),
            "application/ogg");
  EXPECT_EQ(SniffMime("text/html", std::string("wOF2\0\x01\0\0", 8)),
            "font/woff2");
  EXPECT_EQ(SniffMime("text/html", std::string("\0\0\0\x18"
                                               "ftypmp42\0\0\0\0mp41isom",
                                               24)),
            "video/mp4");
  // Signatures that are words need a binary byte in a declared text body.
  EXPECT_EQ(SniffMime("text/plain", "BMW and OTTO went to ID3 town"),
            "text/plain");
  EXPECT_EQ(SniffMime("text/html", "BM, the HTML page<p>"), "text/html");
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
  EXPECT_EQ(SniffMime("application/unknown", "\xEF\xBB\xBFhello"),
            "text/plain");
  EXPECT_EQ(SniffMime("", std::string("RIFF\x10\0\0\0WEBPVP8 ", 16)),
            "image/webp");
  EXPECT_EQ(SniffMime("", std::string("\x1A\x45\xDF\xA3\x01\0", 6)),
            "video/webm");
  EXPECT_EQ(SniffMime("nonsense", "<p>x"), "text/html");
}

// Only the 1445-byte resource header is looked at (section 5.2).
TEST(MimeSniff, OnlyTheResourceHeaderIsRead) {
  std::string late(2000, 'a');
  late += std::string("\0\x01", 2);
  EXPECT_EQ(SniffMime("", late), "text/plain");
}

// The NUL page of issue 19 is parsed, NUL as U+FFFD, links found.
TEST(MimeSniff, Issue19_NulPageIsParsed) {
  std::string body("<html>\0<a href=/x\0y>x</a>", 26);
  ASSERT_EQ(SniffMime("text/html", body), "text/html");
  Extractor ex{Options()};
  Page p = ex.Extract(body, "text/html", url::Parse("http://h/").value());
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_EQ(p.links[0].url, "http://h/x%EF%BF%BDy");
}

}  // namespace
}  // namespace crawld::parser
