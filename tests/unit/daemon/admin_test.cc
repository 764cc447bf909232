// Tests of daemon/admin.h: JSON, the request reader, and the server over
// real sockets on 127.0.0.1. The server runs on a libuv loop in a helper
// thread (the server itself is single-threaded; only the test client is on
// the main thread). Every socket has a receive timeout and every loop a
// watchdog, so no test can hang.
#include "daemon/admin.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace crawld::daemon {
namespace {

// ---------------------------------------------------------------------------
// JSON (RFC 8259)

TEST(Rfc8259, ParsesEveryValueType) {
  Result<Json> v = Json::Parse(
      R"( {"n": -1.5e2, "i": 0, "t": true, "f": false, "z": null,
           "s": "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "a": [1, [], {}]} )");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Find("n")->as_number(), -150);
  EXPECT_EQ(v->Find("i")->as_number(), 0);
  EXPECT_TRUE(v->Find("t")->as_bool());
  EXPECT_FALSE(v->Find("f")->as_bool());
  EXPECT_TRUE(v->Find("z")->is_null());
  EXPECT_EQ(v->Find("s")->as_string(),
            "a\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(v->Find("a")->items().size(), 3u);
  EXPECT_EQ(v->Find("missing"), nullptr);
}

TEST(Rfc8259, RejectsWhatTheGrammarDoesNotAllow) {
  for (const char* bad :
       {"",    " ",     "{",        "[1,]",      "{\"a\":1,}",
        "01",  "1.",    ".5",       "+1",        "1e",
        "-",   "NaN",   "Infinity", "'a'",       "\"\\x\"",
        "\"a", "[1 2]", "{1:2}",    "{\"a\" 1}", "tru",
        "nul", "1 2",   "\"\x01\"", "1e400",     "[\"\\u12\"]"}) {
    EXPECT_FALSE(Json::Parse(bad).ok()) << "accepted: " << bad;
  }
}

TEST(Rfc8259, CrawldOnly_RejectsDuplicateKeysAndBadUnicode) {
  EXPECT_FALSE(Json::Parse(R"({"a":1,"a":2})").ok());
  EXPECT_FALSE(Json::Parse(R"("\ud800")").ok());           // lone high
  EXPECT_FALSE(Json::Parse(R"("\udc00")").ok());           // lone low
  EXPECT_FALSE(Json::Parse("\"\xC0\xAF\"").ok());          // overlong
  EXPECT_FALSE(Json::Parse("\"\xED\xA0\x80\"").ok());      // encoded surrogate
  EXPECT_FALSE(Json::Parse("\"\xF4\x90\x80\x80\"").ok());  // > U+10FFFF
  EXPECT_FALSE(Json::Parse("\"\xE2\x82\"").ok());          // truncated
}

TEST(Rfc8259, CrawldOnly_DepthAndSizeLimits) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(Json::Parse("[[[1]]]", limits).ok());
  Result<Json> deep = Json::Parse("[[[[1]]]]", limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), Status::Code::kResourceExhausted);
  // Far deeper than the stack could take by recursion: refused, no crash.
  EXPECT_FALSE(Json::Parse(std::string(1'000'000, '[')).ok());
  limits.max_bytes = 4;
  EXPECT_FALSE(Json::Parse("12345", limits).ok());
}

TEST(Rfc8259, DumpRoundTripsAndEscapes) {
  Json obj = Json::MakeObject();
  obj.Set("b", Json(true))
      .Set("n", Json(0.1))
      .Set("big", Json(int64_t{1} << 50))
      .Set("s", Json(std::string("q\"\\\n\x01\x7f", 6)))
      .Set("a", Json::MakeArray().Push(Json(1)).Push(Json()));
  obj.Set("b", Json(false));  // replaces in place
  const std::string text = obj.Dump();
  EXPECT_EQ(text, R"({"b":false,"n":0.1,"big":1125899906842624,)"
                  R"("s":"q\"\\\n\u0001\u007f","a":[1,null]})");
  Result<Json> back = Json::Parse(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, obj);
}

TEST(Rfc8259, CrawldOnly_DumpAlwaysProducesValidJson) {
  Json s(std::string("bad \xFF utf8 \xC3"));
  EXPECT_EQ(s.Dump(), "\"bad \xEF\xBF\xBD utf8 \xEF\xBF\xBD\"");
  EXPECT_EQ(Json(INFINITY).Dump(), "null");
}

// ---------------------------------------------------------------------------
// RequestReader (RFC 9112)

TEST(Rfc9112, ReaderParsesWholeRequest) {
  RequestReader reader{RequestLimits()};
  const std::string raw =
      "POST /api/hosts/a%2Fb/x?since=a%20b&limit=5&flag&q=1+2 HTTP/1.1\r\n"
      "Host: localhost\r\nX-Thing:  v  \r\nContent-Length: 4\r\n\r\nbody";
  EXPECT_EQ(reader.Feed(raw), raw.size());
  ASSERT_EQ(reader.state(), RequestReader::State::kRequest);
  bool keep_alive = false;
  Request req = reader.TakeRequest(&keep_alive);
  EXPECT_TRUE(keep_alive);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/api/hosts/a%2Fb/x");
  EXPECT_EQ(req.segments,
            (std::vector<std::string>{"api", "hosts", "a/b", "x"}));
  ASSERT_NE(req.QueryValue("since"), nullptr);
  EXPECT_EQ(*req.QueryValue("since"), "a b");
  EXPECT_EQ(*req.QueryValue("limit"), "5");
  EXPECT_EQ(*req.QueryValue("flag"), "");
  EXPECT_EQ(*req.QueryValue("q"), "1 2");
  EXPECT_EQ(*req.Header("X-THING"), "v");
  EXPECT_EQ(req.body, "body");
  EXPECT_EQ(reader.state(), RequestReader::State::kNeedMore);
}

TEST(Rfc9112, ReaderGivesTheSameRequestWhateverTheSplit) {
  const std::string raw =
      "POST /x?a=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  for (size_t cut = 1; cut < raw.size(); ++cut) {
    RequestReader reader{RequestLimits()};
    size_t used = reader.Feed(std::string_view(raw).substr(0, cut));
    ASSERT_EQ(used, cut);
    if (reader.state() == RequestReader::State::kNeedMore) {
      used += reader.Feed(std::string_view(raw).substr(cut));
    }
    ASSERT_EQ(reader.state(), RequestReader::State::kRequest) << cut;
    EXPECT_EQ(used, raw.size());
    bool keep_alive;
    EXPECT_EQ(reader.TakeRequest(&keep_alive).body, "abcde") << cut;
  }
}

TEST(Rfc9112, ReaderStopsAfterOneRequest) {
  const std::string one = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string two = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestReader reader{RequestLimits()};
  EXPECT_EQ(reader.Feed(one + two), one.size());
  bool keep_alive;
  EXPECT_EQ(reader.TakeRequest(&keep_alive).path, "/a");
  EXPECT_EQ(reader.Feed(two), two.size());
  EXPECT_EQ(reader.TakeRequest(&keep_alive).path, "/b");
}

// Found by admin_request_fuzz: the header section is read at most
// max_header_bytes at a time, and a body that arrived in the same chunk past
// that cap was left unread although the request was incomplete.
TEST(Rfc9112, ReaderReadsTheBodyBeyondTheHeaderCapInOneChunk) {
  RequestLimits limits;
  limits.max_header_bytes = 64;
  const std::string head =
      "POST /s HTTP/1.1\r\nHost: h\r\nContent-Length: 40\r\n\r\n";
  ASSERT_LT(head.size(), limits.max_header_bytes);
  const std::string body(40, 'b');
  RequestReader reader(limits);
  // Only part of the body comes in the first chunk: the request is not
  // complete, yet every byte given must be read.
  const std::string first = head + body.substr(0, 30);
  ASSERT_GT(first.size(), limits.max_header_bytes);
  EXPECT_EQ(reader.Feed(first), first.size());
  ASSERT_EQ(reader.state(), RequestReader::State::kNeedMore);
  EXPECT_EQ(reader.Feed(std::string_view(body).substr(30)), 10u);
  ASSERT_EQ(reader.state(), RequestReader::State::kRequest);
  bool keep_alive;
  EXPECT_EQ(reader.TakeRequest(&keep_alive).body, body);
}

TEST(Rfc9112, Sec3_2_Http11WithoutHostIsBadRequest) {
  RequestReader reader{RequestLimits()};
  reader.Feed("GET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(reader.state(), RequestReader::State::kError);
  EXPECT_EQ(reader.error_status(), 400);
}

TEST(Rfc9112, ReaderErrorsCarryTheirStatus) {
  RequestLimits limits;
  limits.max_header_bytes = 64;
  limits.max_body_bytes = 3;
  struct Case {
    std::string raw;
    int status;
  };
  for (const Case& c : std::vector<Case>{
           {"GARBAGE\r\n\r\n", 400},
           {"GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
           {"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400},
           {"GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(100, 'a') +
                "\r\n\r\n",
            431},
           {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n", 413},
           {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            "4\r\nabcd\r\n0\r\n\r\n",
            413},
       }) {
    RequestReader reader(limits);
    reader.Feed(c.raw);
    ASSERT_EQ(reader.state(), RequestReader::State::kError) << c.raw;
    EXPECT_EQ(reader.error_status(), c.status) << c.raw;
    EXPECT_FALSE(reader.error_message().empty());
  }
}

// ---------------------------------------------------------------------------
// The server over real sockets

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool ok = false;  // a whole response was read
};

// A blocking client socket on 127.0.0.1 with 5 s send/receive timeouts.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response (Content-Length framed, as the server always is).
  HttpReply Read(bool head = false) {
    HttpReply r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    const std::string head_text = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    r.status = std::atoi(head_text.c_str() + 9);
    size_t pos = head_text.find("\r\n");
    while (pos != std::string::npos) {
      const size_t next = head_text.find("\r\n", pos + 2);
      const std::string line = head_text.substr(
          pos + 2,
          next == std::string::npos ? std::string::npos : next - pos - 2);
      const size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(c));
      r.headers[name] = line.substr(colon + 2);
      pos = next;
    }
    const size_t length = head ? 0
                               : std::stoul(r.headers.count("content-length")
                                                ? r.headers["content-length"]
                                                : "0");
    while (buf_.size() < length) {
      if (!Fill()) return r;
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    r.ok = true;
    return r;
  }

  // True when the server closed the connection (EOF) with no more bytes.
  bool ReadsEof() { return buf_.empty() && !Fill() && eof_; }

 private:
  bool Fill() {
    char tmp[4096];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      eof_ = n == 0;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buf_;
};

std::string Get(std::string_view target, std::string_view extra = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n" +
         std::string(extra) + "\r\n";
}

std::string Post(std::string_view target, std::string_view body,
                 std::string_view extra = "") {
  return "POST " + std::string(target) +
         " HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + std::string(extra) + "\r\n" +
         std::string(body);
}

Json BodyJson(const HttpReply& r) {
  Result<Json> j = Json::Parse(r.body);
  return j.ok() ? *j : Json();
}

// The server on a loop in a thread, stopped (and every handle released)
// by Stop() or a 20 s watchdog.
class AdminServerTest : public ::testing::Test {
 protected:
  void Start(AdminServer::Options options = {}) {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    loop_ready_ = true;
    Result<std::unique_ptr<AdminServer>> s =
        AdminServer::Create(&loop_, options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    port_ = server_->port();
    AddRoutes();
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      static_cast<AdminServerTest*>(a->data)->Shutdown();
    });
    stop_.data = this;
    uv_timer_init(&loop_, &watchdog_);
    watchdog_.data = this;
    uv_timer_start(
        &watchdog_,
        [](uv_timer_t* t) {
          static_cast<AdminServerTest*>(t->data)->Shutdown();
        },
        20'000, 0);
    uv_timer_init(&loop_, &later_);
    later_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }

  // Runs on the loop.
  void Shutdown() {
    if (shut_down_) return;
    shut_down_ = true;
    server_.reset();
    held_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&stop_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&later_), nullptr);
  }

  void TearDown() override {
    if (thread_.joinable()) {
      uv_async_send(&stop_);
      thread_.join();
    }
    // Fails if the server leaked a handle.
    if (loop_ready_) {
      EXPECT_EQ(uv_loop_close(&loop_), 0);
    }
  }

  void AddRoutes() {
    auto ok = [](const Request& req, Responder r) {
      Json body = Json::MakeObject();
      body.Set("route", Json("status")).Set("method", Json(req.method));
      r.SendJson(200, body);
    };
    ASSERT_TRUE(server_->Route("GET", "/api/status", ok).ok());
    ASSERT_TRUE(server_->Route("POST", "/api/pause", ok).ok());
    ASSERT_TRUE(server_
                    ->Route("GET", "/api/hosts/{host}",
                            [](const Request& req, Responder r) {
                              Json body = Json::MakeObject();
                              body.Set("host", Json(*req.Param("host")));
                              r.SendJson(200, body);
                            })
                    .ok());
    ASSERT_TRUE(server_
                    ->Route("GET", "/api/hosts/stats",
                            [](const Request&, Responder r) {
                              r.SendJson(200, Json("literal"));
                            })
                    .ok());
    ASSERT_TRUE(server_
                    ->Route("GET", "/api/docs",
                            [](const Request& req, Responder r) {
                              Json body = Json::MakeObject();
                              for (const auto& [k, v] : req.query) {
                                body.Set(k, Json(v));
                              }
                              r.SendJson(200, body);
                            })
                    .ok());
    ASSERT_TRUE(server_
                    ->Route("POST", "/api/seeds",
                            [](const Request& req, Responder r) {
                              Result<Json> body = req.JsonBody();
                              if (!body.ok() || !body->is_object() ||
                                  body->Find("urls") == nullptr ||
                                  !body->Find("urls")->is_array()) {
                                r.SendError(400, "expected {\"urls\": [...]}");
                                return;
                              }
                              Json out = Json::MakeObject();
                              out.Set("accepted",
                                      Json(body->Find("urls")->items().size()));
                              r.SendJson(202, out);
                            })
                    .ok());
    // Answers 50 ms later from a timer: the asynchronous path.
    ASSERT_TRUE(server_
                    ->Route("GET", "/slow",
                            [this](const Request&, Responder r) {
                              held_ = std::make_unique<Responder>(std::move(r));
                              uv_timer_start(
                                  &later_,
                                  [](uv_timer_t* t) {
                                    auto* self =
                                        static_cast<AdminServerTest*>(t->data);
                                    self->late_send_ok_ = self->held_->SendJson(
                                        200, Json("late"));
                                    self->held_.reset();
                                  },
                                  50, 0);
                            })
                    .ok());
    // Keeps the Responder and never answers.
    ASSERT_TRUE(server_
                    ->Route("GET", "/never",
                            [this](const Request&, Responder r) {
                              held_ = std::make_unique<Responder>(std::move(r));
                            })
                    .ok());
    ASSERT_TRUE(
        server_->Route("GET", "/drop", [](const Request&, Responder) {}).ok());
    ASSERT_TRUE(server_
                    ->Route("GET", "/throw",
                            [](const Request&, Responder) {
                              throw std::runtime_error("boom");
                            })
                    .ok());
  }

  uv_loop_t loop_{};
  bool loop_ready_ = false;
  std::unique_ptr<AdminServer> server_;
  uint16_t port_ = 0;
  uv_async_t stop_{};
  uv_timer_t watchdog_{};
  uv_timer_t later_{};
  std::unique_ptr<Responder> held_;
  std::atomic<bool> late_send_ok_{false};
  bool shut_down_ = false;
  std::thread thread_;
};

TEST_F(AdminServerTest, RoutesByMethodAndPath) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(Get("/api/status")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(BodyJson(r).Find("route")->as_string(), "status");
}

TEST_F(AdminServerTest, UnknownPathIs404Json) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/api/nope")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 404);
  Json body = BodyJson(r);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_EQ(body.Find("status")->as_number(), 404);
  EXPECT_FALSE(body.Find("error")->as_string().empty());
  // An error that is not the stream's fault keeps the connection.
  ASSERT_TRUE(c.Send(Get("/api/status")));
  EXPECT_EQ(c.Read().status, 200);
}

TEST_F(AdminServerTest, WrongMethodIs405WithAllow) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/api/status", "")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD");
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 405);
}

TEST_F(AdminServerTest, HeadAnswersGetRoutesWithoutBody) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send("HEAD /api/status HTTP/1.1\r\nHost: h\r\n\r\n"));
  HttpReply r = c.Read(/*head=*/true);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.headers["content-length"], "0");
  ASSERT_TRUE(c.Send(Get("/api/status")));  // no stray body in between
  EXPECT_EQ(c.Read().status, 200);
}

TEST_F(AdminServerTest, PathParamsAreDecodedAndLiteralsWin) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/api/hosts/www.example.com%3A8080")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r).Find("host")->as_string(), "www.example.com:8080");
  ASSERT_TRUE(c.Send(Get("/api/hosts/stats")));
  EXPECT_EQ(BodyJson(c.Read()).as_string(), "literal");
  ASSERT_TRUE(c.Send(Get("/api/hosts/")));  // an empty segment is no host
  EXPECT_EQ(c.Read().status, 404);
}

TEST_F(AdminServerTest, QueryParamsArePercentDecoded) {
  Start();
  Client c(port_);
  ASSERT_TRUE(
      c.Send(Get("/api/docs?since=2026-01-01T00%3A00%3A00Z&limit=5"
                 "&name=a+b%26c")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  Json body = BodyJson(r);
  EXPECT_EQ(body.Find("since")->as_string(), "2026-01-01T00:00:00Z");
  EXPECT_EQ(body.Find("limit")->as_string(), "5");
  EXPECT_EQ(body.Find("name")->as_string(), "a b&c");
}

TEST_F(AdminServerTest, JsonBodyIsReadAndBadJsonIsAClientError) {
  Start();
  Client c(port_);
  ASSERT_TRUE(
      c.Send(Post("/api/seeds", R"({"urls": ["http://a/", "http://b/"]})",
                  "Content-Type: application/json\r\n")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(BodyJson(r).Find("accepted")->as_number(), 2);
  ASSERT_TRUE(c.Send(Post("/api/seeds", R"({"urls": [)")));
  r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 400);
}

TEST_F(AdminServerTest, TokenIsRequiredWhenConfigured) {
  AdminServer::Options options;
  options.token = "s3cret-token";
  Start(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/api/status")));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.headers["www-authenticate"], "Bearer realm=\"crawld\"");
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 401);
  ASSERT_TRUE(c.Send(Get("/api/status", "Authorization: Bearer wrong\r\n")));
  EXPECT_EQ(c.Read().status, 401);
  ASSERT_TRUE(
      c.Send(Get("/api/status", "Authorization: Bearer s3cret-token-x\r\n")));
  EXPECT_EQ(c.Read().status, 401);
  // Auth comes before routing: an unknown path does not reveal itself.
  ASSERT_TRUE(c.Send(Get("/api/nope")));
  EXPECT_EQ(c.Read().status, 401);
  ASSERT_TRUE(
      c.Send(Get("/api/status", "Authorization: Bearer s3cret-token\r\n")));
  EXPECT_EQ(c.Read().status, 200);
  ASSERT_TRUE(
      c.Send(Post("/api/pause", "", "Authorization: bearer s3cret-token\r\n")));
  EXPECT_EQ(c.Read().status, 200);
}

TEST_F(AdminServerTest, WithOpenReadsOnlyMutationsNeedTheToken) {
  AdminServer::Options options;
  options.token = "tok";
  options.token_for_reads = false;
  Start(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/api/status")));
  EXPECT_EQ(c.Read().status, 200);
  ASSERT_TRUE(c.Send(Post("/api/pause", "")));
  EXPECT_EQ(c.Read().status, 401);
  ASSERT_TRUE(c.Send(Post("/api/pause", "", "Authorization: Bearer tok\r\n")));
  EXPECT_EQ(c.Read().status, 200);
}

TEST_F(AdminServerTest, OversizedBodyIs413AndCloses) {
  AdminServer::Options options;
  options.request.max_body_bytes = 16;
  Start(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Post("/api/seeds", std::string(64, 'x'))));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 413);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, OversizedHeaderIs431AndCloses) {
  AdminServer::Options options;
  options.request.max_header_bytes = 256;
  Start(options);
  Client c(port_);
  ASSERT_TRUE(
      c.Send(Get("/api/status", "X-Big: " + std::string(1000, 'a') + "\r\n")));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 431);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, MalformedRequestLineIs400AndCloses) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send("HELLO THERE\r\n\r\n"));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 400);
  EXPECT_TRUE(c.ReadsEof());
  // The server is unharmed.
  Client d(port_);
  ASSERT_TRUE(d.Send(Get("/api/status")));
  EXPECT_EQ(d.Read().status, 200);
}

TEST_F(AdminServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  Client c(port_);
  // /slow answers last in time but must still come first on the wire.
  ASSERT_TRUE(c.Send(Get("/slow") + Get("/api/hosts/one") +
                     Get("/api/hosts/two") + Get("/api/nope")));
  HttpReply r1 = c.Read();
  HttpReply r2 = c.Read();
  HttpReply r3 = c.Read();
  HttpReply r4 = c.Read();
  EXPECT_EQ(BodyJson(r1).as_string(), "late");
  EXPECT_EQ(BodyJson(r2).Find("host")->as_string(), "one");
  EXPECT_EQ(BodyJson(r3).Find("host")->as_string(), "two");
  EXPECT_EQ(r4.status, 404);
}

TEST_F(AdminServerTest, KeepAliveAndConnectionClose) {
  Start();
  Client c(port_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(Get("/api/status")));
    HttpReply r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers["connection"], "keep-alive");
  }
  ASSERT_TRUE(c.Send(Get("/api/status", "Connection: close\r\n")));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, Http10ClosesByDefault) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send("GET /api/status HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, IncompleteRequestGets408AfterTimeout) {
  AdminServer::Options options;
  options.request_timeout_ms = 200;
  Start(options);
  Client c(port_);
  // Slowloris: a request whose header block never ends.
  ASSERT_TRUE(c.Send("GET /api/status HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n"));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 408);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, IdleKeepAliveConnectionIsClosed) {
  AdminServer::Options options;
  options.idle_timeout_ms = 100;
  Start(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/api/status")));
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, AsyncResponderAnswersLater) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/slow")));
  HttpReply r = c.Read();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r).as_string(), "late");
  // The next response comes from a later loop iteration, after the timer
  // callback that sent "late" has returned.
  ASSERT_TRUE(c.Send(Get("/api/status")));
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_TRUE(late_send_ok_);
}

TEST_F(AdminServerTest, DroppedOrThrowingHandlerGives500) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/drop")));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(BodyJson(r).Find("status")->as_number(), 500);
  ASSERT_TRUE(c.Send(Get("/throw")));
  EXPECT_EQ(c.Read().status, 500);
  ASSERT_TRUE(c.Send(Get("/api/status")));
  EXPECT_EQ(c.Read().status, 200);
}

TEST_F(AdminServerTest, SilentHandlerGets503AfterTimeout) {
  AdminServer::Options options;
  options.handler_timeout_ms = 100;
  Start(options);
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/never")));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(AdminServerTest, ConnectionsOverTheCapAreRefusedWith503) {
  AdminServer::Options options;
  options.max_connections = 2;
  Start(options);
  Client a(port_), b(port_);
  ASSERT_TRUE(a.Send(Get("/api/status")));
  ASSERT_EQ(a.Read().status, 200);
  ASSERT_TRUE(b.Send(Get("/api/status")));
  ASSERT_EQ(b.Read().status, 200);
  Client over(port_);
  HttpReply r = over.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(over.ReadsEof());
  // The admitted ones still work.
  ASSERT_TRUE(a.Send(Get("/api/status")));
  EXPECT_EQ(a.Read().status, 200);
}

TEST_F(AdminServerTest, ExpectContinueGets100BeforeTheBody) {
  Start();
  Client c(port_);
  const std::string body = R"({"urls": ["http://a/"]})";
  ASSERT_TRUE(
      c.Send("POST /api/seeds HTTP/1.1\r\nHost: h\r\n"
             "Expect: 100-continue\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n"));
  HttpReply interim = c.Read(/*head=*/true);
  ASSERT_TRUE(interim.ok);
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.Send(body));
  HttpReply r = c.Read();
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(BodyJson(r).Find("accepted")->as_number(), 1);
}

TEST_F(AdminServerTest, EveryResponseIsReportedToOnResponse) {
  std::mutex mu;
  std::vector<std::string> seen;
  AdminServer::Options options;
  options.on_response = [&](const AccessRecord& rec) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(std::string(rec.method) + " " + std::string(rec.path) + " " +
                   std::to_string(rec.status));
  };
  Start(options);
  {
    Client c(port_);
    ASSERT_TRUE(c.Send(Get("/api/hosts/x%20y") + Get("/nope")));
    EXPECT_EQ(c.Read().status, 200);
    EXPECT_EQ(c.Read().status, 404);
    ASSERT_TRUE(c.Send("BAD\r\n\r\n"));
    EXPECT_EQ(c.Read().status, 400);
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"GET /api/hosts/x%20y 200",
                                            "GET /nope 404", "  400"}));
}

TEST_F(AdminServerTest, ServerDestroyedWhileRequestsAreInFlight) {
  Start();
  Client c(port_);
  ASSERT_TRUE(c.Send(Get("/never") + "GET /api/sta"));
  // TearDown destroys the server with a pending request and a partial one;
  // uv_loop_close() there checks that every handle was released.
}

TEST(AdminServerCreate, RefusesNonLoopbackWithoutToken) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  AdminServer::Options options;
  options.bind_address = "0.0.0.0";
  Result<std::unique_ptr<AdminServer>> s = AdminServer::Create(&loop, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kFailedPrecondition);
  options.bind_address = "not-an-ip";
  EXPECT_EQ(AdminServer::Create(&loop, options).status().code(),
            Status::Code::kInvalidArgument);
  options.bind_address = "127.0.0.1";
  options.max_connections = 0;
  EXPECT_FALSE(AdminServer::Create(&loop, options).ok());
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(AdminServerCreate, PortInUseIsAnIOError) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    Result<std::unique_ptr<AdminServer>> first =
        AdminServer::Create(&loop, AdminServer::Options());
    ASSERT_TRUE(first.ok());
    AdminServer::Options options;
    options.port = (*first)->port();
    EXPECT_NE(options.port, 0);
    Result<std::unique_ptr<AdminServer>> second =
        AdminServer::Create(&loop, options);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), Status::Code::kIOError);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(AdminServerCreate, BadRoutesAreRejected) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    Result<std::unique_ptr<AdminServer>> s =
        AdminServer::Create(&loop, AdminServer::Options());
    ASSERT_TRUE(s.ok());
    AdminServer& server = **s;
    auto h = [](const Request&, Responder) {};
    EXPECT_TRUE(server.Route("GET", "/api/hosts/{host}", h).ok());
    EXPECT_FALSE(server.Route("GET", "/api/hosts/{name}", h).ok());  // dup
    EXPECT_TRUE(server.Route("POST", "/api/hosts/{host}", h).ok());
    EXPECT_FALSE(server.Route("GET", "no-slash", h).ok());
    EXPECT_FALSE(server.Route("GET", "/a/{}", h).ok());
    EXPECT_FALSE(server.Route("GET", "/a/{x}/{x}", h).ok());
    EXPECT_FALSE(server.Route("GET", "/a/b{c}", h).ok());
    EXPECT_FALSE(server.Route("GET", "/x", nullptr).ok());
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
}  // namespace crawld::daemon
