// gumbo_floor: the parsing floor of the end-to-end benchmark. Reads the
// response records of WARC files and measures the CPU time of Gumbo's bare
// parse (gumbo_parse + gumbo_destroy_output, nothing else) per HTML page,
// so bench/e2e.py can put the crawler's CPU per page next to it.
//
// usage: gumbo_floor FILE.warc.gz...   prints "<ms per page> <pages>"
// (pages: how many were parsed, at most 20,000)
#include <gumbo.h>
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "store/store.h"

namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// Pages parsed at most (the first ones of the files).
constexpr size_t kSample = 20000;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pages;
  for (int i = 1; i < argc && pages.size() < kSample; ++i) {
    auto reader = crawld::store::WarcReader::Open(argv[i]);
    if (!reader.ok()) {
      fprintf(stderr, "%s: %s\n", argv[i], reader.status().ToString().c_str());
      return 2;
    }
    crawld::store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok()) {
        fprintf(stderr, "%s: %s\n", argv[i], more.status().ToString().c_str());
        return 2;
      }
      if (!*more || pages.size() == kSample) break;
      if (rec.type() != "response") continue;
      size_t head_end = rec.block.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      std::string_view head(rec.block.data(), head_end);
      if (head.find("text/html") == std::string_view::npos) continue;
      pages.push_back(rec.block.substr(head_end + 4));
    }
  }
  if (pages.empty()) {
    fprintf(stderr, "gumbo_floor: no HTML responses\n");
    return 1;
  }
  // The fastest of three passes: a floor is what the parse costs
  // undisturbed, and on a shared machine one pass over a large crawl's
  // pages wandered by 40% from run to run.
  double best = 0;
  for (int p = 0; p < 3; ++p) {
    const double t0 = CpuSeconds();
    for (const std::string& body : pages) {
      GumboOutput* out = gumbo_parse_with_options(&kGumboDefaultOptions,
                                                  body.data(), body.size());
      gumbo_destroy_output(&kGumboDefaultOptions, out);
    }
    const double t = CpuSeconds() - t0;
    if (p == 0 || t < best) best = t;
  }
  const double ms = best * 1000 / static_cast<double>(pages.size());
  printf("%.4f %zu\n", ms, pages.size());
  return 0;
}
