// Tests of the local exchange (Unix-domain socket mesh, cluster/cluster.h):
// two endpoints on one loop, as two workers would be, over real sockets.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/wire.h"
#include "tests/unit/cluster/loop_util.h"

namespace crawld::cluster {
namespace {

using testing::TestLoop;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/crawld-ex-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Url(int from, int i) {
  return "http://w" + std::to_string(from) + ".example/p/" + std::to_string(i);
}

LocalOptions Opts(const TempDir& dir, int self, int max_pending = 65536) {
  LocalOptions o;
  o.run_dir = dir.path() + "/run";
  o.exchange.self = self;
  o.exchange.workers = 2;
  o.exchange.batch_urls = 256;
  o.exchange.max_pending_urls = max_pending;
  return o;
}

std::unique_ptr<Exchange> Make(TestLoop& loop, const LocalOptions& o) {
  auto r = NewLocalExchange(loop.get(), o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Sends URLs 0..total-1 from `from` to `to`, as fast as the exchange takes
// them, resuming on the writable callback.
struct Pump {
  Exchange* ex;
  int from, to, total;
  int next = 0;
  void Run() {
    while (next < total) {
      Status s = ex->Send(to, UrlMessage{Url(from, next), 3, 0.5});
      if (s.code() == Status::Code::kResourceExhausted) return;
      ASSERT_TRUE(s.ok()) << s.ToString();
      ++next;
    }
    ex->Flush();
  }
};

// Records what a worker's inbox got; acks at once unless told to hold.
struct Inbox {
  std::vector<std::string> urls;
  std::vector<AckFn> held;
  bool hold = false;
  int bad_sender = 0;
  InboxFn Fn(int expect_from) {
    return [this, expect_from](int from, std::vector<UrlMessage>&& batch,
                               AckFn ack) {
      if (from != expect_from) ++bad_sender;
      for (auto& m : batch) urls.push_back(std::move(m.url));
      if (hold) {
        held.push_back(std::move(ack));
      } else {
        ack();
      }
    };
  }
  void Release() {
    hold = false;
    for (auto& a : held) a();
    held.clear();
  }
  // Every URL 0..n-1 of `from` exactly once, in send order.
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

TEST(LocalExchange, HundredThousandUrlsBothWaysArriveExactlyOnceInOrder) {
  TempDir dir;
  TestLoop loop;
  constexpr int kN = 100'000;
  auto a = Make(loop, Opts(dir, 0, 4096));
  auto b = Make(loop, Opts(dir, 1, 4096));
  ASSERT_TRUE(a && b);
  Inbox in_a, in_b;
  a->SetInbox(in_a.Fn(1));
  b->SetInbox(in_b.Fn(0));
  Pump pa{a.get(), 0, 1, kN}, pb{b.get(), 1, 0, kN};
  a->SetOnWritable([&](int) { pa.Run(); });
  b->SetOnWritable([&](int) { pb.Run(); });
  pa.Run();
  pb.Run();
  ASSERT_TRUE(loop.RunUntil([&] {
    return in_a.urls.size() >= kN && in_b.urls.size() >= kN &&
           a->Pending(1) == 0 && b->Pending(0) == 0;
  })) << in_a.urls.size()
      << " " << in_b.urls.size();
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
  EXPECT_TRUE(in_a.ExactlyOnceInOrder(1, kN));
  EXPECT_EQ(in_a.bad_sender + in_b.bad_sender, 0);
  // The 4096 bound was hit, so back-pressure was exercised on the way.
  EXPECT_GT(a->stats().send_refused, 0u);
  EXPECT_EQ(a->stats().urls_sent, static_cast<uint64_t>(kN));
  EXPECT_EQ(b->stats().urls_received, static_cast<uint64_t>(kN));
  EXPECT_EQ(a->stats().batches_acked, a->stats().batches_sent);
}

TEST(LocalExchange, ReceiverThatDoesNotAckBackpressuresSenderNothingLost) {
  TempDir dir;
  TestLoop loop;
  constexpr int kN = 5000;
  auto a = Make(loop, Opts(dir, 0, 1000));
  auto b = Make(loop, Opts(dir, 1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  in_b.hold = true;
  b->SetInbox(in_b.Fn(0));
  Pump pa{a.get(), 0, 1, kN};
  int writable = 0;
  a->SetOnWritable([&](int to) {
    EXPECT_EQ(to, 1);
    ++writable;
    pa.Run();
  });
  pa.Run();
  EXPECT_EQ(pa.next, 1000);
  EXPECT_TRUE(a->Backpressured(1));
  ASSERT_TRUE(loop.RunUntil([&] { return in_b.urls.size() == 1000; }));
  // However long the receiver sits on its acks, the sender stays at the bound.
  loop.RunFor(300);
  EXPECT_EQ(pa.next, 1000);
  EXPECT_EQ(a->Pending(1), 1000u);
  EXPECT_EQ(a->Send(1, UrlMessage{"http://x/", 0, 0}).code(),
            Status::Code::kResourceExhausted);
  EXPECT_EQ(writable, 0);
  // The receiver catches up: the sender resumes and everything arrives.
  in_b.Release();
  ASSERT_TRUE(loop.RunUntil(
      [&] { return in_b.urls.size() >= kN && a->Pending(1) == 0; }));
  EXPECT_GT(writable, 0);
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
}

TEST(LocalExchange, ReceiverClosedAndReopenedGetsUnackedBatchesAgain) {
  TempDir dir;
  TestLoop loop;
  constexpr int kN = 3000;
  auto a = Make(loop, Opts(dir, 0));
  auto b = Make(loop, Opts(dir, 1));
  ASSERT_TRUE(a && b);
  Inbox first;
  first.hold = true;  // the receiver dies before its frontier acks anything
  b->SetInbox(first.Fn(0));
  Pump pa{a.get(), 0, 1, kN};
  pa.Run();
  ASSERT_TRUE(loop.RunUntil([&] { return first.urls.size() == kN; }));
  EXPECT_EQ(a->Pending(1), static_cast<size_t>(kN));
  // What a checkpoint of the sender saves: every URL not acknowledged, in
  // send order, with its depth and credit.
  std::vector<std::string> unacked;
  a->ForEachUnacked([&](int to, const UrlMessage& m) {
    EXPECT_EQ(to, 1);
    EXPECT_EQ(m.depth, 3);
    EXPECT_EQ(m.credit, 0.5);
    unacked.push_back(m.url);
  });
  ASSERT_EQ(unacked.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(unacked[i], Url(0, i));
  first.held.clear();
  b.reset();
  loop.Drain();
  // A restarted receiver at the same path: the sender reconnects and resends.
  b = Make(loop, Opts(dir, 1));
  ASSERT_TRUE(b);
  Inbox second;
  b->SetInbox(second.Fn(0));
  ASSERT_TRUE(loop.RunUntil([&] { return a->Pending(1) == 0; }));
  EXPECT_TRUE(second.ExactlyOnceInOrder(0, kN));
  int left = 0;
  a->ForEachUnacked([&](int, const UrlMessage&) { ++left; });
  EXPECT_EQ(left, 0);
  EXPECT_GT(a->stats().batches_resent, 0u);
  EXPECT_GE(a->stats().reconnects, 1u);
}

TEST(LocalExchange, DroppedConnectionResendsAndReceiverDropsDuplicates) {
  TempDir dir;
  TestLoop loop;
  constexpr int kN = 2000;
  auto a = Make(loop, Opts(dir, 0));
  auto b = Make(loop, Opts(dir, 1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  in_b.hold = true;
  b->SetInbox(in_b.Fn(0));
  Pump pa{a.get(), 0, 1, kN};
  pa.Run();
  ASSERT_TRUE(loop.RunUntil([&] { return in_b.urls.size() == kN; }));
  // Ack half, then lose the connection: the rest is resent and deduped.
  const size_t half = in_b.held.size() / 2;
  for (size_t i = 0; i < half; ++i) in_b.held[i]();
  a->TEST_DropConnections();
  ASSERT_TRUE(loop.RunUntil([&] {
    return b->stats().duplicates_dropped + a->stats().batches_acked >=
           a->stats().batches_sent;
  }));
  EXPECT_EQ(in_b.urls.size(), static_cast<size_t>(kN));
  in_b.Release();
  ASSERT_TRUE(loop.RunUntil([&] { return a->Pending(1) == 0; }));
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, kN));
  EXPECT_GT(b->stats().duplicates_dropped, 0u);
}

TEST(LocalExchange, HostileFramesCloseTheConnectionAndServiceGoesOn) {
  TempDir dir;
  TestLoop loop;
  auto a = Make(loop, Opts(dir, 0));
  auto b = Make(loop, Opts(dir, 1));
  ASSERT_TRUE(a && b);
  Inbox in_b;
  b->SetInbox(in_b.Fn(0));
  const std::string path = dir.path() + "/run/worker-1.sock";
  auto send_raw = [&](const std::string& bytes) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
    return close(fd), void();
  };
  // A 4 GiB length prefix, a batch before any HELLO, a HELLO claiming to be
  // the receiver itself, a garbage batch after a valid HELLO.
  send_raw(std::string("\xff\xff\xff\xff\x02", 5));
  std::string early;
  wire::AppendFrameHeader(wire::FrameType::kBatch, 3, &early);
  early += "abc";
  send_raw(early);
  std::string self_hello;
  wire::AppendFrameHeader(wire::FrameType::kHello, 12, &self_hello);
  wire::PutU32(1, &self_hello);
  wire::PutU64(7, &self_hello);
  send_raw(self_hello);
  std::string junk;
  wire::AppendFrameHeader(wire::FrameType::kHello, 12, &junk);
  wire::PutU32(0, &junk);
  wire::PutU64(7, &junk);
  wire::AppendFrameHeader(wire::FrameType::kBatch, 4, &junk);
  junk += "Bxyz";
  send_raw(junk);
  ASSERT_TRUE(loop.RunUntil([&] { return b->stats().protocol_errors >= 4; }));
  EXPECT_TRUE(in_b.urls.empty());
  // The real sender still gets through.
  Pump pa{a.get(), 0, 1, 100};
  pa.Run();
  ASSERT_TRUE(loop.RunUntil([&] { return a->Pending(1) == 0; }));
  EXPECT_TRUE(in_b.ExactlyOnceInOrder(0, 100));
}

TEST(LocalExchange, BadSendsAndOptionsAreRefusedClearly) {
  TempDir dir;
  TestLoop loop;
  auto a = Make(loop, Opts(dir, 0));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->Send(0, {"http://x/", 0, 0}).code(),
            Status::Code::kInvalidArgument);  // self
  EXPECT_EQ(a->Send(2, {"http://x/", 0, 0}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(a->Send(-1, {"http://x/", 0, 0}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(a->Send(1, {"", 0, 0}).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(a->Send(1, {std::string(9000, 'x'), 0, 0}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(a->Send(1, {"http://x/", 0, -1}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(a->Pending(1), 0u);

  LocalOptions o = Opts(dir, 5);  // self >= workers
  EXPECT_EQ(NewLocalExchange(loop.get(), o).status().code(),
            Status::Code::kInvalidArgument);
  o = Opts(dir, 0);
  o.run_dir = "/tmp/" + std::string(120, 'd');
  EXPECT_EQ(NewLocalExchange(loop.get(), o).status().code(),
            Status::Code::kInvalidArgument);
  o.run_dir = "/proc/no-such-dir/run";
  EXPECT_FALSE(NewLocalExchange(loop.get(), o).ok());
}

}  // namespace
}  // namespace crawld::cluster
