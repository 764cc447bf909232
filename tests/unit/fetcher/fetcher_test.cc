// Tests of fetcher::Fetcher with real sockets against the loopback
// TestServer (test_server.h).
#include "fetcher/fetcher.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/unit/fetcher/test_server.h"

extern char** environ;

namespace crawld::fetcher {
namespace {

using testing::Exchange;
using testing::TestServer;

class CurlEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(curl_global_init(CURL_GLOBAL_ALL), 0); }
  void TearDown() override { curl_global_cleanup(); }
};
[[maybe_unused]] ::testing::Environment* const kCurlEnv =
    ::testing::AddGlobalTestEnvironment(new CurlEnvironment);

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245 + 12345;
    s[i] = static_cast<char>('a' + (x >> 16) % 26);
  }
  return s;
}

std::string Gzip(const std::string& in, int window_bits = 15 + 16) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
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

std::string Ok(const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra + "\r\n" + body;
}

std::string BodyOf(const Response& r) {
  auto s = r.body.ReadPrefix(SIZE_MAX);
  return s.ok() ? *s : "<read error>";
}

class FetcherTest : public ::testing::Test {
 public:
  void SetUp() override {
    ASSERT_TRUE(server_.ok());
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(
        &tick_, [](uv_timer_t*) {}, 10, 10);
    options_.user_agent = "crawld-test/1.0 (+http://example.invalid/bot)";
    options_.body_buffer.memory_limit = 64 * 1024;
    server_.Handle("/small", [](Exchange& ex) { ex.Send(Ok("hello world")); });
  }
  void TearDown() override {
    fetcher_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);  // no handle left behind
    server_.Stop();
  }

  // Bounded in wall time so that a hang fails the test; not a timing
  // assertion.
  bool RunUntil(const std::function<bool()>& pred, int seconds = 60) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }

  Fetcher& Make() {
    auto f = Fetcher::Create(&loop_, options_);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    fetcher_ = std::move(f).value();
    return *fetcher_;
  }

  std::string Url(const std::string& path, const std::string& host = "") {
    return "http://" + (host.empty() ? "127.0.0.1" : host) + ":" +
           std::to_string(server_.port()) + path;
  }

  Response Fetch(Request rq) {
    if (!fetcher_) Make();
    if (rq.ip.empty()) rq.ip = "127.0.0.1";
    std::optional<Response> out;
    int calls = 0;
    fetcher_->Submit(std::move(rq), [&](Response&& r) {
      ++calls;
      out = std::move(r);
    });
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    EXPECT_EQ(calls, 1);
    return out ? std::move(*out) : Response();
  }
  Response Get(const std::string& path) { return Fetch({Url(path), "", {}}); }

  TestServer server_;
  uv_loop_t loop_;
  uv_timer_t tick_;
  Options options_;
  std::unique_ptr<Fetcher> fetcher_;
};

// RFC 9110 15.3.1: a plain 200 with its head and body.
TEST_F(FetcherTest, Rfc9110_Sec15_3_1_SmallBody) {
  Response r = Get("/small");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(BodyOf(r), "hello world");
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.Header("content-length"), "11");
  EXPECT_EQ(r.response_head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(r.response_head.substr(r.response_head.size() - 4), "\r\n\r\n");
  EXPECT_EQ(r.protocol, "http/1.1");  // plain http: never h2 (no h2c)
  EXPECT_EQ(r.ip, "127.0.0.1");
  EXPECT_GT(r.start_us, 0);
  EXPECT_GE(r.end_us, r.start_us);
}

TEST_F(FetcherTest, Crawld_RequestHeadIsCapturedWithUserAgent) {
  Response r = Get("/small");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.request_head.rfind("GET /small HTTP/1.1\r\n", 0), 0u)
      << r.request_head;
  EXPECT_NE(
      r.request_head.find("\r\nUser-Agent: " + options_.user_agent + "\r\n"),
      std::string::npos)
      << r.request_head;
  EXPECT_NE(
      r.request_head.find("\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n"),
      std::string::npos);
  EXPECT_EQ(r.request_head.substr(r.request_head.size() - 4), "\r\n\r\n");
}

TEST_F(FetcherTest, Crawld_ExtraHeadersAreSent) {
  std::string seen;
  server_.Handle("/h", [&](Exchange& ex) {
    seen = ex.Header("If-Modified-Since") + "|" + ex.Header("Accept-Encoding");
    ex.Send(Ok("x"));
  });
  Response r = Fetch({Url("/h"),
                      "",
                      {"If-Modified-Since: Sat, 01 Jan 2000 "
                       "00:00:00 GMT",
                       "Accept-Encoding: identity"}});
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(seen, "Sat, 01 Jan 2000 00:00:00 GMT|identity");
}

TEST_F(FetcherTest, Crawld_LargeBodySpillsAndIsByteExact) {
  const std::string big = Pattern(3 * 1024 * 1024 + 17);
  server_.Handle("/large", [&](Exchange& ex) { ex.Send(Ok(big)); });
  Response r = Get("/large");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_TRUE(r.body.spilled());
  EXPECT_EQ(r.body.size(), big.size());
  EXPECT_TRUE(BodyOf(r) == big);
  EXPECT_FALSE(r.truncated);
}

TEST_F(FetcherTest, Crawld_BodyOverCapIsTruncatedKeepingWhatFits) {
  const std::string big = Pattern(2 * 1024 * 1024);
  server_.Handle("/huge", [&](Exchange& ex) {
    ex.Send(Ok(big));
    ex.close_after = true;
  });
  options_.max_body_bytes = 100000;
  Response r = Get("/huge");
  EXPECT_EQ(r.error, ErrorClass::kTooLarge) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "length");
  ASSERT_EQ(r.body.size(), 100000u);
  EXPECT_TRUE(BodyOf(r) == big.substr(0, 100000));
}

TEST_F(FetcherTest, Crawld_BodyExactlyAtCapIsComplete) {
  server_.Handle("/exact", [](Exchange& ex) { ex.Send(Ok(Pattern(1000))); });
  options_.max_body_bytes = 1000;
  Response r = Get("/exact");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.body.size(), 1000u);
}

TEST_F(FetcherTest, Crawld_PerRequestBodyCapOverridesOptions) {
  server_.Handle("/k", [](Exchange& ex) {
    ex.Send(Ok(Pattern(5000)));
    ex.close_after = true;
  });
  Request rq{Url("/k"), "", {}};
  rq.max_body_bytes = 10;
  Response r = Fetch(rq);
  EXPECT_EQ(r.error, ErrorClass::kTooLarge);
  EXPECT_EQ(BodyOf(r), Pattern(5000).substr(0, 10));
}

TEST_F(FetcherTest, Crawld_SlowFirstByteBeyondTotalTimeoutIsTimeout) {
  server_.Handle("/slow", [](Exchange& ex) {
    if (ex.Sleep(20000)) ex.Send(Ok("late"));
    ex.close_after = true;
  });
  options_.total_timeout_ms = 300;
  Response r = Get("/slow");
  EXPECT_EQ(r.error, ErrorClass::kTimeout) << r.error_message;
  EXPECT_EQ(r.status_code, 0);
  EXPECT_FALSE(r.truncated);  // nothing arrived, nothing was cut
  EXPECT_FALSE(r.request_head.empty());
}

TEST_F(FetcherTest, Crawld_TrickleBelowLowSpeedIsTimeout) {
  server_.Handle("/trickle", [](Exchange& ex) {
    if (!ex.Send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nab")) return;
    for (int i = 0; i < 200 && ex.Sleep(100); ++i) {
      if (!ex.Send("x")) break;
    }
    ex.close_after = true;
  });
  options_.low_speed_bytes_per_s = 1000;
  options_.low_speed_time_s = 1;
  Response r = Get("/trickle");
  EXPECT_EQ(r.error, ErrorClass::kTimeout) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "time");
  EXPECT_EQ(BodyOf(r).substr(0, 2), "ab");
}

// RFC 9110 15.4.2: the 301 is returned, its Location not followed.
TEST_F(FetcherTest, Rfc9110_Sec15_4_2_RedirectIsNotFollowed) {
  server_.Handle("/moved", [](Exchange& ex) {
    ex.Send(
        "HTTP/1.1 301 Moved Permanently\r\nLocation: /small\r\n"
        "Content-Length: 5\r\n\r\nmoved");
  });
  Response r = Get("/moved");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.status_code, 301);
  EXPECT_EQ(r.Header("Location"), "/small");
  EXPECT_EQ(BodyOf(r), "moved");
  EXPECT_EQ(server_.Hits("/small"), 0);
}

// RFC 9110 8.4: the body is kept as sent (for WARC); DecodeBody undoes it.
TEST_F(FetcherTest, Rfc9110_Sec8_4_GzipBodyKeptRawAndDecodable) {
  const std::string text = Pattern(50000);
  const std::string gz = Gzip(text);
  server_.Handle("/gz", [&](Exchange& ex) {
    ex.Send(Ok(gz, "Content-Encoding: gzip\r\n"));
  });
  Response r = Get("/gz");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_TRUE(BodyOf(r) == gz);
  bool capped = true;
  auto decoded = DecodeBody(r, 1 << 20, &capped);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == text);
  EXPECT_FALSE(capped);
}

TEST_F(FetcherTest, Crawld_GzipBombIsCappedWhenDecoding) {
  // 100 MiB of zeros, gzip-compressed (about 100 KB on the wire).
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string zeros(1 << 20, '\0'), bomb;
  char out[65536];
  for (int i = 0; i < 100; ++i) {
    zs.next_in = reinterpret_cast<Bytef*>(zeros.data());
    zs.avail_in = static_cast<uInt>(zeros.size());
    do {
      zs.next_out = reinterpret_cast<Bytef*>(out);
      zs.avail_out = sizeof(out);
      deflate(&zs, i == 99 ? Z_FINISH : Z_NO_FLUSH);
      bomb.append(out, sizeof(out) - zs.avail_out);
    } while (zs.avail_out == 0);
  }
  deflateEnd(&zs);
  ASSERT_LT(bomb.size(), 1u << 20);
  server_.Handle("/bomb", [&](Exchange& ex) {
    ex.Send(Ok(bomb, "Content-Encoding: gzip\r\n"));
  });
  Response r = Get("/bomb");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.body.size(), bomb.size());
  bool capped = false;
  auto decoded = DecodeBody(r, 1 << 20, &capped);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(capped);
  ASSERT_EQ(decoded->size(), size_t{1} << 20);
  EXPECT_EQ(decoded->find_first_not_of('\0'), std::string::npos);
}

TEST_F(FetcherTest, Crawld_ConnectionRefusedIsConnect) {
  int port;
  {
    TestServer gone;  // bound, then closed: nothing listens there
    port = gone.port();
  }
  Response r =
      Fetch({"http://127.0.0.1:" + std::to_string(port) + "/", "", {}});
  EXPECT_EQ(r.error, ErrorClass::kConnect) << r.error_message;
  EXPECT_EQ(r.status_code, 0);
  EXPECT_FALSE(r.error_message.empty());
}

TEST_F(FetcherTest, Crawld_HttpsToPlainHttpPortIsTls) {
  Response r =
      Fetch({"https://127.0.0.1:" + std::to_string(server_.port()) + "/small",
             "",
             {}});
  EXPECT_EQ(r.error, ErrorClass::kTls) << r.error_message;
  EXPECT_EQ(ErrorClassName(r.error), "tls");
}

// A real TLS server with a fresh self-signed certificate for tls.test, on a
// free loopback port; killed by PID. kOpenSsl: `openssl s_server -www`
// (HTTP/1.0, no ALPN); kOpenSslLyingH2: `openssl s_server -rev -alpn h2`,
// which picks "h2" by ALPN and then speaks no HTTP/2 (it echoes lines
// reversed, and the h2 preface is no line); kNghttpd: Debian's nghttpd, a
// real HTTP/2 server (h2 only), serving kH2Page as /page.html.
class TlsServer {
 public:
  enum class Kind { kOpenSsl, kOpenSslLyingH2, kNghttpd };
  static constexpr std::string_view kH2Page =
      "<html><body><a href=\"/next.html\">next</a></body></html>\n";

  explicit TlsServer(Kind kind = Kind::kOpenSsl) {
    char tmpl[] = "/tmp/crawld-tls-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string gen =
        "openssl req -x509 -newkey ec -pkeyopt "
        "ec_paramgen_curve:prime256v1 -nodes -keyout " +
        dir_ + "/key.pem -out " + dir_ +
        "/cert.pem -subj /CN=tls.test -addext "
        "subjectAltName=DNS:tls.test -days 2 >/dev/null 2>&1";
    if (std::system(gen.c_str()) != 0) return;
    if (kind == Kind::kNghttpd) {
      mkdir((dir_ + "/www").c_str(), 0755);
      FILE* page = fopen((dir_ + "/www/page.html").c_str(), "w");
      if (page == nullptr) return;
      fwrite(kH2Page.data(), 1, kH2Page.size(), page);
      fclose(page);
    }
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      int port;
      {
        TestServer probe;  // a free port, released at once
        port = probe.port();
      }
      std::vector<std::string> args;
      if (kind == Kind::kNghttpd) {
        args = {"/usr/sbin/nghttpd", "-a",
                "127.0.0.1",         "-d",
                dir_ + "/www",       std::to_string(port),
                dir_ + "/key.pem",   dir_ + "/cert.pem"};
      } else {
        args = {"/usr/bin/openssl",
                "s_server",
                "-accept",
                "127.0.0.1:" + std::to_string(port),
                "-cert",
                dir_ + "/cert.pem",
                "-key",
                dir_ + "/key.pem",
                "-www",
                "-quiet"};
        if (kind == Kind::kOpenSslLyingH2) {
          *std::find(args.begin(), args.end(), "-www") = "-rev";
          args.push_back("-alpn");
          args.push_back("h2");
        }
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
      pid_t pid;
      int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) return;
      // Ready once it accepts TCP connections (bounded: 10 s). Its stdout
      // is a buffered file, so "ACCEPT" cannot be waited for.
      bool ready = false;
      for (int i = 0; i < 1000 && !ready; ++i) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) break;  // bind failed
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        ready = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
        close(fd);
        if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (ready) {
        pid_ = pid;
        port_ = port;
      } else {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  }
  ~TlsServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string cert() const { return dir_ + "/cert.pem"; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// RFC 9110 4.3.4 / RFC 6125: the certificate must be trusted and match the
// URL's host, which stays the reference name although we pin the address.
TEST_F(FetcherTest, Rfc9110_Sec4_3_4_TlsVerifiesPinnedHostName) {
  TlsServer tls;
  ASSERT_TRUE(tls.ok());
  const std::string port = std::to_string(tls.port());
  options_.ca_file = tls.cert();
  Make();
  Response good = Fetch({"https://tls.test:" + port + "/", "127.0.0.1", {}});
  EXPECT_EQ(good.error, ErrorClass::kNone) << good.error_message;
  EXPECT_EQ(good.status_code, 200);
  EXPECT_NE(BodyOf(good).find("<HTML>"), std::string::npos);

  Response wrong_name =
      Fetch({"https://other.test:" + port + "/", "127.0.0.1", {}});
  EXPECT_EQ(wrong_name.error, ErrorClass::kTls) << wrong_name.error_message;
  EXPECT_EQ(wrong_name.status_code, 0);
}

TEST_F(FetcherTest, Crawld_UntrustedCertificateIsTls) {
  TlsServer tls;
  ASSERT_TRUE(tls.ok());
  Make();  // system trust store: our self-signed CA is not in it
  Response r = Fetch({"https://tls.test:" + std::to_string(tls.port()) + "/",
                      "127.0.0.1",
                      {}});
  EXPECT_EQ(r.error, ErrorClass::kTls) << r.error_message;

  options_.verify_tls = false;  // an explicit opt-out accepts it
  Make();
  Response insecure =
      Fetch({"https://tls.test:" + std::to_string(tls.port()) + "/",
             "127.0.0.1",
             {}});
  EXPECT_EQ(insecure.error, ErrorClass::kNone) << insecure.error_message;
}

// RFC 9113 3.2 (ALPN "h2"), recorded as the WARC extensions for HTTP/2
// say (fetcher/h2_head.h): a real h2 server's response and our request in
// HTTP/1.1 syntax, the protocol named, the body as sent.
TEST_F(FetcherTest, Rfc9113_Sec3_2_H2ExchangeIsHandedOverAsHttp11) {
  TlsServer h2(TlsServer::Kind::kNghttpd);
  ASSERT_TRUE(h2.ok()) << "nghttpd (Debian's nghttp2-server) is needed";
  const std::string port = std::to_string(h2.port());
  options_.ca_file = h2.cert();
  Make();
  Response r =
      Fetch({"https://tls.test:" + port + "/page.html", "127.0.0.1", {}});
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.protocol, "h2");
  EXPECT_EQ(BodyOf(r), TlsServer::kH2Page);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.response_head.rfind("HTTP/1.1 200 \r\n", 0), 0u)
      << r.response_head;
  EXPECT_NE(
      r.response_head.find("\r\ncontent-length: " +
                           std::to_string(TlsServer::kH2Page.size()) + "\r\n"),
      std::string::npos)
      << r.response_head;
  EXPECT_EQ(r.Header("Content-Type"), "text/html");
  EXPECT_EQ(r.response_head.substr(r.response_head.size() - 4), "\r\n\r\n");
  EXPECT_EQ(
      r.request_head.rfind(
          "GET /page.html HTTP/1.1\r\nhost: tls.test:" + port + "\r\n", 0),
      0u)
      << r.request_head;
  EXPECT_NE(
      r.request_head.find("\r\nuser-agent: " + options_.user_agent + "\r\n"),
      std::string::npos)
      << r.request_head;
  EXPECT_NE(
      r.request_head.find("\r\naccept-encoding: gzip, deflate, br, zstd\r\n"),
      std::string::npos)
      << r.request_head;
  EXPECT_EQ(r.request_head.find("HTTP/2"), std::string::npos);
  EXPECT_EQ(r.request_head.substr(r.request_head.size() - 4), "\r\n\r\n");

  // A 404 too, and the h2 connection is reused, one transfer at a time.
  Response missing =
      Fetch({"https://tls.test:" + port + "/none.html", "127.0.0.1", {}});
  EXPECT_EQ(missing.error, ErrorClass::kNone) << missing.error_message;
  EXPECT_EQ(missing.status_code, 404);
  EXPECT_EQ(missing.response_head.rfind("HTTP/1.1 404 \r\n", 0), 0u);
  EXPECT_EQ(fetcher_->stats().connections, 1u);
}

// fetch.http2 = false: HTTP/1.1 only, as before. nghttpd speaks h2 alone,
// so it cannot serve us then; an HTTP/1 TLS server still can.
TEST_F(FetcherTest, Crawld_Http2OffOffersOnlyHttp11) {
  TlsServer h1;
  ASSERT_TRUE(h1.ok());
  options_.ca_file = h1.cert();
  options_.http2 = false;
  Make();
  Response r = Fetch(
      {"https://tls.test:" + std::to_string(h1.port()) + "/", "127.0.0.1", {}});
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.protocol, "http/1.0");  // openssl s_server -www's reply
  EXPECT_EQ(r.request_head.rfind("GET / HTTP/1.1\r\n", 0), 0u);
}

// A server that picks h2 by ALPN and then does not speak it: a protocol
// failure with nothing to record, and the fetcher stays usable.
TEST_F(FetcherTest, Crawld_ServerLyingAboutH2IsProtocol) {
  TlsServer liar(TlsServer::Kind::kOpenSslLyingH2);
  ASSERT_TRUE(liar.ok());
  options_.ca_file = liar.cert();
  options_.total_timeout_ms = 10000;  // bounded, should it hang
  Make();
  Response r = Fetch({"https://tls.test:" + std::to_string(liar.port()) + "/",
                      "127.0.0.1",
                      {}});
  EXPECT_EQ(r.error, ErrorClass::kProtocol) << r.error_message;
  EXPECT_EQ(r.status_code, 0);
  EXPECT_TRUE(r.response_head.empty());
  EXPECT_TRUE(r.protocol.empty());
  EXPECT_EQ(Get("/small").error, ErrorClass::kNone);
}

TEST_F(FetcherTest, Crawld_AddressIsPinnedWithoutDns) {
  std::string host_seen;
  server_.Handle("/who", [&](Exchange& ex) {
    host_seen = ex.Header("Host");
    ex.Send(Ok("pinned"));
  });
  Response r = Fetch({Url("/who", "pinned.invalid"), "127.0.0.1", {}});
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "pinned");
  EXPECT_EQ(host_seen, "pinned.invalid:" + std::to_string(server_.port()));
  EXPECT_EQ(r.ip, "127.0.0.1");
}

// Every spelling of a host name gets our address: a trailing dot, upper
// case, userinfo before it. A missed pin fails the fetch: curl is not
// allowed to look a name up itself.
TEST_F(FetcherTest, Crawld_AddressIsPinnedForEveryHostSpelling) {
  server_.Handle("/who", [](Exchange& ex) { ex.Send(Ok("pinned")); });
  for (const std::string host :
       {"dot.invalid.", "UPPER.invalid", "user@at.invalid"}) {
    Response r = Fetch({Url("/who", host), "127.0.0.1", {}});
    EXPECT_EQ(r.error, ErrorClass::kNone) << host << ": " << r.error_message;
    EXPECT_EQ(BodyOf(r), "pinned") << host;
  }
  // An IP literal is pinned too (it may differ from the resolved address
  // only if the caller says so).
  Response lit = Fetch({Url("/who", "127.0.0.1"), "127.0.0.1", {}});
  EXPECT_EQ(lit.error, ErrorClass::kNone) << lit.error_message;
}

TEST(FetcherIpv6, Crawld_Ipv6AddressIsPinned) {
  TestServer server(/*ipv6=*/true);
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here";
  std::string host_seen;
  server.Handle("/who", [&](Exchange& ex) {
    host_seen = ex.Header("Host");
    ex.Send(Ok("six"));
  });
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto f = Fetcher::Create(&loop, Options());
  ASSERT_TRUE(f.ok());
  std::optional<Response> out;
  (*f)->Submit({"http://v6.invalid:" + std::to_string(server.port()) + "/who",
                "[::1]",
                {}},
               [&](Response&& r) { out = std::move(r); });
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!out && std::chrono::steady_clock::now() < end) {
    uv_run(&loop, UV_RUN_ONCE);
  }
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->error, ErrorClass::kNone) << out->error_message;
  EXPECT_EQ(BodyOf(*out), "six");
  EXPECT_EQ(out->ip, "::1");
  EXPECT_EQ(host_seen, "v6.invalid:" + std::to_string(server.port()));
  f->reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST_F(FetcherTest, Crawld_ManyConcurrentTransfersCompleteExactlyOnce) {
  server_.Handle("/n", [](Exchange& ex) { ex.Send(Ok("n")); });
  options_.max_connections = 16;
  Make();
  constexpr int kN = 200;
  std::vector<int> calls(kN, 0);
  int done = 0, good = 0;
  for (int i = 0; i < kN; ++i) {
    fetcher_->Submit({Url("/n"), "127.0.0.1", {}}, [&, i](Response&& r) {
      ++calls[i];
      ++done;
      good += r.error == ErrorClass::kNone && r.status_code == 200 &&
              BodyOf(r) == "n";
    });
  }
  EXPECT_EQ(fetcher_->in_flight(), size_t{kN});
  ASSERT_TRUE(RunUntil([&] { return done >= kN; }));
  // Let any duplicate callback show up.
  for (int i = 0; i < 5; ++i) uv_run(&loop_, UV_RUN_NOWAIT);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(calls[i], 1) << i;
  EXPECT_EQ(good, kN);
  EXPECT_EQ(fetcher_->in_flight(), 0u);
  EXPECT_EQ(server_.requests(), kN);
  EXPECT_LE(server_.max_concurrent_connections(), 16);
  EXPECT_EQ(fetcher_->stats().completed, uint64_t{kN});
}

// Waiting for a connection slot does not eat into a transfer's timeout.
TEST_F(FetcherTest, Crawld_QueuedTransfersTimeoutStartsWhenTheyStart) {
  server_.Handle("/w", [](Exchange& ex) {
    ex.Sleep(400);
    ex.Send(Ok("w"));
  });
  options_.max_connections = 1;
  options_.total_timeout_ms = 5000;
  Make();
  constexpr int kN = 16;  // 16 x 400 ms in a row: longer than 5000 ms
  int done = 0, good = 0;
  for (int i = 0; i < kN; ++i) {
    fetcher_->Submit({Url("/w"), "127.0.0.1", {}}, [&](Response&& r) {
      ++done;
      good += r.error == ErrorClass::kNone;
    });
  }
  EXPECT_EQ(fetcher_->in_flight(), size_t{kN});
  ASSERT_TRUE(RunUntil([&] { return done == kN; }, 120));
  EXPECT_EQ(good, kN);
  EXPECT_EQ(server_.max_concurrent_connections(), 1);
}

TEST_F(FetcherTest, Rfc9112_Sec9_3_KeepAliveConnectionIsReused) {
  Make();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Get("/small").error, ErrorClass::kNone);
  EXPECT_EQ(server_.connections(), 1);
  EXPECT_EQ(fetcher_->stats().connections, 1u);
}

TEST_F(FetcherTest, Crawld_TransferWithoutKeepAliveClosesItsConnection) {
  Make();
  Request last{Url("/small"), "127.0.0.1", {}};
  last.keep_alive = false;
  ASSERT_EQ(Get("/small").error, ErrorClass::kNone);
  ASSERT_EQ(Fetch(last).error, ErrorClass::kNone);  // reuses, then closes
  EXPECT_EQ(server_.connections(), 1);
  ASSERT_EQ(Get("/small").error, ErrorClass::kNone);
  EXPECT_EQ(server_.connections(), 2);
  EXPECT_EQ(fetcher_->stats().connections, 2u);
}

// Issue 16: easy handles are reused (curl_easy_reset): a transfer carries
// nothing of the one before, and its captured request head is byte for
// byte what the server received.
TEST_F(FetcherTest, Issue16_ReusedHandlesSendOnlyTheirOwnRequest) {
  std::vector<std::string> heads;
  server_.Handle("/h", [&](Exchange& ex) {
    heads.push_back(ex.head);
    ex.Send(Ok("x"));
  });
  Make();
  Response a = Fetch({Url("/h", "a.test"), "127.0.0.1", {"X-Probe: 1"}});
  ASSERT_EQ(a.error, ErrorClass::kNone) << a.error_message;
  Response b = Fetch({Url("/h", "b.test"), "127.0.0.1", {}});
  ASSERT_EQ(b.error, ErrorClass::kNone) << b.error_message;
  Response c = Fetch({Url("/h", "a.test"), "127.0.0.1", {}});
  ASSERT_EQ(c.error, ErrorClass::kNone) << c.error_message;
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_EQ(a.request_head, heads[0]);
  EXPECT_EQ(b.request_head, heads[1]);
  EXPECT_EQ(c.request_head, heads[2]);
  EXPECT_NE(heads[0].find("\r\nX-Probe: 1\r\n"), std::string::npos);
  EXPECT_EQ(heads[1].find("X-Probe"), std::string::npos) << heads[1];
  EXPECT_EQ(heads[2].find("X-Probe"), std::string::npos) << heads[2];
  EXPECT_NE(heads[1].find("\r\nHost: b.test:"), std::string::npos);
  EXPECT_EQ(BodyOf(c), "x");
}

// Issue 16: a socket's poll lives as long as the socket. A kept-alive
// connection that the server closes while it is idle is not reused, and
// the next transfer gets a new one.
TEST_F(FetcherTest, Issue16_IdleConnectionClosedByTheServerIsReplaced) {
  server_.Handle("/bye", [](Exchange& ex) {
    ex.Send(Ok("bye"));  // no "Connection: close": curl keeps it
    ex.close_after = true;
  });
  Make();
  ASSERT_EQ(Get("/bye").error, ErrorClass::kNone);
  // Let the server's FIN arrive while the connection is idle (bounded).
  for (int i = 0; i < 20; ++i) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Response r = Get("/small");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "hello world");
  ASSERT_EQ(Get("/small").error, ErrorClass::kNone);
  EXPECT_EQ(server_.connections(), 2);
}

// A worker crawls more hosts than it has transfer slots: each host's
// connection must still be there for its next page (one per host, not one
// per page), while transfers stay within max_connections.
TEST_F(FetcherTest, Crawld_IdleConnectionsOutnumberingSlotsAreReused) {
  options_.max_connections = 2;
  Make();
  const std::vector<std::string> hosts = {"a.test", "b.test", "c.test",
                                          "d.test"};
  for (int round = 0; round < 3; ++round) {
    for (const std::string& h : hosts) {
      ASSERT_EQ(Fetch({Url("/small", h), "127.0.0.1", {}}).error,
                ErrorClass::kNone);
    }
  }
  EXPECT_EQ(server_.connections(), 4);
  EXPECT_EQ(fetcher_->stats().connections, 4u);
  EXPECT_LE(server_.max_concurrent_connections(), 4);
}

// Issue 16: with more hosts in rotation than idle connections, the hosts
// holding one keep it for their next page, and the rest are closed after
// their page. (curl's own limit closed the least recently used connection,
// which in a round over the hosts is always the one needed next: every
// page paid a handshake, and finding it walked the whole pool.)
TEST_F(FetcherTest, Issue16_IdleConnectionsBeyondThePoolAreClosedNotEvicted) {
  options_.max_connections = 1;
  options_.max_idle_connections = 2;
  Make();
  const std::vector<std::string> hosts = {"a.test", "b.test", "c.test",
                                          "d.test", "e.test"};
  for (int round = 0; round < 3; ++round) {
    for (const std::string& h : hosts) {
      ASSERT_EQ(Fetch({Url("/small", h), "127.0.0.1", {}}).error,
                ErrorClass::kNone);
    }
  }
  // a, b and c keep theirs (1 + 2 open at most); d and e connect each
  // round: 3 + 2 x 3. Evicting the least recently used made it 15.
  EXPECT_EQ(fetcher_->stats().connections, 9u);
  EXPECT_EQ(server_.connections(), 9);
  // d's and e's, each round: counted for the operator.
  EXPECT_EQ(fetcher_->stats().connections_not_kept, 6u);
  // At most 4 open at once on our side: the 3 kept, and d's or e's while
  // its page is fetched (closed before the next one opens).
  EXPECT_EQ(fetcher_->stats().peak_open_connections, 4u);
  // The server counts a closed connection until it has read its end,
  // which it may do after accepting the next one: one more at most.
  EXPECT_LE(server_.max_concurrent_connections(), 5);
  // A host that has nothing more queued gives its connection up, and the
  // next host takes the place.
  Request last{Url("/small", "a.test"), "127.0.0.1", {}};
  last.keep_alive = false;
  ASSERT_EQ(Fetch(last).error, ErrorClass::kNone);
  EXPECT_EQ(fetcher_->stats().connections, 9u);  // a's, reused and closed
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(Fetch({Url("/small", "d.test"), "127.0.0.1", {}}).error,
              ErrorClass::kNone);
  }
  EXPECT_EQ(fetcher_->stats().connections, 10u);  // d connects once more
  // A connection given up (keep_alive false) is not one the pool refused.
  EXPECT_EQ(fetcher_->stats().connections_not_kept, 6u);
}

// Issue 16: a large pool is split over several curl multi handles (by
// origin; about 256 connections each). Transfers to many hosts, several
// at once, each complete once, and each host's connection is found again
// for its next page whichever handle holds it.
TEST_F(FetcherTest, Issue16_ConnectionsSplitOverSeveralPoolsAreReused) {
  server_.Handle("/p", [](Exchange& ex) { ex.Send(Ok("p")); });
  options_.max_connections = 8;
  options_.max_idle_connections = 2048;  // 8 pools
  Make();
  constexpr int kHosts = 40, kRounds = 3;
  int done = 0, good = 0;
  for (int round = 0; round < kRounds; ++round) {
    // One transfer per host at a time, as the frontier does.
    for (int h = 0; h < kHosts; ++h) {
      const std::string host = "h" + std::to_string(h) + ".test";
      fetcher_->Submit({Url("/p", host), "127.0.0.1", {}}, [&](Response&& r) {
        ++done;
        good += r.error == ErrorClass::kNone && BodyOf(r) == "p";
      });
    }
    ASSERT_TRUE(RunUntil([&] { return done >= (round + 1) * kHosts; }));
  }
  EXPECT_EQ(good, kHosts * kRounds);
  EXPECT_EQ(server_.requests(), kHosts * kRounds);
  EXPECT_EQ(fetcher_->stats().connections, uint64_t{kHosts});
  EXPECT_EQ(server_.connections(), kHosts);
  // The origins spread over the pools: 40 over 8 would put about 5 in
  // each; all in a few pools would make each pool's walk as long as one.
  const std::vector<uint64_t>& by_pool = fetcher_->stats().connections_by_pool;
  ASSERT_EQ(by_pool.size(), 8u);
  uint64_t sum = 0, most = 0;
  int used = 0;
  for (uint64_t n : by_pool) {
    sum += n;
    most = std::max(most, n);
    used += n > 0;
  }
  EXPECT_EQ(sum, uint64_t{kHosts});
  EXPECT_GE(used, 6) << ::testing::PrintToString(by_pool);
  EXPECT_LE(most, 20u) << ::testing::PrintToString(by_pool);
}

// RFC 9110 15.2: interim 1xx heads are not the response.
TEST_F(FetcherTest, Rfc9110_Sec15_2_InterimHeadIsDropped) {
  server_.Handle("/early", [](Exchange& ex) {
    ex.Send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" +
            Ok("final", "X-Final: yes\r\n"));
  });
  Response r = Get("/early");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(r.response_head.rfind("HTTP/1.1 200 OK", 0), 0u) << r.response_head;
  EXPECT_EQ(r.Header("Link"), "");
  EXPECT_EQ(r.Header("x-final"), "yes");
  EXPECT_EQ(BodyOf(r), "final");
}

// RFC 9112 7.1: chunked body is de-chunked; trailers stay out of the head.
TEST_F(FetcherTest, Rfc9112_Sec7_1_ChunkedBodyAndTrailers) {
  server_.Handle("/chunked", [](Exchange& ex) {
    ex.Send(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
        "Trailer: X-Sum\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n"
        "X-Sum: 42\r\n\r\n");
  });
  Response r = Get("/chunked");
  ASSERT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "hello world");
  EXPECT_EQ(r.response_head.find("X-Sum: 42"), std::string::npos);
  EXPECT_EQ(r.Header("Transfer-Encoding"), "chunked");
}

TEST_F(FetcherTest, Crawld_GarbageReplyIsProtocol) {
  server_.Handle("/garbage", [](Exchange& ex) {
    ex.Send("NOT HTTP AT ALL\r\n\r\n");
    ex.close_after = true;
  });
  EXPECT_EQ(Get("/garbage").error, ErrorClass::kProtocol);
}

TEST_F(FetcherTest, Crawld_EmptyReplyIsProtocol) {
  server_.Handle("/empty", [](Exchange& ex) { ex.close_after = true; });
  Response r = Get("/empty");
  EXPECT_EQ(r.error, ErrorClass::kProtocol) << r.error_message;
}

// (kProtocol until issue 19 gave a cut body its own class.)
TEST_F(FetcherTest, Crawld_ShortBodyIsIncompleteAndTruncated) {
  server_.Handle("/short", [](Exchange& ex) {
    ex.Send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789");
    ex.close_after = true;
  });
  Response r = Get("/short");
  EXPECT_EQ(r.error, ErrorClass::kIncomplete) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "disconnect");
  EXPECT_EQ(BodyOf(r), "0123456789");
}

TEST_F(FetcherTest, Crawld_InvalidRequestsFailWithOtherLater) {
  Make();
  for (Request rq :
       {Request{"ftp://127.0.0.1/x", "127.0.0.1", {}},
        Request{Url("/small"), "not-an-ip", {}}, Request{Url("/small"), "", {}},
        Request{"file:///etc/passwd", "127.0.0.1", {}}}) {
    bool returned = false, inline_call = false;
    std::optional<Response> out;
    fetcher_->Submit(rq, [&](Response&& r) {
      inline_call = !returned;
      out = std::move(r);
    });
    returned = true;
    ASSERT_TRUE(RunUntil([&] { return out.has_value(); }));
    EXPECT_FALSE(inline_call);
    EXPECT_EQ(out->error, ErrorClass::kOther) << rq.url;
  }
  EXPECT_EQ(server_.requests(), 0);
}

TEST_F(FetcherTest, Crawld_ShutdownAbortsTransfers) {
  server_.Handle("/hang", [](Exchange& ex) {
    ex.Sleep(20000);
    ex.close_after = true;
  });
  Make();
  std::vector<Response> got;
  for (int i = 0; i < 3; ++i) {
    fetcher_->Submit({Url("/hang"), "127.0.0.1", {}},
                     [&](Response&& r) { got.push_back(std::move(r)); });
  }
  ASSERT_TRUE(RunUntil([&] { return server_.Hits("/hang") == 3; }));
  fetcher_->Shutdown();
  ASSERT_EQ(got.size(), 3u);  // before Shutdown returned
  for (const Response& r : got) EXPECT_EQ(r.error, ErrorClass::kAborted);
  EXPECT_EQ(fetcher_->in_flight(), 0u);
  bool late = false;
  fetcher_->Submit({Url("/small"), "127.0.0.1", {}}, [&](Response&& r) {
    late = true;
    EXPECT_EQ(r.error, ErrorClass::kAborted);
  });
  EXPECT_FALSE(late);
  ASSERT_TRUE(RunUntil([&] { return late; }));
}

// A transfer we cut ourselves is nothing to record, even with its head in:
// the caller fetches the URL again after the restart.
TEST_F(FetcherTest, Issue19_ShutdownAfterTheHeadLeavesNothingToRecord) {
  server_.Handle("/half", [](Exchange& ex) {
    if (ex.Send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123")) {
      ex.Sleep(20000);
    }
    ex.close_after = true;
  });
  std::vector<std::string> states;
  options_.on_state_change = [&](std::string_view, std::string_view,
                                 std::string_view to) {
    states.push_back(std::string(to));
  };
  Make();
  std::optional<Response> got;
  fetcher_->Submit({Url("/half"), "127.0.0.1", {}},
                   [&](Response&& r) { got = std::move(r); });
  ASSERT_TRUE(
      RunUntil([&] { return !states.empty() && states.back() == "body"; }));
  fetcher_->Shutdown();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->error, ErrorClass::kAborted);
  EXPECT_EQ(got->status_code, 0);
  EXPECT_TRUE(got->response_head.empty());
  EXPECT_EQ(got->body.size(), 0u);
  EXPECT_FALSE(got->truncated);
}

TEST_F(FetcherTest, Crawld_FetcherMayBeDestroyedInsideCallback) {
  Make();
  int calls = 0;
  for (int i = 0; i < 4; ++i) {
    fetcher_->Submit({Url("/small"), "127.0.0.1", {}}, [&](Response&&) {
      ++calls;
      fetcher_.reset();
    });
  }
  ASSERT_TRUE(RunUntil([&] { return calls == 4; }));
}

TEST_F(FetcherTest, Crawld_StateChangesMoveForward) {
  std::vector<std::string> seen;
  options_.on_state_change = [&](std::string_view, std::string_view from,
                                 std::string_view to) {
    seen.push_back(std::string(from) + ">" + std::string(to));
  };
  Response r = Get("/small");
  ASSERT_EQ(r.error, ErrorClass::kNone);
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "queued>started", "started>request_sent",
                      "request_sent>headers", "headers>body", "body>done"}));
}

// ---------------------------------------------------------------------------
// Issue 19 item 8: a failed transfer never looks like a complete response.
// A response whose head did not complete, or whose framing is invalid, has
// status_code 0 and no head (nothing for the caller to record); a response
// cut after its head is `truncated` whatever its body size.
// ---------------------------------------------------------------------------

// The head of one response, from `status_line` to the blank line.
std::string Head(const std::string& status_line, const std::string& fields) {
  return status_line + "\r\n" + fields + "\r\n";
}

void ExpectNothingRecordable(const Response& r) {
  EXPECT_EQ(r.status_code, 0);
  EXPECT_TRUE(r.response_head.empty()) << r.response_head.substr(0, 200);
  EXPECT_TRUE(r.headers.empty());
  EXPECT_EQ(r.body.size(), 0u);
  EXPECT_FALSE(r.truncated);
  EXPECT_FALSE(r.error_message.empty());
}

// A 1 MB header line: refused, and not a response with an empty head.
TEST_F(FetcherTest, Issue19_HugeHeaderLineIsHeaderTooLarge) {
  server_.Handle("/bighead", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "X-Big: " + std::string(1 << 20, 'a') +
                                        "\r\nContent-Length: 2\r\n") +
            "ok");
    ex.close_after = true;
  });
  Response r = Get("/bighead");
  EXPECT_EQ(r.error, ErrorClass::kHeaderTooLarge) << r.error_message;
  ExpectNothingRecordable(r);
  // The next request to the same server works (a fresh connection).
  EXPECT_EQ(Get("/small").error, ErrorClass::kNone);
}

// Many short lines adding up to more than Options::max_header_bytes.
TEST_F(FetcherTest, Issue19_HeaderSectionOverCapIsHeaderTooLarge) {
  std::string fields;
  for (int i = 0; i < 1000; ++i) {
    fields +=
        "X-Pad-" + std::to_string(i) + ": " + std::string(40, 'p') + "\r\n";
  }
  ASSERT_GT(fields.size(), 48u * 1024);
  server_.Handle("/flood", [&](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", fields + "Content-Length: 2\r\n") + "ok");
  });
  options_.max_header_bytes = 32 * 1024;
  Response r = Get("/flood");
  EXPECT_EQ(r.error, ErrorClass::kHeaderTooLarge) << r.error_message;
  ExpectNothingRecordable(r);

  // Under the cap, the same head is a normal response.
  options_.max_header_bytes = 128 * 1024;
  Make();
  Response fits = Get("/flood");
  EXPECT_EQ(fits.error, ErrorClass::kNone) << fits.error_message;
  EXPECT_EQ(BodyOf(fits), "ok");
}

// RFC 9112 7.1: chunk-size is 1*HEXDIG. "zz" is not an empty complete
// 200 (issue 19): RFC 9112 8 says a chunked coding that fails to decode
// leaves an incomplete message, "MUST record the message as incomplete".
void ExpectCutChunked(const Response& r, const std::string& kept) {
  EXPECT_EQ(r.error, ErrorClass::kIncomplete) << r.error_message;
  EXPECT_NE(r.error_message.find("invalid chunked body"), std::string::npos)
      << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_FALSE(r.response_head.empty());
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "unspecified");  // we stopped, not the server
  EXPECT_EQ(BodyOf(r), kept);
}

TEST_F(FetcherTest, Issue19_Rfc9112_Sec7_1_InvalidChunkSizeIsIncomplete) {
  server_.Handle("/badchunk", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n") +
            "zz\r\nhello\r\n0\r\n\r\n");
    ex.close_after = true;
  });
  ExpectCutChunked(Get("/badchunk"), "");
}

// A bad chunk after good ones: what decoded is kept, marked cut.
TEST_F(FetcherTest, Rfc9112_Sec8_BadChunkAfterGoodOnesIsIncomplete) {
  for (const std::string& tail : std::vector<std::string>{
           "5\r\nhello\r\nxyz\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n",
           "5\r\nhello\r\n" + std::string(40, 'f') + "\r\n"}) {
    server_.Handle("/bad", [&](Exchange& ex) {
      ex.Send(Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n") + tail);
      ex.close_after = true;
    });
    SCOPED_TRACE(tail);
    ExpectCutChunked(Get("/bad"), "hello");
  }
}

// RFC 9112 6.3 (item 5): differing Content-Length values are invalid
// framing; the response is discarded, not stored as a complete 7-byte 200.
TEST_F(FetcherTest,
       Issue19_Rfc9112_Sec6_3_ConflictingContentLengthsAreFraming) {
  server_.Handle("/twocl", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK",
                 "Content-Length: 266\r\nContent-Length: 7\r\n") +
            Pattern(266));
    ex.close_after = true;
  });
  Response r = Get("/twocl");
  EXPECT_EQ(r.error, ErrorClass::kFraming) << r.error_message;
  ExpectNothingRecordable(r);
}

// RFC 9110 8.6: a list of identical values may be taken as one.
TEST_F(FetcherTest, Rfc9110_Sec8_6_RepeatedIdenticalContentLengthIsOneValue) {
  for (const std::string fields : {"Content-Length: 5\r\nContent-Length: 5\r\n",
                                   "Content-Length: 5, 5\r\n"}) {
    server_.Handle("/same", [&](Exchange& ex) {
      ex.Send(Head("HTTP/1.1 200 OK", fields) + "hello");
    });
    Response r = Get("/same");
    EXPECT_EQ(r.error, ErrorClass::kNone) << fields << r.error_message;
    EXPECT_EQ(BodyOf(r), "hello");
    EXPECT_FALSE(r.truncated);
  }
}

// RFC 9112 6.3 (item 5): a Content-Length that is not 1*DIGIT is invalid
// framing (curl alone would read such a body to the close).
TEST_F(FetcherTest, Rfc9112_Sec6_3_InvalidContentLengthIsFraming) {
  for (const std::string value : {"abc", "-1", "5x", "+5", "", "5 5", "0x10",
                                  "99999999999999999999999999"}) {
    server_.Handle("/badcl", [&](Exchange& ex) {
      ex.Send(Head("HTTP/1.1 200 OK", "Content-Length: " + value + "\r\n") +
              "hello");
      ex.close_after = true;
    });
    Response r = Get("/badcl");
    EXPECT_EQ(r.error, ErrorClass::kFraming)
        << "'" << value << "': " << r.error_message;
    ExpectNothingRecordable(r);
  }
}

// RFC 9112 6.3 item 3: Transfer-Encoding overrides Content-Length. The
// message "ought to be handled as an error", but its end is well defined:
// it is read by its chunks, and the oddity is noted.
TEST_F(FetcherTest, Rfc9112_Sec6_3_TransferEncodingOverridesContentLength) {
  server_.Handle("/tecl", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK",
                 "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n") +
            "5\r\nhello\r\n0\r\n\r\n");
    ex.close_after = true;
  });
  Response r = Get("/tecl");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "hello");
  EXPECT_FALSE(r.truncated);
  EXPECT_NE(r.framing_note.find("Transfer-Encoding wins"), std::string::npos)
      << r.framing_note;
  EXPECT_EQ(Get("/small").framing_note, "");
}

// RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
// framing; a transfer coding we did not ask for (no TE sent) cannot be
// undone.
TEST_F(FetcherTest, Rfc9112_Sec6_1_TransferEncodingWeCannotUndoIsFraming) {
  for (const std::string& head : std::vector<std::string>{
           Head("HTTP/1.0 200 OK", "Transfer-Encoding: chunked\r\n"),
           Head("HTTP/1.1 200 OK", "Transfer-Encoding: gzip, chunked\r\n"),
           Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked, chunked\r\n"),
           Head("HTTP/1.1 200 OK", "Transfer-Encoding: x-custom\r\n")}) {
    server_.Handle("/te", [&](Exchange& ex) {
      ex.Send(head + "5\r\nhello\r\n0\r\n\r\n");
      ex.close_after = true;
    });
    Response r = Get("/te");
    EXPECT_EQ(r.error, ErrorClass::kFraming) << head << r.error_message;
    ExpectNothingRecordable(r);
  }
}

// RFC 9112 7.1.1 and 2.2: chunk extensions are ignored, a bare LF ends a
// line.
TEST_F(FetcherTest, Rfc9112_Sec7_1_1_ChunkExtensionsAndBareLfAreAccepted) {
  server_.Handle("/ext", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n") +
            "5 ;name=\"v\"\r\nhello\r\n6;x\n world\n0\n\n");
  });
  Response r = Get("/ext");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "hello world");
  EXPECT_FALSE(r.truncated);
}

// RFC 9112 6.3 (item 1): 204 and 304 have no body whatever the head says.
TEST_F(FetcherTest, Rfc9112_Sec6_3_NoContentAndNotModifiedHaveNoBody) {
  server_.Handle("/204", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 204 No Content", "Content-Length: 10\r\n"));
  });
  server_.Handle("/304", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 304 Not Modified",
                 "ETag: \"x\"\r\nContent-Length: 1234\r\n"));
  });
  for (const char* path : {"/204", "/304"}) {
    Response r = Get(path);
    EXPECT_EQ(r.error, ErrorClass::kNone) << path << r.error_message;
    EXPECT_EQ(r.body.size(), 0u);
    EXPECT_FALSE(r.truncated);
  }
  EXPECT_EQ(server_.connections(), 1);  // both on one kept-alive connection
}

// RFC 9112 6.3 (item 8): without Content-Length or Transfer-Encoding the
// body ends when the server closes; that is complete.
TEST_F(FetcherTest, Rfc9112_Sec6_3_CloseDelimitedBodyIsComplete) {
  server_.Handle("/close", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "Connection: close\r\n") + "abc");
    ex.close_after = true;
  });
  Response r = Get("/close");
  EXPECT_EQ(r.error, ErrorClass::kNone) << r.error_message;
  EXPECT_EQ(BodyOf(r), "abc");
  EXPECT_FALSE(r.truncated);
}

// RFC 9112 8: a close before Content-Length is reached leaves an incomplete
// message, truncated even when not one body byte arrived.
TEST_F(FetcherTest, Issue19_Rfc9112_Sec8_CutBeforeAnyBodyByteIsTruncated) {
  server_.Handle("/nobody", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "Content-Length: 100\r\n"));
    ex.close_after = true;
  });
  Response r = Get("/nobody");
  EXPECT_EQ(r.error, ErrorClass::kIncomplete) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_FALSE(r.response_head.empty());
  EXPECT_EQ(r.body.size(), 0u);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "disconnect");
}

// RFC 9112 8: a chunked body closed before its last chunk is incomplete.
TEST_F(FetcherTest, Rfc9112_Sec8_ChunkedBodyWithoutLastChunkIsTruncated) {
  server_.Handle("/cut", [](Exchange& ex) {
    ex.Send(Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n") +
            "5\r\nhello\r\n");
    ex.close_after = true;
  });
  Response r = Get("/cut");
  EXPECT_EQ(r.error, ErrorClass::kIncomplete) << r.error_message;
  EXPECT_EQ(r.status_code, 200);
  EXPECT_EQ(BodyOf(r), "hello");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.truncated_reason, "disconnect");
}

// ---------------------------------------------------------------------------
// Issue 19 item 1: a loop blocked by a long CPU step (a parse) must not cut
// responses that arrived meanwhile. The time the loop did not run is not
// held against the server, and no timeout is decided before what is
// waiting in the socket has been read.
// ---------------------------------------------------------------------------

// Blocks the loop for `ms` from inside a callback, as a long parse would;
// `during` runs first, inside the same callback.
void BlockLoop(uv_loop_t* loop, int ms,
               const std::function<void()>& during = nullptr) {
  struct Block {
    uv_timer_t timer;
    int ms;
    std::function<void()> during;
    bool done = false;
  };
  Block b;
  b.ms = ms;
  b.during = during;
  uv_timer_init(loop, &b.timer);
  b.timer.data = &b;
  uv_timer_start(
      &b.timer,
      [](uv_timer_t* t) {
        auto* blk = static_cast<Block*>(t->data);
        if (blk->during) blk->during();
        std::this_thread::sleep_for(std::chrono::milliseconds(blk->ms));
        blk->done = true;
      },
      0, 0);
  while (!b.done) uv_run(loop, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&b.timer), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);
}

// Each response is sent while the loop is blocked, in full (or, for the
// 4 MiB one, as far as the socket buffers take it).
void ResponsesArriveDuringABlockedLoop(FetcherTest* t, int64_t total_ms) {
  const std::string small = Pattern(20000);
  const std::string big = Pattern(4 << 20);
  std::atomic<bool> blocked{false};
  std::atomic<int> asked{0}, sent{0};
  auto wait_for_block = [&](Exchange& ex) {
    ++asked;
    for (int i = 0; i < 500 && !blocked.load(); ++i) ex.Sleep(20);
  };
  t->server_.Handle("/length", [&](Exchange& ex) {
    wait_for_block(ex);
    ex.Send(Ok(small));
    ++sent;
  });
  t->server_.Handle("/chunked", [&](Exchange& ex) {
    wait_for_block(ex);
    ex.Send(Head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n") +
            "4e20\r\n" + small + "\r\n0\r\n\r\n");
    ++sent;
  });
  t->server_.Handle("/close", [&](Exchange& ex) {
    wait_for_block(ex);
    ex.Send(Head("HTTP/1.1 200 OK", "Connection: close\r\n") + small);
    ex.close_after = true;
    ++sent;
  });
  t->server_.Handle("/big", [&](Exchange& ex) {
    wait_for_block(ex);
    ++sent;  // the rest waits for the client to read
    ex.Send(Ok(big));
  });
  // Both limits are shorter than the 3 s block.
  t->options_.total_timeout_ms = total_ms;
  t->options_.low_speed_bytes_per_s = 1000;
  t->options_.low_speed_time_s = 1;
  t->options_.max_body_bytes = 8 << 20;
  t->Make();
  std::map<std::string, Response> got;
  for (const char* path : {"/length", "/chunked", "/close", "/big"}) {
    t->fetcher_->Submit(
        {t->Url(path), "127.0.0.1", {}},
        [&got, path](Response&& r) { got[path] = std::move(r); });
  }
  ASSERT_TRUE(t->RunUntil([&] { return asked.load() == 4; }, 30));
  BlockLoop(&t->loop_, 3000, [&] { blocked = true; });
  EXPECT_EQ(sent.load(), 4);
  ASSERT_TRUE(t->RunUntil([&] { return got.size() == 4; }, 60));
  for (auto& [path, r] : got) {
    EXPECT_EQ(r.error, ErrorClass::kNone) << path << ": " << r.error_message;
    EXPECT_FALSE(r.truncated) << path << ": " << r.truncated_reason;
    EXPECT_EQ(r.status_code, 200) << path;
  }
  EXPECT_TRUE(BodyOf(got["/length"]) == small);
  EXPECT_TRUE(BodyOf(got["/chunked"]) == small);
  EXPECT_TRUE(BodyOf(got["/close"]) == small);
  EXPECT_EQ(got["/big"].body.size(), big.size());
  EXPECT_TRUE(BodyOf(got["/big"]) == big);
}

// The low-speed limit (1000 B/s over 1 s) alone, with time to spare.
TEST_F(FetcherTest, Issue19_LowSpeedLimitSparesResponsesOfABlockedLoop) {
  ResponsesArriveDuringABlockedLoop(this, 60000);
}

// The whole-transfer limit too: the 3 s the loop did not run are not the
// server's.
TEST_F(FetcherTest, Issue19_TotalTimeoutSparesResponsesOfABlockedLoop) {
  ResponsesArriveDuringABlockedLoop(this, 2000);
}

// The same block with a server that really is silent: the timeout still
// comes, later by at most the time the loop was blocked.
TEST_F(FetcherTest, Crawld_SilentServerStillTimesOutAfterABlockedLoop) {
  std::atomic<bool> asked{false};
  server_.Handle("/silent", [&](Exchange& ex) {
    asked = true;
    ex.Sleep(20000);
    ex.close_after = true;
  });
  server_.Handle("/trickle", [&](Exchange& ex) {
    if (!ex.Send(Head("HTTP/1.1 200 OK", "Content-Length: 100000\r\n") + "ab"))
      return;
    for (int i = 0; i < 300 && ex.Sleep(100); ++i) {
      if (!ex.Send("x")) break;
    }
    ex.close_after = true;
  });
  options_.total_timeout_ms = 1000;
  options_.low_speed_bytes_per_s = 1000;
  options_.low_speed_time_s = 1;
  Make();
  std::optional<Response> silent;
  fetcher_->Submit({Url("/silent"), "127.0.0.1", {}},
                   [&](Response&& r) { silent = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return asked.load(); }, 30));
  BlockLoop(&loop_, 1500);
  ASSERT_TRUE(RunUntil([&] { return silent.has_value(); }, 30));
  EXPECT_EQ(silent->error, ErrorClass::kTimeout) << silent->error_message;
  EXPECT_EQ(silent->status_code, 0);

  options_.total_timeout_ms = 60000;
  Make();
  std::optional<Response> slow;
  fetcher_->Submit({Url("/trickle"), "127.0.0.1", {}},
                   [&](Response&& r) { slow = std::move(r); });
  BlockLoop(&loop_, 1500);
  ASSERT_TRUE(RunUntil([&] { return slow.has_value(); }, 30));
  EXPECT_EQ(slow->error, ErrorClass::kTimeout) << slow->error_message;
  EXPECT_TRUE(slow->truncated);
  EXPECT_EQ(slow->truncated_reason, "time");
}

TEST(FetcherNames, Crawld_ErrorClassNames) {
  EXPECT_EQ(ErrorClassName(ErrorClass::kNone), "none");
  EXPECT_EQ(ErrorClassName(ErrorClass::kConnect), "connect");
  EXPECT_EQ(ErrorClassName(ErrorClass::kTimeout), "timeout");
  EXPECT_EQ(ErrorClassName(ErrorClass::kTls), "tls");
  EXPECT_EQ(ErrorClassName(ErrorClass::kTooLarge), "too_large");
  EXPECT_EQ(ErrorClassName(ErrorClass::kProtocol), "protocol");
  EXPECT_EQ(ErrorClassName(ErrorClass::kHeaderTooLarge), "header_too_large");
  EXPECT_EQ(ErrorClassName(ErrorClass::kFraming), "framing");
  EXPECT_EQ(ErrorClassName(ErrorClass::kIncomplete), "incomplete");
  EXPECT_EQ(ErrorClassName(ErrorClass::kAborted), "aborted");
  EXPECT_EQ(ErrorClassName(ErrorClass::kOther), "other");
}

}  // namespace
}  // namespace crawld::fetcher
