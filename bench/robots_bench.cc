// Benchmarks for robots/: the cost of one Allowed()/Check() against a
// realistic 50-rule robots.txt, the cost of parsing it, and the worst cases
// (a 500 KiB file, pathological wildcards). Inputs are generated
// deterministically here, so figures are comparable between runs.
// Results and the command line: docs/bench/robots.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "robots/robots.h"

namespace {

using crawld::robots::Rules;

// A robots.txt in the style of a large shop or CMS site: several groups,
// 50 Allow/Disallow rules in the "*" group we end up in, wildcards, "$"
// anchors, query patterns, comments and sitemaps.
const std::string& RealisticRobots() {
  static const std::string* const body = [] {
    auto* s = new std::string(
        "# robots.txt for www.example-shop.com\n"
        "User-agent: Googlebot\n"
        "Disallow: /checkout/\n"
        "Allow: /\n"
        "\n"
        "User-agent: Bingbot\n"
        "Crawl-delay: 5\n"
        "Disallow: /search\n"
        "\n"
        "User-agent: *\n"
        "Crawl-delay: 1.5\n");
    const char* rules[] = {
        "Disallow: /admin/",
        "Disallow: /wp-admin/",
        "Allow: /wp-admin/admin-ajax.php",
        "Disallow: /cart",
        "Disallow: /checkout/",
        "Disallow: /account/",
        "Allow: /account/login$",
        "Disallow: /search",
        "Allow: /search/help",
        "Disallow: /*?sessionid=",
        "Disallow: /*&sessionid=",
        "Disallow: /*?sort=",
        "Disallow: /*&sort=",
        "Disallow: /*?filter=*&page=",
        "Disallow: /*.pdf$",
        "Disallow: /*.doc$",
        "Disallow: /*.xls$",
        "Allow: /downloads/catalog.pdf$",
        "Disallow: /tmp/",
        "Disallow: /cgi-bin/",
        "Disallow: /private/",
        "Allow: /private/press/",
        "Disallow: /print/",
        "Disallow: /*/print$",
        "Disallow: /api/",
        "Allow: /api/docs/",
        "Disallow: /internal",
        "Disallow: /*/compare/",
        "Disallow: /wishlist",
        "Disallow: /*?utm_",
        "Disallow: /*&utm_",
        "Disallow: /preview/",
        "Disallow: /staging/",
        "Disallow: /*/feed/$",
        "Disallow: /tag/*/page/",
        "Disallow: /category/*/page/",
        "Allow: /category/*/page/1$",
        "Disallow: /*%E3%83%84",
        "Disallow: /user/*/edit",
        "Disallow: /user/*/settings",
        "Disallow: /*/reviews?page=",
        "Disallow: /static/drafts/",
        "Allow: /static/",
        "Disallow: /*.json$",
        "Disallow: /graphql",
        "Disallow: /login",
        "Disallow: /logout",
        "Disallow: /register",
        "Disallow: /*/amp$",
        "Disallow: /old-site/",
    };
    static_assert(sizeof(rules) / sizeof(rules[0]) == 50);
    for (const char* r : rules) *s += std::string(r) + "\n";
    *s +=
        "\n"
        "Sitemap: https://www.example-shop.com/sitemap.xml\n"
        "Sitemap: https://www.example-shop.com/sitemap-products.xml\n";
    return s;
  }();
  return *body;
}

// Paths as a crawler meets them on such a site: mostly product and
// category pages, some of them with tracking queries, a few hits on the
// disallowed areas.
const std::vector<std::string>& RealisticPaths() {
  static const std::vector<std::string>* const paths = [] {
    auto* v = new std::vector<std::string>;
    std::mt19937 rng(12345);
    const char* sections[] = {"product", "category", "blog",   "tag",
                              "user",    "static",   "search", "account",
                              "api",     "downloads"};
    const char* words[] = {"red",   "shoes", "winter", "sale", "men",
                           "women", "kids",  "summer", "new",  "classic"};
    const char* tails[] = {"",
                           ".html",
                           "/",
                           "?page=2",
                           "?utm_source=x&utm_medium=y",
                           ".pdf",
                           "?sort=price",
                           "/reviews?page=3",
                           "/print",
                           "/amp"};
    for (int i = 0; i < 4000; ++i) {
      std::string p = "/";
      p += sections[rng() % 10];
      p += "/";
      const int depth = 1 + static_cast<int>(rng() % 3);
      for (int d = 0; d < depth; ++d) {
        if (d > 0) p += "/";
        p += words[rng() % 10];
        p += "-";
        p += std::to_string(rng() % 100000);
      }
      p += tails[rng() % 10];
      v->push_back(std::move(p));
    }
    return v;
  }();
  return *paths;
}

void BM_Allowed(benchmark::State& state) {
  const Rules rules = Rules::Parse(RealisticRobots(), "crawld");
  const auto& paths = RealisticPaths();
  size_t bytes = 0;
  for (const auto& p : paths) bytes += p.size();
  for (auto _ : state) {
    size_t allowed = 0;
    for (const auto& p : paths) allowed += rules.Allowed(p) ? 1 : 0;
    benchmark::DoNotOptimize(allowed);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(paths.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Allowed);

void BM_Check(benchmark::State& state) {
  const Rules rules = Rules::Parse(RealisticRobots(), "crawld");
  const auto& paths = RealisticPaths();
  size_t bytes = 0;
  for (const auto& p : paths) bytes += p.size();
  for (auto _ : state) {
    for (const auto& p : paths) benchmark::DoNotOptimize(rules.Check(p));
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(paths.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Check);

// Paths that need normalisation (percent-encoding, non-ASCII): the slow
// path of Allowed(), with one allocation.
void BM_AllowedEncodedPaths(benchmark::State& state) {
  const Rules rules = Rules::Parse(RealisticRobots(), "crawld");
  std::vector<std::string> paths;
  for (const auto& p : RealisticPaths()) {
    paths.push_back(p + "/%e3%83%84-caf\xC3\xA9");
  }
  size_t bytes = 0;
  for (const auto& p : paths) bytes += p.size();
  for (auto _ : state) {
    size_t allowed = 0;
    for (const auto& p : paths) allowed += rules.Allowed(p) ? 1 : 0;
    benchmark::DoNotOptimize(allowed);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(paths.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_AllowedEncodedPaths);

void BM_Parse(benchmark::State& state) {
  const std::string& body = RealisticRobots();
  for (auto _ : state) {
    benchmark::DoNotOptimize(Rules::Parse(body, "crawld"));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_Parse);

// The worst file the default limit lets in: 500 KiB of rules, all ours.
void BM_Parse500KiB(benchmark::State& state) {
  std::string body = "User-agent: *\n";
  for (int i = 0; body.size() < 500 * 1024; ++i) {
    body += (i % 3 ? "Disallow: /dir" : "Allow: /*/page") + std::to_string(i) +
            "/*.html$\n";
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Rules::Parse(body, "crawld"));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_Parse500KiB)->Unit(benchmark::kMillisecond);

// Match cost against that file: every rule is tried for a path that
// matches none of them (the worst case of the scan).
void BM_Allowed500KiB(benchmark::State& state) {
  std::string body = "User-agent: *\n";
  int n = 0;
  for (; body.size() < 500 * 1024; ++n) {
    body += (n % 3 ? "Disallow: /dir" : "Allow: /*/page") + std::to_string(n) +
            "/*.html$\n";
  }
  const Rules rules = Rules::Parse(body, "crawld");
  const std::string path = "/product/red-shoes-123.html";
  for (auto _ : state) benchmark::DoNotOptimize(rules.Allowed(path));
  state.SetItemsProcessed(state.iterations());
  state.counters["rules"] = static_cast<double>(rules.rule_count());
}
BENCHMARK(BM_Allowed500KiB)->Unit(benchmark::kMicrosecond);

// "/*a*a*a*a*a*a*a*b" against a long path of "a": exponential for a
// backtracking matcher, linear here.
void BM_PathologicalWildcards(benchmark::State& state) {
  const Rules rules =
      Rules::Parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*b\n", "crawld");
  const std::string path = "/" + std::string(state.range(0), 'a');
  for (auto _ : state) benchmark::DoNotOptimize(rules.Allowed(path));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(path.size()));
}
BENCHMARK(BM_PathologicalWildcards)->Arg(100)->Arg(2000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
