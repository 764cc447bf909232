// IpGate: at most one request in flight per address, FIFO waiters, and the
// delay rule per address.
#include "frontier/ip_gate.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace crawld::frontier
