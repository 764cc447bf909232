// Tests of node membership (cluster/cluster.h, "Membership"): the rules on a
// view, and the Redis heartbeat against a real redis-server started on a
// free 127.0.0.1 port and killed (by PID) at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "tests/unit/cluster/loop_util.h"
#include "tests/unit/cluster/redis_server.h"

namespace crawld::cluster {
namespace {

using testing::FindRedisServer;
using testing::RedisServer;
using testing::TestLoop;

std::string Host(int i) { return "host-" + std::to_string(i) + ".example"; }

// The membership's clock (steady_clock milliseconds).
uint64_t NowMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// --- The rules on a view (pure).

TEST(Ring, LosingAWorkerMovesOnlyItsHosts) {
  const Options o;
  const Ring all(std::vector<int>{0, 1, 2, 3, 4, 5}, o);
  const Ring without(std::vector<int>{0, 1, 4, 5}, o);
  int moved = 0;
  for (int i = 0; i < 20000; ++i) {
    const int before = all.Owner(Host(i));
    const int after = without.Owner(Host(i));
    if (before == 2 || before == 3) {
      EXPECT_TRUE(after != 2 && after != 3);
      ++moved;
    } else {
      ASSERT_EQ(before, after) << Host(i);
    }
  }
  // About a third of the hosts were on the lost workers.
  EXPECT_GT(moved, 20000 / 4);
  EXPECT_LT(moved, 20000 / 2);
}

TEST(Ring, JoiningWorkersTakeHostsOnlyForThemselves) {
  const Options o;
  const Ring before(std::vector<int>{0, 1, 4, 5}, o);
  const Ring after(std::vector<int>{0, 1, 4, 5, 6, 7}, o);
  std::set<int> gainers;
  for (int i = 0; i < 20000; ++i) {
    const int a = before.Owner(Host(i)), b = after.Owner(Host(i));
    if (a != b) gainers.insert(b);
  }
  EXPECT_EQ(gainers, (std::set<int>{6, 7}));
}

TEST(Ring, IdsZeroToNMatchTheCountConstructor) {
  const Options o;
  const Ring by_count(6, o);
  const Ring by_ids(std::vector<int>{0, 1, 2, 3, 4, 5}, o);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(by_count.Owner(Host(i)), by_ids.Owner(Host(i)));
  }
  EXPECT_EQ(by_ids.workers(), 6);
}

TEST(MembershipRules, WorkersOfNodes) {
  EXPECT_EQ(WorkersOf({0, 2, 3}, 2), (std::vector<int>{0, 1, 4, 5, 6, 7}));
  EXPECT_EQ(WorkersOf({}, 2), std::vector<int>{});
}

MembershipView View(int64_t epoch, std::vector<int> live,
                    std::map<int, NodeReport> reports) {
  MembershipView v;
  v.epoch = epoch;
  v.live = std::move(live);
  v.reports = std::move(reports);
  return v;
}

NodeReport Acked(int64_t epoch, bool going = false) {
  NodeReport r;
  r.acked_epoch = epoch;
  r.going = going;
  return r;
}

TEST(MembershipRules, AnEpochIsSettledWhenEveryLiveNodeSwitchedToIt) {
  EXPECT_TRUE(EpochSettled(View(4, {0, 2}, {{0, Acked(4)}, {2, Acked(4)}})));
  // A node still on the old ring may still fetch a moved host.
  EXPECT_FALSE(EpochSettled(View(4, {0, 2}, {{0, Acked(4)}, {2, Acked(3)}})));
  EXPECT_FALSE(EpochSettled(View(4, {0, 2}, {{0, Acked(4)}})));
  EXPECT_FALSE(EpochSettled(View(4, {}, {})));
}

TEST(MembershipRules, QuorumIsTheConfiguredNodesOrARunningCrawl) {
  // A new crawl waits for its nodes.
  EXPECT_FALSE(
      QuorumMet(View(2, {0, 1}, {{0, Acked(0)}, {1, Acked(0)}}), 0, 3));
  EXPECT_TRUE(QuorumMet(View(3, {0, 1, 2}, {}), 0, 3));
  // A node joining a running crawl does not wait for the configured count.
  EXPECT_TRUE(QuorumMet(View(5, {0, 2, 3}, {{0, Acked(4, true)}}), 3, 4));
  // Nor one coming back.
  EXPECT_TRUE(QuorumMet(View(5, {0, 1}, {{0, Acked(4, true)}}), 1, 3));
  // Never for a node that is not live itself.
  EXPECT_FALSE(QuorumMet(View(5, {0, 2}, {{0, Acked(4, true)}}), 3, 2));
}

TEST(MembershipRules, EachGoneWorkerHasOneAdopterOnTheRing) {
  const Options o;
  const Ring ring(std::vector<int>{0, 1, 4, 5}, o);
  for (int gone : {2, 3}) {
    const int a = AdopterOf(ring, gone);
    EXPECT_TRUE(a == 0 || a == 1 || a == 4 || a == 5) << a;
    EXPECT_EQ(a, AdopterOf(Ring(std::vector<int>{0, 1, 4, 5}, o), gone));
  }
}

// --- The heartbeat against Redis.

class MembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bin = FindRedisServer();
    if (bin.empty()) GTEST_SKIP() << "redis-server not installed";
    server_ = std::make_unique<RedisServer>(bin);
    ASSERT_TRUE(server_->Start()) << "redis-server did not start";
  }

  MembershipOptions Opts(int node) {
    MembershipOptions o;
    o.port = server_->port();
    o.crawl = "t";
    o.node_id = node;
    o.heartbeat_ttl_ms = 600;
    o.period_ms = 50;
    o.reconnect_max_ms = 200;
    return o;
  }

  // A node and the views it got.
  struct Node {
    std::vector<MembershipView> views;
    std::unique_ptr<Membership> m;
    const MembershipView& last() const { return views.back(); }
  };

  std::unique_ptr<Node> Make(const MembershipOptions& o, bool join = true) {
    auto n = std::make_unique<Node>();
    Node* raw = n.get();
    auto r = NewRedisMembership(loop_.get(), o, [raw](const MembershipView& v) {
      raw->views.push_back(v);
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return nullptr;
    n->m = std::move(r).value();
    if (join) n->m->Join();
    return n;
  }

  std::unique_ptr<RedisServer> server_;
  TestLoop loop_;
};

TEST_F(MembershipTest, HeartbeatExpiryChangesTheEpoch) {
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  const std::vector<int> both{0, 1}, only_a{0};
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !a->views.empty() && a->last().live == both; }, 10000));
  const int64_t epoch_both = a->last().epoch;
  // Node 1 dies without a goodbye: its key expires after the TTL.
  b.reset();
  ASSERT_TRUE(loop_.RunUntil([&] { return a->last().live == only_a; }, 10000));
  EXPECT_GT(a->last().epoch, epoch_both);
  EXPECT_EQ(a->last().gone, std::vector<int>{1});
  // Epochs never go back while Redis keeps its data, and one change is one
  // epoch however many nodes see it.
  for (size_t i = 1; i < a->views.size(); ++i) {
    EXPECT_GE(a->views[i].epoch, a->views[i - 1].epoch);
  }
  EXPECT_EQ(server_->Query({"GET", "crawld:t:view"}), "0");
}

TEST_F(MembershipTest, ReportsLeaseAndCleanLeave) {
  auto a = Make(Opts(0));
  auto b = Make(Opts(1));
  ASSERT_TRUE(a && b);
  NodeReport r;
  r.acked_epoch = 7;
  r.going = true;
  r.idle = true;
  r.sent = 11;
  r.received = 12;
  r.pages = 13;
  b->m->Publish(r);
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return !a->views.empty() && a->last().reports.count(1) != 0 &&
               a->last().reports.at(1).pages == 13;
      },
      10000));
  const NodeReport& got = a->last().reports.at(1);
  EXPECT_EQ(got.acked_epoch, 7);
  EXPECT_TRUE(got.going && got.idle);
  EXPECT_EQ(got.sent, 11u);
  EXPECT_EQ(got.received, 12u);
  // A member's lease runs from before its heartbeat: ahead of now, within
  // the TTL.
  const uint64_t now = NowMs();
  EXPECT_GT(a->last().lease_until_ms, now);
  EXPECT_LE(a->last().lease_until_ms, now + 600);
  // A goodbye is seen at the next heartbeat, well before the TTL.
  bool left = false;
  b->m->Leave([&] { left = true; });
  ASSERT_TRUE(loop_.RunUntil([&] { return left; }, 5000));
  const size_t seen = a->views.size();
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return a->views.size() > seen && a->last().live == std::vector<int>{0};
      },
      400));
}

TEST_F(MembershipTest, ASecondProcessWithTheIdDisplacesTheFirst) {
  auto first = Make(Opts(0));
  ASSERT_TRUE(first);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !first->views.empty() && first->last().lease_until_ms; },
      10000));
  const int64_t epoch = first->last().epoch;
  auto second = Make(Opts(0));
  ASSERT_TRUE(second);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !first->views.empty() && first->last().displaced; }, 10000));
  EXPECT_EQ(first->last().lease_until_ms, 0u);
  ASSERT_FALSE(second->views.empty());
  EXPECT_FALSE(second->last().displaced);
  EXPECT_NE(second->last().lease_until_ms, 0u);
  // Same node id, same view: a restarted node does not change the epoch.
  EXPECT_EQ(second->last().epoch, epoch);
}

TEST_F(MembershipTest, ObserverSeesTheViewAndDoneWithoutJoining) {
  auto a = Make(Opts(0));
  auto obs = Make(Opts(2), /*join=*/false);
  ASSERT_TRUE(a && obs);
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return !obs->views.empty() && obs->last().live == std::vector<int>{0};
      },
      10000));
  EXPECT_EQ(obs->last().lease_until_ms, 0u);
  a->m->SetDone("done");
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !obs->views.empty() && obs->last().done == "done"; },
      10000));
  EXPECT_EQ(server_->Query({"SISMEMBER", "crawld:t:members", "2"}), "0");
}

// A done key left by an earlier run (kept a minute) is not this run's end:
// nodes starting a new run, observers included, do not stop on it, and the
// first member to join when no node fetches deletes it.
TEST_F(MembershipTest, AnEarlierRunsDoneKeyIsNotTheEnd) {
  ASSERT_EQ(server_->Query({"SET", "crawld:t:done", "max_pages 00ff"}), "OK");
  auto obs = Make(Opts(2), /*join=*/false);
  ASSERT_TRUE(obs);
  loop_.RunFor(300);
  ASSERT_FALSE(obs->views.empty());
  EXPECT_EQ(obs->last().done, "");
  auto a = Make(Opts(0));
  ASSERT_TRUE(a);
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return server_->Query({"EXISTS", "crawld:t:done"}) == "0";
      },
      5000));
  // This run's end is seen by all. The observer's reply may be handled
  // before the reply to a's own beat that set the key (two connections,
  // one loop), so the wait is for both views.
  a->m->SetDone("done");
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return !obs->views.empty() && obs->last().done == "done" &&
               !a->views.empty() && a->last().done == "done";
      },
      5000));
  EXPECT_EQ(obs->last().done, "done");
  EXPECT_EQ(a->last().done, "done");
}

TEST_F(MembershipTest, RedisDownTheLeaseRunsOutAndComesBack) {
  auto a = Make(Opts(0));
  ASSERT_TRUE(a);
  ASSERT_TRUE(loop_.RunUntil(
      [&] { return !a->views.empty() && a->last().lease_until_ms; }, 10000));
  server_->Kill();
  loop_.RunFor(800);  // longer than the TTL
  // No view came with a newer lease: the last one has run out.
  EXPECT_LT(a->last().lease_until_ms, NowMs());
  ASSERT_TRUE(server_->Start());
  const size_t seen = a->views.size();
  ASSERT_TRUE(loop_.RunUntil(
      [&] {
        return a->views.size() > seen && a->last().lease_until_ms > NowMs();
      },
      10000));
  EXPECT_EQ(a->last().live, std::vector<int>{0});
}

}  // namespace
}  // namespace crawld::cluster
