// url/ micro-benchmarks: WHATWG parsing, parse + canonicalize, relative
// resolution against a base, and the fingerprint. Inputs are typical crawl
// URLs of about 60 bytes, inline below so that results are comparable across
// runs. Figures and the command line: docs/bench/url.md.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "url/url.h"

namespace {

using crawld::url::Canonicalizer;
using crawld::url::Options;
using crawld::url::Parse;
using crawld::url::ParseInto;
using crawld::url::Url;

// What a crawler's frontier sees: absolute links, ~60 bytes on average.
const std::vector<std::string>& AbsoluteUrls() {
  static const std::vector<std::string> urls = {
      "https://www.example.com/products/shoes/running?page=2&sort=price",
      "http://news.example.org/2024/05/12/city-council-votes-on-budget.html",
      "https://en.wikipedia.org/wiki/Uniform_Resource_Locator#Syntax",
      "https://shop.example.com/cart;jsessionid=A1B2C3D4E5?item=42",
      "http://Example.COM:80/a/b/../c/./d.html?utm_source=feed&id=7",
      "https://blog.example.net/posts/how-we-built-our-crawler/",
      "https://www.example.co.uk/search?q=web+crawler&lang=en&page=3",
      "http://192.168.10.20:8080/status/health?verbose=1",
      "https://cdn.example.com/static/img/logo%2Dlarge%7e.png?v=3",
      "https://docs.example.io/api/v2/reference/urls.html#parse",
      "https://forum.example.org/t/topic-title-here/12345?page=2",
      "https://example.com/download/file.tar.gz?fbclid=IwAR0abc",
  };
  return urls;
}

// What a page's <a href> attributes look like, resolved against its URL.
const std::vector<std::string>& RelativeHrefs() {
  static const std::vector<std::string> hrefs = {
      "../index.html",
      "/about/team",
      "page-2.html?sort=asc",
      "#comments",
      "?page=3",
      "//cdn.example.com/x.js",
      "./img/photo 1.jpg",
      "/search?q=a+b&l=en",
      "../../archive/2023/",
      "contact.php",
      "/",
      "https://other.example/",
  };
  return hrefs;
}

size_t TotalBytes(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const std::string& s : v) n += s.size();
  return n;
}

void BM_Parse(benchmark::State& state) {
  const auto& urls = AbsoluteUrls();
  for (auto _ : state) {
    for (const std::string& u : urls) {
      auto r = Parse(u);
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * urls.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(urls)));
}
BENCHMARK(BM_Parse);

void BM_ParseAndCanonicalize(benchmark::State& state) {
  const auto& urls = AbsoluteUrls();
  const Canonicalizer canon{Options()};
  for (auto _ : state) {
    for (const std::string& u : urls) {
      auto r = canon.Canonicalize(u);
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * urls.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(urls)));
}
BENCHMARK(BM_ParseAndCanonicalize);

void BM_ResolveRelative(benchmark::State& state) {
  const auto& hrefs = RelativeHrefs();
  auto base = Parse("https://www.example.com/blog/2024/05/post-title.html?x=1");
  for (auto _ : state) {
    for (const std::string& h : hrefs) {
      auto r = Parse(h, &base.value());
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * hrefs.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(hrefs)));
}
BENCHMARK(BM_ResolveRelative);

// The same with ParseInto and one reused Url, as the parser resolves a
// page's links (issue 16).
void BM_ResolveRelativeInto(benchmark::State& state) {
  const auto& hrefs = RelativeHrefs();
  auto base = Parse("https://www.example.com/blog/2024/05/post-title.html?x=1");
  Url u;
  for (auto _ : state) {
    for (const std::string& h : hrefs) {
      benchmark::DoNotOptimize(ParseInto(h, &base.value(), &u));
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * hrefs.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(hrefs)));
}
BENCHMARK(BM_ResolveRelativeInto);

void BM_ResolveAndCanonicalize(benchmark::State& state) {
  const auto& hrefs = RelativeHrefs();
  const Canonicalizer canon{Options()};
  auto base = Parse("https://www.example.com/blog/2024/05/post-title.html?x=1");
  for (auto _ : state) {
    for (const std::string& h : hrefs) {
      auto r = canon.Canonicalize(h, &base.value());
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * hrefs.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(hrefs)));
}
BENCHMARK(BM_ResolveAndCanonicalize);

void BM_IdnHost(benchmark::State& state) {
  // The slow path: libidn2 for a non-ASCII label.
  const std::string u = "https://www.bücher-example.de/katalog/neu";
  for (auto _ : state) {
    auto r = Parse(u);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * u.size()));
}
BENCHMARK(BM_IdnHost);

void BM_Fingerprint(benchmark::State& state) {
  const auto& urls = AbsoluteUrls();
  for (auto _ : state) {
    for (const std::string& u : urls) {
      benchmark::DoNotOptimize(crawld::url::Fingerprint(u));
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * urls.size()));
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * TotalBytes(urls)));
}
BENCHMARK(BM_Fingerprint);

}  // namespace

BENCHMARK_MAIN();
