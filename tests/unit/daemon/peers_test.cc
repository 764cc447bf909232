// Peers' inbox: a received batch is acknowledged only once all of it is
// kept. A recrawl capture whose schedule store failed holds its batch
// back, so that the sender keeps it, and is admitted again later; what was
// kept is not admitted twice.
#include "daemon/peers.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"

namespace crawld::daemon {
namespace {

// An exchange that only hands batches to the inbox, as the test says.
class FakeExchange final : public cluster::Exchange {
 public:
  Status Send(int, const cluster::UrlMessage&) override { return Status::Ok(); }
  void SetInbox(cluster::InboxFn inbox) override { inbox_ = std::move(inbox); }
  void SetOnWritable(cluster::WritableFn) override {}
  bool Backpressured(int) const override { return false; }
  size_t Pending(int) const override { return 0; }
  void Flush() override {}
  void ForEachUnacked(
      const std::function<void(int, const cluster::UrlMessage&)>&)
      const override {}
  void Adopt(const std::vector<int>&) override {}
  void WhenCaughtUp(std::function<void()> fn) override { fn(); }
  cluster::ExchangeStats stats() const override { return {}; }
  void TEST_DropConnections() override {}

  void Deliver(int from, std::vector<cluster::UrlMessage> batch, int* acks) {
    inbox_(from, std::move(batch), [acks] { ++*acks; });
  }

 private:
  cluster::InboxFn inbox_;
};

cluster::UrlMessage Url(const std::string& url) {
  cluster::UrlMessage m;
  m.url = url;
  return m;
}

cluster::UrlMessage Capture(const std::string& url) {
  cluster::UrlMessage m = Url(url);
  m.capture = "capture of " + url;
  return m;
}

constexpr int64_t kS = 1'000'000;

TEST(PeersInbox, ABatchWithACaptureNotKeptIsHeldUntilItIsKept) {
  auto exchange = std::make_unique<FakeExchange>();
  FakeExchange* ex = exchange.get();
  CrawlStats stats;
  EventLog log;
  Peers::Options o;
  o.workers = 2;
  o.exchange_workers = 2;
  Peers peers(o, std::move(exchange), &stats, &log);
  bool store_fails = true;
  std::vector<std::string> admitted;
  peers.SetAdmit([&](const cluster::UrlMessage& m) {
    if (!m.capture.empty() && store_fails) return false;
    admitted.push_back(m.url);
    return true;
  });

  int acks = 0;
  ex->Deliver(1,
              {Url("http://a.test/1"), Capture("http://a.test/2"),
               Url("http://a.test/3")},
              &acks);
  // The URLs are in; the capture is not, so neither is the ack.
  EXPECT_EQ(admitted,
            (std::vector<std::string>{"http://a.test/1", "http://a.test/3"}));
  EXPECT_EQ(acks, 0);
  EXPECT_EQ(peers.held(), 1u);
  EXPECT_FALSE(peers.Drained());  // the crawl is not over with it held
  EXPECT_EQ(stats.count("inbox_batches_held"), 1u);

  // A whole batch kept is acknowledged at once, held one or not.
  int other_acks = 0;
  ex->Deliver(1, {Url("http://b.test/")}, &other_acks);
  EXPECT_EQ(other_acks, 1);

  // Still failing: held.
  EXPECT_EQ(peers.RetryHeld(10 * kS), 1u);
  EXPECT_EQ(acks, 0);
  // The store is back, but a retry waits a second after the last one.
  store_fails = false;
  EXPECT_EQ(peers.RetryHeld(10 * kS + kS / 2), 1u);
  EXPECT_EQ(acks, 0);
  EXPECT_EQ(peers.RetryHeld(11 * kS), 0u);
  EXPECT_EQ(acks, 1);
  EXPECT_TRUE(peers.Drained());
  // Only the capture came in again: nothing was admitted twice.
  EXPECT_EQ(admitted,
            (std::vector<std::string>{"http://a.test/1", "http://a.test/3",
                                      "http://b.test/", "http://a.test/2"}));
  EXPECT_EQ(stats.count("inbox_batches_released"), 1u);
  EXPECT_EQ(peers.RetryHeld(20 * kS), 0u);
  EXPECT_EQ(acks, 1);  // acknowledged once
}

}  // namespace
}  // namespace crawld::daemon
