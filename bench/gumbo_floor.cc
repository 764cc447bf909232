// gumbo_floor: the floor of the end-to-end benchmark (bench/e2e.py). Reads
// the HTML response records of WARC files (the very pages of a crawl) and
// measures, in CPU time per page, what storing and parsing them cannot
// avoid:
//   - Gumbo's bare parse: gumbo_parse + gumbo_destroy_output, nothing else;
//   - libdeflate's gzip of the response record's block (HTTP head + body),
//     one gzip member per page, at the configured level (crawld writes each
//     WARC record as its own gzip member, store/).
// The floor of a crawler that parses HTML5 and writes gzipped WARCs is the
// sum of the two.
//
// usage: gumbo_floor [--level N] [--max-pages N] [--levels] [--interleave]
//                    [--extract] FILE.warc.gz...
//   default      one line: "gumbo_ms=.. deflate_ms=.. floor_ms=.. level=N
//                pages=N page_bytes=N"
//   --levels     also a table of libdeflate levels 1-12 (and zlib 6, what
//                wget writes): CPU per page and output size
//   --interleave also the parse (Gumbo bare, and crawld's Extractor) timed
//                page by page while each page is compressed between two
//                parses, as the crawler does, next to the same timing
//                without the compression: what a polluted cache costs
//   --extract    also crawld's own parser::Extractor (Gumbo on its arena,
//                links, metadata, text) with and without text extraction
// Pages parsed: the first --max-pages (default 20,000) HTML responses of the
// files.
#include <gumbo.h>
#include <libdeflate.h>
#include <time.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "parser/parser.h"
#include "store/store.h"
#include "url/url.h"

namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Pages parsed at most by default (the first ones of the files).
constexpr size_t kSample = 20000;
// Passes per figure; the fastest counts: a floor is what the work costs
// undisturbed, and on a shared machine one pass over a crawl's pages
// wandered by 40% from run to run.
constexpr int kPasses = 3;

struct Page {
  std::string block;  // HTTP head + body, as the response record holds it
  size_t body_at = 0;
  std::string url;
  std::string_view body() const {
    return std::string_view(block).substr(body_at);
  }
};

// Best CPU seconds of kPasses runs of `pass`.
template <typename F>
double Best(F pass) {
  double best = 0;
  for (int p = 0; p < kPasses; ++p) {
    const double t0 = CpuSeconds();
    pass();
    const double t = CpuSeconds() - t0;
    if (p == 0 || t < best) best = t;
  }
  return best;
}

double GumboPass(const std::vector<Page>& pages) {
  return Best([&] {
    for (const Page& p : pages) {
      GumboOutput* out = gumbo_parse_with_options(
          &kGumboDefaultOptions, p.body().data(), p.body().size());
      gumbo_destroy_output(&kGumboDefaultOptions, out);
    }
  });
}

// libdeflate gzip of every block at `level`; *out_bytes gets the total
// compressed size. One compressor for the pass, as the WARC writer keeps.
double DeflatePass(const std::vector<Page>& pages, int level,
                   size_t* out_bytes) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  if (c == nullptr) {
    fprintf(stderr, "gumbo_floor: libdeflate level %d refused\n", level);
    exit(2);
  }
  std::string out;
  size_t total = 0;
  const double t = Best([&] {
    total = 0;
    for (const Page& p : pages) {
      const size_t bound = libdeflate_gzip_compress_bound(c, p.block.size());
      if (out.size() < bound) out.resize(bound);
      total += libdeflate_gzip_compress(c, p.block.data(), p.block.size(),
                                        out.data(), out.size());
    }
  });
  libdeflate_free_compressor(c);
  *out_bytes = total;
  return t;
}

// zlib's gzip of every block at `level` (wget's WARC writer uses zlib).
double ZlibPass(const std::vector<Page>& pages, int level, size_t* out_bytes) {
  std::string out;
  size_t total = 0;
  const double t = Best([&] {
    total = 0;
    z_stream zs{};
    // windowBits 15 + 16: a gzip wrapper; one stream reset per record.
    deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    for (const Page& p : pages) {
      const size_t bound = deflateBound(&zs, p.block.size());
      if (out.size() < bound) out.resize(bound);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p.block.data()));
      zs.avail_in = static_cast<uInt>(p.block.size());
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(out.size());
      deflate(&zs, Z_FINISH);
      total += zs.total_out;
      deflateReset(&zs);
    }
    deflateEnd(&zs);
  });
  *out_bytes = total;
  return t;
}

// The parse timed page by page (clock read around each parse), with or
// without a gzip of the page's record between two parses, as the crawler
// does: what a cache evicted by the compressor costs the parse. `arena`:
// crawld's parser::Extractor (Gumbo on its arena, plus the tree walk)
// instead of Gumbo's bare parse on malloc. The two variants alternate
// pass by pass (kTimedRounds each) and the fastest pass of each counts, so
// a neighbour's load drifting during the measure hits both alike.
constexpr int kTimedRounds = 5;

struct Timed {
  double alone = 0, mixed = 0;  // CPU seconds, fastest pass
};

Timed ParseTimedEach(const std::vector<Page>& pages, int level, bool arena) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  std::string out(1 << 20, '\0');
  crawld::parser::Extractor ex{crawld::parser::Options()};
  crawld::parser::Page page_out;
  std::vector<crawld::url::Url> bases;
  for (const Page& p : pages) {
    auto u = crawld::url::Parse(p.url);
    bases.push_back(u.ok() ? *u : crawld::url::Url());
  }
  Timed best;
  for (int r = 0; r < 2 * kTimedRounds; ++r) {
    const bool compress = r % 2 == 1;
    double parse = 0;
    for (size_t i = 0; i < pages.size(); ++i) {
      const Page& page = pages[i];
      const double t0 = CpuSeconds();
      if (arena) {
        ex.ExtractInto(page.body(), "text/html", bases[i], "crawld", &page_out);
      } else {
        GumboOutput* g = gumbo_parse_with_options(
            &kGumboDefaultOptions, page.body().data(), page.body().size());
        gumbo_destroy_output(&kGumboDefaultOptions, g);
      }
      parse += CpuSeconds() - t0;
      if (compress && c != nullptr && page.block.size() < out.size() / 2) {
        libdeflate_gzip_compress(c, page.block.data(), page.block.size(),
                                 out.data(), out.size());
      }
    }
    double& slot = compress ? best.mixed : best.alone;
    if (r < 2 || parse < slot) slot = parse;
  }
  if (c != nullptr) libdeflate_free_compressor(c);
  return best;
}

double ExtractPass(const std::vector<Page>& pages, bool text) {
  crawld::parser::Options o;
  o.extract_text = text;
  crawld::parser::Extractor ex(o);
  crawld::parser::Page out;
  std::vector<crawld::url::Url> bases;
  bases.reserve(pages.size());
  for (const Page& p : pages) {
    auto u = crawld::url::Parse(p.url);
    if (!u.ok()) {
      fprintf(stderr, "gumbo_floor: bad WARC-Target-URI %s\n", p.url.c_str());
      exit(2);
    }
    bases.push_back(*u);
  }
  return Best([&] {
    for (size_t i = 0; i < pages.size(); ++i) {
      ex.ExtractInto(pages[i].body(), "text/html", bases[i], "crawld", &out);
    }
  });
}

double Ms(double seconds, size_t pages) {
  return seconds * 1000 / static_cast<double>(pages);
}

int Usage() {
  fprintf(stderr,
          "usage: gumbo_floor [--level N] [--max-pages N] [--levels] "
          "[--interleave] [--extract] FILE.warc.gz...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int level = 6;
  size_t max_pages = kSample;
  bool levels = false, interleave = false, extract = false;
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--level") == 0 && i + 1 < argc) {
      level = atoi(argv[++i]);
      if (level < 0 || level > 12) return Usage();
    } else if (strcmp(argv[i], "--max-pages") == 0 && i + 1 < argc) {
      max_pages = strtoul(argv[++i], nullptr, 10);
      if (max_pages == 0) return Usage();
    } else if (strcmp(argv[i], "--levels") == 0) {
      levels = true;
    } else if (strcmp(argv[i], "--interleave") == 0) {
      interleave = true;
    } else if (strcmp(argv[i], "--extract") == 0) {
      extract = true;
    } else if (argv[i][0] == '-') {
      return Usage();
    } else {
      files.push_back(argv[i]);
    }
  }
  std::vector<Page> pages;
  size_t body_bytes = 0;
  for (const char* file : files) {
    if (pages.size() >= max_pages) break;
    auto reader = crawld::store::WarcReader::Open(file);
    if (!reader.ok()) {
      fprintf(stderr, "%s: %s\n", file, reader.status().ToString().c_str());
      return 2;
    }
    crawld::store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok()) {
        fprintf(stderr, "%s: %s\n", file, more.status().ToString().c_str());
        return 2;
      }
      if (!*more || pages.size() == max_pages) break;
      if (rec.type() != "response") continue;
      size_t head_end = rec.block.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      std::string_view head(rec.block.data(), head_end);
      if (head.find("text/html") == std::string_view::npos) continue;
      Page p;
      p.block = std::move(rec.block);
      p.body_at = head_end + 4;
      p.url = rec.Header("WARC-Target-URI");
      body_bytes += p.block.size() - p.body_at;
      pages.push_back(std::move(p));
    }
  }
  if (pages.empty()) {
    fprintf(stderr, "gumbo_floor: no HTML responses\n");
    return 1;
  }
  const size_t n = pages.size();
  size_t deflated = 0;
  const double gumbo = Ms(GumboPass(pages), n);
  const double deflate =
      level == 0 ? 0.0 : Ms(DeflatePass(pages, level, &deflated), n);
  printf(
      "gumbo_ms=%.4f deflate_ms=%.4f floor_ms=%.4f level=%d pages=%zu "
      "page_bytes=%zu\n",
      gumbo, deflate, gumbo + deflate, level, n, body_bytes / n);
  if (levels) {
    size_t in = 0;
    for (const Page& p : pages) in += p.block.size();
    printf(
        "# gzip per record of the response blocks (head + body), %zu "
        "pages, %.0f bytes each\n",
        n, static_cast<double>(in) / static_cast<double>(n));
    printf("# codec level ms/page MB/s out_bytes/page ratio\n");
    for (int l = 1; l <= 12; ++l) {
      size_t out = 0;
      const double s = DeflatePass(pages, l, &out);
      printf("libdeflate %2d %.4f %.1f %.0f %.4f\n", l, Ms(s, n),
             static_cast<double>(in) / s / 1e6,
             static_cast<double>(out) / static_cast<double>(n),
             static_cast<double>(out) / static_cast<double>(in));
    }
    size_t out = 0;
    const double s = ZlibPass(pages, 6, &out);
    printf("zlib        6 %.4f %.1f %.0f %.4f\n", Ms(s, n),
           static_cast<double>(in) / s / 1e6,
           static_cast<double>(out) / static_cast<double>(n),
           static_cast<double>(out) / static_cast<double>(in));
  }
  if (interleave) {
    for (bool arena : {false, true}) {
      const Timed t = ParseTimedEach(pages, level, arena);
      printf(
          "interleave: %s timed page by page: %.4f ms alone, %.4f ms "
          "with a gzip (level %d) between parses: %.2fx\n",
          arena ? "parser::Extractor (arena)" : "gumbo_parse (malloc)",
          Ms(t.alone, n), Ms(t.mixed, n), level, t.mixed / t.alone);
    }
  }
  if (extract) {
    const double with_text = Ms(ExtractPass(pages, true), n);
    const double links_only = Ms(ExtractPass(pages, false), n);
    printf(
        "extract: parser::Extractor %.4f ms/page with text, %.4f without "
        "(bare gumbo %.4f)\n",
        with_text, links_only, gumbo);
  }
  return 0;
}
