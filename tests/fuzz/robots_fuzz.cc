// Fuzz target for robots/: parse arbitrary bytes for a few product tokens
// and match paths and URLs taken from the input itself.
//
// Invariants checked (abort on violation):
//  - differential: every verdict is the one of the literal model of Google's
//    matcher in robots_fuzz_reference.h (which google_corpus_test.cc holds
//    to Google's recorded verdicts), for URLs as `crawlctl robots check`
//    reads them (PathFromUrl) and for paths;
//  - the verdict for every path is the same when the body's LF line ends are
//    turned into CRLF or CR (line numbers may differ, decisions may not);
//  - crawl-delay and sitemaps are the same under those conversions;
//  - Allowed() agrees with Check().allowed, and a verdict without a rule has
//    line 0; with Options::rfc_matching, /robots.txt is always allowed;
//  - the kept diagnostics never exceed the cap.
// The seeds in corpus/robots_fuzz include files of the recorded corpus
// (tests/data/robots); robots_fuzz.dict holds the keys and special bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "robots/robots.h"
#include "tests/fuzz/robots_fuzz_reference.h"

namespace {

using crawld::robots::Options;
using crawld::robots::PathFromUrl;
using crawld::robots::Rules;

std::string ReplaceLf(std::string_view in, std::string_view with) {
  std::string out;
  out.reserve(in.size() * 2);
  for (char c : in) {
    if (c == '\n') {
      out.append(with);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

// Paths worth asking about: fixed ones, and every value after a colon in
// the input (which is where patterns are), with and without a query.
std::vector<std::string> PathsFrom(std::string_view body) {
  std::vector<std::string> paths = {"/", "/robots.txt",  "/a/b?c=d",
                                    "",  "/%E3%83%84*$", "x"};
  size_t start = 0;
  while (start < body.size() && paths.size() < 24) {
    size_t end = body.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view value = line.substr(colon + 1, 256);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      paths.emplace_back(value);
      paths.push_back(std::string(value) + "x?y");
    }
    start = end + 1;
  }
  return paths;
}

// The product tokens to ask for: fixed ones, and the first user-agent value
// of the input as it stands, so that the fuzzer steers group selection.
std::vector<std::string> AgentsFrom(std::string_view body) {
  std::vector<std::string> agents = {"crawld", "FooBot"};
  const size_t at = body.find("gent:");
  if (at != std::string_view::npos) {
    std::string_view v = body.substr(at + 5, 32);
    v = v.substr(0, v.find_first_of(std::string_view("\r\n#\0", 4)));
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (!v.empty()) agents.emplace_back(v);
  }
  return agents;
}

// crawld's verdicts against the model's, for URLs and for paths.
void Differential(std::string_view body, const Options& options) {
  const std::vector<std::string> inputs = PathsFrom(body);
  std::vector<std::string> urls;
  for (const std::string& in : inputs) {
    if (in.find('\n') != std::string::npos) continue;  // one URL per line
    urls.push_back(in);
    urls.push_back("http://example.com" + in);
  }
  for (const std::string& agent : AgentsFrom(body)) {
    const Rules rules = Rules::Parse(body, agent, options);
    const std::vector<bool> want =
        robots_reference::Verdicts(body, agent, urls);
    for (size_t i = 0; i < urls.size(); ++i) {
      Check(rules.Allowed(PathFromUrl(urls[i])) == want[i]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Keep LF->CRLF growth inside the parsing limit, so all three bodies are
  // parsed whole.
  if (size > 256 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Options options;
  options.max_bytes = 1024 * 1024;
  options.max_diagnostics = 16;

  // The model is quadratic per pattern: keep it to inputs of fuzzer size.
  if (size <= 64 * 1024) Differential(body, options);

  const Rules lf = Rules::Parse(body, "crawld", options);
  const Rules crlf = Rules::Parse(ReplaceLf(body, "\r\n"), "crawld", options);
  const Rules cr = Rules::Parse(ReplaceLf(body, "\r"), "crawld", options);

  Check(lf.crawl_delay_seconds() == crlf.crawl_delay_seconds());
  Check(lf.crawl_delay_seconds() == cr.crawl_delay_seconds());
  Check(lf.sitemaps() == crlf.sitemaps() && lf.sitemaps() == cr.sitemaps());
  Check(lf.group() == crlf.group() && lf.group() == cr.group());
  Check(lf.rule_count() == crlf.rule_count() &&
        lf.rule_count() == cr.rule_count());
  Check(lf.diagnostics().size() <= options.max_diagnostics);
  Check(lf.diagnostic_count() >= lf.diagnostics().size());
  if (lf.crawl_delay_seconds()) Check(*lf.crawl_delay_seconds() >= 0);

  Options rfc_options = options;
  rfc_options.rfc_matching = true;
  const Rules rfc = Rules::Parse(body, "crawld", rfc_options);

  for (const std::string& path : PathsFrom(body)) {
    const bool allowed = lf.Allowed(path);
    Check(crlf.Allowed(path) == allowed);
    Check(cr.Allowed(path) == allowed);
    const crawld::robots::Verdict v = lf.Check(path);
    Check(v.allowed == allowed);
    Check(v.line >= 0);
    if (v.rule.empty()) Check(v.line == 0 && v.allowed);
    Check(rfc.Allowed(path) == rfc.Check(path).allowed);
  }
  Check(rfc.Allowed("/robots.txt"));
  Check(Rules::DisallowAll().Allowed("/robots.txt"));
  return 0;
}
