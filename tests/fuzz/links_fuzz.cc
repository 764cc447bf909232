// Fuzz target for parser::Extractor (HTML link extraction) from arbitrary
// bytes against a fixed document URL.
//
// Invariants checked (abort on violation):
//  - every extracted link is an absolute http(s) URL that url::Parse accepts
//    without a base and that serializes to itself (href is a fixed point);
//  - the same holds for Page::canonical (when set) and Page::base_url;
//  - at most Options::max_links links; text and title are valid UTF-8 and
//    within max_text_bytes; a charset is always reported.
// The first byte picks the Content-Type so that the legacy decoders (iconv)
// are exercised too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "parser/charset.h"
#include "parser/parser.h"
#include "url/url.h"

namespace {

void Check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) {
    std::fprintf(stderr, "links_fuzz invariant violated: %s [%.*s]\n", what,
                 static_cast<int>(detail.size()),
                 detail.empty() ? "" : detail.data());
    std::abort();
  }
}

void CheckAbsoluteFixedPoint(std::string_view href, const char* what) {
  crawld::Result<crawld::url::Url> u = crawld::url::Parse(href);
  Check(u.ok(), what, href);
  Check(u->href() == href, what, href);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const crawld::url::Url* const kDoc = [] {
    auto* u = new crawld::url::Url(
        crawld::url::Parse("https://example.com/dir/page.html?q=1#frag")
            .value());
    return u;
  }();
  static const char* const kContentTypes[] = {"",
                                              "text/html; charset=utf-8",
                                              "text/html; charset=windows-1252",
                                              "text/html; charset=shift_jis",
                                              "text/html; charset=euc-kr",
                                              "text/html; charset=iso-2022-jp",
                                              "text/html; charset=utf-16le",
                                              ""};
  crawld::parser::Options options;
  options.max_links = 500;
  options.max_text_bytes = 4096;
  options.max_nesting_depth = 64;
  static const crawld::parser::Extractor* const kExtractor =
      new crawld::parser::Extractor(options);

  std::string_view body(reinterpret_cast<const char*>(data), size);
  const char* ct = size > 0 ? kContentTypes[data[0] % 8] : "";
  crawld::parser::Page page = kExtractor->Extract(body, ct, *kDoc);

  Check(!page.charset.empty(), "charset reported");
  Check(page.links.size() <= options.max_links, "max_links");
  Check(page.text.size() <= options.max_text_bytes, "max_text_bytes");
  Check(crawld::parser::internal::IsValidUtf8(page.text, false),
        "text is UTF-8", page.text);
  Check(crawld::parser::internal::IsValidUtf8(page.title, false),
        "title is UTF-8", page.title);
  CheckAbsoluteFixedPoint(page.base_url, "base_url parses to itself");
  for (const crawld::parser::Link& link : page.links) {
    CheckAbsoluteFixedPoint(link.url, "link parses to itself");
    Check(
        link.url.rfind("http://", 0) == 0 || link.url.rfind("https://", 0) == 0,
        "link is http(s)", link.url);
  }
  if (!page.canonical.empty()) {
    CheckAbsoluteFixedPoint(page.canonical, "canonical parses to itself");
  }
  return 0;
}
