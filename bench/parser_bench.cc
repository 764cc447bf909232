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
//
// BM_WorstShape/<shape>: hostile pages of max_parse_bytes (4 MiB, the
// default) each built to make one step of Gumbo's tree building expensive
// (issue 19 item 1: any page must cost at most about a second). The bound
// is the time of one iteration; see docs/LINKS.md for the figures.
#include <benchmark/benchmark.h>
#include <gumbo.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
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

// --- Worst shapes ------------------------------------------------------------

std::string Repeat(std::string_view unit, size_t bytes) {
  std::string s;
  s.reserve(bytes + unit.size());
  while (s.size() + unit.size() <= bytes) s += unit;
  return s;
}

struct Shape {
  const char* name;
  std::string (*make)(size_t bytes);
};

constexpr size_t kShapeBytes = size_t{4} << 20;  // Options::max_parse_bytes

const Shape kShapes[] = {
    // Gumbo checks each new attribute against all earlier ones.
    {"attrs_one_element",
     [](size_t b) {
       std::string s = "<p";
       for (size_t i = 0; s.size() < b; ++i) s += " a" + std::to_string(i);
       return s + " href=/x>";
     }},
    {"attrs_256_per_element",
     [](size_t b) {
       std::string tag = "<i";
       for (int i = 0; i < 256; ++i) tag += " a" + std::to_string(i);
       return Repeat(tag + "></i>", b);
     }},
    {"attrs_end_tag", [](size_t b) { return "<p>" + Repeat(" a", b) + ">"; }},
    // Scope checks walk the stack of open elements: O(depth) per tag.
    {"div_nest", [](size_t b) { return Repeat("<div>", b); }},
    {"span_nest", [](size_t b) { return Repeat("<span>", b); }},
    {"ul_li_nest", [](size_t b) { return Repeat("<ul><li>", b); }},
    {"p_div_nest", [](size_t b) { return Repeat("<p><div>", b); }},
    {"div_unclosed_span", [](size_t b) { return Repeat("<div></span>", b); }},
    {"custom_nest", [](size_t b) { return Repeat("<x-a></x-b>", b); }},
    {"table_nest", [](size_t b) { return Repeat("<table><tr><td>", b); }},
    {"template_nest", [](size_t b) { return Repeat("<template>", b); }},
    {"svg_g_nest", [](size_t b) { return "<svg>" + Repeat("<g>", b); }},
    // Formatting elements: reconstruction, Noah's ark, adoption agency.
    {"b_nest", [](size_t b) { return Repeat("<b>", b); }},
    {"formatting_mix",
     [](size_t b) {
       return Repeat("<b><i><u><s><em><font><nobr><strong>", b) + "x";
     }},
    {"aaa_a_div", [](size_t b) { return Repeat("<a href=/x><div>x</a>", b); }},
    {"aaa_b_p", [](size_t b) { return Repeat("<b><p>x</b>", b); }},
    {"foster_formatting",
     [](size_t b) { return "<table>" + Repeat("x<b>", b); }},
    // Flat but many nodes.
    {"many_small_elements", [](size_t b) { return Repeat("<i></i>", b); }},
    {"many_links", [](size_t b) { return Repeat("<a href=/l>l</a>", b); }},
    {"text", [](size_t b) { return std::string(b, 'x'); }},
    {"comments", [](size_t b) { return Repeat("<!---->", b); }},
    {"entities", [](size_t b) { return Repeat("&amp;&notit;&#x41;", b); }},
    // <noscript>: raw text per element; inside <select> the first guess is
    // wrong and the page is parsed again.
    {"noscript_many",
     [](size_t b) { return Repeat("<noscript><a href=/n></noscript>", b); }},
    {"noscript_in_select",
     [](size_t b) {
       return Repeat("<select><noscript><a href=/n></select>", b);
     }},
};

void BM_WorstShape(benchmark::State& state, const Shape* shape) {
  const std::string page = shape->make(kShapeBytes);
  crawld::parser::Options options;
  crawld::parser::Extractor ex(options);
  const crawld::url::Url doc =
      crawld::url::Parse("https://www.example.com/hostile.html").value();
  crawld::parser::Page page_out;
  for (auto _ : state) {
    ex.ExtractInto(page, "text/html; charset=utf-8", doc, "crawld", &page_out);
    benchmark::DoNotOptimize(page_out.links.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(page.size()));
  state.counters["links"] = static_cast<double>(page_out.links.size());
  state.counters["flattened"] =
      static_cast<double>(page_out.cuts.elements_flattened);
  state.counters["attrs_dropped"] =
      static_cast<double>(page_out.cuts.attributes_dropped);
}

int RegisterShapes() {
  for (const Shape& s : kShapes) {
    benchmark::RegisterBenchmark(
        (std::string("BM_WorstShape/") + s.name).c_str(), BM_WorstShape, &s)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->Repetitions(1);
  }
  return 0;
}
const int kRegistered = RegisterShapes();

}  // namespace

BENCHMARK_MAIN();
