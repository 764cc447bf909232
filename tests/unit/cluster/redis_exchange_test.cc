// Tests of the Redis Streams exchange (cluster/cluster.h) against a real
// redis-server that each test starts on a free 127.0.0.1 port in a
// temporary directory and kills (by PID) at the end.
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
#include "tests/unit/cluster/redis_server.h"

namespace crawld::cluster {
namespace {

using testing::FindRedisServer;
using testing::RedisServer;
using testing::TestLoop;

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

// A node that dies for good takes its frontier with it; what was routed to
// its workers is still in their inbox streams (retain_acked), and the worker
// that adopts such an inbox gets all of it, acknowledged or not, plus what
// still arrives for the gone worker.
TEST_F(RedisExchangeTest, AdopterReadsEverythingSentToAGoneWorker) {
  constexpr int kN = 1000;
  RedisOptions o0 = Opts(0), o1 = Opts(1), o2 = Opts(2);
  for (RedisOptions* o : {&o0, &o1, &o2}) {
    o->exchange.workers = 3;
    o->retain_acked = true;
  }
  auto a = Make(o0);
  auto b = Make(o1);
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  SendRange(a.get(), 0, 1, 0, kN / 2);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return in_b.urls.size() >= kN / 2 && a->Pending(1) == 0; }, 30000));
  // Acknowledged and still there: the stream is the gone worker's memory.
  EXPECT_EQ(server_->Query({"XLEN", "crawld:t:inbox:1"}),
            std::to_string(kN / 200));
  EXPECT_FALSE(a->Backpressured(1));
  b.reset();  // the node dies
  loop_.Drain();
  auto c = Make(o2);
  ASSERT_TRUE(c);
  Inbox heir;
  c->SetInbox(heir.Fn());
  c->Adopt({1});
  // A sender that has not heard of the death yet still routes to it.
  SendRange(a.get(), 0, 1, kN / 2, kN);
  ASSERT_TRUE(loop_.RunUntil([&] { return heir.urls.size() >= kN; }, 30000))
      << heir.urls.size();
  EXPECT_TRUE(heir.ExactlyOnceInOrder(0, kN));
  // Adopted entries are not acknowledged in the gone worker's group: the
  // next adopter (or the worker itself, back) reads them again.
  loop_.RunFor(300);
  EXPECT_EQ(heir.urls.size(), static_cast<size_t>(kN));
  c->Adopt({});
  SendRange(a.get(), 0, 1, kN, kN + 100);
  loop_.RunFor(500);
  EXPECT_EQ(heir.urls.size(), static_cast<size_t>(kN)) << "still adopted";
}

// With retained entries the senders' back-pressure counts only entries not
// yet acknowledged, not the stream's length.
TEST_F(RedisExchangeTest, RetainedEntriesDoNotBackpressure) {
  constexpr int kN = 2000;
  RedisOptions oa = Opts(0), ob = Opts(1);
  oa.retain_acked = ob.retain_acked = true;
  oa.max_backlog_batches = 3;
  oa.backlog_poll_ms = 20;
  auto a = Make(oa);
  auto b = Make(ob);
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  int next = 0;
  auto pump = [&] {
    while (next < kN && a->Send(1, UrlMessage{Url(0, next), 1, 0}).ok()) {
      ++next;
    }
    a->Flush();
  };
  a->SetOnWritable([&](int) { pump(); });
  pump();
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        pump();
        return in_b.urls.size() >= kN && a->Pending(1) == 0;
      },
      30000))
      << in_b.urls.size();
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
  // Every entry acknowledged (the acks leave with the next loop turns) and
  // still in the stream.
  EXPECT_TRUE(loop_.RunUntil(
      [&] {
        return server_->Query({"GET", "crawld:t:inbox-acked:1"}) ==
               std::to_string(kN / 100);
      },
      5000));
  EXPECT_EQ(server_->Query({"XLEN", "crawld:t:inbox:1"}),
            std::to_string(kN / 100));
  loop_.RunFor(100);
  EXPECT_FALSE(a->Backpressured(1));
}

// WhenCaughtUp waits until what is in the inbox stream now has been
// delivered: the handover barrier before a worker starts on moved hosts.
TEST_F(RedisExchangeTest, WhenCaughtUpFiresAfterEveryEntryInTheStream) {
  constexpr int kN = 3000;
  auto a = Make(Opts(0));
  ASSERT_TRUE(a);
  SendRange(a.get(), 0, 1, 0, kN);
  ASSERT_TRUE(loop_.RunUntil([&] { return a->Pending(1) == 0; }, 30000));
  RedisOptions ob = Opts(1);
  ob.read_count = 5;  // many reads to go
  auto b = Make(ob);
  ASSERT_TRUE(b);
  Inbox in_b;
  b->SetInbox(in_b.Fn());
  size_t at_barrier = 0;
  bool fired = false;
  b->WhenCaughtUp([&] {
    fired = true;
    at_barrier = in_b.urls.size();
  });
  ASSERT_TRUE(loop_.RunUntil([&] { return fired; }, 30000));
  EXPECT_EQ(at_barrier, static_cast<size_t>(kN));
  // An empty inbox passes at once (after one round trip).
  bool again = false;
  b->WhenCaughtUp([&] { again = true; });
  EXPECT_TRUE(loop_.RunUntil([&] { return again; }, 5000));
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
