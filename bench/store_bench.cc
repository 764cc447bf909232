// store/ benchmarks: writing WARC exchanges (records/s, bytes/s), reading
// them back, the per-record gzip cost of libdeflate against zlib, and the
// per-record overhead of the CDXJ index and the document feed.
// Figures and the command line: docs/bench/store.md.
//
// Input: a deterministic 20 KB HTML page (a fixed-seed generator over an
// English word list with realistic markup), so runs are comparable across
// machines without shipping a fixture.
#include <benchmark/benchmark.h>
#include <libdeflate.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/store.h"

namespace {

std::string MakeHtml(size_t size) {
  static const char* kWords[] = {
      "the",     "crawler", "archive", "record", "page",   "link",  "web",
      "content", "index",   "search",  "news",   "about",  "home",  "data",
      "policy",  "contact", "report",  "update", "market", "local", "world",
      "science", "health",  "travel",  "sports", "event",  "today", "city"};
  std::mt19937 rng(20240101);
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>Benchmark page</title><link rel=\"stylesheet\" "
      "href=\"/static/site.css\"></head><body><div class=\"wrap\">\n";
  while (html.size() < size - 32) {
    if (rng() % 5 == 0) {
      html += "<a href=\"/section/" + std::to_string(rng() % 1000) + "/" +
              kWords[rng() % 28] + ".html\" class=\"nav-link\">" +
              kWords[rng() % 28] + "</a>\n";
    } else {
      html += "<p>";
      for (int i = 0; i < 12; ++i) {
        html += kWords[rng() % 28];
        html += ' ';
      }
      html += "</p>\n";
    }
  }
  html += "</div></body></html>\n";
  html.resize(size, ' ');
  return html;
}

const std::string& Html20k() {
  static const std::string* html = new std::string(MakeHtml(20 * 1024));
  return *html;
}

std::string TempDir() {
  char tmpl[] = "/tmp/store_bench-XXXXXX";
  return ::mkdtemp(tmpl);
}

crawld::store::FetchRecord MakeFetch(const crawld::DocBuffer* body) {
  crawld::store::FetchRecord r;
  r.target_uri = "http://bench.test/section/1/page.html";
  r.ip = "127.0.0.1";
  r.fetch_time_us = 1700000000000000;
  r.request_head =
      "GET /section/1/page.html HTTP/1.1\r\nHost: bench.test\r\n"
      "User-Agent: crawld/0.1 (+http://bench.test/bot)\r\n"
      "Accept-Encoding: gzip, br\r\n\r\n";
  r.response_head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
      "Content-Length: 20480\r\nServer: bench\r\n\r\n";
  r.body = body;
  return r;
}

// One WriteExchange = one response + one request record (two gzip members).
void BM_WriteExchange20KB(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::Options o;
  o.dir = dir;
  o.gzip_level = static_cast<int>(state.range(0));
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  o.rotate_bytes = 256ull << 20;
  auto w = crawld::store::WarcWriter::Open(o);
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  crawld::DocBuffer body;
  (void)body.Append(Html20k());
  const auto fetch = MakeFetch(&body);
  const uint64_t bytes =
      fetch.request_head.size() + fetch.response_head.size() + body.size();
  uint64_t start_offset = (*w)->current_offset();
  std::string start_file = (*w)->current_file();
  uint64_t written = 0;
  for (auto _ : state) {
    auto ex = (*w)->WriteExchange(fetch);
    if (!ex.ok()) {
      state.SkipWithError(ex.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(ex->payload_digest.data());
  }
  written = (*w)->current_offset() - start_offset;
  (void)(*w)->Close();
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  if (start_file == (*w)->current_file() && state.iterations() > 0) {
    state.counters["gz_bytes_per_exchange"] =
        static_cast<double>(written) / static_cast<double>(state.iterations());
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WriteExchange20KB)->Arg(1)->Arg(6)->Arg(9);

// The body's way into the WARC at the cheapest level, for a 20 KB and a
// 1 MB page: where copies of the body weigh most next to the compressor
// (issue 16 counts two per page). Arg: body bytes.
void BM_WriteExchangeLevel1(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::Options o;
  o.dir = dir;
  o.gzip_level = 1;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  o.rotate_bytes = 64ull << 20;
  auto w = crawld::store::WarcWriter::Open(o);
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  const std::string html = MakeHtml(static_cast<size_t>(state.range(0)));
  crawld::DocBuffer::Options bo;
  bo.memory_limit = html.size();  // in memory, as a page under the limit
  crawld::DocBuffer body(bo);
  (void)body.Append(html);
  auto fetch = MakeFetch(&body);
  fetch.response_head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
      "Content-Length: " +
      std::to_string(html.size()) + "\r\n\r\n";
  for (auto _ : state) {
    auto ex = (*w)->WriteExchange(fetch);
    if (!ex.ok()) {
      state.SkipWithError(ex.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(ex->payload_digest.data());
  }
  (void)(*w)->Close();
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * html.size()));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WriteExchangeLevel1)->Arg(20 << 10)->Arg(1 << 20);

// The same exchange at level 6, with the index and feed off (arg 0), the
// CDXJ index only (1), or index + feed (2): the difference to arg 0 is the
// index/feed overhead per response record.
void BM_WriteExchangeIndexed20KB(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::Options o;
  o.dir = dir + "/warc";
  o.gzip_level = 6;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  o.rotate_bytes = 256ull << 20;
  if (state.range(0) >= 1) o.index_dir = dir + "/index";
  o.write_feed = state.range(0) >= 2;
  auto w = crawld::store::WarcWriter::Open(o);
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  crawld::DocBuffer body;
  (void)body.Append(Html20k());
  auto fetch = MakeFetch(&body);
  int i = 0;
  for (auto _ : state) {
    // Distinct URLs, as in a crawl (the SURT key is computed per record).
    fetch.target_uri =
        "http://www.bench.test/section/" + std::to_string(i++) + "/page.html";
    auto ex = (*w)->WriteExchange(fetch);
    if (!ex.ok()) {
      state.SkipWithError(ex.status().ToString().c_str());
      break;
    }
  }
  (void)(*w)->Close();
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WriteExchangeIndexed20KB)->Arg(0)->Arg(1)->Arg(2);

// The index/feed work alone, without the WARC: a SURT key, a CDXJ line
// and a feed append per item.
void BM_SurtKey(benchmark::State& state) {
  const std::string url =
      "http://www.bench.test/section/12/Page.html?utm=x&b=2&a=1";
  for (auto _ : state) benchmark::DoNotOptimize(crawld::store::Surt(url));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SurtKey);

crawld::store::FeedEntry BenchEntry(int i) {
  crawld::store::FeedEntry e;
  e.url = "http://www.bench.test/section/" + std::to_string(i) + "/page.html";
  e.warc_file = "crawld-20240102030405-00000-00000.warc.gz";
  e.offset = static_cast<uint64_t>(i) * 7000;
  e.length = 6543;
  e.digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
  e.status = 200;
  e.mime = "text/html";
  e.fetch_time_us = 1700000000000000 + i;
  return e;
}

void BM_FeedAppend(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::FeedOptions o;
  o.dir = dir;
  o.fsync = false;
  auto w = crawld::store::FeedWriter::Open(o);
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  int i = 0;
  for (auto _ : state) {
    if (!(*w)->Append(BenchEntry(i++)).ok()) {
      state.SkipWithError("append failed");
      break;
    }
  }
  (void)(*w)->Close();
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FeedAppend);

// A consumer reading the feed in pages of state.range(0) entries.
void BM_FeedReadPages(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::FeedOptions o;
  o.dir = dir;
  o.fsync = false;
  o.segment_bytes = 1 << 20;
  constexpr int kEntries = 20000;
  {
    auto w = crawld::store::FeedWriter::Open(o);
    for (int i = 0; i < kEntries; ++i) (void)(*w)->Append(BenchEntry(i));
    (void)(*w)->Close();
  }
  auto r = crawld::store::FeedReader::Open(dir);
  const size_t page = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    std::string cursor;
    size_t n = 0;
    for (;;) {
      auto p = (*r)->Read(cursor, page);
      if (!p.ok() || p->entries.empty()) break;
      n += p->entries.size();
      cursor = p->next_cursor;
    }
    if (n != kEntries) {
      state.SkipWithError("feed read incomplete");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kEntries);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FeedReadPages)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// Reading and verifying the records back (decompress + parse + sha1).
void BM_VerifyFile(benchmark::State& state) {
  const std::string dir = TempDir();
  crawld::store::Options o;
  o.dir = dir;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  auto w = crawld::store::WarcWriter::Open(o);
  crawld::DocBuffer body;
  (void)body.Append(Html20k());
  const auto fetch = MakeFetch(&body);
  constexpr int kExchanges = 200;
  for (int i = 0; i < kExchanges; ++i) (void)(*w)->WriteExchange(fetch);
  const std::string path = dir + "/" + (*w)->current_file();
  (void)(*w)->Close();
  const uint64_t bytes =
      kExchanges *
      (fetch.request_head.size() + fetch.response_head.size() + body.size());
  for (auto _ : state) {
    auto report = crawld::store::VerifyFile(path);
    if (!report.ok() || !report->ok()) {
      state.SkipWithError("verify failed");
      break;
    }
    benchmark::DoNotOptimize(report->records);
  }
  state.SetItemsProcessed(state.iterations() * (2 * kExchanges + 1));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_VerifyFile)->Unit(benchmark::kMillisecond);

// Per-record gzip of a 20 KB page: libdeflate with one compressor reused
// (what the writer does) ...
void BM_GzipRecord_Libdeflate(benchmark::State& state) {
  const std::string& in = Html20k();
  libdeflate_compressor* c =
      libdeflate_alloc_compressor(static_cast<int>(state.range(0)));
  std::vector<char> out(libdeflate_gzip_compress_bound(c, in.size()));
  size_t n = 0;
  for (auto _ : state) {
    n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(),
                                 out.size());
    benchmark::DoNotOptimize(n);
  }
  libdeflate_free_compressor(c);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["out_bytes"] = static_cast<double>(n);
}
BENCHMARK(BM_GzipRecord_Libdeflate)->Arg(1)->Arg(6)->Arg(9);

// ... zlib with a fresh stream per record ...
void BM_GzipRecord_ZlibFreshStream(benchmark::State& state) {
  const std::string& in = Html20k();
  std::vector<char> out(compressBound(static_cast<uLong>(in.size())) + 64);
  size_t n = 0;
  for (auto _ : state) {
    z_stream zs{};
    deflateInit2(&zs, static_cast<int>(state.range(0)), Z_DEFLATED, 15 + 16, 8,
                 Z_DEFAULT_STRATEGY);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    deflate(&zs, Z_FINISH);
    n = zs.total_out;
    deflateEnd(&zs);
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["out_bytes"] = static_cast<double>(n);
}
BENCHMARK(BM_GzipRecord_ZlibFreshStream)->Arg(1)->Arg(6)->Arg(9);

// ... and zlib with one stream reset per record.
void BM_GzipRecord_ZlibReset(benchmark::State& state) {
  const std::string& in = Html20k();
  std::vector<char> out(compressBound(static_cast<uLong>(in.size())) + 64);
  z_stream zs{};
  deflateInit2(&zs, static_cast<int>(state.range(0)), Z_DEFLATED, 15 + 16, 8,
               Z_DEFAULT_STRATEGY);
  size_t n = 0;
  for (auto _ : state) {
    deflateReset(&zs);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    deflate(&zs, Z_FINISH);
    n = zs.total_out;
    benchmark::DoNotOptimize(n);
  }
  deflateEnd(&zs);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.counters["out_bytes"] = static_cast<double>(n);
}
BENCHMARK(BM_GzipRecord_ZlibReset)->Arg(1)->Arg(6)->Arg(9);

// SHA-1 of the block (two digests per response: block and payload).
void BM_Sha1Digest20KB(benchmark::State& state) {
  const std::string& in = Html20k();
  for (auto _ : state) {
    benchmark::DoNotOptimize(crawld::store::Sha1Digest(in));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_Sha1Digest20KB);

}  // namespace

BENCHMARK_MAIN();
