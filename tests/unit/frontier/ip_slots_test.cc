// IpSlotTable: the per-IP gate shared by the worker processes of one
// machine (issue 14). Handles in one process are distinct holders, which
// makes the rules testable with a fake clock; the crash and concurrency
// tests fork real processes and use CLOCK_MONOTONIC.
#include "frontier/ip_slots.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace crawld::frontier {
namespace {

using Verdict = IpSlotTable::Verdict;

int64_t NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/crawld-ipslots-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

IpSlotTable::Options Opts() {
  IpSlotTable::Options o;
  o.poll_us = 1000;
  o.turn_grace_us = 10'000;
  o.reclaim_gap_us = 0;
  o.buckets = 64;
  return o;
}

std::unique_ptr<IpSlotTable> MustCreate(const std::string& path,
                                        const IpSlotTable::Options& o) {
  auto t = IpSlotTable::Create(path, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

std::unique_ptr<IpSlotTable> MustOpen(const std::string& path,
                                      const IpSlotTable::Options& o) {
  auto t = IpSlotTable::Open(path, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

// --- The rules, with a fake clock.

TEST(IpSlots, OneHolderPerAddressAndTheGapHoldsForEveryone) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  EXPECT_TRUE(a->TryAcquire("10.0.0.1", 1000).acquired);
  // Another address is independent.
  EXPECT_TRUE(b->TryAcquire("10.0.0.2", 1000).acquired);
  // Held: b polls.
  auto held = b->TryAcquire("10.0.0.1", 1100);
  EXPECT_FALSE(held.acquired);
  EXPECT_EQ(held.retry_us, 1100 + 1000);
  // a's request ends at 2000 with a 5 ms gap: b retries at the gap's end,
  // which its own gate never saw.
  a->Release("10.0.0.1", 2000, 7000);
  auto gap = b->TryAcquire("10.0.0.1", 2100);
  EXPECT_FALSE(gap.acquired);
  EXPECT_EQ(gap.retry_us, 7000);
  EXPECT_FALSE(b->TryAcquire("10.0.0.1", 6999).acquired);
  EXPECT_TRUE(b->TryAcquire("10.0.0.1", 7000).acquired);
  // The gap binds its maker too.
  EXPECT_FALSE(a->TryAcquire("10.0.0.1", 7000).acquired);
}

TEST(IpSlots, ReleaseByANonHolderIsIgnored) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  ASSERT_TRUE(a->TryAcquire("10.0.0.1", 0).acquired);
  b->Release("10.0.0.1", 10, 10);
  b->Release("10.9.9.9", 10, 10);
  EXPECT_FALSE(b->TryAcquire("10.0.0.1", 20).acquired);
  EXPECT_FALSE(b->ReleaseSlot("10.0.0.1", 20, 20, {}).released);
  EXPECT_TRUE(a->ReleaseSlot("10.0.0.1", 30, 30, {}).released);
}

TEST(IpSlots, OneAddressInTwoSpellingsIsOneSlot) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  ASSERT_TRUE(a->TryAcquire("10.0.0.1", 0).acquired);
  EXPECT_FALSE(b->TryAcquire("::ffff:10.0.0.1", 0).acquired);
  ASSERT_TRUE(a->TryAcquire("2001:db8::1", 0).acquired);
  EXPECT_FALSE(b->TryAcquire("2001:DB8:0:0:0:0:0:1", 0).acquired);
  // Text that is no address still gets a key of its own.
  ASSERT_TRUE(a->TryAcquire("not an address", 0).acquired);
  EXPECT_FALSE(b->TryAcquire("not an address", 0).acquired);
  EXPECT_TRUE(b->TryAcquire("not an address either", 0).acquired);
}

TEST(IpSlots, TheProcessThatWaitedHasTheNextTurn) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  ASSERT_TRUE(a->TryAcquire("ip", 0).acquired);
  EXPECT_FALSE(b->TryAcquire("ip", 100).acquired);  // b waits: its turn
  a->Release("ip", 500, 500);                       // no gap
  // a comes back at once, before b's next poll: not its turn.
  auto again = a->Acquire("ip", 500, nullptr);
  EXPECT_EQ(again.verdict, Verdict::kTurn);
  EXPECT_GT(again.retry_us, 500);
  EXPECT_TRUE(b->TryAcquire("ip", 1100).acquired);
  // Now a waited: the turn after b's is a's.
  EXPECT_FALSE(a->TryAcquire("ip", 1200).acquired);
  b->Release("ip", 1300, 1300);
  EXPECT_EQ(b->Acquire("ip", 1300, nullptr).verdict, Verdict::kTurn);
  EXPECT_TRUE(a->TryAcquire("ip", 1400).acquired);
}

TEST(IpSlots, ATurnLapsesWhenItsProcessDoesNotCome) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  ASSERT_TRUE(a->TryAcquire("ip", 0).acquired);
  EXPECT_FALSE(b->TryAcquire("ip", 100).acquired);
  a->Release("ip", 200, 3000);  // gap until 3000; b's turn until 3000+grace
  EXPECT_FALSE(a->TryAcquire("ip", 3000).acquired);
  EXPECT_FALSE(a->TryAcquire("ip", 3000 + 9'999).acquired);
  EXPECT_TRUE(a->TryAcquire("ip", 3000 + 10'000).acquired);
}

TEST(IpSlots, AFullBucketMakesNewAddressesWaitNeverShare) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.buckets = 1;  // 8 slots in all
  auto a = MustCreate(dir.File("ip-slots"), o);
  auto b = MustOpen(dir.File("ip-slots"), o);
  for (int i = 0; i < IpSlotTable::kSlotsPerBucket; ++i) {
    ASSERT_TRUE(a->TryAcquire("10.0.0." + std::to_string(i), 0).acquired);
  }
  auto full = b->Acquire("10.0.1.1", 0, nullptr);
  EXPECT_EQ(full.verdict, Verdict::kFull);
  EXPECT_EQ(full.retry_us, 1000);
  EXPECT_EQ(b->stats().full, 1u);
  // A released address inside its gap still takes its slot.
  a->Release("10.0.0.3", 10, 5000);
  EXPECT_EQ(b->Acquire("10.0.1.1", 4999, nullptr).verdict, Verdict::kFull);
  // After the gap the slot is free for another address; the address it
  // held starts from a clean slate (nothing constrains it any more).
  EXPECT_TRUE(b->TryAcquire("10.0.1.1", 5000).acquired);
  EXPECT_EQ(a->Acquire("10.0.0.3", 5000, nullptr).verdict, Verdict::kFull);
  // Each held address is still held.
  for (int i = 0; i < IpSlotTable::kSlotsPerBucket; ++i) {
    if (i == 3) continue;
    EXPECT_EQ(b->Acquire("10.0.0." + std::to_string(i), 5000, nullptr).verdict,
              Verdict::kHeld);
  }
}

TEST(IpSlots, OpenRefusesWhatIsNotATable) {
  TempDir dir;
  EXPECT_EQ(IpSlotTable::Open(dir.File("missing"), Opts()).status().code(),
            Status::Code::kIOError);
  {
    std::ofstream f(dir.File("garbage"));
    f << std::string(100'000, 'x');
  }
  EXPECT_EQ(IpSlotTable::Open(dir.File("garbage"), Opts()).status().code(),
            Status::Code::kCorruption);
  { auto t = MustCreate(dir.File("short"), Opts()); }
  std::filesystem::resize_file(dir.File("short"), 4096);
  EXPECT_EQ(IpSlotTable::Open(dir.File("short"), Opts()).status().code(),
            Status::Code::kCorruption);
}

TEST(IpSlots, CreateReplacesAnOldTable) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  ASSERT_TRUE(a->TryAcquire("ip", 0).acquired);
  auto fresh = MustCreate(dir.File("ip-slots"), Opts());
  EXPECT_TRUE(fresh->TryAcquire("ip", 0).acquired);
  EXPECT_FALSE(std::filesystem::exists(
      dir.File("ip-slots.tmp." + std::to_string(getpid()))));
}

TEST(IpSlots, OpenOrCreateKeepsAGoodTableAndReplacesAnUnusableOne) {
  TempDir dir;
  const std::string path = dir.File("ip-slots");
  auto a = IpSlotTable::OpenOrCreate(path, Opts());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*a)->TryAcquire("ip", 0).acquired);
  // A second process (a restarted worker) maps the same table.
  auto b = IpSlotTable::OpenOrCreate(path, Opts());
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE((*b)->TryAcquire("ip", 0).acquired);
  // A table of an earlier boot (its clock means nothing now) is replaced.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(32);  // Header::boot_hash
    const uint64_t other_boot = 12345;
    f.write(reinterpret_cast<const char*>(&other_boot), sizeof(other_boot));
  }
  ASSERT_EQ(IpSlotTable::Open(path, Opts()).status().code(),
            Status::Code::kFailedPrecondition);
  auto c = IpSlotTable::OpenOrCreate(path, Opts());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE((*c)->TryAcquire("ip", 0).acquired);
  // So is a damaged file.
  {
    std::ofstream f(path, std::ios::trunc);
    f << "not a table";
  }
  EXPECT_TRUE(IpSlotTable::OpenOrCreate(path, Opts()).ok());
  // A directory that cannot hold the table is an error, not a crash.
  EXPECT_EQ(IpSlotTable::OpenOrCreate(dir.File("no/such/dir/ip-slots"), Opts())
                .status()
                .code(),
            Status::Code::kIOError);
}

// --- The permit (what cluster/ip_leases.h builds on).

TEST(IpSlotsPermit, AnAddressWithoutPermitIsAskedForOnce) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  IpSlotTable::PermitRule rule;
  rule.min_left_us = 1000;
  rule.ask_timeout_us = 50'000;
  EXPECT_EQ(a->Acquire("ip", 0, &rule).verdict, Verdict::kAsk);
  // a asks; b does not ask again meanwhile.
  EXPECT_EQ(b->Acquire("ip", 10, &rule).verdict, Verdict::kPermitWait);
  int64_t next = 0;
  EXPECT_FALSE(a->GrantPermit("ip", 20, 0, 100'000, false, rule, &next));
  // Either process may use the permit now.
  auto got = b->Acquire("ip", 30, &rule);
  EXPECT_EQ(got.verdict, Verdict::kAcquired);
  EXPECT_EQ(got.permit_until_us, 100'000);
  b->Release("ip", 40, 40);
  // Too little left: ask again.
  EXPECT_EQ(a->Acquire("ip", 99'500, &rule).verdict, Verdict::kAsk);
  // An answer that never comes: after ask_timeout another may ask.
  EXPECT_EQ(b->Acquire("ip", 99'600, &rule).verdict, Verdict::kPermitWait);
  EXPECT_EQ(b->Acquire("ip", 99'500 + 50'000, &rule).verdict, Verdict::kAsk);
}

TEST(IpSlotsPermit, ADeniedPermitIsNotAskedForBeforeItsRetry) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  IpSlotTable::PermitRule rule;
  ASSERT_EQ(a->Acquire("ip", 0, &rule).verdict, Verdict::kAsk);
  a->DenyPermit("ip", 10, 0, 5000);
  auto wait = a->Acquire("ip", 20, &rule);
  EXPECT_EQ(wait.verdict, Verdict::kPermitWait);
  EXPECT_EQ(wait.retry_us, 5000);
  EXPECT_EQ(a->Acquire("ip", 5000, &rule).verdict, Verdict::kAsk);
}

TEST(IpSlotsPermit, AContendedPermitGoesBackAfterTheRequestInFlight) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  IpSlotTable::PermitRule rule;
  rule.ask_timeout_us = 50'000;
  int64_t next = 0;
  ASSERT_EQ(a->Acquire("ip", 0, &rule).verdict, Verdict::kAsk);
  a->GrantPermit("ip", 0, 0, 1'000'000, false, rule, &next);
  ASSERT_EQ(a->Acquire("ip", 10, &rule).verdict, Verdict::kAcquired);
  // A renewal says someone outside waits: nothing new starts here, and
  // the holder's release gives the permit back with the address's gap.
  EXPECT_FALSE(b->GrantPermit("ip", 20, 15, 1'000'000, true, rule, &next));
  auto rel = a->ReleaseSlot("ip", 30, 530, rule);
  EXPECT_TRUE(rel.give_back);
  EXPECT_EQ(rel.next_us, 530);
  // Until the give-back is done nobody here asks (a question could
  // overtake it on its way).
  EXPECT_EQ(b->Acquire("ip", 600, &rule).verdict, Verdict::kPermitWait);
  a->EndQuestion("ip", 700, 700);
  EXPECT_EQ(b->Acquire("ip", 700, &rule).verdict, Verdict::kAsk);
  // Contended with nothing in flight: the caller gives it back at once.
  ASSERT_EQ(a->Acquire("ip2", 0, &rule).verdict, Verdict::kAsk);
  a->GrantPermit("ip2", 0, 0, 1'000'000, false, rule, &next);
  ASSERT_EQ(a->Acquire("ip2", 10, &rule).verdict, Verdict::kAcquired);
  a->Release("ip2", 20, 900);
  EXPECT_TRUE(b->GrantPermit("ip2", 30, 25, 1'000'000, true, rule, &next));
  EXPECT_EQ(next, 900);
  EXPECT_NE(a->Acquire("ip2", 1000, &rule).verdict, Verdict::kAcquired);
}

TEST(IpSlotsPermit, AnAnswerSentBeforeAGiveBackIsStale) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  IpSlotTable::PermitRule rule;
  int64_t next = 0;
  ASSERT_EQ(a->Acquire("ip", 0, &rule).verdict, Verdict::kAsk);
  a->GrantPermit("ip", 0, 0, 1'000'000, false, rule, &next);
  ASSERT_EQ(a->Acquire("ip", 10, &rule).verdict, Verdict::kAcquired);
  // A renewal sent at 20 comes back uncontended after the give-back at 30
  // (which a contended answer caused): it must not bring the permit back.
  a->GrantPermit("ip", 25, 12, 1'000'000, true, rule, &next);
  ASSERT_TRUE(a->ReleaseSlot("ip", 30, 30, rule).give_back);
  a->EndQuestion("ip", 40, 40);
  EXPECT_FALSE(a->GrantPermit("ip", 50, 20, 1'000'000, false, rule, &next));
  EXPECT_EQ(a->Acquire("ip", 60, &rule).verdict, Verdict::kAsk);
  // A later answer counts.
  a->GrantPermit("ip", 70, 60, 1'000'000, false, rule, &next);
  EXPECT_EQ(a->Acquire("ip", 80, &rule).verdict, Verdict::kAcquired);
}

TEST(IpSlotsPermit, AStaleRefusalDoesNotEndAGiveBack) {
  TempDir dir;
  auto a = MustCreate(dir.File("ip-slots"), Opts());
  auto b = MustOpen(dir.File("ip-slots"), Opts());
  IpSlotTable::PermitRule rule;
  rule.ask_timeout_us = 50'000;
  int64_t next = 0;
  ASSERT_EQ(a->Acquire("ip", 0, &rule).verdict, Verdict::kAsk);
  a->GrantPermit("ip", 0, 0, 1'000'000, false, rule, &next);
  ASSERT_EQ(a->Acquire("ip", 10, &rule).verdict, Verdict::kAcquired);
  a->GrantPermit("ip", 20, 15, 1'000'000, true, rule, &next);
  ASSERT_TRUE(a->ReleaseSlot("ip", 30, 30, rule).give_back);
  // b's renewal, sent at 25 before the give-back, fails on a dead
  // connection at 40: the give-back is still on its way, so nobody asks.
  b->DenyPermit("ip", 40, 25, 40);
  EXPECT_EQ(b->Acquire("ip", 50, &rule).verdict, Verdict::kPermitWait);
  // A refusal sent after the give-back counts.
  a->EndQuestion("ip", 60, 60);
  ASSERT_EQ(b->Acquire("ip", 70, &rule).verdict, Verdict::kAsk);
  b->DenyPermit("ip", 80, 70, 200);
  auto wait = a->Acquire("ip", 90, &rule);
  EXPECT_EQ(wait.verdict, Verdict::kPermitWait);
  EXPECT_EQ(wait.retry_us, 200);
}

// --- Real processes.

// Runs `child` in a forked process that exits with its return value.
pid_t Fork(const std::function<int()>& child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  return pid;
}

// Waits for `pid` at most `ms` milliseconds, then kills it; its exit status
// (-1 if it had to be killed).
int Reap(pid_t pid, int ms) {
  for (int i = 0; i < ms; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    usleep(1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Worker processes start together on a crawl with no table yet: each opens
// or creates it, and all must map the same one (two tables would be two
// gates).
TEST(IpSlotsProcess, ProcessesStartingTogetherShareOneTable) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.probe_after_us = 60'000'000;  // an exited holder keeps its hold here
  o.buckets = 4096;  // a creation long enough for the others to overtake it
  constexpr int kProcs = 6, kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir.File("ip-slots-" + std::to_string(round));
    int start[2], done[2];
    ASSERT_EQ(pipe(start), 0);
    ASSERT_EQ(pipe(done), 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < kProcs; ++i) {
      pids.push_back(Fork([&] {
        close(start[1]);
        char c;
        (void)read(start[0], &c, 1);  // returns at EOF: every child goes
        auto t = IpSlotTable::OpenOrCreate(path, o);
        if (!t.ok()) return 1;
        c = (*t)->TryAcquire("10.1.1.1", NowUs()).acquired ? 'y' : 'n';
        return write(done[1], &c, 1) == 1 ? 0 : 2;
      }));
    }
    close(start[0]);
    close(start[1]);
    close(done[1]);
    for (pid_t pid : pids) EXPECT_EQ(Reap(pid, 10'000), 0);
    std::string answers;
    char c;
    while (read(done[0], &c, 1) == 1) answers += c;
    close(done[0]);
    EXPECT_EQ(answers.size(), size_t{kProcs});
    ASSERT_EQ(std::count(answers.begin(), answers.end(), 'y'), 1)
        << "round " << round << ": " << answers;
  }
}

// The child acquires `ip` and tells the parent through `fd`, then waits to
// be killed (or stops itself).
pid_t HoldInChild(const std::string& path, const IpSlotTable::Options& o,
                  const std::string& ip, int fd, bool stop_self) {
  return Fork([&] {
    auto t = IpSlotTable::Open(path, o);
    if (!t.ok() || !(*t)->TryAcquire(ip, NowUs()).acquired) return 1;
    char c = 'h';
    if (write(fd, &c, 1) != 1) return 2;
    if (stop_self) raise(SIGSTOP);
    sleep(30);  // killed long before
    return 3;
  });
}

// How long (us) after `from` the parent could take `ip`, polling as a gate
// would; -1 if not within `limit_us`.
int64_t TimeToAcquire(IpSlotTable* t, const std::string& ip, int64_t from,
                      int64_t limit_us) {
  while (NowUs() - from < limit_us) {
    auto a = t->TryAcquire(ip, NowUs());
    if (a.acquired) return NowUs() - from;
    usleep(static_cast<useconds_t>(
        std::clamp<int64_t>(a.retry_us - NowUs(), 100, 2000)));
  }
  return -1;
}

TEST(IpSlotsProcess, AKilledHoldersAddressComesBackWithinTheProbe) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.probe_after_us = 200'000;
  o.reclaim_gap_us = 50'000;
  auto t = MustCreate(dir.File("ip-slots"), o);
  // Once reaped (pid gone), once a zombie (not yet reaped).
  for (bool reap : {true, false}) {
    const std::string ip = reap ? "10.1.0.1" : "10.1.0.2";
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = HoldInChild(dir.File("ip-slots"), o, ip, fds[1], false);
    char c = 0;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
    close(fds[0]);
    close(fds[1]);
    EXPECT_FALSE(t->TryAcquire(ip, NowUs()).acquired);
    kill(pid, SIGKILL);
    if (reap) waitpid(pid, nullptr, 0);
    const int64_t killed = NowUs();
    const int64_t took = TimeToAcquire(t.get(), ip, killed, 5'000'000);
    EXPECT_GE(took, o.reclaim_gap_us) << "the gap after a dead holder";
    EXPECT_GT(took, 0) << "never came back";
    // The holder's probe is due probe_after_us after it took the address.
    EXPECT_LT(took, o.probe_after_us + o.reclaim_gap_us + 400'000);
    if (!reap) waitpid(pid, nullptr, 0);
    t->Release(ip, NowUs(), NowUs());
  }
  EXPECT_EQ(t->stats().reclaimed, 2u);
}

TEST(IpSlotsProcess, AStoppedHolderKeepsItsAddressUntilTheLease) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.probe_after_us = 50'000;
  o.lease_us = 600'000;
  auto t = MustCreate(dir.File("ip-slots"), o);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int64_t start = NowUs();
  const pid_t pid =
      HoldInChild(dir.File("ip-slots"), o, "10.2.0.1", fds[1], true);
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  close(fds[0]);
  close(fds[1]);
  // Alive (stopped) for every probe: only the lease frees the address.
  const int64_t took = TimeToAcquire(t.get(), "10.2.0.1", start, 5'000'000);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_GE(took, o.lease_us);
  EXPECT_LT(took, o.lease_us + 1'000'000);
  EXPECT_EQ(t->stats().lease_taken, 1u);
  EXPECT_EQ(t->stats().reclaimed, 0u);
}

TEST(IpSlotsProcess, AProcessKilledInsideALockLeavesTheBucketStricter) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.reclaim_gap_us = 100'000;
  auto t = MustCreate(dir.File("ip-slots"), o);
  ASSERT_TRUE(t->TryAcquire("10.3.0.1", NowUs()).acquired);
  t->Release("10.3.0.1", NowUs(), NowUs());
  const pid_t pid = Fork([&] {
    auto c = IpSlotTable::Open(dir.File("ip-slots"), o);
    if (!c.ok()) return 1;
    (*c)->LockBucketForTest("10.3.0.1");
    // Exits holding the mutex, the table still mapped (as a process killed
    // inside a critical section is: the kernel marks the mutex's owner dead
    // before it unmaps anything).
    (void)std::move(c).value().release();
    return 0;
  });
  ASSERT_EQ(Reap(pid, 10'000), 0);
  const int64_t now = NowUs();
  auto a = t->Acquire("10.3.0.1", now, nullptr);
  EXPECT_EQ(a.verdict, Verdict::kGap);
  EXPECT_GE(a.retry_us, now + o.reclaim_gap_us);
  EXPECT_EQ(t->stats().repaired, 1u);
  // And the bucket works again.
  EXPECT_TRUE(t->TryAcquire("10.3.0.1", a.retry_us).acquired);
}

// Several processes hammer three addresses; each records its requests in
// shared memory. Never two in flight at one address, the gap after each
// respected, and every process gets its share.
TEST(IpSlotsProcess, ManyProcessesNeverOverlapAndKeepTheGap) {
  constexpr int kProcs = 4;
  constexpr int kAddrs = 3;
  constexpr int kMaxLog = 200'000;
  constexpr int64_t kGapUs = 2000;
  struct Entry {
    int32_t proc, addr;
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
  TempDir dir;
  auto table = MustCreate(dir.File("ip-slots"), Opts());
  const int64_t deadline = NowUs() + 1'500'000;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pids.push_back(Fork([&, p] {
      auto t = IpSlotTable::Open(dir.File("ip-slots"), Opts());
      if (!t.ok()) return 1;
      std::mt19937 rng(static_cast<unsigned>(p) * 7919u + 1);
      while (NowUs() < deadline) {
        const int a = static_cast<int>(rng() % kAddrs);
        const std::string ip = "192.0.2." + std::to_string(a + 1);
        auto got = (*t)->TryAcquire(ip, NowUs());
        if (!got.acquired) {
          usleep(static_cast<useconds_t>(
              std::clamp<int64_t>(got.retry_us - NowUs(), 50, 1000)));
          continue;
        }
        if (shared->in_flight[a].fetch_add(1) != 0) shared->overlaps++;
        const int64_t start = NowUs();
        usleep(static_cast<useconds_t>(rng() % 500));  // the "request"
        const int64_t end = NowUs();
        shared->in_flight[a].fetch_sub(1);
        const int i = shared->n.fetch_add(1);
        if (i < kMaxLog) shared->log[i] = {p, a, start, end};
        (*t)->Release(ip, end, end + kGapUs);
      }
      return 0;
    }));
  }
  for (pid_t pid : pids) EXPECT_EQ(Reap(pid, 30'000), 0);
  EXPECT_EQ(shared->overlaps.load(), 0);
  const int n = std::min(shared->n.load(), kMaxLog);
  ASSERT_GT(n, 100);
  std::vector<Entry> log(shared->log, shared->log + n);
  std::sort(log.begin(), log.end(), [](const Entry& x, const Entry& y) {
    return x.start_us < y.start_us;
  });
  std::map<int, int64_t> last_end;
  std::vector<int> per_proc(kProcs, 0);
  for (const Entry& e : log) {
    ++per_proc[e.proc];
    auto it = last_end.find(e.addr);
    if (it != last_end.end()) {
      ASSERT_GE(e.start_us, it->second + kGapUs)
          << "address " << e.addr << " process " << e.proc;
    }
    last_end[e.addr] = e.end_us;
  }
  // Turns share the addresses: nobody starves.
  for (int p = 0; p < kProcs; ++p) {
    EXPECT_GE(per_proc[p], n / (kProcs * 5)) << "process " << p << " of " << n;
  }
  munmap(mem, sizeof(Shared));
}

// --- A seeded random walk against a simple model of the rules.

struct Model {
  struct Addr {
    int holder = -1;
    int64_t next_us = INT64_MIN;
    int turn = -1;
    int64_t turn_until = INT64_MIN;
  };
  int64_t grace = 0;
  std::map<std::string, Addr> addrs;

  void Reserve(Addr& a, int h, int64_t now, int64_t until) {
    if (a.turn == h) {
      a.turn_until = std::max(a.turn_until, until);
    } else if (a.turn == -1 || a.turn_until <= now) {
      a.turn = h;
      a.turn_until = until;
    }
  }
  bool Acquire(int h, const std::string& ip, int64_t now) {
    Addr& a = addrs[ip];
    if (a.holder != -1) {
      Reserve(a, h, now, now + grace);
      return false;
    }
    if (a.next_us > now) {
      Reserve(a, h, now, a.next_us + grace);
      return false;
    }
    if (a.turn != -1 && a.turn != h && a.turn_until > now) return false;
    a.holder = h;
    if (a.turn == h) a.turn = -1;
    return true;
  }
  void Release(int h, const std::string& ip, int64_t now, int64_t next) {
    Addr& a = addrs[ip];
    if (a.holder != h) return;
    a.holder = -1;
    a.next_us = std::max(a.next_us, next);
    if (a.turn != -1 && a.turn_until > now) {
      a.turn_until = std::max(a.turn_until, a.next_us + grace);
    }
  }
};

void RandomWalk(uint32_t seed, uint32_t buckets, int addresses, bool exact) {
  TempDir dir;
  IpSlotTable::Options o = Opts();
  o.buckets = buckets;
  o.lease_us = INT64_MAX / 4;  // no lease or probe in fake time
  o.probe_after_us = INT64_MAX / 4;
  std::vector<std::unique_ptr<IpSlotTable>> h;
  h.push_back(MustCreate(dir.File("ip-slots"), o));
  for (int i = 1; i < 4; ++i) h.push_back(MustOpen(dir.File("ip-slots"), o));
  Model model;
  model.grace = o.turn_grace_us;
  std::mt19937 rng(seed);
  int64_t now = 1'000'000;
  int acquired = 0;
  for (int step = 0; step < 20'000; ++step) {
    now += rng() % 1500;
    const int who = static_cast<int>(rng() % h.size());
    const std::string ip = "10.9." + std::to_string(rng() % addresses) + ".1";
    auto& m = model.addrs[ip];
    if (m.holder == who) {
      const int64_t next = now + (rng() % 4 == 0 ? 0 : rng() % 6000);
      h[who]->Release(ip, now, next);
      model.Release(who, ip, now, next);
      continue;
    }
    const auto got = h[who]->Acquire(ip, now, nullptr);
    ASSERT_GT(got.verdict == Verdict::kAcquired ? now + 1 : got.retry_us, now)
        << "step " << step;
    if (exact) {
      const bool want = model.Acquire(who, ip, now);
      ASSERT_EQ(got.verdict == Verdict::kAcquired, want)
          << "step " << step << " seed " << seed << " " << ip;
    } else if (got.verdict == Verdict::kAcquired) {
      // A crowded table may refuse more than the model, never grant more.
      const auto& a = model.addrs[ip];
      ASSERT_EQ(a.holder, -1) << "step " << step;
      ASSERT_LE(a.next_us, now) << "step " << step;
      model.addrs[ip].holder = who;
    }
    if (got.verdict == Verdict::kAcquired) ++acquired;
  }
  EXPECT_GT(acquired, 1000);
}

TEST(IpSlotsModel, RandomWalkMatchesTheModel) {
  for (uint32_t seed : {1u, 2u, 3u, 14u}) {
    SCOPED_TRACE(seed);
    RandomWalk(seed, 256, 12, /*exact=*/true);
  }
}

TEST(IpSlotsModel, ACrowdedTableIsNeverLooserThanTheModel) {
  for (uint32_t seed : {5u, 6u}) {
    SCOPED_TRACE(seed);
    RandomWalk(seed, 1, 24, /*exact=*/false);
  }
}

}  // namespace
}  // namespace crawld::frontier
