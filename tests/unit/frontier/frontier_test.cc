// Tests of the frontier's politeness contract (frontier/frontier.h and
// ARCHITECTURE.md "Politeness, the rules that never bend"), plus a randomized
// comparison with a naive model scheduler (LevelDB's ModelDB idea).
#include "frontier/frontier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace crawld::frontier {
namespace {

constexpr int64_t kSec = 1'000'000;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

Item MakeItem(std::string url, double credit = 1.0) {
  Item item;
  item.url = std::move(url);
  item.credit = credit;
  return item;
}

Completion Success(int64_t response_time_us = 0) {
  Completion c;
  c.outcome = Outcome::kSuccess;
  c.response_time_us = response_time_us;
  return c;
}

Completion Failure(Outcome outcome, int64_t retry_after_us = -1) {
  Completion c;
  c.outcome = outcome;
  c.retry_after_us = retry_after_us;
  return c;
}

// Pops at `now` and checks that the item came from `host`.
std::string PopUrl(Frontier& f, int64_t now, std::string_view host) {
  auto r = f.Pop(now);
  EXPECT_TRUE(r.has_value()) << "nothing ready at " << now;
  if (!r) return "";
  EXPECT_EQ(r->host_key, host);
  return r->item.url;
}

TEST(Politeness, FifoPerHost) {
  Frontier f(Options{});
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        f.Push("http://a:80", MakeItem("http://a/" + std::to_string(i))));
  }
  int64_t now = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(PopUrl(f, now, "http://a:80"), "http://a/" + std::to_string(i));
    f.Complete("http://a:80", now, Success());
    now = f.NextReadyUs();
  }
  EXPECT_TRUE(f.Idle());
}

TEST(Politeness, AtMostOneInFlightPerHost) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("http://a/1"));
  f.Push("http://a:80", MakeItem("http://a/2"));
  f.Push("http://b:80", MakeItem("http://b/1"));
  auto first = f.Pop(0);
  auto second = f.Pop(0);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->host_key, second->host_key);
  // Both hosts are busy: nothing else may come out, however late it is.
  EXPECT_FALSE(f.Pop(1000 * kSec).has_value());
  EXPECT_EQ(f.in_flight(), 2u);
  EXPECT_FALSE(f.Acquire("http://a:80", 1000 * kSec));
  EXPECT_EQ(f.NextReadyUs(), kNever);
}

TEST(CrawldOverrides, HostConcurrencyAllowsThatManyInFlight) {
  Frontier f(Options{});
  for (int i = 0; i < 4; ++i)
    f.Push("http://a:80", MakeItem(std::to_string(i)));
  f.SetHostPoliteness("http://a:80", -1, 2);
  ASSERT_TRUE(f.Pop(0));
  ASSERT_TRUE(f.Pop(0));
  // The third waits for a completion, as one would for any other host.
  EXPECT_FALSE(f.Pop(0).has_value());
  EXPECT_EQ(f.Host("http://a:80")->max_in_flight, 2);
  f.Complete("http://a:80", 0, Success());
  EXPECT_TRUE(f.Pop(f.NextReadyUs()).has_value());
  // Back to 1 while two run: after one completion one is still in flight,
  // so nothing more comes out.
  f.SetHostPoliteness("http://a:80", -1, 1);
  f.Complete("http://a:80", 0, Success());
  EXPECT_FALSE(f.Pop(1000 * kSec).has_value());
}

TEST(CrawldOverrides, HostDelayReplacesMinDelayAndCrawlDelay) {
  Options o;
  o.min_delay_us = 3 * kSec;
  Frontier f(o);
  for (int i = 0; i < 3; ++i)
    f.Push("http://a:80", MakeItem(std::to_string(i)));
  f.SetCrawlDelay("http://a:80", 10 * kSec);
  f.SetHostPoliteness("http://a:80", kSec / 2, 1);  // lower than both
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", kSec, Success());
  EXPECT_EQ(f.NextReadyUs(), kSec + kSec / 2);
  ASSERT_TRUE(f.Pop(f.NextReadyUs()));
  // Negative: the config's rule again (Crawl-delay 10 s > min 3 s).
  f.SetHostPoliteness("http://a:80", -1, 1);
  f.Complete("http://a:80", 2 * kSec, Success());
  EXPECT_EQ(f.NextReadyUs(), 12 * kSec);
}

TEST(Politeness, GapAtLeastMinDelay) {
  Options o;
  o.min_delay_us = 3 * kSec;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(10 * kSec));
  f.Complete("http://a:80", 11 * kSec, Success(/*response_time_us=*/1000));
  EXPECT_EQ(f.NextReadyUs(), 14 * kSec);
  EXPECT_FALSE(f.Pop(14 * kSec - 1).has_value());
  EXPECT_EQ(PopUrl(f, 14 * kSec, "http://a:80"), "2");
}

TEST(Politeness, DelayFactorTimesResponseTime) {
  Options o;
  o.min_delay_us = 1 * kSec;
  o.delay_factor = 3.0;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 5 * kSec, Success(2 * kSec));
  EXPECT_EQ(f.Host("http://a:80")->next_fetch_us, 5 * kSec + 6 * kSec);
  EXPECT_EQ(f.NextReadyUs(), 11 * kSec);
}

TEST(Politeness, ComputedDelayCappedAtMaxDelay) {
  Options o;
  o.max_delay_us = 10 * kSec;
  o.delay_factor = 2.0;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 100 * kSec, Success(3600 * kSec));
  EXPECT_EQ(f.NextReadyUs(), 110 * kSec);
  // An absurd response time does not overflow either.
  ASSERT_TRUE(f.Pop(110 * kSec));
  f.Complete("http://a:80", 120 * kSec, Success(kNever));
  EXPECT_EQ(f.Host("http://a:80")->next_fetch_us, 130 * kSec);
}

TEST(Politeness, CrawlDelayHonoured) {
  Options o;
  o.min_delay_us = 1 * kSec;
  Frontier f(o);
  f.SetCrawlDelay("http://a:80", 7 * kSec);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 1 * kSec, Success(10));
  EXPECT_EQ(f.NextReadyUs(), 8 * kSec);
  EXPECT_EQ(f.Host("http://a:80")->crawl_delay_us, 7 * kSec);
}

TEST(Politeness, CrawlDelayCappedAtMaxCrawlDelay) {
  Options o;
  o.max_crawl_delay_us = 30 * kSec;
  Frontier f(o);
  f.SetCrawlDelay("http://a:80", 86400 * kSec);
  EXPECT_EQ(f.Host("http://a:80")->crawl_delay_us, 30 * kSec);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 0, Success());
  EXPECT_EQ(f.NextReadyUs(), 30 * kSec);
  f.SetCrawlDelay("http://a:80", -5);  // none
  EXPECT_EQ(f.Host("http://a:80")->crawl_delay_us, 0);
}

TEST(CrawldFrontier, CrawlDelaySetAfterCompleteStillSpacesTheNextFetch) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("1"));
  ASSERT_TRUE(f.Acquire("http://a:80", 0));  // robots.txt
  f.Complete("http://a:80", 2 * kSec, Success());
  EXPECT_EQ(f.NextReadyUs(), 3 * kSec);       // min_delay only so far
  f.SetCrawlDelay("http://a:80", 10 * kSec);  // parsed after Complete()
  EXPECT_EQ(f.NextReadyUs(), 12 * kSec);
  EXPECT_FALSE(f.Pop(12 * kSec - 1));
  EXPECT_TRUE(f.Pop(12 * kSec));
}

// RFC 9110 section 10.2.3, Retry-After:
// https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3
TEST(Rfc9110, Sec10_2_3_RetryAfterHonouredAboveMaxDelay) {
  Options o;
  o.max_delay_us = 60 * kSec;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  auto r = f.Pop(0);
  ASSERT_TRUE(r);
  f.PushFront("http://a:80", std::move(r->item));
  f.Complete("http://a:80", 0, Failure(Outcome::kRetryLater, 3600 * kSec));
  EXPECT_EQ(f.NextReadyUs(), 3600 * kSec);
  EXPECT_FALSE(f.Pop(3600 * kSec - 1));
  EXPECT_EQ(PopUrl(f, 3600 * kSec, "http://a:80"), "1");
}

TEST(Rfc9110, CrawldRetryAfterShorterThanMinDelayKeepsMinDelay) {
  Options o;
  o.min_delay_us = 5 * kSec;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 0, Failure(Outcome::kRetryLater, 0));
  EXPECT_EQ(f.NextReadyUs(), 5 * kSec);
}

TEST(Rfc9110, CrawldHugeRetryAfterSaturatesInsteadOfOverflowing) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(10));
  f.Complete("http://a:80", 10, Failure(Outcome::kRetryLater, kNever));
  EXPECT_EQ(f.Host("http://a:80")->next_fetch_us, kNever);
  EXPECT_FALSE(f.Pop(kNever - 1));
}

TEST(Politeness, RetryLaterWithoutRetryAfterBacksOff) {
  Options o;
  o.error_backoff_base_us = 4 * kSec;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 0, Failure(Outcome::kRetryLater));
  EXPECT_EQ(f.NextReadyUs(), 4 * kSec);
}

TEST(Politeness, ExponentialBackoffOnConsecutiveErrors) {
  Options o;
  o.min_delay_us = 1 * kSec;
  o.error_backoff_base_us = 2 * kSec;
  o.max_backoff_us = 20 * kSec;
  o.max_consecutive_errors = 100;
  Frontier f(o);
  for (int i = 0; i < 10; ++i) f.Push("http://a:80", MakeItem("x"));
  const int64_t expected[] = {2, 4, 8, 16, 20, 20};
  int64_t now = 0;
  for (int64_t want : expected) {
    ASSERT_TRUE(f.Pop(now));
    f.Complete("http://a:80", now, Failure(Outcome::kServerError));
    EXPECT_EQ(f.NextReadyUs() - now, want * kSec);
    now = f.NextReadyUs();
  }
  // A success resets the count: the next error starts from the base again.
  ASSERT_TRUE(f.Pop(now));
  f.Complete("http://a:80", now, Success());
  EXPECT_EQ(f.Host("http://a:80")->consecutive_errors, 0);
  now = f.NextReadyUs();
  ASSERT_TRUE(f.Pop(now));
  f.Complete("http://a:80", now, Failure(Outcome::kNetworkError));
  EXPECT_EQ(f.NextReadyUs() - now, 2 * kSec);
}

TEST(Politeness, RetiredAfterMaxConsecutiveErrors) {
  Options o;
  o.max_consecutive_errors = 3;
  Frontier f(o);
  for (int i = 0; i < 10; ++i) f.Push("http://a:80", MakeItem("x"));
  f.Push("http://b:80", MakeItem("b"));
  int64_t now = 0;
  for (int i = 0; i < 3; ++i) {
    now = std::max(now, f.Host("http://a:80")->next_fetch_us);
    ASSERT_TRUE(f.Acquire("http://a:80", now));
    f.Complete("http://a:80", now,
               Failure(i == 1 ? Outcome::kRetryLater : Outcome::kNetworkError));
    EXPECT_EQ(f.Host("http://a:80")->retired, i == 2);
  }
  HostInfo a = *f.Host("http://a:80");
  EXPECT_EQ(a.queued, 0u);
  EXPECT_EQ(a.dropped, 10u);
  EXPECT_EQ(f.retired_hosts(), 1u);
  EXPECT_EQ(f.dropped(), 10u);
  EXPECT_EQ(f.queued(), 1u);  // b is untouched
  EXPECT_FALSE(f.Push("http://a:80", MakeItem("late")));
  EXPECT_FALSE(f.PushFront("http://a:80", MakeItem("late")));
  EXPECT_EQ(f.dropped(), 12u);
  EXPECT_FALSE(f.Acquire("http://a:80", kNever - 1));
  EXPECT_EQ(PopUrl(f, now, "http://b:80"), "b");
}

TEST(Politeness, RetireDropsQueueAndRefusesPushes) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Retire("http://a:80");
  EXPECT_EQ(f.queued(), 0u);
  EXPECT_EQ(f.in_flight(), 1u);  // the running fetch still ends normally
  EXPECT_FALSE(f.Idle());
  f.Complete("http://a:80", 0, Success());
  EXPECT_TRUE(f.Idle());
  EXPECT_FALSE(f.Push("http://a:80", MakeItem("3")));
  f.Retire("http://never-seen:80");
  EXPECT_EQ(f.retired_hosts(), 2u);
  EXPECT_FALSE(f.Push("http://never-seen:80", MakeItem("4")));
}

TEST(CrawldFrontier, PushFrontGoesToTheHeadOfTheHostQueue) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  auto r = f.Pop(0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->item.url, "1");
  // Held while robots.txt is fetched in the same slot.
  ASSERT_TRUE(f.PushFront("http://a:80", std::move(r->item)));
  EXPECT_FALSE(f.Pop(kNever - 1));  // still in flight
  f.Complete("http://a:80", 0, Success());
  EXPECT_EQ(PopUrl(f, kSec, "http://a:80"), "1");
  f.Complete("http://a:80", kSec, Success());
  EXPECT_EQ(PopUrl(f, 2 * kSec, "http://a:80"), "2");
}

TEST(CrawldFrontier, NextReadyUsIsTheEarliestPoppableHost) {
  Options o;
  o.min_delay_us = 10 * kSec;
  Frontier f(o);
  EXPECT_EQ(f.NextReadyUs(), kNever);
  f.Push("http://a:80", MakeItem("a1"));
  f.Push("http://a:80", MakeItem("a2"));
  f.Push("http://b:80", MakeItem("b1"));
  f.Push("http://b:80", MakeItem("b2"));
  EXPECT_EQ(f.NextReadyUs(), 0);  // new hosts may go at once
  ASSERT_TRUE(f.Pop(100));
  ASSERT_TRUE(f.Pop(100));
  EXPECT_EQ(f.NextReadyUs(), kNever);  // both in flight
  f.Complete("http://b:80", 200, Success());
  EXPECT_EQ(f.NextReadyUs(), 200 + 10 * kSec);
  f.Complete("http://a:80", 300, Success());
  EXPECT_EQ(f.NextReadyUs(), 200 + 10 * kSec);
  EXPECT_EQ(PopUrl(f, f.NextReadyUs(), "http://b:80"), "b2");
  EXPECT_EQ(f.NextReadyUs(), 300 + 10 * kSec);
  // A host with nothing queued does not count, whatever its time.
  EXPECT_EQ(PopUrl(f, f.NextReadyUs(), "http://a:80"), "a2");
  f.Complete("http://a:80", 400, Success());
  EXPECT_EQ(f.NextReadyUs(), kNever);
}

// The first version's order, kept with credit scheduling off; with it on,
// credit beats an earlier ready time (credit_test.cc).
TEST(CrawldFrontier, EarliestReadyFirstThenMostCredit) {
  Options o;
  o.credit_scheduling = false;
  Frontier f(o);
  f.Push("http://low:80", MakeItem("low", 0.5));
  f.Push("http://high:80", MakeItem("high", 4.0));
  f.Push("http://mid:80", MakeItem("mid", 2.0));
  // All ready at 0: credit decides.
  EXPECT_EQ(f.Pop(0)->item.url, "high");
  EXPECT_EQ(f.Pop(0)->item.url, "mid");
  EXPECT_EQ(f.Pop(0)->item.url, "low");
  // Earlier ready time beats credit.
  f.Push("http://low:80", MakeItem("low2", 0.1));
  f.Push("http://high:80", MakeItem("high2", 9.0));
  f.Complete("http://low:80", 0, Success());   // ready at 1 s
  f.Complete("http://high:80", 5, Success());  // ready at 1 s + 5 us
  EXPECT_EQ(f.Pop(2 * kSec)->item.url, "low2");
  EXPECT_EQ(f.Pop(2 * kSec)->item.url, "high2");
}

TEST(CrawldFrontier, IdleMeansNothingQueuedAndNothingInFlight) {
  Frontier f(Options{});
  EXPECT_TRUE(f.Idle());
  f.Push("http://a:80", MakeItem("1"));
  EXPECT_FALSE(f.Idle());
  ASSERT_TRUE(f.Pop(0));
  EXPECT_FALSE(f.Idle());
  f.Complete("http://a:80", 0, Success());
  EXPECT_TRUE(f.Idle());
  ASSERT_TRUE(f.Acquire("http://a:80", kSec));  // robots.txt
  EXPECT_FALSE(f.Idle());
  f.Complete("http://a:80", kSec, Success());
  EXPECT_TRUE(f.Idle());
  EXPECT_EQ(f.hosts(), 1u);
}

TEST(CrawldFrontier, AcquireRespectsPolitenessAndFlight) {
  Frontier f(Options{});
  EXPECT_TRUE(f.Acquire("http://a:80", 0));
  EXPECT_FALSE(f.Acquire("http://a:80", 0));
  f.Complete("http://a:80", 0, Success());
  EXPECT_FALSE(f.Acquire("http://a:80", kSec - 1));
  EXPECT_TRUE(f.Acquire("http://a:80", kSec));
  EXPECT_EQ(f.Host("http://a:80")->fetched, 1u);
}

TEST(CrawldFrontier, ReleaseEndsTheSlotWithoutADelay) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("disallowed"));
  f.Push("http://a:80", MakeItem("next"));
  ASSERT_TRUE(f.Pop(5));
  f.Release("http://a:80");  // robots.txt said no: nothing was sent
  EXPECT_EQ(f.in_flight(), 0u);
  HostInfo a = *f.Host("http://a:80");
  EXPECT_EQ(a.fetched, 0u);
  EXPECT_EQ(a.next_fetch_us, 0);
  EXPECT_EQ(PopUrl(f, 5, "http://a:80"), "next");
  f.Complete("http://a:80", 10, Success());
  // After a real request the politeness time stands.
  f.Push("http://a:80", MakeItem("later"));
  ASSERT_TRUE(f.Acquire("http://a:80", 10 + kSec));
  f.Release("http://a:80");
  EXPECT_EQ(f.NextReadyUs(), 10 + kSec);
  f.Release("http://a:80");  // nothing in flight: ignored
  EXPECT_EQ(f.ignored_completions(), 1u);
}

TEST(CrawldFrontier, CompleteWithoutFlightIsIgnoredAndCounted) {
  Frontier f(Options{});
  f.Push("http://a:80", MakeItem("1"));
  f.Complete("http://a:80", 0, Failure(Outcome::kServerError));
  f.Complete("http://unknown:80", 0, Success());
  EXPECT_EQ(f.ignored_completions(), 2u);
  EXPECT_EQ(f.Host("http://a:80")->consecutive_errors, 0);
  EXPECT_EQ(f.NextReadyUs(), 0);
  EXPECT_FALSE(f.Host("http://unknown:80").has_value());
}

TEST(CrawldFrontier, OptionsAreSanitized) {
  Options o;
  o.min_delay_us = -5;
  o.max_delay_us = -10;
  o.delay_factor = std::numeric_limits<double>::quiet_NaN();
  o.max_consecutive_errors = 0;
  o.error_backoff_base_us = -1;
  o.max_backoff_us = -1;
  Frontier f(o);
  f.Push("http://a:80", MakeItem("1"));
  f.Push("http://a:80", MakeItem("2"));
  ASSERT_TRUE(f.Pop(0));
  f.Complete("http://a:80", 7, Success(1000));
  EXPECT_EQ(f.NextReadyUs(), 7);  // no delay at all, and no UB
  ASSERT_TRUE(f.Pop(7));
  f.Complete("http://a:80", 7, Failure(Outcome::kNetworkError));
  EXPECT_TRUE(f.Host("http://a:80")->retired);  // clamped to 1 error
}

TEST(CrawldFrontier, ManyHeadChangesKeepTheHeapBounded) {
  // PushFront/Pop churn on one host creates stale heap entries; the result
  // must stay right (the heap is rebuilt when garbage dominates).
  Frontier f(Options{});
  for (int i = 0; i < 1000; ++i) {
    f.PushFront("http://a:80", MakeItem(std::to_string(i), i % 7));
  }
  EXPECT_EQ(f.queued(), 1000u);
  EXPECT_EQ(PopUrl(f, 0, "http://a:80"), "999");
}

// ---------------------------------------------------------------------------
// Randomized comparison with a naive model: linear scans, no heap, the
// contract's formulas written out directly.

class ModelScheduler {
 public:
  struct H {
    std::string key;
    std::deque<Item> queue;
    bool in_flight = false;
    bool retired = false;
    int64_t next = 0;
    int64_t last_complete = -1;
    int64_t crawl_delay = 0;
    int errors = 0;
    uint64_t fetched = 0;
  };

  explicit ModelScheduler(const Options& o) : o_(o) {}

  H& Get(const std::string& key) {
    for (H& h : hosts_) {
      if (h.key == key) return h;
    }
    hosts_.emplace_back();
    hosts_.back().key = key;
    return hosts_.back();
  }

  bool Push(const std::string& key, Item item, bool front) {
    H& h = Get(key);
    if (h.retired) return false;
    if (front) {
      h.queue.push_front(std::move(item));
    } else {
      h.queue.push_back(std::move(item));
    }
    return true;
  }

  std::optional<std::pair<std::string, Item>> Pop(int64_t now) {
    H* best = nullptr;
    for (H& h : hosts_) {  // creation order: the first wins remaining ties
      if (h.in_flight || h.retired || h.queue.empty() || h.next > now) continue;
      if (best == nullptr || h.next < best->next ||
          (h.next == best->next &&
           h.queue.front().credit > best->queue.front().credit)) {
        best = &h;
      }
    }
    if (best == nullptr) return std::nullopt;
    Item item = best->queue.front();
    best->queue.pop_front();
    best->in_flight = true;
    return std::make_pair(best->key, item);
  }

  void Complete(const std::string& key, int64_t now, const Completion& c) {
    H& h = Get(key);
    h.in_flight = false;
    h.fetched++;
    h.last_complete = now;
    int64_t gap = std::max(o_.min_delay_us, h.crawl_delay);
    int64_t delay;
    if (c.outcome == Outcome::kSuccess) {
      h.errors = 0;
      int64_t scaled =
          static_cast<int64_t>(o_.delay_factor * double(c.response_time_us));
      delay = std::min(std::max(gap, scaled), o_.max_delay_us);
    } else {
      h.errors++;
      if (c.outcome == Outcome::kRetryLater && c.retry_after_us >= 0) {
        delay = std::max(gap, c.retry_after_us);
      } else {
        int64_t backoff = o_.error_backoff_base_us;
        for (int i = 1; i < h.errors; ++i) backoff *= 2;
        delay = std::max(gap, std::min(backoff, o_.max_backoff_us));
      }
      if (h.errors >= o_.max_consecutive_errors) {
        h.retired = true;
        h.queue.clear();
      }
    }
    h.next = now + delay;
  }

  void Release(const std::string& key) { Get(key).in_flight = false; }

  bool Acquire(const std::string& key, int64_t now) {
    H& h = Get(key);
    if (h.retired || h.in_flight || h.next > now) return false;
    h.in_flight = true;
    return true;
  }

  void SetCrawlDelay(const std::string& key, int64_t d) {
    H& h = Get(key);
    h.crawl_delay = std::clamp<int64_t>(d, 0, o_.max_crawl_delay_us);
    if (!h.in_flight && h.last_complete >= 0) {
      h.next = std::max(
          h.next, h.last_complete + std::min(h.crawl_delay, o_.max_delay_us));
    }
  }

  void Retire(const std::string& key) {
    H& h = Get(key);
    h.retired = true;
    h.queue.clear();
  }

  int64_t NextReady() const {
    int64_t best = kNever;
    for (const H& h : hosts_) {
      if (h.in_flight || h.retired || h.queue.empty()) continue;
      best = std::min(best, h.next);
    }
    return best;
  }

  size_t Queued() const {
    size_t n = 0;
    for (const H& h : hosts_) n += h.queue.size();
    return n;
  }

  std::deque<H> hosts_;  // deque: references stay valid on push_back

 private:
  Options o_;
};

// (seed, spill): the same model with everything in memory, and with tiny
// heads, chunks and memory budget so that queues cross the disk constantly
// (per-host FIFO order must not notice). The model is the earliest-ready
// scheduler, so credit scheduling is off (credit_test.cc covers it).
class FrontierModelTest
    : public ::testing::TestWithParam<std::tuple<uint32_t, bool>> {};

TEST_P(FrontierModelTest, AgreesWithNaiveScheduler) {
  const uint32_t seed = std::get<0>(GetParam());
  const bool spill = std::get<1>(GetParam());
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Options o;
  o.min_delay_us = uniform(0, 3) * 1000;
  o.max_delay_us = o.min_delay_us + uniform(0, 20) * 1000;
  o.delay_factor = static_cast<double>(uniform(0, 4));
  o.max_crawl_delay_us = uniform(0, 10) * 1000;
  o.max_consecutive_errors = static_cast<int>(uniform(2, 6));
  o.error_backoff_base_us = uniform(0, 4) * 1000;
  o.max_backoff_us = o.error_backoff_base_us + uniform(0, 30) * 1000;
  o.credit_scheduling = false;
  struct DirGuard {
    std::filesystem::path dir;
    ~DirGuard() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } guard;
  std::filesystem::path dir;
  if (spill) {
    dir = std::filesystem::temp_directory_path() /
          ("crawld-frontier-model-" + std::to_string(::getpid()) + "-" +
           std::to_string(seed));
    std::filesystem::remove_all(dir);
    guard.dir = dir;
    o.spill_dir = dir.string();
    o.head_items = 3;
    o.low_water_items = 2;
    o.chunk_items = 4;
    o.memory_budget_bytes = 2000;
    o.segment_bytes = 4096;
  }
  auto opened = Frontier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Frontier& f = **opened;
  ModelScheduler m(o);
  const int kHosts = static_cast<int>(uniform(1, 12));
  auto host_name = [](int64_t i) {
    return "http://h" + std::to_string(i) + ":80";
  };
  std::vector<std::string> in_flight;
  int64_t now = 0;
  int serial = 0;
  int pops = 0;
  size_t longest_queue = 0;

  for (int step = 0; step < 4000; ++step) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " step " +
                 std::to_string(step) + " now " + std::to_string(now));
    const int64_t op = uniform(0, 99);
    if (op < 30) {  // push at the tail, or at the head
      std::string h = host_name(uniform(0, kHosts - 1));
      Item item = MakeItem("u" + std::to_string(serial++),
                           static_cast<double>(uniform(0, 3)));
      bool front = uniform(0, 4) == 0;
      bool got = front ? f.PushFront(h, item) : f.Push(h, item);
      ASSERT_EQ(got, m.Push(h, item, front));
    } else if (op < 55) {  // pop
      auto a = f.Pop(now);
      auto b = m.Pop(now);
      ASSERT_EQ(a.has_value(), b.has_value());
      if (a) {
        ASSERT_EQ(a->host_key, b->first);
        ASSERT_EQ(a->item.url, b->second.url);
        in_flight.push_back(a->host_key);
        ++pops;
      }
    } else if (op < 75) {  // complete one fetch in flight
      if (in_flight.empty()) continue;
      size_t i = static_cast<size_t>(uniform(0, in_flight.size() - 1));
      std::string h = in_flight[i];
      in_flight.erase(in_flight.begin() + static_cast<ptrdiff_t>(i));
      Completion c;
      // Mostly successes, as in real crawls, so hosts live long enough.
      const int64_t r = uniform(0, 9);
      c.outcome = r < 6 ? Outcome::kSuccess : static_cast<Outcome>(1 + r % 3);
      c.response_time_us = uniform(0, 8) * 1000;
      c.retry_after_us = uniform(0, 2) == 0 ? -1 : uniform(0, 50) * 1000;
      if (uniform(0, 9) == 0) {  // no request after all
        f.Release(h);
        m.Release(h);
      } else {
        f.Complete(h, now, c);
        m.Complete(h, now, c);
      }
    } else if (op < 80) {  // robots.txt slot
      std::string h = host_name(uniform(0, kHosts - 1));
      bool got = f.Acquire(h, now);
      ASSERT_EQ(got, m.Acquire(h, now));
      if (got) in_flight.push_back(h);
    } else if (op < 84) {
      std::string h = host_name(uniform(0, kHosts - 1));
      int64_t d = uniform(-1, 15) * 1000;
      f.SetCrawlDelay(h, d);
      m.SetCrawlDelay(h, d);
    } else if (op < 85) {
      std::string h = host_name(uniform(0, kHosts - 1));
      f.Retire(h);
      m.Retire(h);
    } else if (op < 95) {  // let time pass, sometimes to the next ready time
      int64_t next = f.NextReadyUs();
      if (uniform(0, 1) == 0 && next != kNever && next > now) {
        now = next;
      } else {
        now += uniform(0, 3000);
      }
    } else {
      now += uniform(0, 100) * 1000;
    }

    ASSERT_EQ(f.NextReadyUs(), m.NextReady());
    ASSERT_EQ(f.queued(), m.Queued());
    ASSERT_EQ(f.in_flight(), in_flight.size());
    ASSERT_EQ(f.Idle(), m.Queued() == 0 && in_flight.empty());
    ASSERT_EQ(f.hosts(), m.hosts_.size());
    for (const auto& mh : m.hosts_) {
      auto info = f.Host(mh.key);
      ASSERT_TRUE(info.has_value());
      ASSERT_EQ(info->next_fetch_us, mh.next) << mh.key;
      ASSERT_EQ(info->in_flight, mh.in_flight) << mh.key;
      ASSERT_EQ(info->retired, mh.retired) << mh.key;
      ASSERT_EQ(info->queued, mh.queue.size()) << mh.key;
      ASSERT_EQ(info->consecutive_errors, mh.errors) << mh.key;
      ASSERT_EQ(info->crawl_delay_us, mh.crawl_delay) << mh.key;
      ASSERT_EQ(info->fetched, mh.fetched) << mh.key;
      longest_queue = std::max(longest_queue, mh.queue.size());
    }
  }
  EXPECT_GT(pops, 0);
  EXPECT_EQ(f.ignored_completions(), 0u);
  EXPECT_EQ(f.spill_errors(), 0u);
  if (spill) {
    // Any queue longer than head + chunk must have crossed the disk.
    if (longest_queue > o.head_items + o.chunk_items) {
      EXPECT_GT(f.spilled_items(), 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, FrontierModelTest,
                         ::testing::Combine(::testing::Range<uint32_t>(1, 41),
                                            ::testing::Bool()));

}  // namespace
}  // namespace crawld::frontier
