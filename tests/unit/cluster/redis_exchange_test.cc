// Tests of the Redis Streams exchange and membership (cluster/cluster.h)
// against a real redis-server that each test starts on a free 127.0.0.1
// port in a temporary directory and kills (by PID) at the end.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "tests/unit/cluster/loop_util.h"

namespace crawld::cluster {
namespace {

using testing::TestLoop;

std::string FindRedisServer() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server",
                        "/usr/sbin/redis-server"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return {};
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A redis-server child process on 127.0.0.1, no persistence.
class RedisServer {
 public:
  explicit RedisServer(std::string binary) : binary_(std::move(binary)) {
    char tmpl[] = "/tmp/crawld-redis-XXXXXX";
    dir_ = mkdtemp(tmpl);
    port_ = FreeLoopbackPort();
  }
  ~RedisServer() {
    Kill();
    std::filesystem::remove_all(dir_);
  }

  // Starts the server and waits (at most 10 s) until it answers PING.
  bool Start() {
    const std::string port = std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      // Not the test's stdout: a pipe reader would wait for the server.
      // And it dies with us, even if we are killed by a timeout.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int null_fd = open("/dev/null", O_RDWR);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      execl(binary_.c_str(), binary_.c_str(), "--port", port.c_str(), "--bind",
            "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
            dir_.c_str(), "--logfile", (dir_ + "/redis.log").c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto r = Query({"PING"}); r == "PONG") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }

  // A blocking query on a fresh connection: the reply as text (integers in
  // decimal, status and strings verbatim), "" on failure.
  std::string Query(const std::vector<std::string>& args) const {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c == nullptr || c->err != 0) {
      if (c != nullptr) redisFree(c);
      return {};
    }
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(
        c, static_cast<int>(args.size()), argv.data(), lens.data()));
    std::string out;
    if (r != nullptr) {
      if (r->type == REDIS_REPLY_INTEGER) {
        out = std::to_string(r->integer);
      } else if (r->str != nullptr) {
        out.assign(r->str, r->len);
      }
      freeReplyObject(r);
    }
    redisFree(c);
    return out;
  }

 private:
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

std::string Url(int from, int i) {
  return "http://w" + std::to_string(from) + ".example/p/" + std::to_string(i);
}

class RedisExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bin = FindRedisServer();
    if (bin.empty()) GTEST_SKIP() << "redis-server not installed";
    server_ = std::make_unique<RedisServer>(bin);
    ASSERT_TRUE(server_->Start()) << "redis-server did not start";
  }

  RedisOptions Opts(int self) {
    RedisOptions o;
    o.port = server_->port();
    o.crawl = "t";
    o.exchange.self = self;
    o.exchange.workers = 2;
    o.exchange.batch_urls = 100;
    o.exchange.reconnect_max_ms = 200;
    o.heartbeat_ttl_ms = 600;
    o.claim_min_idle_ms = 300;
    o.claim_interval_ms = 100;
    return o;
  }

  std::unique_ptr<Exchange> Make(const RedisOptions& o) {
    auto r = NewRedisExchange(loop_.get(), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  // Sends URLs [first, last) of worker `from` to `to`; all are accepted
  // (the tests stay under the bounds).
  static void SendRange(Exchange* ex, int from, int to, int first, int last) {
    for (int i = first; i < last; ++i) {
      ASSERT_TRUE(ex->Send(to, UrlMessage{Url(from, i), 1, 0.25}).ok());
    }
    ex->Flush();
  }

  // Members are destroyed in reverse order: the exchanges (declared in each
  // test) go before the loop, and the server goes last.
  std::unique_ptr<RedisServer> server_;
  TestLoop loop_;
};

struct Inbox {
  std::vector<std::string> urls;
  std::vector<AckFn> held;
  bool hold = false;
  InboxFn Fn() {
    return [this](int, std::vector<UrlMessage>&& batch, AckFn ack) {
      for (auto& m : batch) urls.push_back(std::move(m.url));
      if (hold) {
        held.push_back(std::move(ack));
      } else {
        ack();
      }
    };
  }
  ::testing::AssertionResult ExactlyOnceInOrder(int from, int n) const {
    if (static_cast<int>(urls.size()) != n) {
      return ::testing::AssertionFailure()
             << "got " << urls.size() << " URLs, want " << n;
    }
    for (int i = 0; i < n; ++i) {
      if (urls[static_cast<size_t>(i)] != Url(from, i)) {
        return ::testing::AssertionFailure()
               << "position " << i << ": " << urls[static_cast<size_t>(i)];
      }
    }
    return ::testing::AssertionSuccess();
  }
};

TEST_F(RedisExchangeTest, SendReceiveAckLeavesNothingPending) {
  constexpr int kN = 10'000;
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  SendRange(a.get(), 0, 1, 0, kN);
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return in_b.urls.size() >= kN && a->Pending(1) == 0 &&
               server_->Query({"XLEN", "crawld:t:inbox:1"}) == "0";
      },
      30000))
      << in_b.urls.size();
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
  EXPECT_EQ(b->stats().batches_received, static_cast<uint64_t>(kN / 100));
  EXPECT_EQ(a->stats().batches_acked, static_cast<uint64_t>(kN / 100));
}

TEST_F(RedisExchangeTest, DeadConsumersEntriesAreReclaimedByANewOne) {
  constexpr int kN = 1000;
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  Inbox dying;
  dying.hold = true;
  b->SetInbox(dying.Fn());
  SendRange(a.get(), 0, 1, 0, kN);
  ASSERT_TRUE(loop_.RunUntil([&] { return dying.urls.size() >= kN; }, 30000));
  // The worker dies with every batch delivered and none acknowledged.
  dying.held.clear();
  b.reset();
  loop_.Drain();
  EXPECT_EQ(server_->Query({"XLEN", "crawld:t:inbox:1"}),
            std::to_string(kN / 100));

  auto b2 = Make(Opts(1));
  ASSERT_TRUE(b2);
  Inbox heir;
  b2->SetInbox(heir.Fn());
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return heir.urls.size() >= kN &&
               server_->Query({"XLEN", "crawld:t:inbox:1"}) == "0";
      },
      30000))
      << heir.urls.size();
  EXPECT_TRUE(heir.ExactlyOnceInOrder(0, kN));
}

TEST_F(RedisExchangeTest, HeartbeatExpiryChangesTheEpoch) {
  std::vector<std::pair<int64_t, std::vector<int>>> seen;
  RedisOptions oa = Opts(0);
  oa.on_epoch = [&](int64_t epoch, const std::vector<int>& live) {
    seen.emplace_back(epoch, live);
  };
  auto a = Make(oa);
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  const std::vector<int> both{0, 1}, only_a{0};
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !seen.empty() && seen.back().second == both; }, 10000));
  const int64_t epoch_both = seen.back().first;
  // Worker 1 dies without a goodbye: its key expires after the TTL.
  b.reset();
  ASSERT_TRUE(
      loop_.RunUntil([&] { return seen.back().second == only_a; }, 10000));
  EXPECT_GT(seen.back().first, epoch_both);
  // Epochs only grow while Redis keeps its data.
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GT(seen[i].first, seen[i - 1].first);
  }
  EXPECT_EQ(server_->Query({"GET", "crawld:t:view"}), "10");
}

TEST_F(RedisExchangeTest, RedisRestartedClientReconnectsAndContinues) {
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  SendRange(a.get(), 0, 1, 0, 500);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return in_b.urls.size() >= 500 && a->Pending(1) == 0; }, 30000));
  server_->Kill();
  // URLs sent while Redis is down wait in the sender.
  SendRange(a.get(), 0, 1, 500, 1000);
  loop_.RunFor(300);
  EXPECT_EQ(a->Pending(1), 500u);
  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return in_b.urls.size() >= 1000 && a->Pending(1) == 0; }, 30000))
      << in_b.urls.size();
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, 1000));
  EXPECT_GE(a->stats().reconnects, 1u);
  EXPECT_GE(b->stats().reconnects, 1u);
}

TEST_F(RedisExchangeTest, DroppedConnectionsLoseNothing) {
  constexpr int kN = 2000;
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  // Connections die in the middle of the traffic, on both sides.
  SendRange(a.get(), 0, 1, 0, kN / 2);
  a->TEST_DropConnections();
  b->TEST_DropConnections();
  SendRange(a.get(), 0, 1, kN / 2, kN);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return in_b.urls.size() >= kN && a->Pending(1) == 0; }, 30000))
      << in_b.urls.size();
  // At least once: an XADD applied just before its reply was lost comes
  // twice (the seen-set's job); every URL is there.
  std::set<std::string> got(in_b.urls.begin(), in_b.urls.end());
  EXPECT_EQ(got.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got.count(Url(0, i)), 1u) << i;
  EXPECT_GE(a->stats().reconnects, 1u);
  EXPECT_GE(b->stats().reconnects, 1u);
}

TEST_F(RedisExchangeTest, SlowReceiverBackpressuresSenderNothingLost) {
  constexpr int kN = 3000;
  RedisOptions oa = Opts(0);
  oa.max_backlog_batches = 5;
  oa.backlog_poll_ms = 20;
  auto a = Make(oa);
  RedisOptions ob = Opts(1);
  ob.max_unacked_batches = 2;
  ob.claim_min_idle_ms = 60000;
  auto b = Make(ob);
  ASSERT_TRUE(a && b);
  Inbox in_b;
  in_b.hold = true;
  b->SetInbox(in_b.Fn());
  // The sender learns the receiver's backlog by polling, so it feeds the
  // exchange a batch at a time, as a parser would, until it is told to wait.
  int next = 0;
  auto pump = [&] {
    while (next < kN && a->Send(1, UrlMessage{Url(0, next), 1, 0}).ok()) ++next;
    a->Flush();
  };
  a->SetOnWritable([&](int) { pump(); });
  for (int round = 0; round < kN / 100 && !a->Backpressured(1); ++round) {
    for (int i = 0; i < 100 && a->Send(1, {Url(0, next), 1, 0}).ok(); ++i) {
      ++next;
    }
    a->Flush();
    loop_.RunFor(40);
  }
  ASSERT_TRUE(a->Backpressured(1));
  loop_.RunFor(300);
  const int stalled_at = next;
  EXPECT_LT(stalled_at, kN);
  EXPECT_TRUE(a->Backpressured(1));
  EXPECT_EQ(a->Send(1, {Url(0, next), 1, 0}).code(),
            Status::Code::kResourceExhausted);
  EXPECT_EQ(in_b.urls.size(), 200u);  // two unacked batches of 100
  // The receiver catches up; the sender resumes.
  in_b.hold = false;
  for (auto& ack : in_b.held) ack();
  in_b.held.clear();
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return in_b.urls.size() >= kN && a->Pending(1) == 0; }, 30000))
      << in_b.urls.size();
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
}

TEST(RedisExchangeOptions, BadOptionsAreRefused) {
  TestLoop loop;
  RedisOptions o;
  o.exchange.workers = 2;
  o.exchange.self = 2;
  EXPECT_EQ(NewRedisExchange(loop.get(), o).status().code(),
            Status::Code::kInvalidArgument);
  o.exchange.self = 0;
  o.port = 0;
  EXPECT_EQ(NewRedisExchange(loop.get(), o).status().code(),
            Status::Code::kInvalidArgument);
  o.port = 6379;
  o.crawl = "";
  EXPECT_EQ(NewRedisExchange(loop.get(), o).status().code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace crawld::cluster
