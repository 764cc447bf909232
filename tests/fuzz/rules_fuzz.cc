// Fuzz target for filter rule files (conf/rules.h). Invariants: parsing
// never crashes; a rejected file names the source and a line; an accepted
// file decides every URL with a rule that exists in it (or the default),
// and Stats() lists each rule once plus the two synthetic entries; a
// "recrawl" verdict names a line and has 1 <= min <= max.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "conf/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rules = crawld::conf::RuleSet::Parse(text, "f.rules");
  if (!rules.ok()) {
    if (rules.status().message().rfind("f.rules:", 0) != 0) std::abort();
    return 0;
  }
  static const char* const kUrls[] = {
      "http://example.com/", "https://a.b.example.co.uk/x/x/x/x?q=1",
      "http://127.0.0.1:8080/cgi-bin/a", "not a url",
      "http://xn--nxasmq6b.com/%E2%82%AC/a/b/c/d/e/f/g/h/i/j/k"};
  for (const char* u : kUrls) {
    for (int depth : {0, 3, 100}) {
      crawld::conf::RuleVerdict v = (*rules)->Decide({u, depth, "example.com"});
      if (v.line < 0) std::abort();
      if (v.line == 0 && v.rule != "default" && v.rule != "invalid url") {
        std::abort();
      }
      auto r = (*rules)->Recrawl({u, depth, "example.com"});
      if (r.has_value() &&
          (r->line <= 0 || !(r->min_s >= 1) || !(r->min_s <= r->max_s))) {
        std::abort();
      }
    }
  }
  if ((*rules)->Stats().size() != (*rules)->size() + 2) std::abort();
  return 0;
}
