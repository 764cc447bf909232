// Tests of http::Client: calls to an http::Server on the SAME loop, which
// can only succeed if the client never blocks the loop (the supervisor's
// case: it serves the API and asks its workers on one loop). Every loop
// has a watchdog timer, so no test can hang.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "http/http.h"

namespace crawld::http {
namespace {

// A port that nothing listens on (bound, then closed).
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class ClientTest : public ::testing::Test {
 public:
  void SetUp() override {
    ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    Server::Options so;
    so.token = "tok";
    auto server = Server::Create(&loop_, so);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_
                    ->Route("GET", "/json",
                            [](const Request&, Responder r) {
                              Json j = Json::object();
                              j["a"] = 1;
                              r.SendJson(200, j);
                            })
                    .ok());
    ASSERT_TRUE(
        server_
            ->Route("POST", "/echo",
                    [](const Request& q, Responder r) {
                      r.Send(Response::MakeText(201, q.body, "text/x-echo"));
                    })
            .ok());
    ASSERT_TRUE(
        server_
            ->Route("GET", "/big",
                    [](const Request&, Responder r) {
                      r.Send(Response::MakeText(200, std::string(100000, 'x')));
                    })
            .ok());
    ASSERT_TRUE(server_
                    ->Route("GET", "/never",
                            [this](const Request&, Responder r) {
                              held_.push_back(std::move(r));
                            })
                    .ok());
    uv_timer_init(&loop_, &watchdog_);
    watchdog_.data = this;
    uv_timer_start(
        &watchdog_,
        [](uv_timer_t* t) {
          auto* self = static_cast<ClientTest*>(t->data);
          self->timed_out_ = true;
          self->Finish();
        },
        20'000, 0);
  }

  void TearDown() override {
    held_.clear();
    client_.reset();
    server_.reset();
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&watchdog_))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
    }
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);  // no handle leaked
    curl_global_cleanup();
  }

  void MakeClient(ClientOptions options = {}) {
    auto c = Client::Create(&loop_, options);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c).value();
  }

  // Ends the test's loop run: closes what keeps the loop alive.
  void Finish() {
    if (finished_) return;
    finished_ = true;
    held_.clear();
    client_.reset();
    server_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
  }

  uv_loop_t loop_{};
  uv_timer_t watchdog_{};
  bool timed_out_ = false;
  bool finished_ = false;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  std::vector<Responder> held_;
};

TEST_F(ClientTest, GetAndPostReachAServerOnTheSameLoop) {
  MakeClient();
  std::vector<Client::Reply> got;
  auto collect = [&](Client::Reply r) {
    got.push_back(std::move(r));
    if (got.size() == 3) Finish();
  };
  client_->Start({"GET", Url("/json"), "", "tok"}, collect);
  client_->Start({"POST", Url("/echo"), "{\"x\":[1]}", "tok"}, collect);
  client_->Start({"GET", Url("/json"), "", ""}, collect);  // no token
  EXPECT_EQ(client_->in_flight(), 3u);
  EXPECT_TRUE(got.empty());  // never inside Start
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  ASSERT_EQ(got.size(), 3u);
  int ok200 = 0, ok201 = 0, ok401 = 0;
  for (const Client::Reply& r : got) {
    ASSERT_TRUE(r.ok) << r.error;
    if (r.status == 200) {
      ++ok200;
      EXPECT_EQ(r.body, "{\"a\":1}");
      EXPECT_EQ(r.content_type, "application/json");
    } else if (r.status == 201) {
      ++ok201;
      EXPECT_EQ(r.body, "{\"x\":[1]}");
      EXPECT_EQ(r.content_type, "text/x-echo");
    } else if (r.status == 401) {
      ++ok401;
    }
  }
  EXPECT_EQ(ok200 + ok201 + ok401, 3);
  EXPECT_EQ(ok401, 1);
}

TEST_F(ClientTest, RefusedConnectionIsConnectFailed) {
  MakeClient();
  Client::Reply got;
  client_->Start(
      {"GET",
       "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/api/status", "",
       ""},
      [&](Client::Reply r) {
        got = std::move(r);
        Finish();
      });
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  EXPECT_FALSE(got.ok);
  EXPECT_TRUE(got.connect_failed);
  EXPECT_FALSE(got.error.empty());
}

TEST_F(ClientTest, SilentServerTimesOutWithoutHoldingTheLoop) {
  ClientOptions o;
  o.timeout_ms = 200;
  MakeClient(o);
  Client::Reply slow;
  bool fast_first = false;
  client_->Start({"GET", Url("/never"), "", "tok"}, [&](Client::Reply r) {
    slow = std::move(r);
    Finish();
  });
  // Answered while the first call waits: the loop is free.
  client_->Start({"GET", Url("/json"), "", "tok"}, [&](Client::Reply r) {
    fast_first = r.ok && slow.error.empty() && !slow.ok;
  });
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  EXPECT_TRUE(fast_first);
  EXPECT_FALSE(slow.ok);
  EXPECT_FALSE(slow.connect_failed);
  EXPECT_FALSE(slow.error.empty());
}

TEST_F(ClientTest, ReplyOverTheLimitFails) {
  ClientOptions o;
  o.max_reply_bytes = 1000;
  MakeClient(o);
  Client::Reply got;
  client_->Start({"GET", Url("/big"), "", "tok"}, [&](Client::Reply r) {
    got = std::move(r);
    Finish();
  });
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  EXPECT_FALSE(got.ok);
  EXPECT_TRUE(got.body.empty());
  EXPECT_NE(got.error.find("larger than 1000"), std::string::npos) << got.error;
}

TEST_F(ClientTest, BadCallsFailLaterNotInline) {
  MakeClient();
  std::vector<Client::Reply> got;
  auto collect = [&](Client::Reply r) {
    got.push_back(std::move(r));
    if (got.size() == 3) Finish();
  };
  client_->Start({"DELETE", Url("/json"), "", ""}, collect);
  client_->Start({"GET", "ftp://127.0.0.1/x", "", ""}, collect);
  client_->Start({"GET", Url("/json"), "", "a\r\nX-Evil: 1"}, collect);
  EXPECT_TRUE(got.empty());
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  ASSERT_EQ(got.size(), 3u);
  for (const Client::Reply& r : got) {
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.error.empty());
  }
}

TEST_F(ClientTest, DestroyedWithCallsInFlightCallsNothing) {
  MakeClient();
  int calls = 0;
  client_->Start({"GET", Url("/never"), "", "tok"},
                 [&](Client::Reply) { ++calls; });
  client_->Start({"GET", Url("/json"), "", "tok"},
                 [&](Client::Reply) { ++calls; });
  // Let the requests get under way, then drop the client.
  uv_timer_t later;
  uv_timer_init(&loop_, &later);
  later.data = this;
  uv_timer_start(
      &later,
      [](uv_timer_t* t) {
        auto* self = static_cast<ClientTest*>(t->data);
        self->Finish();
        uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
      },
      1, 0);
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  EXPECT_LE(calls, 1);  // /json may have been answered within 1 ms
}

TEST_F(ClientTest, DoneMayDestroyTheClient) {
  MakeClient();
  int calls = 0;
  for (int i = 0; i < 3; ++i) {
    client_->Start({"GET", Url("/json"), "", "tok"}, [&](Client::Reply) {
      ++calls;
      Finish();  // destroys the client; the other replies are dropped
    });
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_FALSE(timed_out_);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace crawld::http
