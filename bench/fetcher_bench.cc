// Benchmarks of the fetcher: DecodeBody throughput, and loopback fetch
// throughput of the curl-multi-on-libuv integration (see
// docs/bench/fetcher.md).
#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <uv.h>
#include <zlib.h>

#include "fetcher/fetcher.h"
#include "tests/unit/fetcher/test_server.h"

namespace {

using crawld::fetcher::DecodeBody;
using crawld::fetcher::ErrorClass;
using crawld::fetcher::Fetcher;
using crawld::fetcher::Options;
using crawld::fetcher::Request;
using crawld::fetcher::Response;
using crawld::fetcher::testing::Exchange;
using crawld::fetcher::testing::TestServer;

// HTML-like text that compresses about as well as real pages (~5x).
std::string Page(size_t n) {
  std::string s;
  uint32_t x = 1;
  while (s.size() < n) {
    x = x * 1103515245 + 12345;
    s += "<p class=\"c" + std::to_string(x % 50) + "\"><a href=\"/p/" +
         std::to_string(x % 100000) + "\">word" + std::to_string(x % 977) +
         " text</a></p>\n";
  }
  s.resize(n);
  return s;
}

std::string Gzip(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Decoding a gzip body; bytes/s counts decoded output.
void BM_DecodeBodyGzip(benchmark::State& state) {
  const std::string page = Page(static_cast<size_t>(state.range(0)));
  Response r;
  (void)r.body.Append(Gzip(page));
  r.headers.emplace_back("Content-Encoding", "gzip");
  for (auto _ : state) {
    auto d = DecodeBody(r, 10 << 20);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(page.size()));
}
BENCHMARK(BM_DecodeBodyGzip)->Arg(20 << 10)->Arg(1 << 20);

// A batch of fetches over keep-alive loopback connections; items/s counts
// completed fetches, bytes/s body bytes.
void BM_FetchLoopback(benchmark::State& state) {
  const size_t body_size = static_cast<size_t>(state.range(0));
  const int batch = 100;
  TestServer server;
  const std::string body = Page(body_size);
  const std::string resp =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  server.Handle("/p", [&](Exchange& ex) { ex.Send(resp); });
  uv_loop_t loop;
  uv_loop_init(&loop);
  Options o;
  o.max_connections = static_cast<size_t>(state.range(1));
  o.user_agent = "crawld-bench";
  auto f = std::move(Fetcher::Create(&loop, o)).value();
  const std::string url =
      "http://127.0.0.1:" + std::to_string(server.port()) + "/p";
  int64_t errors = 0;
  for (auto _ : state) {
    int done = 0;
    for (int i = 0; i < batch; ++i) {
      f->Submit(Request{url, "127.0.0.1", {}}, [&](Response&& r) {
        ++done;
        errors += r.error != ErrorClass::kNone;
      });
    }
    while (done < batch) uv_run(&loop, UV_RUN_ONCE);
  }
  f.reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  server.Stop();
  if (errors > 0) state.SkipWithError("fetch errors");
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetBytesProcessed(state.iterations() * batch *
                          static_cast<int64_t>(body_size));
}
BENCHMARK(BM_FetchLoopback)
    ->Args({1 << 10, 1})
    ->Args({1 << 10, 16})
    ->Args({64 << 10, 16})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_ALL);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  curl_global_cleanup();
  return 0;
}
