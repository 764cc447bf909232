// Fuzz target for parser::Extractor (HTML link extraction) from arbitrary
// bytes against a fixed document URL.
//
// Invariants checked (abort on violation):
//  - every extracted link is an absolute http(s) URL that url::Parse accepts
//    without a base and that serializes to itself (href is a fixed point);
//  - the same holds for Page::canonical (when set) and Page::base_url;
//  - at most Options::max_links links; text and title are valid UTF-8 and
//    within max_text_bytes; a charset is always reported;
//  - an input that is the body of a document of the recorded links corpus
//    (tests/data/links/corpus.jsonl, parse5 + WHATWG URL; the fuzz corpus
//    holds some of them as seeds) yields exactly the recorded hyperlinks
//    with that document's URL and Content-Type: the oracle where we have
//    its answer (issue 15).
// The first byte picks the Content-Type so that the legacy decoders (iconv)
// are exercised too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

struct Recorded {
  std::string url;
  std::string content_type;
  std::vector<std::string> links;
};

// The recorded corpus by body (text documents only; found next to this
// source file, so no build flag is needed). Empty if it cannot be read.
const std::unordered_map<std::string, Recorded>& RecordedCorpus() {
  static const auto* const kMap = [] {
    auto* m = new std::unordered_map<std::string, Recorded>;
    std::string path = __FILE__;
    path = path.substr(0, path.rfind('/') + 1) + "../data/links/corpus.jsonl";
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("text")) continue;
      Recorded r{j["url"].get<std::string>(),
                 j["content_type"].get<std::string>(),
                 j["links"].get<std::vector<std::string>>()};
      m->emplace(j["text"].get<std::string>(), std::move(r));
    }
    return m;
  }();
  return *kMap;
}

void CheckRecorded(std::string_view body) {
  const auto& corpus = RecordedCorpus();
  auto it = corpus.find(std::string(body));
  if (it == corpus.end()) return;
  static const crawld::parser::Extractor* const kDefault =
      new crawld::parser::Extractor(crawld::parser::Options());
  crawld::Result<crawld::url::Url> doc = crawld::url::Parse(it->second.url);
  Check(doc.ok(), "recorded document URL parses", it->second.url);
  crawld::parser::Page page =
      kDefault->Extract(body, it->second.content_type, *doc);
  std::vector<std::string> got;
  for (const crawld::parser::Link& l : page.links) got.push_back(l.url);
  Check(got == it->second.links, "links equal the oracle's", body);
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
  for (const crawld::parser::Link& link : page.other_links) {
    CheckAbsoluteFixedPoint(link.url, "other link parses to itself");
  }
  if (!page.canonical.empty()) {
    CheckAbsoluteFixedPoint(page.canonical, "canonical parses to itself");
  }
  CheckRecorded(body);
  return 0;
}
