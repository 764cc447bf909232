// Per-IP politeness across nodes (cluster/ip_leases.h, issue 14) against a
// real redis-server on a free 127.0.0.1 port: a node uses an address with
// no round trip per request, two nodes never hold one address at once and
// keep the gap between them, a dead node's lease ends within its TTL, and
// nothing is acquired while Redis is out of reach.
#include "cluster/ip_leases.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontier/ip_slots.h"
#include "tests/unit/cluster/loop_util.h"
#include "tests/unit/cluster/redis_server.h"

namespace crawld::cluster {
namespace {

using frontier::IpSlotTable;
using testing::FindRedisServer;
using testing::RedisServer;
using testing::TestLoop;

int64_t NowUs() { return static_cast<int64_t>(uv_hrtime() / 1000); }

#define REQUIRE_REDIS()                                     \
  const std::string redis_bin = FindRedisServer();          \
  if (redis_bin.empty()) GTEST_SKIP() << "no redis-server"; \
  RedisServer redis(redis_bin);                             \
  ASSERT_TRUE(redis.Start()) << "redis-server did not start"

// One node's data directory with its machine table.
class NodeDir {
 public:
  NodeDir() {
    char tmpl[] = "/tmp/crawld-ipleases-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~NodeDir() { std::filesystem::remove_all(path_); }
  std::string table() const { return path_ + "/ip-slots"; }

 private:
  std::string path_;
};

IpSlotTable::Options TableOpts() {
  IpSlotTable::Options o;
  o.poll_us = 2000;
  o.turn_grace_us = 50'000;
  o.buckets = 64;
  return o;
}

IpLeaseOptions LeaseOpts(int port, int node, int ttl_ms = 1000) {
  IpLeaseOptions o;
  o.port = port;
  o.crawl = "t";
  o.node_id = node;
  o.lease_ttl_ms = ttl_ms;
  o.contend_poll_ms = 20;
  o.ask_timeout_ms = 500;
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 100;
  return o;
}

// EVAL calls redis-server counted so far.
int64_t EvalCalls(const RedisServer& redis) {
  const std::string info = redis.Query({"INFO", "commandstats"});
  const size_t at = info.find("cmdstat_eval:calls=");
  if (at == std::string::npos) return 0;
  return std::atoll(info.c_str() + at + 19);
}

// Tries `ip` on `slots` as a gate would (at its retry times) until it is
// acquired or `ms` passed; the time it took (us), -1 if never.
int64_t AcquireWithin(TestLoop& loop, frontier::SharedIpSlots* slots,
                      const std::string& ip, int ms) {
  const int64_t start = NowUs();
  int64_t retry = 0;
  bool got = false;
  loop.RunUntil(
      [&] {
        const int64_t now = NowUs();
        if (now >= retry) {
          auto a = slots->TryAcquire(ip, now);
          got = a.acquired;
          retry = a.retry_us;
        }
        return got;
      },
      ms);
  return got ? NowUs() - start : -1;
}

TEST(IpLeases, ANodeAloneUsesAnAddressWithoutARoundTripPerRequest) {
  REQUIRE_REDIS();
  NodeDir dir;
  auto table = std::move(IpSlotTable::Create(dir.table(), TableOpts())).value();
  TestLoop loop;
  auto leases = std::move(NewRedisIpLeases(loop.get(), table.get(),
                                           LeaseOpts(redis.port(), 0, 10'000)))
                    .value();
  ASSERT_GE(AcquireWithin(loop, leases.get(), "10.0.0.1", 5000), 0);
  const int64_t evals_before = EvalCalls(redis);
  for (int i = 0; i < 500; ++i) {
    const int64_t now = NowUs();
    leases->Release("10.0.0.1", now, now);
    ASSERT_TRUE(leases->TryAcquire("10.0.0.1", now).acquired) << i;
  }
  loop.RunFor(50);
  // 500 requests, at most a renewal or two (one every quarter lease).
  EXPECT_LE(EvalCalls(redis) - evals_before, 2);
  EXPECT_EQ(leases->stats().asked, 1u);
  EXPECT_EQ(redis.Query({"GET", "crawld:t:ip:10.0.0.1"}), "0");
}

TEST(IpLeases, CloseLetsTheLoopRunDryAndReleaseStillFreesTheSlot) {
  REQUIRE_REDIS();
  NodeDir dir;
  auto table = std::move(IpSlotTable::Create(dir.table(), TableOpts())).value();
  auto other = std::move(IpSlotTable::Open(dir.table(), TableOpts())).value();
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    auto leases = std::move(NewRedisIpLeases(&loop, table.get(),
                                             LeaseOpts(redis.port(), 0)))
                      .value();
    // The renewal timer wakes the loop at least every 100 ms.
    bool got = false;
    for (int i = 0; i < 200 && !got; ++i) {
      got = leases->TryAcquire("10.0.0.2", NowUs()).acquired;
      if (!got) uv_run(&loop, UV_RUN_ONCE);
    }
    ASSERT_TRUE(got);
    leases->Close();
    leases->Close();  // idempotent
    EXPECT_FALSE(leases->connected());
    for (int i = 0; i < 100 && uv_loop_alive(&loop) != 0; ++i) {
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_EQ(uv_loop_alive(&loop), 0) << "a handle outlived Close";
    // The request in flight ends after the close: the machine's slot is
    // free for the node's other workers.
    EXPECT_FALSE(other->TryAcquire("10.0.0.2", NowUs()).acquired);
    leases->Release("10.0.0.2", NowUs(), NowUs());
    EXPECT_TRUE(other->TryAcquire("10.0.0.2", NowUs()).acquired);
  }
  uv_run(&loop, UV_RUN_NOWAIT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(IpLeases, NothingIsAcquiredWithoutRedis) {
  const std::string redis_bin = FindRedisServer();
  if (redis_bin.empty()) GTEST_SKIP() << "no redis-server";
  RedisServer redis(redis_bin);  // not started yet: its port refuses
  NodeDir dir;
  auto table = std::move(IpSlotTable::Create(dir.table(), TableOpts())).value();
  TestLoop loop;
  auto leases = std::move(NewRedisIpLeases(loop.get(), table.get(),
                                           LeaseOpts(redis.port(), 0)))
                    .value();
  EXPECT_EQ(AcquireWithin(loop, leases.get(), "10.0.0.1", 300), -1);
  EXPECT_GT(leases->stats().unreachable, 0u);
  // Redis comes: the node reconnects and takes the address.
  ASSERT_TRUE(redis.Start());
  EXPECT_GE(AcquireWithin(loop, leases.get(), "10.0.0.1", 5000), 0);
}

TEST(IpLeases, ADeadNodesLeaseEndsWithinItsTtl) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  constexpr int kTtlMs = 800;
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0, kTtlMs)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1, kTtlMs)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.7", 5000), 0);
  // Node a dies with its request in flight: no release, no renewal.
  const int64_t died = NowUs();
  a.reset();
  const int64_t took = AcquireWithin(loop, b.get(), "10.0.0.7", 5000);
  ASSERT_GE(took, 0);
  EXPECT_LE(NowUs() - died, int64_t{kTtlMs} * 1000 + 300'000);
  EXPECT_GT(b->stats().denied, 0u);
}

TEST(IpLeases, TheWaitingNodeGetsTheAddressAfterTheHoldersGap) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.8", 5000), 0);
  // b asks and keeps asking (as its gate would); a is told at its next
  // renewal and gives the lease back after its request, with a 300 ms gap.
  int64_t b_retry = 0;
  auto b_polls = [&] {
    if (NowUs() >= b_retry) {
      auto got = b->TryAcquire("10.0.0.8", NowUs());
      ASSERT_FALSE(got.acquired);
      b_retry = got.retry_us;
    }
  };
  loop.RunUntil(
      [&] {
        b_polls();
        return a->stats().renewed > 0;
      },
      2000);
  const int64_t renewed = NowUs();
  loop.RunUntil(
      [&] {
        b_polls();
        return NowUs() - renewed > 100'000;
      },
      2000);
  const int64_t released = NowUs();
  a->Release("10.0.0.8", released, released + 300'000);
  const int64_t took = AcquireWithin(loop, b.get(), "10.0.0.8", 5000);
  ASSERT_GE(took, 0);
  EXPECT_GE(NowUs() - released, 300'000);
  EXPECT_EQ(a->stats().given_back, 1u);
  // And a, wanting it back, waits in turn.
  EXPECT_FALSE(a->TryAcquire("10.0.0.8", NowUs()).acquired);
}

TEST(IpLeases, AnAddressANodeStoppedUsingGoesToTheWaitingNodeSoon) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  constexpr int kTtlMs = 4000;
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0, kTtlMs)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1, kTtlMs)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.11", 5000), 0);
  // a's one request ends and a has nothing more for the address; b wants
  // it. Without a check b would wait for a's lease to run out (4 s); a's
  // check after a quarter lease finds b waiting and gives it back.
  const int64_t released = NowUs();
  a->Release("10.0.0.11", released, released + 50'000);
  const int64_t took = AcquireWithin(loop, b.get(), "10.0.0.11", 5000);
  ASSERT_GE(took, 0);
  EXPECT_LT(NowUs() - released, int64_t{kTtlMs} * 1000 / 2);
  EXPECT_GE(NowUs() - released, 50'000);
  EXPECT_GE(a->stats().checked, 1u);
  EXPECT_EQ(a->stats().given_back, 1u);
  // Nobody waits now: b's checks (three a few polls apart, as a wanted the
  // address lately, then one a quarter lease) stop with its permit and
  // never lengthen its lease; a, which gave it back, checks nothing.
  b->Release("10.0.0.11", NowUs(), NowUs());
  const int64_t evals = EvalCalls(redis);
  loop.RunFor(kTtlMs + 500);
  EXPECT_LE(EvalCalls(redis) - evals, 3 + 3);
  EXPECT_GE(b->stats().checked, 1u);
  EXPECT_EQ(redis.Query({"EXISTS", "crawld:t:ip:10.0.0.11"}), "0");
}

TEST(IpLeases, AnAddressTwoNodesWantGoesBackSoonerWhenUnused) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  constexpr int kTtlMs = 4000;  // a quarter lease: 1 s
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0, kTtlMs)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1, kTtlMs)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.12", 5000), 0);
  // b is refused while a holds it, then gets it once a stops using it.
  ASSERT_FALSE(b->TryAcquire("10.0.0.12", NowUs()).acquired);
  a->Release("10.0.0.12", NowUs(), NowUs());
  ASSERT_GE(AcquireWithin(loop, b.get(), "10.0.0.12", 5000), 0);
  // b, which knows that a wants the address too, checks it a few polls
  // after its own last use (not a quarter lease later): a has it back well
  // within the quarter lease.
  const int64_t released = NowUs();
  b->Release("10.0.0.12", released, released);
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.12", 5000), 0);
  EXPECT_LT(NowUs() - released, 600'000);
  EXPECT_EQ(b->stats().given_back, 1u);
}

TEST(IpLeases, AGapLongerThanTheLeaseStillHoldsForTheOtherNode) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  constexpr int kTtlMs = 1000;
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0, kTtlMs)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1, kTtlMs)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.9", 5000), 0);
  // A slow answer: the gap after it (2.5 s, a Crawl-delay say) is longer
  // than the lease, which must not run out inside it.
  const int64_t released = NowUs();
  a->Release("10.0.0.9", released, released + 2'500'000);
  ASSERT_GE(AcquireWithin(loop, b.get(), "10.0.0.9", 5000), 0);
  EXPECT_GE(NowUs() - released, 2'500'000);
}

TEST(IpLeases, ARequestLongerThanTheLeaseKeepsItWhileInFlight) {
  REQUIRE_REDIS();
  NodeDir dir_a, dir_b;
  auto ta = std::move(IpSlotTable::Create(dir_a.table(), TableOpts())).value();
  auto tb = std::move(IpSlotTable::Create(dir_b.table(), TableOpts())).value();
  TestLoop loop;
  constexpr int kTtlMs = 1000;
  auto a = std::move(NewRedisIpLeases(loop.get(), ta.get(),
                                      LeaseOpts(redis.port(), 0, kTtlMs)))
               .value();
  auto b = std::move(NewRedisIpLeases(loop.get(), tb.get(),
                                      LeaseOpts(redis.port(), 1, kTtlMs)))
               .value();
  ASSERT_GE(AcquireWithin(loop, a.get(), "10.0.0.10", 5000), 0);
  // a's transfer runs 2.5 leases long while b keeps asking: a's timer
  // renews the lease in flight, so b never gets the address meanwhile.
  const int64_t until = NowUs() + 5 * kTtlMs * 1000 / 2;
  int64_t retry = 0;
  bool b_got = false;
  loop.RunUntil(
      [&] {
        if (NowUs() >= retry) {
          auto got = b->TryAcquire("10.0.0.10", NowUs());
          b_got = b_got || got.acquired;
          retry = got.retry_us;
        }
        return NowUs() >= until;
      },
      10'000);
  EXPECT_FALSE(b_got);
  EXPECT_GE(a->stats().renewed, 2u);
  EXPECT_EQ(a->stats().lost, 0u);
  a->Release("10.0.0.10", NowUs(), NowUs());
  EXPECT_GE(AcquireWithin(loop, b.get(), "10.0.0.10", 5000), 0);
}

// 2 nodes x 2 worker processes (fork), each with its own loop, Redis
// connection and table handle, hammer two addresses for two seconds;
// every request is logged in shared memory. Never two in flight at one
// address, every gap kept across processes and nodes, and every process
// gets its turn.
TEST(IpLeasesProcess, TwoNodesOfTwoWorkersNeverOverlap) {
  REQUIRE_REDIS();
  constexpr int kNodes = 2, kProcs = 2, kAddrs = 2, kMaxLog = 20'000;
  constexpr int64_t kRequestUs = 8000, kGapUs = 12'000;
  struct Entry {
    int32_t node, proc, addr;
    int64_t start_us, end_us;
  };
  struct Shared {
    std::atomic<int> in_flight[kAddrs];
    std::atomic<int> overlaps;
    std::atomic<int> n;
    Entry log[kMaxLog];
  };
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared{};
  NodeDir dirs[kNodes];
  for (auto& d : dirs) {
    ASSERT_TRUE(IpSlotTable::Create(d.table(), TableOpts()).ok());
  }
  const int64_t deadline = NowUs() + 2'500'000;
  std::vector<pid_t> pids;
  for (int node = 0; node < kNodes; ++node) {
    for (int proc = 0; proc < kProcs; ++proc) {
      const pid_t pid = fork();
      if (pid == 0) {
        int rc = 1;
        {
          auto table = IpSlotTable::Open(dirs[node].table(), TableOpts());
          TestLoop loop;
          auto leases =
              table.ok() ? NewRedisIpLeases(loop.get(), table->get(),
                                            LeaseOpts(redis.port(), node, 1000))
                         : Result<std::unique_ptr<IpLeases>>(table.status());
          if (leases.ok()) {
            int holding = -1;
            int64_t start = 0, retry[kAddrs] = {0, 0};
            unsigned turn = static_cast<unsigned>(proc);
            loop.RunUntil(
                [&] {
                  const int64_t now = NowUs();
                  if (holding >= 0 && now >= start + kRequestUs) {
                    shared->in_flight[holding].fetch_sub(1);
                    const int i = shared->n.fetch_add(1);
                    if (i < kMaxLog) {
                      shared->log[i] = {node, proc, holding, start, now};
                    }
                    (*leases)->Release("10.5.0." + std::to_string(holding), now,
                                       now + kGapUs);
                    holding = -1;
                  }
                  if (now >= deadline) return holding < 0;
                  if (holding >= 0) return false;
                  const int a = static_cast<int>(turn++ % kAddrs);
                  if (now < retry[a]) return false;
                  auto got = (*leases)->TryAcquire(
                      "10.5.0." + std::to_string(a), NowUs());
                  if (!got.acquired) {
                    retry[a] = got.retry_us;
                    return false;
                  }
                  if (shared->in_flight[a].fetch_add(1) != 0) {
                    shared->overlaps++;
                  }
                  holding = a;
                  start = NowUs();
                  return false;
                },
                10'000);
            rc = 0;
          }
        }
        _exit(rc);
      }
      pids.push_back(pid);
    }
  }
  for (pid_t pid : pids) {
    int st = 0;
    for (int i = 0; i < 15'000 && waitpid(pid, &st, WNOHANG) != pid; ++i) {
      usleep(1000);
    }
    if (kill(pid, 0) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
    }
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  EXPECT_EQ(shared->overlaps.load(), 0);
  const int n = std::min(shared->n.load(), kMaxLog);
  std::vector<Entry> log(shared->log, shared->log + n);
  std::sort(log.begin(), log.end(), [](const Entry& x, const Entry& y) {
    return x.start_us < y.start_us;
  });
  std::map<int, int64_t> last_end;
  std::map<int, int> per_node;
  std::map<int, int> per_proc;
  int handovers = 0;
  std::map<int, int> last_node;
  for (const Entry& e : log) {
    ++per_node[e.node];
    ++per_proc[e.node * kProcs + e.proc];
    if (auto it = last_end.find(e.addr); it != last_end.end()) {
      ASSERT_GE(e.start_us, it->second + kGapUs)
          << "address " << e.addr << " node " << e.node;
      if (last_node[e.addr] != e.node) ++handovers;
    }
    last_end[e.addr] = e.end_us;
    last_node[e.addr] = e.node;
  }
  // About 2.5 s / 20 ms per request per address, less the handovers.
  EXPECT_GT(n, 100);
  // Both nodes had each address more than once: the leases moved.
  EXPECT_GE(handovers, 4);
  for (int p = 0; p < kNodes * kProcs; ++p) {
    EXPECT_GT(per_proc[p], 0) << "process " << p << " of " << n;
  }
  munmap(mem, sizeof(Shared));
}

}  // namespace
}  // namespace crawld::cluster
