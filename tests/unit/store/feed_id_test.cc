// Issue 14 part 7: one ordered feed. Feed IDs (time, node, worker,
// sequence) that never repeat or go back, also when the wall clock steps
// back, across kill -9 and reboots; a reader that never returns an ID below
// one it returned, however the writers interleave; the merge of several
// nodes' pages by watermark.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "store/feed_internal.h"
#include "store/store.h"
#include "tests/unit/store/test_util.h"

namespace crawld::store {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// A clock the test moves by hand.
class FakeClock : public FeedClock {
 public:
  int64_t WallMs() const override { return wall.load(); }
  int64_t MonoMs() const override { return mono.load(); }
  std::string BootId() const override {
    std::lock_guard<std::mutex> l(mu);
    return boot;
  }
  void SetBoot(std::string b) {
    std::lock_guard<std::mutex> l(mu);
    boot = std::move(b);
  }
  std::atomic<int64_t> wall{kFeedEpochMs + 1000000};
  std::atomic<int64_t> mono{5000};

 private:
  mutable std::mutex mu;
  std::string boot = "boot-1";
};

FeedEntry Entry(const std::string& url) {
  FeedEntry e;
  e.url = url;
  e.warc_file = "crawld-20240102030405-00000-00000.warc.gz";
  e.offset = 10;
  e.length = 20;
  e.digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
  e.status = 200;
  e.mime = "text/html";
  e.fetch_time_us = 1704164645000000;
  return e;
}

FeedOptions Opts(const TempDir& dir, int worker, const FeedClock* clock,
                 int node = 0) {
  FeedOptions o;
  o.dir = dir.path() + "/feed";
  o.worker_id = worker;
  o.node_id = node;
  o.segment_bytes = 4096;
  o.fsync = false;
  o.clock = clock;
  return o;
}

std::unique_ptr<FeedWriter> MustOpen(const FeedOptions& o) {
  auto w = FeedWriter::Open(o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(w).value() : nullptr;
}

uint64_t AppendOne(FeedWriter* w, const std::string& url) {
  auto id = w->BeginEntry();
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  FeedEntry e = Entry(url);
  e.id = *id;
  EXPECT_TRUE(w->Append(e).ok());
  return *id;
}

// Everything readable after `cursor`, page by page.
std::vector<FeedEntry> Drain(FeedReader* r, std::string* cursor,
                             size_t page = 7) {
  std::vector<FeedEntry> out;
  for (int guard = 0; guard < 100000; ++guard) {
    auto p = r->Read(*cursor, page);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok() || p->entries.empty()) break;
    for (auto& e : p->entries) out.push_back(std::move(e));
    *cursor = p->next_cursor;
  }
  return out;
}

// --- The ID ---

TEST(FeedId, BitsAreTimeNodeWorkerSequence) {
  const uint64_t id = internal::ComposeFeedId(123456, 1023, 300, 7);
  FeedIdParts p = SplitFeedId(id);
  EXPECT_EQ(p.unix_ms, kFeedEpochMs + 123456);
  EXPECT_EQ(p.node, 1023);
  EXPECT_EQ(p.worker, 300 % 256);
  EXPECT_EQ(p.sequence, 7);
  EXPECT_LT(id, 1ull << 63);
  // Time is the most significant part.
  EXPECT_LT(internal::ComposeFeedId(5, 1023, 255, 15),
            internal::ComposeFeedId(6, 0, 0, 0));
  EXPECT_EQ(internal::ComposeFeedId(int64_t{1} << 41, 0, 0, 0), 0u);
  EXPECT_EQ(internal::ComposeFeedId(-1, 0, 0, 0), 0u);
}

TEST(FeedId, NextIsAboveTheLastAndBorrowsTheNextMillisecond) {
  const uint64_t a = internal::NextFeedId(0, 100, 2, 3);
  EXPECT_EQ(a, internal::ComposeFeedId(100, 2, 3, 0));
  // Same millisecond: the sequence counts up, then the next ms is taken.
  uint64_t last = a;
  for (int i = 1; i < 16; ++i) {
    const uint64_t n = internal::NextFeedId(last, 100, 2, 3);
    EXPECT_EQ(n, internal::ComposeFeedId(100, 2, 3, i));
    last = n;
  }
  const uint64_t borrowed = internal::NextFeedId(last, 100, 2, 3);
  EXPECT_EQ(borrowed, internal::ComposeFeedId(101, 2, 3, 0));
  // A clock behind the last ID (which another writer's bits may hold):
  // the next of ours above it.
  const uint64_t theirs = internal::ComposeFeedId(500, 2, 9, 4);
  EXPECT_EQ(internal::NextFeedId(theirs, 10, 2, 3),
            internal::ComposeFeedId(501, 2, 3, 0));
  const uint64_t lower = internal::ComposeFeedId(500, 2, 1, 4);
  EXPECT_EQ(internal::NextFeedId(lower, 10, 2, 3),
            internal::ComposeFeedId(500, 2, 3, 0));
  // Past 2093: refused, never wrapped.
  EXPECT_EQ(internal::NextFeedId(0, int64_t{1} << 41, 0, 0), 0u);
}

TEST(FeedId, CursorIsOneDecimalIdAndOldCursorsAreRefusedClearly) {
  EXPECT_EQ(*ParseFeedCursor(""), 0u);
  EXPECT_EQ(*ParseFeedCursor("0"), 0u);
  EXPECT_EQ(*ParseFeedCursor("9223372036854775807"), (1ull << 63) - 1);
  for (const char* bad : {"9223372036854775808", "-1", "1x", " 1", "1 ", "+1",
                          "0x10", "18446744073709551616", "1.0"}) {
    auto c = ParseFeedCursor(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
  }
  auto old = ParseFeedCursor("0:0:281,1:0:0");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("before feed IDs"), std::string::npos);
}

TEST(FeedId, MarkImageRoundTripsAndDamageIsRefused) {
  internal::FeedMark m;
  m.node = 7;
  m.worker = 12345;
  m.boot_id = "0e0c5c3c-6a4f-4b1e-9d2a-0123456789ab";
  m.anchor_ms = -42;
  m.generation = 3;
  m.last_id = 99;
  m.busy = true;
  const std::string image = internal::FormatFeedMark(m);
  ASSERT_EQ(image.size(), internal::kFeedMarkBytes);
  auto back = internal::ParseFeedMark(image);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->node, 7);
  EXPECT_EQ(back->worker, 12345);
  EXPECT_EQ(back->boot_id, m.boot_id);
  EXPECT_EQ(back->anchor_ms, -42);
  EXPECT_EQ(back->generation, 3u);
  EXPECT_EQ(back->last_id, 99u);
  EXPECT_TRUE(back->busy);
  EXPECT_FALSE(internal::ParseFeedMark(image.substr(0, 100)).has_value());
  std::string bad = image;
  bad[0] = 'X';
  EXPECT_FALSE(internal::ParseFeedMark(bad).has_value());
  bad = image;
  bad[internal::kFeedMarkBusyOffset] = 2;
  EXPECT_FALSE(internal::ParseFeedMark(bad).has_value());
}

// --- The writer's IDs ---

// The wall clock steps back an hour while a writer runs, and again before
// it restarts: its IDs keep going up.
TEST(FeedId, Issue14_WallClockGoingBackNeverMakesAnIdGoBack) {
  TempDir dir;
  FakeClock clock;
  uint64_t prev = 0;
  for (int run = 0; run < 3; ++run) {
    auto w = MustOpen(Opts(dir, 0, &clock));
    ASSERT_NE(w, nullptr);
    for (int i = 0; i < 40; ++i) {
      if (i == 20) clock.wall -= 3600 * 1000;  // NTP steps back mid-run
      if (i % 3 == 0) clock.mono += 1;
      const uint64_t id =
          AppendOne(w.get(), "http://a.test/" + std::to_string(run * 100 + i));
      ASSERT_GT(id, prev) << "run " << run << " entry " << i;
      prev = id;
    }
    ASSERT_TRUE(w->Close().ok());
    clock.wall -= 3600 * 1000;  // and steps back again before the restart
    clock.mono += 10;
  }
  // A reboot: the monotonic clock starts over, the wall clock is a day
  // behind (a dead RTC battery): still above.
  clock.SetBoot("boot-2");
  clock.mono = 3;
  clock.wall -= 86400 * 1000;
  auto w = MustOpen(Opts(dir, 0, &clock));
  ASSERT_NE(w, nullptr);
  EXPECT_GT(AppendOne(w.get(), "http://a.test/after-reboot"), prev);
  // And the feed reads back in order, every entry once.
  ASSERT_TRUE(w->Close().ok());
  auto r = FeedReader::Open(dir.path() + "/feed", &clock);
  ASSERT_TRUE(r.ok());
  std::string cursor;
  std::vector<FeedEntry> all = Drain(r->get(), &cursor);
  ASSERT_EQ(all.size(), 121u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GT(all[i].id, all[i - 1].id);
}

// kill -9 after an ID was handed out for a record that reached the WARC
// but not the feed: the restarted writer never hands that ID out again,
// and the dead writer's "busy" does not hold the feed.
TEST(FeedId, Issue14_RestartAfterKillDashNineContinuesAboveEveryIdHandedOut) {
  TempDir dir;
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    auto w = FeedWriter::Open(Opts(dir, 1, nullptr));
    if (!w.ok()) ::_exit(2);
    for (int i = 0; i < 50; ++i) {
      auto id = (*w)->BeginEntry();
      if (!id.ok()) ::_exit(3);
      FeedEntry e = Entry("http://k.test/" + std::to_string(i));
      e.id = *id;
      if (!(*w)->Append(e).ok()) ::_exit(4);
    }
    // The record of this ID is "in the WARC"; the feed line never comes.
    auto id = (*w)->BeginEntry();
    if (!id.ok()) ::_exit(5);
    uint64_t v = *id;
    if (::write(pipefd[1], &v, sizeof(v)) != sizeof(v)) ::_exit(6);
    ::raise(SIGKILL);
    ::_exit(7);
  }
  ::close(pipefd[1]);
  uint64_t orphan = 0;
  ASSERT_EQ(::read(pipefd[0], &orphan, sizeof(orphan)),
            static_cast<ssize_t>(sizeof(orphan)));
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  // The dead writer's open entry does not hold the feed.
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::string cursor;
  std::vector<FeedEntry> before = Drain(r->get(), &cursor);
  ASSERT_EQ(before.size(), 50u);
  EXPECT_LT(before.back().id, orphan);

  auto w = MustOpen(Opts(dir, 1, nullptr));
  ASSERT_NE(w, nullptr);
  const uint64_t next = AppendOne(w.get(), "http://k.test/after");
  EXPECT_GT(next, orphan);
  std::vector<FeedEntry> after = Drain(r->get(), &cursor);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id, next);
}

TEST(FeedId, WritersWithTheSameIdBitsOnOneNodeAreRefused) {
  TempDir dir;
  auto a = MustOpen(Opts(dir, 3, nullptr));
  ASSERT_NE(a, nullptr);
  auto b = FeedWriter::Open(Opts(dir, 3 + 256, nullptr));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Status::Code::kFailedPrecondition);
  FeedOptions bad = Opts(dir, 4, nullptr, 1024);
  EXPECT_EQ(FeedWriter::Open(bad).status().code(),
            Status::Code::kInvalidArgument);
  ASSERT_TRUE(a->Close().ok());
  EXPECT_TRUE(FeedWriter::Open(Opts(dir, 3 + 256, nullptr)).ok());
}

// --- The reader's order ---

// The reader finds a cursor's place by a binary search over a segment's
// lines: from any cursor (an entry's ID, or a number between two IDs) it
// resumes at exactly the next entry, in a segment of a few MB with lines
// of varied length.
TEST(FeedOrder, ResumesAtTheNextEntryFromAnyCursorInABigSegment) {
  TempDir dir;
  FeedOptions o = Opts(dir, 7, nullptr);
  o.segment_bytes = 64 << 20;
  auto w = MustOpen(o);
  ASSERT_NE(w, nullptr);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 12000; ++i) {
    ids.push_back(
        AppendOne(w.get(), "http://s.test/" +
                               std::string(static_cast<size_t>(i % 97), 'x') +
                               std::to_string(i)));
  }
  ASSERT_TRUE(w->Close().ok());
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::mt19937 rng(3);
  for (int k = 0; k < 400; ++k) {
    const size_t i = rng() % ids.size();
    const uint64_t cursor = k % 2 == 0 ? ids[i] : ids[i] - 1;
    auto p = (*r)->Read(std::to_string(cursor), 3);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    const size_t want = k % 2 == 0 ? i + 1 : i;
    if (want >= ids.size()) {
      EXPECT_TRUE(p->entries.empty());
      continue;
    }
    ASSERT_FALSE(p->entries.empty()) << cursor;
    EXPECT_EQ(p->entries[0].id, ids[want]) << "cursor " << cursor;
  }
}

// A writer in the middle of a record holds the feed below that record's
// ID, so a later ID of another writer is not returned before it.
TEST(FeedOrder, Issue14_BusyWriterHoldsTheFeedIdleOrDeadOnesDoNot) {
  TempDir dir;
  FakeClock clock;
  auto w0 = MustOpen(Opts(dir, 0, &clock));
  auto w1 = MustOpen(Opts(dir, 1, &clock));
  ASSERT_TRUE(w0 && w1);
  auto r = FeedReader::Open(dir.path() + "/feed", &clock);
  ASSERT_TRUE(r.ok());
  std::string cursor;

  clock.mono += 10;
  const uint64_t a = AppendOne(w0.get(), "http://o.test/a");
  clock.mono += 10;
  auto slow = w1->BeginEntry();  // a big record being compressed
  ASSERT_TRUE(slow.ok());
  clock.mono += 10;
  const uint64_t c = AppendOne(w0.get(), "http://o.test/c");
  ASSERT_LT(a, *slow);
  ASSERT_LT(*slow, c);
  clock.mono += 10;
  std::vector<FeedEntry> got = Drain(r->get(), &cursor);
  ASSERT_EQ(got.size(), 1u);  // a; c waits for the slow record
  EXPECT_EQ(got[0].id, a);
  auto page = (*r)->Read(cursor, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_LT(page->watermark, *slow);

  FeedEntry e = Entry("http://o.test/b");
  e.id = *slow;
  ASSERT_TRUE(w1->Append(e).ok());
  got = Drain(r->get(), &cursor);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, *slow);
  EXPECT_EQ(got[1].id, c);

  // Idle writers: the watermark follows the clock.
  clock.mono += 1000;
  page = (*r)->Read(cursor, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_GE(SplitFeedId(page->watermark).unix_ms + 1,
            SplitFeedId(c).unix_ms + 1000);

  // An aborted record ends the hold too.
  auto given_up = w1->BeginEntry();
  ASSERT_TRUE(given_up.ok());
  clock.mono += 5;
  const uint64_t d = AppendOne(w0.get(), "http://o.test/d");
  EXPECT_TRUE(Drain(r->get(), &cursor).empty());
  w1->AbortEntry();
  // Idle, w1 could still take an ID in d's millisecond (its worker bits
  // are above w0's): d is returned once the clock is past it.
  EXPECT_TRUE(Drain(r->get(), &cursor).empty());
  clock.mono += 1;
  got = Drain(r->get(), &cursor);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, d);

  // A writer that is gone (closed; or killed: see the kill -9 test) does
  // not hold the feed, and when it comes back it starts above it.
  ASSERT_TRUE(w1->Close().ok());
  clock.mono += 100;
  const uint64_t f = AppendOne(w0.get(), "http://o.test/f");
  clock.mono += 100;
  got = Drain(r->get(), &cursor);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, f);
  clock.wall -= 3600 * 1000;  // even with the wall clock an hour behind
  w1 = MustOpen(Opts(dir, 1, &clock));
  ASSERT_NE(w1, nullptr);
  auto page2 = (*r)->Read(cursor, 10);
  ASSERT_TRUE(page2.ok());
  const uint64_t g = AppendOne(w1.get(), "http://o.test/g");
  EXPECT_GT(g, page2->watermark);
  clock.mono += 1;  // w0 could still take an ID below g in its millisecond
  got = Drain(r->get(), &cursor);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, g);
}

// Four writers in threads, each sometimes slow between taking an ID and
// writing its line, and a reader polling with random page sizes: every ID
// the reader returns is above the one before, and at the end every entry
// was returned exactly once.
TEST(FeedOrder, Issue14_InterleavedConcurrentWritersNeverReadOutOfOrder) {
  TempDir dir;
  constexpr int kWriters = 4;
  constexpr int kEach = 400;
  std::vector<std::unique_ptr<FeedWriter>> writers;
  for (int w = 0; w < kWriters; ++w) {
    FeedOptions o = Opts(dir, w, nullptr);
    o.segment_bytes = 16384;  // rotations while the reader reads
    writers.push_back(MustOpen(o));
    ASSERT_NE(writers.back(), nullptr);
  }
  std::atomic<int> running{kWriters};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(static_cast<unsigned>(w) + 1);
      for (int i = 0; i < kEach; ++i) {
        auto id = writers[w]->BeginEntry();
        if (!id.ok()) break;
        if (rng() % 8 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
        FeedEntry e = Entry("http://w" + std::to_string(w) + ".test/" +
                            std::to_string(i));
        e.id = *id;
        if (!writers[w]->Append(e).ok()) break;
        if (rng() % 16 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
      }
      running--;
    });
  }
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::mt19937 rng(99);
  std::string cursor;
  uint64_t last = 0;
  std::multiset<std::string> seen;
  int reads = 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto take = [&](const FeedPage& p) {
    for (const FeedEntry& e : p.entries) {
      ASSERT_GT(e.id, last) << "read " << reads;
      last = e.id;
      seen.insert(e.url);
    }
  };
  while (running.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    auto p = (*r)->Read(cursor, 1 + rng() % 40);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ++reads;
    take(*p);
    if (::testing::Test::HasFatalFailure()) break;
    cursor = p->next_cursor;
  }
  for (auto& t : threads) t.join();
  for (auto& w : writers) ASSERT_TRUE(w->Close().ok());
  for (int guard = 0; guard < 10000; ++guard) {
    auto p = (*r)->Read(cursor, 50);
    ASSERT_TRUE(p.ok());
    if (p->entries.empty()) break;
    take(*p);
    cursor = p->next_cursor;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kWriters * kEach));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(),
            seen.size());
  EXPECT_GT(reads, 10);
}

// The same across processes: writers forked, each killed at a random
// point; the entries they completed are read once each, in order, and
// their dead marks hold nothing.
TEST(FeedOrder, Issue14_ForkedWritersKilledAtRandomReadInOrder) {
  TempDir dir;
  fs::create_directories(dir.path() + "/feed");
  std::vector<pid_t> pids;
  for (int w = 0; w < 3; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FeedOptions o = Opts(dir, w, nullptr);
      o.segment_bytes = 65536;
      auto fw = FeedWriter::Open(o);
      if (!fw.ok()) ::_exit(2);
      const auto stop =
          std::chrono::steady_clock::now() + std::chrono::seconds(30);
      for (int i = 0; i < 2000 && std::chrono::steady_clock::now() < stop;
           ++i) {
        FeedEntry e = Entry("http://p" + std::to_string(w) + ".test/" +
                            std::to_string(i));
        if (!(*fw)->Append(e).ok()) ::_exit(3);
        if (i % 20 == 0) ::usleep(1000);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::string cursor;
  uint64_t last = 0;
  std::set<std::string> seen;
  std::mt19937 rng(5);
  size_t killed = 0;
  for (int round = 0; round < 20000 && killed < pids.size(); ++round) {
    auto p = (*r)->Read(cursor, 1 + rng() % 200);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (const FeedEntry& e : p->entries) {
      ASSERT_GT(e.id, last);
      last = e.id;
      EXPECT_TRUE(seen.insert(e.url).second) << e.url;
    }
    cursor = p->next_cursor;
    if (seen.size() > 300 * (killed + 1)) {
      ::kill(pids[killed], SIGKILL);
      ++killed;
    }
    ::usleep(200);
  }
  for (pid_t pid : pids) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  // Whatever they completed is readable, once, after the last cursor.
  for (int guard = 0; guard < 100000; ++guard) {
    auto p = (*r)->Read(cursor, 500);
    ASSERT_TRUE(p.ok());
    if (p->entries.empty()) break;
    for (const FeedEntry& e : p->entries) {
      ASSERT_GT(e.id, last);
      last = e.id;
      EXPECT_TRUE(seen.insert(e.url).second) << e.url;
    }
    cursor = p->next_cursor;
  }
  std::string all_cursor;
  auto again = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Drain(again->get(), &all_cursor, 1000).size(), seen.size());
  EXPECT_GE(seen.size(), 900u);
}

// --- Several nodes ---

FeedPage Page(std::vector<uint64_t> ids, uint64_t watermark) {
  FeedPage p;
  for (uint64_t id : ids) {
    FeedEntry e;
    e.id = id;
    p.entries.push_back(e);
  }
  p.watermark = watermark;
  return p;
}

TEST(FeedMerge, Issue14_OnlyEntriesUpToEveryNodesWatermarkInIdOrder) {
  // Node 0 is further on than node 1: its entries above node 1's
  // watermark wait.
  std::vector<FeedPage> pages = {Page({10, 20, 30, 40}, 45),
                                 Page({15, 25}, 28)};
  FeedMerge m = MergeFeedPages(pages, 100);
  ASSERT_EQ(m.order.size(), 4u);
  std::vector<uint64_t> ids;
  for (auto [p, i] : m.order) ids.push_back(pages[p].entries[i].id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{10, 15, 20, 25}));
  EXPECT_EQ(m.watermark, 28u);
  // A limit cuts it short: the watermark is then the last entry.
  m = MergeFeedPages(pages, 3);
  ASSERT_EQ(m.order.size(), 3u);
  EXPECT_EQ(m.watermark, 20u);
  // A node with nothing new still holds the others at its watermark.
  m = MergeFeedPages({Page({50, 60}, 70), Page({}, 55)}, 10);
  ASSERT_EQ(m.order.size(), 1u);
  EXPECT_EQ(m.watermark, 55u);
  EXPECT_TRUE(MergeFeedPages({}, 10).order.empty());
}

// Two nodes' feed dirs read through two readers and merged page by page,
// with the consumer restarted from its cursor between pages: every entry
// once, IDs ascending, whichever node is ahead.
TEST(FeedMerge, Issue14_TwoNodesMergedByWatermarkResumeFromOneCursor) {
  TempDir n0, n1;
  FakeClock clock;
  auto a = MustOpen(Opts(n0, 0, &clock, 0));
  auto b = MustOpen(Opts(n1, 2, &clock, 1));
  ASSERT_TRUE(a && b);
  std::vector<std::string> want;
  for (int i = 0; i < 60; ++i) {
    clock.mono += 1 + i % 3;
    FeedWriter* w = i % 3 == 0 ? b.get() : a.get();
    AppendOne(w, "http://m.test/" + std::to_string(i));
  }
  auto slow = b->BeginEntry();  // node 1 busy: node 0's later entries wait
  ASSERT_TRUE(slow.ok());
  clock.mono += 5;
  for (int i = 60; i < 70; ++i)
    AppendOne(a.get(), "http://m.test/x" + std::to_string(i));
  std::string cursor;
  uint64_t last = 0;
  std::set<std::string> seen;
  auto pass = [&](size_t limit) {
    for (int guard = 0; guard < 1000; ++guard) {
      // A consumer process: new readers each time, one cursor kept.
      auto r0 = FeedReader::Open(n0.path() + "/feed", &clock);
      auto r1 = FeedReader::Open(n1.path() + "/feed", &clock);
      ASSERT_TRUE(r0.ok() && r1.ok());
      auto p0 = (*r0)->Read(cursor, limit);
      auto p1 = (*r1)->Read(cursor, limit);
      ASSERT_TRUE(p0.ok() && p1.ok());
      std::vector<FeedPage> pages = {*p0, *p1};
      FeedMerge m = MergeFeedPages(pages, limit);
      if (m.order.empty()) return;
      for (auto [p, i] : m.order) {
        const FeedEntry& e = pages[p].entries[i];
        ASSERT_GT(e.id, last);
        last = e.id;
        EXPECT_TRUE(seen.insert(e.url).second);
      }
      cursor = std::to_string(last);
    }
  };
  pass(4);
  EXPECT_EQ(seen.size(), 60u);  // the x entries wait for node 1
  EXPECT_LT(last, *slow);
  FeedEntry e = Entry("http://m.test/slow");
  e.id = *slow;
  ASSERT_TRUE(b->Append(e).ok());
  clock.mono += 5;
  pass(3);
  EXPECT_EQ(seen.size(), 71u);
}

// --- The WARC record carries it ---

TEST(FeedId, Issue14_WarcRecordCarriesItsFeedId) {
  TempDir dir;
  Options o;
  o.dir = dir.path() + "/warc";
  o.index_dir = dir.path() + "/index";
  o.worker_id = 3;
  o.node_id = 5;
  o.fsync_on_flush = false;
  o.fsync_on_rotate = false;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  DocBuffer body;
  ASSERT_TRUE(body.Append("hello").ok());
  FetchRecord r;
  r.target_uri = "http://f.test/";
  r.fetch_time_us = 1704164645000000;
  r.request_head = "GET / HTTP/1.1\r\nHost: f.test\r\n\r\n";
  r.response_head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
      "5\r\n\r\n";
  r.body = &body;
  auto ex = (*w)->WriteExchange(r);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  auto rv = (*w)->WriteRevisit(r, ex->response.record_id, r.target_uri,
                               r.fetch_time_us, ex->payload_digest);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_NE(ex->response.feed_id, 0u);
  EXPECT_GT(rv->feed_id, ex->response.feed_id);
  EXPECT_EQ(ex->request.feed_id, 0u);
  FeedIdParts parts = SplitFeedId(ex->response.feed_id);
  EXPECT_EQ(parts.node, 5);
  EXPECT_EQ(parts.worker, 3);
  auto rec = ReadRecordAt(o.dir + "/" + ex->response.file, ex->response.offset,
                          ex->response.length);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->Header("Crawld-Feed-ID"),
            std::to_string(ex->response.feed_id));
  auto rrec = ReadRecordAt(o.dir + "/" + rv->file, rv->offset, rv->length);
  ASSERT_TRUE(rrec.ok());
  EXPECT_EQ(rrec->Header("Crawld-Feed-ID"), std::to_string(rv->feed_id));
  auto report = VerifyFile(o.dir + "/" + ex->response.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok());
  auto r2 = FeedReader::Open(o.index_dir + "/feed");
  ASSERT_TRUE(r2.ok());
  std::string cursor;
  std::vector<FeedEntry> all = Drain(r2->get(), &cursor);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, ex->response.feed_id);
  EXPECT_EQ(all[1].id, rv->feed_id);
}

}  // namespace
}  // namespace crawld::store
