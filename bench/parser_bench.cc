// parser benchmarks: link extraction throughput (parser::Extractor::Extract)
// next to Gumbo's bare parse (gumbo_parse_with_options + gumbo_destroy_output)
// on the same pages, so the cost of our walk, decoding and URL resolution
// shows up as the gap between the two.
//
// Pages are generated deterministically (fixed seed): 10-50 KB each, 50-200
// links (relative, absolute, with queries and entities), nested
// div/ul/table markup, paragraphs of text, a head with meta/link/script/style.
//
// Counters: bytes_per_second (HTML bytes), items_per_second (pages), and
// links/s for Extract.
#include <benchmark/benchmark.h>
#include <gumbo.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "parser/parser.h"
#include "url/url.h"

namespace {

constexpr const char* kWords[] = {
    "crawler",      "politeness", "frontier", "document", "archive",
    "network",      "request",    "response", "latency",  "robots",
    "sitemap",      "index",      "search",   "the",      "of",
    "and",          "a",          "to",       "in",       "is",
    "for",          "on",         "with",     "as",       "caf\xC3\xA9",
    "na\xC3\xAFve", "gro\xC3\x9F"};

std::string Sentence(std::mt19937& rng, int words) {
  std::string s;
  for (int i = 0; i < words; ++i) {
    if (i > 0) s += ' ';
    s += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  return s;
}

std::string Href(std::mt19937& rng, int i) {
  switch (rng() % 6) {
    case 0:
      return "/articles/" + std::to_string(i) + "/index.html";
    case 1:
      return "../section-" + std::to_string(rng() % 50) +
             "/page?id=" + std::to_string(i) + "&amp;ref=nav";
    case 2:
      return "https://www.example.org/path/to/" + std::to_string(i);
    case 3:
      return "item-" + std::to_string(i) + ".html#comments";
    case 4:
      return "//cdn.example.net/static/" + std::to_string(i) + ".pdf";
    default:
      return "?page=" + std::to_string(i) + "&sort=date";
  }
}

std::string MakePage(std::mt19937& rng) {
  const size_t target = 10000 + rng() % 40000;
  const int links = 50 + static_cast<int>(rng() % 151);
  std::string h =
      "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
      "<title>" +
      Sentence(rng, 6) +
      "</title>"
      "<meta name=viewport content='width=device-width'>"
      "<link rel=stylesheet href='/s/site.css'>"
      "<link rel=canonical href='/canonical/page'>"
      "<script>window.dataLayer=[];function f(a){return a<2?1:f(a-1)}</script>"
      "<style>body{font:14px sans-serif}.nav a{color:#333}</style></head>"
      "<body><div class=wrap><header><nav class=nav><ul>";
  int emitted = 0;
  for (; emitted < 10 && emitted < links; ++emitted) {
    h += "<li><a href=\"" + Href(rng, emitted) + "\">" + Sentence(rng, 2) +
         "</a></li>";
  }
  h += "</ul></nav></header><main><article>";
  const int remaining = links - emitted;
  // Spread the rest of the links over paragraphs, lists and tables until
  // the page reaches its size.
  int block = 0;
  while (h.size() < target || emitted < links) {
    const int per_block = std::max(1, remaining / 12);
    switch (block++ % 3) {
      case 0:
        h += "<section><h2>" + Sentence(rng, 4) + "</h2><p>" +
             Sentence(rng, 40 + static_cast<int>(rng() % 60));
        for (int k = 0; k < per_block && emitted < links; ++k, ++emitted) {
          h += " <a href=\"" + Href(rng, emitted) + "\"" +
               (rng() % 8 == 0 ? " rel=nofollow" : "") + ">" +
               Sentence(rng, 3) + "</a> " + Sentence(rng, 8);
        }
        h += "</p></section>";
        break;
      case 1:
        h += "<div class=card><div class=body><ul>";
        for (int k = 0; k < per_block && emitted < links; ++k, ++emitted) {
          h += "<li><span><a href='" + Href(rng, emitted) + "'><b>" +
               Sentence(rng, 2) + "</b></a></span> " + Sentence(rng, 10) +
               "</li>";
        }
        h += "</ul></div></div>";
        break;
      default:
        h += "<table><tr><th>" + Sentence(rng, 2) + "<th>" + Sentence(rng, 2);
        for (int k = 0; k < per_block && emitted < links; ++k, ++emitted) {
          h += "<tr><td><a href=" + Href(rng, emitted) + ">" +
               Sentence(rng, 2) + "</a><td>" + Sentence(rng, 12);
        }
        h += "</table>";
        break;
    }
    if (h.size() > target + 20000) break;
  }
  h += "</article></main><footer><p>" + Sentence(rng, 20) +
       "</p></footer></div></body></html>";
  return h;
}

const std::vector<std::string>& Pages() {
  static const std::vector<std::string>* pages = [] {
    auto* v = new std::vector<std::string>;
    std::mt19937 rng(20261122);
    for (int i = 0; i < 64; ++i) v->push_back(MakePage(rng));
    return v;
  }();
  return *pages;
}

void BM_GumboParse(benchmark::State& state) {
  const auto& pages = Pages();
  GumboOptions opts = kGumboDefaultOptions;
  opts.max_errors = 0;  // as the Extractor does
  size_t i = 0, bytes = 0, items = 0;
  for (auto _ : state) {
    const std::string& p = pages[i++ % pages.size()];
    GumboOutput* out = gumbo_parse_with_options(&opts, p.data(), p.size());
    benchmark::DoNotOptimize(out);
    gumbo_destroy_output(&opts, out);
    bytes += p.size();
    ++items;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(items));
}
BENCHMARK(BM_GumboParse);

void ExtractBench(benchmark::State& state, bool text, const char* ct) {
  const auto& pages = Pages();
  crawld::parser::Options options;
  options.extract_text = text;
  crawld::parser::Extractor ex(options);
  const crawld::url::Url doc =
      crawld::url::Parse("https://www.example.com/news/2026/11/story.html")
          .value();
  crawld::parser::Page page;
  size_t i = 0, bytes = 0, items = 0, links = 0;
  for (auto _ : state) {
    const std::string& p = pages[i++ % pages.size()];
    ex.ExtractInto(p, ct, doc, "crawld", &page);
    benchmark::DoNotOptimize(page.links.data());
    bytes += p.size();
    links += page.links.size();
    ++items;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["links/s"] = benchmark::Counter(static_cast<double>(links),
                                                 benchmark::Counter::kIsRate);
}

void BM_Extract(benchmark::State& state) { ExtractBench(state, true, ""); }
BENCHMARK(BM_Extract);

void BM_ExtractLinksOnly(benchmark::State& state) {
  ExtractBench(state, false, "");
}
BENCHMARK(BM_ExtractLinksOnly);

// Same pages declared windows-1252: adds the conversion copy.
void BM_ExtractWindows1252(benchmark::State& state) {
  ExtractBench(state, true, "text/html; charset=windows-1252");
}
BENCHMARK(BM_ExtractWindows1252);

}  // namespace

BENCHMARK_MAIN();
