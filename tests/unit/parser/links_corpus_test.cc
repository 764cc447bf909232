// The differential links corpus (docs/LINKS.md): thousands of hostile HTML
// documents with the http(s) links a browser finds in them, recorded by
// tools/links_oracle (parse5 tree construction, WHATWG URL resolution).
// crawld's hyperlinks (Page::links: <a href> and <area href>) must be the
// same list, in document order, duplicates included: issue 15.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "parser/parser.h"
#include "url/url.h"

namespace crawld::parser {
namespace {

std::string DecodeBase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else {
      continue;  // '=' padding
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

struct Case {
  std::string name;
  std::string url;
  std::string content_type;
  std::string body;
  std::vector<std::string> links;
};

// CRAWLD_LINKS_CORPUS in the environment replays another recording (e.g.
// one made with another SEED, see tools/links_oracle/update-corpus.js).
const char* CorpusPath() {
  const char* env = std::getenv("CRAWLD_LINKS_CORPUS");
  return env != nullptr && *env != '\0' ? env : CRAWLD_LINKS_CORPUS;
}

std::vector<Case> LoadCorpus() {
  std::ifstream in(CorpusPath());
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "unparseable corpus line " << cases.size() + 1;
      continue;
    }
    Case c;
    c.name = j.at("name").get<std::string>();
    c.url = j.at("url").get<std::string>();
    c.content_type = j.at("content_type").get<std::string>();
    if (j.contains("text")) {
      c.body = j.at("text").get<std::string>();
    } else {
      c.body = DecodeBase64(j.at("base64").get<std::string>());
    }
    c.links = j.at("links").get<std::vector<std::string>>();
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    s += "  ";
    s += x;
    s += '\n';
  }
  return s;
}

// Issue 15: every document of the recorded corpus yields exactly the
// oracle's links. The options are the defaults a worker runs with.
TEST(LinksOracle, Issue15_CorpusAgreesWithParse5AndWhatwgUrl) {
  const std::vector<Case> cases = LoadCorpus();
  ASSERT_GE(cases.size(), 2000u) << "corpus missing: " << CorpusPath();
  Options options;
  options.extract_text = false;
  Extractor extractor(options);
  size_t agree = 0;
  size_t reported = 0;
  Page page;
  for (const Case& c : cases) {
    Result<url::Url> doc = url::Parse(c.url);
    ASSERT_TRUE(doc.ok()) << c.name;
    extractor.ExtractInto(c.body, c.content_type, *doc, "crawld", &page);
    std::vector<std::string> got;
    for (const Link& l : page.links) got.push_back(l.url);
    if (got == c.links) {
      ++agree;
    } else if (++reported <= 25) {
      ADD_FAILURE() << c.name << " (" << c.url << ", " << c.content_type
                    << ")\n expected:\n"
                    << Join(c.links) << " got:\n"
                    << Join(got);
    }
  }
  EXPECT_EQ(agree, cases.size())
      << "agreement " << agree << "/" << cases.size();
  std::printf("links corpus: %zu/%zu documents agree\n", agree, cases.size());
}

}  // namespace
}  // namespace crawld::parser
