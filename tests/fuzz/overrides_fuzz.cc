// Fuzz target for robots/politeness override files (conf/overrides.h).
// Invariants: parsing never crashes; a rejected file names the source and a
// line; on an accepted file, For() is consistent: its lines exist in the
// file, are ascending and unique, every disallow line is among them, numeric
// values are within bounds, a second call gives the same answer, and each
// call adds exactly one hit per deciding line.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "conf/overrides.h"

namespace {

bool Same(const crawld::conf::HostOverride& a,
          const crawld::conf::HostOverride& b) {
  if (a.ignore_robots != b.ignore_robots || a.delay_ms != b.delay_ms ||
      a.concurrency != b.concurrency || a.lines != b.lines ||
      a.disallow.size() != b.disallow.size()) {
    return false;
  }
  for (size_t i = 0; i < a.disallow.size(); ++i) {
    if (a.disallow[i].pattern != b.disallow[i].pattern ||
        a.disallow[i].line != b.disallow[i].line) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using crawld::conf::HostOverride;
  using crawld::conf::Overrides;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = Overrides::Parse(text, "f.conf");
  if (!parsed.ok()) {
    if (parsed.status().message().rfind("f.conf:", 0) != 0) std::abort();
    return 0;
  }
  const Overrides& ov = **parsed;
  std::vector<std::string> hosts = {"example.com",
                                    "www.example.com",
                                    "a.b.example.org",
                                    "com",
                                    "127.0.0.1",
                                    "[::1]",
                                    "xn--bcher-kva.example",
                                    "x",
                                    ""};
  // The file's own selectors, with and without a subdomain, reach the
  // matching paths a fixed list would miss (any bytes are a valid query).
  for (size_t pos = 0; pos < text.size() && hosts.size() < 32;) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string_view::npos) continue;
    line.remove_prefix(start);
    std::string_view sel = line.substr(0, line.find_first_of(" \t\r"));
    if (sel.starts_with("*.")) sel.remove_prefix(2);
    if (sel.starts_with(".")) sel.remove_prefix(1);
    hosts.emplace_back(sel);
    hosts.push_back("www." + std::string(sel));
  }
  for (const std::string& host : hosts) {
    const auto before = ov.Stats();
    const HostOverride o = ov.For(host);
    const auto after = ov.Stats();
    if (before.size() != ov.size() || after.size() != ov.size()) std::abort();
    if (!std::is_sorted(o.lines.begin(), o.lines.end()) ||
        std::adjacent_find(o.lines.begin(), o.lines.end()) != o.lines.end()) {
      std::abort();
    }
    for (size_t i = 0; i < after.size(); ++i) {
      const bool deciding =
          std::binary_search(o.lines.begin(), o.lines.end(), after[i].line);
      if (after[i].hits != before[i].hits + (deciding ? 1 : 0)) std::abort();
    }
    for (const auto& d : o.disallow) {
      if (!std::binary_search(o.lines.begin(), o.lines.end(), d.line) ||
          d.pattern.empty() || (d.pattern[0] != '/' && d.pattern[0] != '*')) {
        std::abort();
      }
    }
    if (o.delay_ms && (*o.delay_ms < 0 || *o.delay_ms > Overrides::kMaxDelayMs))
      std::abort();
    if (o.concurrency &&
        (*o.concurrency < 1 || *o.concurrency > Overrides::kMaxConcurrency))
      std::abort();
    if (!Same(o, ov.For(host))) std::abort();
    if (o.empty() != ov.Describe(o).empty()) std::abort();
  }
  return 0;
}
