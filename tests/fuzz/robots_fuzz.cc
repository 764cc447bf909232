// Fuzz target for robots/: parse arbitrary bytes for a fixed product token
// and match paths taken from the input itself.
//
// Invariants checked (abort on violation):
//  - the verdict for every path is the same when the body's LF line ends are
//    turned into CRLF or CR (line numbers may differ, decisions may not);
//  - crawl-delay and sitemaps are the same under those conversions;
//  - Allowed() agrees with Check().allowed, and a verdict without a rule has
//    line 0; /robots.txt is always allowed;
//  - the kept diagnostics never exceed the cap.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "robots/robots.h"

namespace {

using crawld::robots::Options;
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Keep LF->CRLF growth inside the parsing limit, so all three bodies are
  // parsed whole.
  if (size > 256 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Options options;
  options.max_bytes = 1024 * 1024;
  options.max_diagnostics = 16;

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

  for (const std::string& path : PathsFrom(body)) {
    const bool allowed = lf.Allowed(path);
    Check(crlf.Allowed(path) == allowed);
    Check(cr.Allowed(path) == allowed);
    const crawld::robots::Verdict v = lf.Check(path);
    Check(v.allowed == allowed);
    Check(v.line >= 0);
    if (v.rule.empty()) Check(v.line == 0 && v.allowed);
  }
  Check(lf.Allowed("/robots.txt"));
  return 0;
}
