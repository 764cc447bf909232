// The web console's assets as the admin API serves them (console/console.h):
// embedded, with the security and caching headers a browser relies on, and
// reachable without the token on a server that has one (the data is not).
#include "console/console.h"

#include <curl/curl.h>
#include <uv.h>

#include <algorithm>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace crawld::console {
namespace {

std::string HeaderOf(const http::Response& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(ConsoleAssets, EveryAssetIsEmbedded) {
  const auto names = AssetNames();
  for (const char* want :
       {"index.html", "console.css", "console.js", "favicon.svg"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(ConsoleAssets, IndexIsServedAtTheRootWithItsType) {
  http::Response r = Serve("/", nullptr, Options{});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("/console/console.js"), std::string::npos);
  EXPECT_EQ(Serve("/console/console.js", nullptr, {}).content_type,
            "text/javascript; charset=utf-8");
  EXPECT_EQ(Serve("/console/console.css", nullptr, {}).content_type,
            "text/css; charset=utf-8");
  EXPECT_EQ(Serve("/console/favicon.svg", nullptr, {}).content_type,
            "image/svg+xml");
}

// The policy a browser enforces: nothing from another origin, no inline
// script or style, no framing; no MIME sniffing.
TEST(ConsoleAssets, EveryAnswerCarriesTheSecurityHeaders) {
  for (const char* path : {"/", "/console/console.js", "/console/nope.js"}) {
    http::Response r = Serve(path, nullptr, Options{});
    const std::string csp = HeaderOf(r, "Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << path;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
    EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos);
    EXPECT_EQ(HeaderOf(r, "X-Frame-Options"), "DENY");
    EXPECT_EQ(HeaderOf(r, "Referrer-Policy"), "no-referrer");
  }
}

// The CSP forbids inline script and style: the page must not need them.
TEST(ConsoleAssets, TheHtmlHasNoInlineScriptOrStyle) {
  const std::string html = Serve("/", nullptr, {}).body;
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find("style=\""), std::string::npos);
  for (const char* handler :
       {"onclick=", "onload=", "onsubmit=", "http://", "https://"}) {
    EXPECT_EQ(html.find(handler), std::string::npos) << handler;
  }
  // Nor does the script load anything from elsewhere, or write markup
  // from strings.
  const std::string js = Serve("/console/console.js", nullptr, {}).body;
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js.find("eval("), std::string::npos);
  EXPECT_EQ(js.find("https://"), std::string::npos);
}

TEST(ConsoleAssets, RevalidationGets304WithoutABody) {
  http::Response first = Serve("/console/console.css", nullptr, {});
  const std::string etag = HeaderOf(first, "ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(HeaderOf(first, "Cache-Control"), "no-cache");
  const std::string list = "\"other\", W/" + etag;
  http::Response again = Serve("/console/console.css", &list, {});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  const std::string stale = "\"0000\"";
  EXPECT_EQ(Serve("/console/console.css", &stale, {}).status, 200);
  Options cached;
  cached.max_age_s = 1u << 30;  // clamped to a day
  EXPECT_EQ(HeaderOf(Serve("/", nullptr, cached), "Cache-Control"),
            "private, max-age=86400");
}

TEST(ConsoleAssets, UnknownFilesAre404Json) {
  for (const char* path : {"/console/", "/console/..%2Fconsole.h",
                           "/console/index.htm", "/consolex"}) {
    http::Response r = Serve(path, nullptr, {});
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.content_type, "application/json");
  }
}

// On a live server with a token: the app loads without it (a browser
// cannot send a bearer token with a page load), the API does not.
size_t Collect(char* p, size_t s, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, s * n);
  return s * n;
}

struct Reply {
  long status = 0;
  std::string body;
  std::string headers;
};

Reply Get(uint16_t port, const std::string& path) {
  Reply r;
  CURL* e = curl_easy_init();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Collect);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &r.headers);
  if (curl_easy_perform(e) == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
  }
  curl_easy_cleanup(e);
  return r;
}

class ConsoleServerTest : public ::testing::Test {
 protected:
  void Start(const Options& console) {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    http::Server::Options so;
    so.token = "tok";
    auto s = http::Server::Create(&loop_, so);
    ASSERT_TRUE(s.ok());
    server_ = std::move(*s);
    ASSERT_TRUE(server_
                    ->Route("GET", "/api/status",
                            [](const http::Request&, http::Responder r) {
                              r.SendJson(200, Json::object());
                            })
                    .ok());
    ASSERT_TRUE(AddRoutes(server_.get(), console).ok());
    port_ = server_->port();
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      auto* self = static_cast<ConsoleServerTest*>(a->data);
      self->server_.reset();
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop_), nullptr);
    });
    stop_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  void TearDown() override {
    if (!thread_.joinable()) return;
    uv_async_send(&stop_);
    thread_.join();
    uv_loop_close(&loop_);
  }

  uv_loop_t loop_{};
  uv_async_t stop_{};
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST_F(ConsoleServerTest, AssetsGoWithoutTheTokenAndTheApiDoesNot) {
  Start(Options{});
  Reply page = Get(port_, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("Content-Security-Policy: default-src 'self'"),
            std::string::npos)
      << page.headers;
  EXPECT_NE(page.headers.find("X-Content-Type-Options: nosniff"),
            std::string::npos);
  // The server's no-store default gives way to the console's own policy.
  EXPECT_EQ(page.headers.find("no-store"), std::string::npos);
  EXPECT_EQ(Get(port_, "/console/console.js").status, 200);
  EXPECT_EQ(Get(port_, "/api/status").status, 401);
  // An unknown path outside the console still needs the token first.
  EXPECT_EQ(Get(port_, "/nope").status, 401);
}

TEST_F(ConsoleServerTest, DisabledConsoleServesNothing) {
  Options off;
  off.enabled = false;
  Start(off);
  EXPECT_EQ(Get(port_, "/").status, 401);
  EXPECT_EQ(Get(port_, "/console/console.js").status, 401);
}

}  // namespace
}  // namespace crawld::console
