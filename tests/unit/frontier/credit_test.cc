// AOPIC credit scheduling (frontier/frontier.h, file comment): host-level
// credit, the tax and lambda account, page budgets, and the switch-off.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawld::frontier {
namespace {

constexpr int64_t kSec = 1'000'000;

Item MakeItem(std::string url, double credit = 1.0) {
  Item item;
  item.url = std::move(url);
  item.credit = credit;
  return item;
}

Options CreditOptions() {
  Options o;
  o.credit_scheduling = true;
  o.seed_credit = 0.0;
  o.tax = 0.10;
  o.lambda_interval = 1'000'000;  // no share-out unless a test wants it
  o.base_page_budget = 0;         // no budget unless a test wants it
  return o;
}

TEST(Aopic, ReadyHostWithMostCreditGoesFirstEvenIfReadyLater) {
  Frontier f(CreditOptions());
  f.Push("http://poor:80", MakeItem("poor1", 1.0));
  f.Push("http://poor:80", MakeItem("poor2", 1.0));
  f.Push("http://rich:80", MakeItem("rich1", 50.0));
  f.Push("http://rich:80", MakeItem("rich2", 50.0));
  f.Push("http://mid:80", MakeItem("mid1", 10.0));
  EXPECT_EQ(f.Pop(0)->host_key, "http://rich:80");
  EXPECT_EQ(f.Pop(0)->host_key, "http://mid:80");
  EXPECT_EQ(f.Pop(0)->host_key, "http://poor:80");
  // poor becomes ready at 1 s, rich at 1 s + 5 us; at 2 s both are ready
  // and credit, not the earlier time, decides.
  f.Complete("http://poor:80", 0, Completion{});
  f.Complete("http://rich:80", 5, Completion{});
  EXPECT_EQ(f.NextReadyUs(), 1 * kSec);
  EXPECT_EQ(f.Pop(2 * kSec)->item.url, "rich2");
  EXPECT_EQ(f.Pop(2 * kSec)->item.url, "poor2");
  // Politeness still rules: a not-yet-ready rich host does not go.
  f.Push("http://rich:80", MakeItem("rich3", 1000.0));
  f.Push("http://poor:80", MakeItem("poor3", 0.0));
  f.Complete("http://rich:80", 2 * kSec, Completion{});
  f.Complete("http://poor:80", 2 * kSec - 1, Completion{});
  EXPECT_EQ(f.Pop(3 * kSec - 1)->item.url, "poor3");
}

TEST(Aopic, PagesTakeTheirShareOfHostCreditLessTheTax) {
  Frontier f(CreditOptions());
  f.Push("http://a:80", MakeItem("a1", 6.0));
  f.Push("http://a:80", MakeItem("a2", 2.0));
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->credit, 8.0);
  auto r = f.Pop(0);
  ASSERT_TRUE(r);
  // Host-level: the page gets credit / queued = 8 / 2, whatever it carried.
  EXPECT_DOUBLE_EQ(r->item.credit, 4.0 * 0.9);
  EXPECT_DOUBLE_EQ(f.lambda(), 0.4);
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->credit, 4.0);
  // Credit for an already-queued or already-seen URL still raises the host.
  f.AddCredit("http://a:80", 3.0, "http://elsewhere:80");
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->credit, 7.0);
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->inbound_credit, 8.0 + 3.0);
  // Credit from the host itself is credit, but not inbound.
  f.AddCredit("http://a:80", 1.0, "http://a:80");
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->inbound_credit, 11.0);
  f.AddCredit("http://a:80", std::numeric_limits<double>::quiet_NaN());
  f.AddCredit("http://a:80", -5.0);
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->credit, 8.0);
}

TEST(Aopic, TaxAccumulatesAndIsSharedEquallyAmongHostsWithWork) {
  Options o = CreditOptions();
  o.min_delay_us = 0;
  o.lambda_interval = 2;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("a1", 10.0));
  f.Push("http://a:80", MakeItem("a2", 10.0));
  f.Push("http://b:80", MakeItem("b1", 0.0));
  f.Push("http://b:80", MakeItem("b2", 0.0));
  f.Push("http://c:80", MakeItem("c1", 0.0));  // will be empty at share-out
  f.AddCredit("http://idle:80", 5.0);          // no queued work: no share

  auto c = f.Pop(0);  // a: 20 credit, 2 queued -> page 10, tax 1
  ASSERT_EQ(c->host_key, "http://a:80");
  EXPECT_DOUBLE_EQ(f.lambda(), 1.0);
  f.Complete("http://a:80", 0, Completion{});
  auto second = f.Pop(0);  // a again (10 > 0): page 10, tax 1; share-out
  ASSERT_EQ(second->host_key, "http://a:80");
  // a has nothing left: 2.0 is split between b and c, 1.0 each.
  EXPECT_DOUBLE_EQ(f.lambda(), 0.0);
  EXPECT_DOUBLE_EQ(f.Host("http://a:80")->credit, 0.0);
  EXPECT_DOUBLE_EQ(f.Host("http://b:80")->credit, 1.0);
  EXPECT_DOUBLE_EQ(f.Host("http://c:80")->credit, 1.0);
  EXPECT_DOUBLE_EQ(f.Host("http://idle:80")->credit, 5.0);
  // b's share stays with b when it empties, and is spent by its pages.
  auto b1 = f.Pop(0);
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->host_key, "http://b:80");  // tie on credit: b seen before c
  EXPECT_DOUBLE_EQ(b1->item.credit, 0.5 * 0.9);
}

TEST(Aopic, CreditIsConservedAcrossPopsAndShareOuts) {
  Options o = CreditOptions();
  o.min_delay_us = 0;
  o.lambda_interval = 7;
  o.seed_credit = 1.0;
  Frontier f(o);
  double injected = 0.0;
  double paid_out = 0.0;
  const int kHosts = 13;
  for (int i = 0; i < 400; ++i) {
    const double c = (i % 5) * 0.25;
    f.Push("http://h" + std::to_string(i % kHosts) + ":80",
           MakeItem("u" + std::to_string(i), c));
    injected += c;
  }
  injected += kHosts * 1.0;  // seed credit
  for (int i = 0; i < 300; ++i) {
    auto r = f.Pop(i);
    ASSERT_TRUE(r);
    paid_out += r->item.credit;
    f.Complete(r->host_key, i, Completion{});
  }
  double held = f.lambda();
  for (int i = 0; i < kHosts; ++i) {
    held += f.Host("http://h" + std::to_string(i) + ":80")->credit;
  }
  // The tax is part of `held` (lambda or shared out): nothing is created or
  // lost by the frontier itself.
  EXPECT_NEAR(held + paid_out, injected, 1e-9 * injected);
}

// Credit orders ready hosts; it never overrides politeness and never stops
// a ready host from being served when the richer ones must wait.
TEST(Aopic, ZeroCreditHostNeitherBlocksOthersNorStarves) {
  Options o = CreditOptions();
  o.min_delay_us = 1 * kSec;
  o.delay_factor = 0.0;
  o.lambda_interval = 10;
  Frontier f(o);
  for (int i = 0; i < 50; ++i) {
    f.Push("http://rich1:80", MakeItem("r1-" + std::to_string(i), 5.0));
    f.Push("http://rich2:80", MakeItem("r2-" + std::to_string(i), 5.0));
  }
  for (int i = 0; i < 5; ++i) {
    f.Push("http://poor:80", MakeItem("p" + std::to_string(i), 0.0));
  }
  EXPECT_DOUBLE_EQ(f.Host("http://poor:80")->credit, 0.0);
  std::map<std::string, int> served;
  std::vector<std::string> order;
  // Fetches take no time; the clock moves 0.25 s per round, one Pop each.
  int64_t now = 0;
  for (int round = 0; round < 40; ++round, now += kSec / 4) {
    auto r = f.Pop(now);
    if (!r) continue;
    ++served[r->host_key];
    order.push_back(r->host_key);
    f.Complete(r->host_key, now, Completion{});
  }
  // Both rich hosts go first while all three are ready ...
  ASSERT_GE(order.size(), 3u);
  EXPECT_NE(order[0], "http://poor:80");
  EXPECT_NE(order[1], "http://poor:80");
  // ... and the poor host takes the slots in which they must wait.
  EXPECT_EQ(order[2], "http://poor:80");
  EXPECT_EQ(served["http://poor:80"], 5);
  EXPECT_GE(served["http://rich1:80"], 9);
  EXPECT_GE(served["http://rich2:80"], 9);
}

TEST(Aopic, PageBudgetStopsATrapHostUntilInboundCreditArrives) {
  Options o = CreditOptions();
  o.min_delay_us = 0;
  o.base_page_budget = 3;
  o.budget_pages_per_credit = 10.0;
  Frontier f(o);
  // A trap: every URL found on the trap itself.
  for (int i = 0; i < 10; ++i) {
    f.Push("http://trap:80", MakeItem("t" + std::to_string(i), 1.0),
           "http://trap:80");
  }
  f.Push("http://ok:80", MakeItem("ok1", 0.0));
  f.Push("http://ok:80", MakeItem("ok2", 0.0));
  EXPECT_EQ(f.Host("http://trap:80")->page_budget, 3u);
  int trap_pages = 0;
  int64_t now = 0;
  while (auto r = f.Pop(now)) {
    if (r->host_key == "http://trap:80") ++trap_pages;
    f.Complete(r->host_key, now, Completion{});
    ++now;
  }
  EXPECT_EQ(trap_pages, 3);
  // The rest waits, counted, not dropped; the frontier is idle meanwhile.
  EXPECT_EQ(f.queued(), 7u);
  EXPECT_EQ(f.Host("http://trap:80")->queued, 7u);
  EXPECT_EQ(f.dropped(), 0u);
  EXPECT_TRUE(f.Idle());
  EXPECT_EQ(f.NextReadyUs(), std::numeric_limits<int64_t>::max());
  // A link from another host buys 0.2 x 10 = 2 more pages.
  f.AddCredit("http://trap:80", 0.2, "http://ok:80");
  EXPECT_EQ(f.Host("http://trap:80")->page_budget, 5u);
  EXPECT_FALSE(f.Idle());
  int more = 0;
  while (auto r = f.Pop(now)) {
    ++more;
    f.Complete(r->host_key, now, Completion{});
    ++now;
  }
  EXPECT_EQ(more, 2);
  // A page put back (429, robots wait) returns to the budget.
  f.AddCredit("http://trap:80", 0.1, "http://ok:80");
  auto r = f.Pop(now);
  ASSERT_TRUE(r);
  f.PushFront(r->host_key, std::move(r->item));
  f.Release("http://trap:80");
  EXPECT_EQ(f.Host("http://trap:80")->pages, 5u);
  EXPECT_TRUE(f.Pop(now));
}

// A revisit (a continuous crawl) is not a new page: it does not count
// against the budget, and at the head of a host at its budget it goes
// while the host's new URLs still wait.
TEST(Aopic, ARevisitNeitherCountsAgainstNorWaitsForThePageBudget) {
  Options o = CreditOptions();
  o.min_delay_us = 0;
  o.base_page_budget = 2;
  o.budget_pages_per_credit = 0;
  Frontier f(o);
  const std::string h = "http://site:80";
  for (int i = 0; i < 4; ++i) {
    f.Push(h, MakeItem("new" + std::to_string(i), 1.0), h);
  }
  int64_t now = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = f.Pop(now);
    ASSERT_TRUE(r);
    f.Complete(r->host_key, now++, Completion{});
  }
  EXPECT_TRUE(f.AtPageBudget(h));
  EXPECT_FALSE(f.Pop(now));  // two new URLs wait for credit
  // Revisits of the two pages: at the front, they go, and count nothing.
  for (int i = 0; i < 2; ++i) {
    Item revisit = MakeItem("new" + std::to_string(i), 1.0);
    revisit.revisit = true;
    ASSERT_TRUE(f.PushFront(h, std::move(revisit)));
  }
  for (int i = 0; i < 2; ++i) {
    auto r = f.Pop(now);
    ASSERT_TRUE(r) << i;
    EXPECT_TRUE(r->item.revisit);
    f.Complete(r->host_key, now++, Completion{});
  }
  EXPECT_EQ(f.Host(h)->pages, 2u);
  EXPECT_FALSE(f.Pop(now));  // the new URLs still wait
  EXPECT_EQ(f.Host(h)->queued, 2u);
  // Below the budget a revisit queued at the back counts nothing either.
  EXPECT_FALSE(f.AtPageBudget("http://elsewhere:80"));
}

TEST(Aopic, SwitchedOffIsEarliestReadyFirstWithoutBudget) {
  Options o;
  o.credit_scheduling = false;
  o.base_page_budget = 1;  // ignored when off
  Frontier f(o);
  f.Push("http://rich:80", MakeItem("r1", 100.0));
  f.Push("http://rich:80", MakeItem("r2", 100.0));
  f.Push("http://poor:80", MakeItem("p1", 0.0));
  f.Push("http://poor:80", MakeItem("p2", 0.0));
  EXPECT_EQ(f.Pop(0)->item.url, "r1");  // same time: head credit breaks tie
  EXPECT_EQ(f.Pop(0)->item.url, "p1");
  f.Complete("http://poor:80", 0, Completion{});
  f.Complete("http://rich:80", 5, Completion{});
  auto p = f.Pop(10 * kSec);
  EXPECT_EQ(p->item.url, "p2");           // ready first wins over credit
  EXPECT_DOUBLE_EQ(p->item.credit, 0.0);  // the item's own credit, untouched
  auto r = f.Pop(10 * kSec);
  EXPECT_EQ(r->item.url, "r2");  // second page although the budget is 1
  EXPECT_DOUBLE_EQ(r->item.credit, 100.0);
  EXPECT_DOUBLE_EQ(f.lambda(), 0.0);
}

}  // namespace
}  // namespace crawld::frontier
