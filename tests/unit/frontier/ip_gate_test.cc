// IpGate: at most one request in flight per address, FIFO waiters, and the
// delay rule per address; with shared slots (frontier/ip_slots.h), the same
// across gates (issue 14).
#include "frontier/ip_gate.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <climits>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontier/ip_slots.h"

namespace crawld::frontier {
namespace {

IpGate::Options Opts(int64_t min_delay_us, double factor = 0) {
  IpGate::Options o;
  o.min_delay_us = min_delay_us;
  o.delay_factor = factor;
  o.max_delay_us = 10'000'000;
  return o;
}

TEST(IpGate, OneRequestInFlightPerAddress) {
  IpGate gate(Opts(0));
  std::vector<std::string> started;
  gate.Enter("10.0.0.1", 0, [&] { started.push_back("a1"); });
  gate.Enter("10.0.0.1", 0, [&] { started.push_back("a2"); });
  gate.Enter("10.0.0.2", 0, [&] { started.push_back("b1"); });
  EXPECT_EQ(started, (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(gate.waiting(), 1u);
  EXPECT_EQ(gate.in_flight(), 2u);
  // Still busy: nothing starts.
  EXPECT_EQ(gate.RunReady(100), INT64_MAX);
  gate.Leave("10.0.0.1", 100, 50);
  EXPECT_EQ(gate.RunReady(100), INT64_MAX);
  EXPECT_EQ(started.back(), "a2");
  EXPECT_EQ(gate.waiting(), 0u);
  EXPECT_EQ(gate.waits(), 1u);
}

TEST(IpGate, GapIsMinDelayOrFactorTimesResponseTimeCapped) {
  IpGate gate(Opts(1000, 2.0));
  int n = 0;
  gate.Enter("ip", 0, [&] { ++n; });
  gate.Leave("ip", 10'000, 3000);  // gap max(1000, 6000) = 6000
  gate.Enter("ip", 10'000, [&] { ++n; });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(gate.RunReady(15'999), 16'000);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(gate.RunReady(16'000), INT64_MAX);
  EXPECT_EQ(n, 2);
  // A huge response time is capped at max_delay.
  gate.Leave("ip", 20'000, INT64_MAX / 4);
  gate.Enter("ip", 20'000, [&] { ++n; });
  EXPECT_EQ(gate.RunReady(20'000), 20'000 + 10'000'000);
}

TEST(IpGate, WaitersStartInArrivalOrder) {
  IpGate gate(Opts(0));
  std::vector<int> order;
  gate.Enter("ip", 0, [&] { order.push_back(0); });
  for (int i = 1; i <= 3; ++i)
    gate.Enter("ip", 0, [&, i] { order.push_back(i); });
  for (int t = 1; t <= 3; ++t) {
    gate.Leave("ip", t, 0);
    gate.RunReady(t);
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(IpGate, DisabledOrUnknownAddressNeverWaits) {
  IpGate::Options o = Opts(1'000'000);
  o.enabled = false;
  IpGate off(o);
  int n = 0;
  off.Enter("ip", 0, [&] { ++n; });
  off.Enter("ip", 0, [&] { ++n; });
  EXPECT_EQ(n, 2);
  IpGate on(Opts(1'000'000));
  on.Enter("", 0, [&] { ++n; });
  on.Enter("", 0, [&] { ++n; });
  EXPECT_EQ(n, 4);
}

TEST(IpGate, StartMayLeaveSynchronously) {
  // A request that fails before any I/O leaves inside its start callback.
  IpGate gate(Opts(0));
  int n = 0;
  gate.Enter("ip", 0, [&] {
    ++n;
    gate.Leave("ip", 0, 0);
  });
  gate.Enter("ip", 0, [&] { ++n; });
  EXPECT_EQ(n, 2);
  EXPECT_EQ(gate.waits(), 0u);
}

// --- With shared slots: two gates stand for two worker processes (two
// handles on one table are two holders).

class SharedSlots {
 public:
  SharedSlots() {
    char tmpl[] = "/tmp/crawld-ipgate-XXXXXX";
    dir_ = mkdtemp(tmpl);
    IpSlotTable::Options o;
    o.poll_us = 1000;
    o.turn_grace_us = 5000;
    o.buckets = 16;
    a_ = std::move(IpSlotTable::Create(dir_ + "/ip-slots", o)).value();
    b_ = std::move(IpSlotTable::Open(dir_ + "/ip-slots", o)).value();
  }
  ~SharedSlots() { std::filesystem::remove_all(dir_); }
  IpSlotTable* a() { return a_.get(); }
  IpSlotTable* b() { return b_.get(); }

 private:
  std::string dir_;
  std::unique_ptr<IpSlotTable> a_, b_;
};

IpGate::Options SharedOpts(int64_t min_delay_us, SharedIpSlots* shared) {
  IpGate::Options o = Opts(min_delay_us);
  o.shared = shared;
  return o;
}

TEST(IpGateShared, AnAddressHeldElsewhereIsRetriedOnTime) {
  SharedSlots slots;
  IpGate ga(SharedOpts(2000, slots.a()));
  IpGate gb(SharedOpts(2000, slots.b()));
  int na = 0, nb = 0;
  ga.Enter("ip", 0, [&] { ++na; });
  EXPECT_EQ(na, 1);
  gb.Enter("ip", 10, [&] { ++nb; });
  EXPECT_EQ(nb, 0);
  EXPECT_EQ(gb.waiting(), 1u);
  EXPECT_EQ(gb.waits(), 1u);
  // Held by the other gate, which will not tell this one: poll.
  EXPECT_EQ(gb.RunReady(10), 1010);
  EXPECT_EQ(gb.RunReady(1010), 2010);
  EXPECT_EQ(nb, 0);
  // The other gate's request ends; its gap (2 ms) binds this gate too.
  ga.Leave("ip", 1500, 100);
  EXPECT_EQ(gb.RunReady(2010), 3500);
  EXPECT_EQ(nb, 0);
  EXPECT_EQ(gb.RunReady(3500), INT64_MAX);
  EXPECT_EQ(nb, 1);
  EXPECT_EQ(gb.in_flight(), 1u);
  // And now the first gate waits for the second.
  ga.Enter("ip", 3600, [&] { ++na; });
  EXPECT_EQ(na, 1);
  gb.Leave("ip", 4000, 100);
  EXPECT_EQ(ga.RunReady(4600), 6000);
  EXPECT_EQ(ga.RunReady(6000), INT64_MAX);
  EXPECT_EQ(na, 2);
}

TEST(IpGateShared, EnterFindsTheGapAnotherGateLeft) {
  SharedSlots slots;
  IpGate ga(SharedOpts(5000, slots.a()));
  IpGate gb(SharedOpts(5000, slots.b()));
  int n = 0;
  ga.Enter("10.0.0.1", 0, [&] { ++n; });
  ga.Leave("10.0.0.1", 100, 10);
  gb.Enter("10.0.0.1", 200, [&] { ++n; });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(gb.RunReady(200), 5100);
  EXPECT_EQ(gb.RunReady(5100), INT64_MAX);
  EXPECT_EQ(n, 2);
}

// Two gates with a queue each on one address, driven by one clock: never
// both in flight, every gap kept, and they take turns.
TEST(IpGateShared, TwoBusyGatesTakeTurns) {
  SharedSlots slots;
  constexpr int64_t kGap = 700, kRequest = 300;
  IpGate gates[2] = {IpGate(SharedOpts(kGap, slots.a())),
                     IpGate(SharedOpts(kGap, slots.b()))};
  int64_t ends[2] = {-1, -1};  // the request in flight ends then
  int64_t last_leave = INT64_MIN / 2;
  std::vector<int> order;
  int64_t now = 0;
  for (int g = 0; g < 2; ++g) {
    for (int i = 0; i < 20; ++i) {
      gates[g].Enter("ip", now, [&, g] {
        ASSERT_EQ(ends[1 - g], -1) << "both in flight at " << now;
        ASSERT_GE(now, last_leave + kGap) << "gap broken at " << now;
        ends[g] = now + kRequest;
        order.push_back(g);
      });
    }
  }
  for (; now < 200'000 && order.size() < 40; now += 50) {
    for (int g = 0; g < 2; ++g) {
      if (ends[g] != -1 && ends[g] <= now) {
        ends[g] = -1;
        last_leave = now;
        gates[g].Leave("ip", now, kRequest);
      }
      gates[g].RunReady(now);
    }
  }
  ASSERT_EQ(order.size(), 40u);
  // The first gate started its first request at once, before the second
  // one waited; from then on they alternate.
  for (size_t i = 2; i < order.size(); ++i) {
    EXPECT_NE(order[i], order[i - 1]) << "start " << i;
  }
}

TEST(IpGate, ForgetsIdleAddressesAfterTheirGap) {
  // Memory: an address used once is not remembered for ever.
  IpGate gate(Opts(1000));
  for (int i = 0; i < 1000; ++i) {
    const std::string ip =
        "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    gate.Enter(ip, i, [] {});
    gate.Leave(ip, i, 0);
  }
  EXPECT_GT(gate.addresses(), 900u);
  EXPECT_EQ(gate.RunReady(100'000), INT64_MAX);
  EXPECT_EQ(gate.addresses(), 0u);
  int n = 0;
  gate.Enter("10.0.0.1", 100'000, [&] { ++n; });
  EXPECT_EQ(n, 1);  // its gap passed long ago
}

}  // namespace
}  // namespace crawld::frontier
