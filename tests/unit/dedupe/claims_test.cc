// Document claims (dedupe.h): the crawl-wide "who stores this body in full"
// table of issue 14, item 2. ClaimTable is shared by processes, so its
// tests fork: several processes claim at once, and a process is killed
// (SIGKILL, as kill -9) inside a claim. RedisClaims runs against a real
// redis-server on a loopback port.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dedupe/dedupe.h"
#include "tests/unit/cluster/redis_server.h"
#include "tests/unit/testing/temp_dir.h"

namespace crawld::dedupe {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

Options TableOptions(const std::string& dir, uint64_t max_documents = 10'000) {
  Options o;
  o.claims_path = dir + "/dedupe/claims";
  o.max_documents = max_documents;
  o.claim_text_bytes = 4 << 20;
  return o;
}

DocumentClaim Proposal(const std::string& id, const std::string& uri,
                       int64_t time_us) {
  DocumentClaim c;
  c.record_id = "<urn:uuid:" + id + ">";
  c.target_uri = uri;
  c.time_us = time_us;
  return c;
}

std::unique_ptr<ClaimTable> OpenTable(const Options& o) {
  auto t = ClaimTable::Open(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// The claim protocol, the same for every store.
void ExpectProtocol(DocumentClaims* claims) {
  const Digest128 d = DocumentDigest128("the same body");
  ClaimResult r = claims->Claim(d, Proposal("a", "http://a.test/", 100));
  ASSERT_EQ(r.outcome, ClaimOutcome::kClaimed) << r.error;

  // Another URL with the same body: a revisit of the claim, which carries
  // all the revisit needs.
  r = claims->Claim(d, Proposal("b", "http://b.test/", 200));
  ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate) << r.error;
  EXPECT_EQ(r.claim.record_id, "<urn:uuid:a>");
  EXPECT_EQ(r.claim.target_uri, "http://a.test/");
  EXPECT_EQ(r.claim.time_us, 100);
  EXPECT_FALSE(r.claim.stored);

  // The same URL again before its write was settled (its worker died in
  // between): it writes under the claimed id, at its new time.
  r = claims->Claim(d, Proposal("c", "http://a.test/", 300));
  ASSERT_EQ(r.outcome, ClaimOutcome::kOwn) << r.error;
  EXPECT_EQ(r.claim.record_id, "<urn:uuid:a>");
  EXPECT_EQ(r.claim.time_us, 300);
  r = claims->Claim(d, Proposal("d", "http://b.test/", 400));
  ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate);
  EXPECT_EQ(r.claim.time_us, 300);

  // Settled by someone else's id: nothing changes.
  ASSERT_TRUE(claims->Settle(d, "<urn:uuid:zz>", true).ok());
  r = claims->Claim(d, Proposal("e", "http://a.test/", 500));
  ASSERT_EQ(r.outcome, ClaimOutcome::kOwn);

  // Stored: a revisit for everyone, the same URL included (a refetch).
  ASSERT_TRUE(claims->Settle(d, "<urn:uuid:a>", true).ok());
  r = claims->Claim(d, Proposal("f", "http://a.test/", 600));
  ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate);
  EXPECT_TRUE(r.claim.stored);
  EXPECT_EQ(r.claim.record_id, "<urn:uuid:a>");
  EXPECT_EQ(r.claim.time_us, 500);

  // Released (the record was refused): the next fetch claims afresh.
  const Digest128 e = DocumentDigest128("another body");
  ASSERT_EQ(claims->Claim(e, Proposal("g", "http://g.test/", 1)).outcome,
            ClaimOutcome::kClaimed);
  const uint64_t before = claims->size();
  ASSERT_TRUE(claims->Settle(e, "<urn:uuid:g>", false).ok());
  EXPECT_EQ(claims->size(), before - 1);
  r = claims->Claim(e, Proposal("h", "http://h.test/", 2));
  ASSERT_EQ(r.outcome, ClaimOutcome::kClaimed);

  // Bad input is refused, not stored.
  EXPECT_EQ(claims->Claim(e, Proposal("x y", "http://x.test/", 1)).outcome,
            ClaimOutcome::kUnavailable);
  EXPECT_EQ(claims->Claim(e, Proposal("x", "", 1)).outcome,
            ClaimOutcome::kUnavailable);
}

TEST(ClaimTable, Issue14_ClaimDuplicateOwnStoredReleased) {
  TempDir dir;
  auto t = OpenTable(TableOptions(dir.path()));
  ASSERT_NE(t, nullptr);
  ExpectProtocol(t.get());
}

TEST(ClaimTable, Issue14_ClaimsOutliveTheHandleAndTheProcess) {
  TempDir dir;
  const Digest128 d = DocumentDigest128("kept");
  {
    auto t = OpenTable(TableOptions(dir.path()));
    ASSERT_EQ(t->Claim(d, Proposal("a", "http://a.test/", 1)).outcome,
              ClaimOutcome::kClaimed);
    ASSERT_TRUE(t->Settle(d, "<urn:uuid:a>", true).ok());
  }
  // Another process, another handle.
  const pid_t pid = fork();
  if (pid == 0) {
    auto t = ClaimTable::Open(TableOptions(dir.path()));
    if (!t.ok()) _exit(2);
    ClaimResult r = (*t)->Claim(d, Proposal("b", "http://b.test/", 2));
    _exit(r.outcome == ClaimOutcome::kDuplicate && r.claim.stored &&
                  r.claim.record_id == "<urn:uuid:a>"
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Several processes claim the same bodies at once, each for its own URLs:
// every body has exactly one claimant, and everyone else was told that
// one (the property "no body stored in full twice" rests on).
TEST(ClaimTable, Issue14_ProcessesRacingForOneBodyGetOneClaimant) {
  TempDir dir;
  auto t = OpenTable(TableOptions(dir.path()));
  ASSERT_NE(t, nullptr);
  constexpr int kProcs = 6;
  constexpr int kBodies = 400;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      auto mine = ClaimTable::Open(TableOptions(dir.path()));
      if (!mine.ok()) _exit(2);
      std::ofstream out(dir.path() + "/out-" + std::to_string(p));
      // Each process walks the bodies in its own order.
      std::vector<int> order(kBodies);
      for (int i = 0; i < kBodies; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      for (int i : order) {
        const Digest128 d = DocumentDigest128("body " + std::to_string(i));
        const std::string id = std::to_string(p) + "-" + std::to_string(i);
        ClaimResult r =
            (*mine)->Claim(d, Proposal(id,
                                       "http://p" + std::to_string(p) +
                                           ".test/" + std::to_string(i),
                                       i));
        const char* what = r.outcome == ClaimOutcome::kClaimed     ? "C"
                           : r.outcome == ClaimOutcome::kDuplicate ? "D"
                                                                   : "?";
        out << i << ' ' << what << ' '
            << (r.outcome == ClaimOutcome::kClaimed ? "<urn:uuid:" + id + ">"
                                                    : r.claim.record_id)
            << '\n';
        if (r.outcome == ClaimOutcome::kClaimed && i % 2 == 0) {
          if (!(*mine)->Settle(d, "<urn:uuid:" + id + ">", true).ok()) {
            _exit(3);
          }
        }
      }
      out.close();
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::map<int, std::vector<std::string>> claimed, told;
  for (int p = 0; p < kProcs; ++p) {
    std::ifstream in(dir.path() + "/out-" + std::to_string(p));
    int i;
    std::string what, id;
    int lines = 0;
    while (in >> i >> what >> id) {
      ASSERT_NE(what, "?") << "body " << i;
      (what == "C" ? claimed : told)[i].push_back(id);
      ++lines;
    }
    EXPECT_EQ(lines, kBodies);
  }
  for (int i = 0; i < kBodies; ++i) {
    ASSERT_EQ(claimed[i].size(), 1u) << "body " << i;
    ASSERT_EQ(told[i].size(), size_t{kProcs - 1}) << "body " << i;
    for (const std::string& id : told[i]) EXPECT_EQ(id, claimed[i][0]);
  }
  EXPECT_EQ(t->size(), uint64_t{kBodies});
}

// kill -9 inside a claim, at each point a claim can stop: the next process
// gets the buckets (EOWNERDEAD), keeps every finished claim, and sees the
// unfinished one either entirely (committed) or not at all.
TEST(ClaimTable, Issue14_KillInsideAClaimLeavesTheTableConsistent) {
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    TempDir dir;
    auto t = OpenTable(TableOptions(dir.path()));
    ASSERT_NE(t, nullptr);
    // Finished claims, many of them in the buckets the dying process holds.
    std::vector<Digest128> done;
    for (int i = 0; i < 2000; ++i) {
      const Digest128 d = DocumentDigest128("done " + std::to_string(i));
      ASSERT_EQ(
          t->Claim(d, Proposal("d" + std::to_string(i),
                               "http://done.test/" + std::to_string(i), i))
              .outcome,
          ClaimOutcome::kClaimed);
      done.push_back(d);
    }
    const Digest128 victim = DocumentDigest128("victim");
    const pid_t pid = fork();
    if (pid == 0) {
      auto mine = ClaimTable::Open(TableOptions(dir.path()));
      if (!mine.ok()) _exit(2);
      (*mine)->TEST_AbandonClaim(victim, stage);
      raise(SIGKILL);
      _exit(3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    // A process that died holding the buckets does not block anyone.
    ClaimResult r = t->Claim(victim, Proposal("v", "http://v.test/", 7));
    if (stage == 3) {
      // Committed before the death: there, whole.
      ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate);
      EXPECT_EQ(r.claim.record_id, "<urn:test:abandoned>");
      EXPECT_EQ(r.claim.target_uri, "http://abandoned.test/");
    } else {
      // Not committed, or torn: absent, so claimed afresh.
      ASSERT_EQ(r.outcome, ClaimOutcome::kClaimed);
    }
    EXPECT_GE(t->repaired_buckets(), 1u);
    EXPECT_EQ(t->dropped_slots(), stage == 1 ? 1u : 0u);
    for (int i = 0; i < 2000; ++i) {
      ClaimResult again =
          t->Claim(done[i], Proposal("x", "http://other.test/", 0));
      ASSERT_EQ(again.outcome, ClaimOutcome::kDuplicate) << i;
      ASSERT_EQ(again.claim.record_id, "<urn:uuid:d" + std::to_string(i) + ">");
    }
  }
}

// The bound: at most max_documents digests; beyond, kFull, and the claims
// held still answer. A release makes room.
TEST(ClaimTable, Issue14_BoundReachedRefusesNewBodiesOnly) {
  TempDir dir;
  auto t = OpenTable(TableOptions(dir.path(), 1024));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->capacity(), 1024u);
  // The file stays small: 1024 digests need ~52 KB of buckets.
  EXPECT_LT(t->file_bytes(), 4096u + 100'000u + (4u << 20));
  int claimed = 0, full = 0;
  std::vector<Digest128> held;
  for (int i = 0; i < 1500; ++i) {
    const Digest128 d = DocumentDigest128("b" + std::to_string(i));
    ClaimResult r = t->Claim(d, Proposal(std::to_string(i), "http://b/", i));
    if (r.outcome == ClaimOutcome::kClaimed) {
      ++claimed;
      held.push_back(d);
    } else {
      ASSERT_EQ(r.outcome, ClaimOutcome::kFull);
      ++full;
    }
  }
  // Two buckets per digest fill the slots evenly: the count bound, not a
  // full bucket, is what stops them (a few may meet two full buckets).
  EXPECT_LE(claimed, 1024);
  EXPECT_GE(claimed, 1000);
  EXPECT_EQ(claimed + full, 1500);
  EXPECT_EQ(t->size(), uint64_t(claimed));
  for (const Digest128& d : held) {
    ASSERT_EQ(t->Claim(d, Proposal("z", "http://z/", 0)).outcome,
              ClaimOutcome::kDuplicate);
  }
  ASSERT_TRUE(t->Settle(held[0], "<urn:uuid:0>", false).ok());
  const Digest128 fresh = DocumentDigest128("fresh");
  ClaimResult r = t->Claim(fresh, Proposal("f", "http://f/", 0));
  // Its buckets may be full even with the count below the bound.
  EXPECT_TRUE(r.outcome == ClaimOutcome::kClaimed ||
              r.outcome == ClaimOutcome::kFull);
}

TEST(ClaimTable, Issue14_TextAreaBoundRefusesNewBodies) {
  TempDir dir;
  Options o = TableOptions(dir.path());
  o.claim_text_bytes = 64 << 10;
  auto t = OpenTable(o);
  ASSERT_NE(t, nullptr);
  const std::string long_uri = "http://long.test/" + std::string(1000, 'x');
  // What fits: each claim's text is a length byte, its id and its URI.
  uint64_t used = 0;
  int fits = 0;
  for (int i = 0;; ++i) {
    const uint64_t len =
        1 + Proposal(std::to_string(i), long_uri, i).record_id.size() +
        long_uri.size();
    if (used + len > (64 << 10)) break;
    used += len;
    ++fits;
  }
  int claimed = 0;
  ClaimOutcome last = ClaimOutcome::kClaimed;
  for (int i = 0; i < 100 && last == ClaimOutcome::kClaimed; ++i) {
    last = t->Claim(DocumentDigest128(std::to_string(i)),
                    Proposal(std::to_string(i), long_uri, i))
               .outcome;
    if (last == ClaimOutcome::kClaimed) ++claimed;
  }
  EXPECT_EQ(last, ClaimOutcome::kFull);
  EXPECT_EQ(claimed, fits);
  EXPECT_EQ(t->text_used(), used);
  // A shorter text still fits in what is left, if it does.
  const DocumentClaim small = Proposal("s", "http://s/", 0);
  const uint64_t small_len =
      1 + small.record_id.size() + small.target_uri.size();
  EXPECT_EQ(t->Claim(DocumentDigest128("short"), small).outcome,
            used + small_len <= (64 << 10) ? ClaimOutcome::kClaimed
                                           : ClaimOutcome::kFull);
  EXPECT_LE(t->text_used(), t->text_capacity());
}

// Resident bytes of this process's mappings of `path` (/proc/self/smaps).
uint64_t ResidentBytesOf(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string canonical = fs::canonical(path).string();
  uint64_t kb = 0;
  bool in_file = false;
  for (std::string line; std::getline(smaps, line);) {
    // A mapping's first line: "start-end perms offset dev inode  path".
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      in_file = line.size() >= canonical.size() &&
                line.compare(line.size() - canonical.size(), canonical.size(),
                             canonical) == 0;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      kb += std::stoull(line.substr(4));
    }
  }
  return kb * 1024;
}

// Issue 16 (flat memory over a long crawl): a worker claims the body of
// every page it stores, and each claim's text (record id and URI) stays in
// the table for the crawl. Those bytes live in the file, not in the
// worker's resident memory: what is mapped is the buckets, sized when the
// table is created, however many documents are claimed.
TEST(ClaimTable, Issue16_ClaimsTextIsNotResidentInTheProcess) {
  TempDir dir;
  Options o = TableOptions(dir.path(), 20'000);
  o.claim_text_bytes = 64 << 20;
  auto t = OpenTable(o);
  ASSERT_NE(t, nullptr);
  const uint64_t buckets_bytes = t->file_bytes() - t->text_capacity();
  const std::string path_tail = "http://long.test/" + std::string(2000, 'p');
  for (int i = 0; i < 15'000; ++i) {
    const std::string n = std::to_string(i);
    const Digest128 d = DocumentDigest128(n);
    ASSERT_EQ(t->Claim(d, Proposal(n, path_tail + n, i)).outcome,
              ClaimOutcome::kClaimed);
    ASSERT_TRUE(t->Settle(d, "<urn:uuid:" + n + ">", true).ok());
  }
  ASSERT_GT(t->text_used(), uint64_t{28} << 20);  // 29 MiB of text written
  // (whole pages: the last bucket's page holds the text area's start)
  EXPECT_LE(ResidentBytesOf(o.claims_path),
            (buckets_bytes + 4095) / 4096 * 4096);
  // And every claim reads back whole, from another handle too.
  auto other = OpenTable(o);
  ASSERT_NE(other, nullptr);
  for (int i = 0; i < 15'000; i += 997) {
    const std::string n = std::to_string(i);
    ClaimResult r =
        other->Claim(DocumentDigest128(n), Proposal("x", "http://x/", 0));
    ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate) << i;
    EXPECT_EQ(r.claim.record_id, "<urn:uuid:" + n + ">");
    EXPECT_EQ(r.claim.target_uri, path_tail + n);
    EXPECT_EQ(r.claim.time_us, i);
    EXPECT_TRUE(r.claim.stored);
  }
}

TEST(ClaimTable, Issue14_ExistingTableKeepsItsSize) {
  TempDir dir;
  uint64_t bytes = 0;
  {
    auto t = OpenTable(TableOptions(dir.path(), 10'000));
    bytes = t->file_bytes();
    EXPECT_FALSE(t->size_from_file());
  }
  auto t = OpenTable(TableOptions(dir.path(), 50'000));
  EXPECT_EQ(t->file_bytes(), bytes);
  EXPECT_TRUE(t->size_from_file());
  EXPECT_EQ(t->capacity(), 10'000u);
}

TEST(ClaimTable, Issue14_NotATableIsAnErrorAndIsLeftAlone) {
  TempDir dir;
  Options o = TableOptions(dir.path());
  fs::create_directories(dir.path() + "/dedupe");
  {
    std::ofstream f(o.claims_path);
    f << std::string(8192, 'z');
  }
  auto t = ClaimTable::Open(o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(fs::file_size(o.claims_path), 8192u);
  o.claims_path = "";
  EXPECT_EQ(ClaimTable::Open(o).status().code(),
            Status::Code::kInvalidArgument);
}

// A creator killed before it finished leaves a file without its magic:
// the next opener builds the table again.
TEST(ClaimTable, Issue14_UnfinishedFileIsBuiltAgain) {
  TempDir dir;
  Options o = TableOptions(dir.path());
  fs::create_directories(dir.path() + "/dedupe");
  {
    std::ofstream f(o.claims_path);
    f << std::string(100'000, '\0');
  }
  auto t = OpenTable(o);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(
      t->Claim(DocumentDigest128("x"), Proposal("x", "http://x/", 1)).outcome,
      ClaimOutcome::kClaimed);
}

// Random operations against a model (a std::map): the table answers as
// the model does, also across handles.
TEST(ClaimTable, Issue14_MatchesAModel) {
  TempDir dir;
  auto t = OpenTable(TableOptions(dir.path(), 100'000));
  struct Entry {
    std::string id, uri;
    int64_t time;
    bool stored;
  };
  std::map<int, Entry> model;
  std::mt19937 rng(14);
  for (int step = 0; step < 20'000; ++step) {
    if (step == 10'000) t = OpenTable(TableOptions(dir.path(), 100'000));
    const int body = static_cast<int>(rng() % 3000);
    const Digest128 d = DocumentDigest128("m" + std::to_string(body));
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && model.count(body)) {
      const bool stored = rng() % 2 == 0;
      ASSERT_TRUE(t->Settle(d, model[body].id, stored).ok());
      if (stored) {
        model[body].stored = true;
      } else {
        model.erase(body);
      }
      continue;
    }
    const std::string uri = "http://u" + std::to_string(rng() % 4) + ".test/";
    const std::string id = "<urn:uuid:s" + std::to_string(step) + ">";
    ClaimResult r =
        t->Claim(d, Proposal("s" + std::to_string(step), uri, step));
    auto it = model.find(body);
    if (it == model.end()) {
      ASSERT_EQ(r.outcome, ClaimOutcome::kClaimed) << step;
      model[body] = {id, uri, step, false};
    } else if (!it->second.stored && it->second.uri == uri) {
      ASSERT_EQ(r.outcome, ClaimOutcome::kOwn) << step;
      EXPECT_EQ(r.claim.record_id, it->second.id);
      it->second.time = step;
    } else {
      ASSERT_EQ(r.outcome, ClaimOutcome::kDuplicate) << step;
      EXPECT_EQ(r.claim.record_id, it->second.id);
      EXPECT_EQ(r.claim.target_uri, it->second.uri);
      EXPECT_EQ(r.claim.time_us, it->second.time);
      EXPECT_EQ(r.claim.stored, it->second.stored);
    }
  }
  EXPECT_EQ(t->size(), model.size());
}

// --- Redis ------------------------------------------------------------------

class RedisClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bin = cluster::testing::FindRedisServer();
    if (bin.empty()) GTEST_SKIP() << "redis-server not installed";
    server_ = std::make_unique<cluster::testing::RedisServer>(bin);
    ASSERT_TRUE(server_->Start()) << "redis-server did not start";
  }
  Options RedisOptions() const {
    Options o;
    o.redis_host = "127.0.0.1";
    o.redis_port = server_->port();
    o.redis_prefix = "crawld:test:";
    o.redis_timeout_ms = 500;
    o.redis_retry_ms = 200;
    return o;
  }
  std::unique_ptr<cluster::testing::RedisServer> server_;
};

TEST_F(RedisClaimsTest, Issue14_ClaimDuplicateOwnStoredReleased) {
  auto claims = NewRedisClaims(RedisOptions());
  ExpectProtocol(claims.get());
  // The keys as docs/CLUSTER.md describes them.
  const Digest128 d = DocumentDigest128("the same body");
  EXPECT_EQ(server_->Query(
                {"GET", "crawld:test:doc:" + DocumentDigest("the same body")}),
            "S 500 <urn:uuid:a> http://a.test/");
  EXPECT_EQ(server_->Query({"GET", "crawld:test:doc-count"}), "2");
  EXPECT_EQ(claims->size(), 2u);
  (void)d;
}

// Two "nodes" (two stores, as two machines would have) racing from
// several threads: one claimant per body.
TEST_F(RedisClaimsTest, Issue14_ThreadsOfTwoNodesGetOneClaimant) {
  auto a = NewRedisClaims(RedisOptions());
  auto b = NewRedisClaims(RedisOptions());
  constexpr int kBodies = 300;
  constexpr int kThreads = 4;
  std::vector<std::vector<std::string>> winners(kThreads);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      DocumentClaims* mine = k % 2 == 0 ? a.get() : b.get();
      for (int i = 0; i < kBodies; ++i) {
        const std::string id = std::to_string(k) + "-" + std::to_string(i);
        ClaimResult r =
            mine->Claim(DocumentDigest128("body " + std::to_string(i)),
                        Proposal(id, "http://t" + std::to_string(k) + "/", i));
        winners[k].push_back(
            r.outcome == ClaimOutcome::kClaimed     ? "<urn:uuid:" + id + ">"
            : r.outcome == ClaimOutcome::kDuplicate ? "=" + r.claim.record_id
                                                    : "?");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kBodies; ++i) {
    std::string winner;
    int claimants = 0;
    for (int k = 0; k < kThreads; ++k) {
      const std::string& w = winners[k][i];
      ASSERT_NE(w, "?");
      if (w[0] == '<') {
        ++claimants;
        winner = w;
      }
    }
    ASSERT_EQ(claimants, 1) << i;
    for (int k = 0; k < kThreads; ++k) {
      if (winners[k][i][0] == '=') {
        EXPECT_EQ(winners[k][i], "=" + winner);
      }
    }
  }
}

TEST_F(RedisClaimsTest, Issue14_BoundReachedRefusesNewBodiesOnly) {
  Options o = RedisOptions();
  o.max_documents = 1024;
  auto claims = NewRedisClaims(o);
  for (int i = 0; i < 1024; ++i) {
    ASSERT_EQ(claims
                  ->Claim(DocumentDigest128(std::to_string(i)),
                          Proposal(std::to_string(i), "http://x/", i))
                  .outcome,
              ClaimOutcome::kClaimed);
  }
  EXPECT_EQ(
      claims
          ->Claim(DocumentDigest128("one more"), Proposal("m", "http://m/", 0))
          .outcome,
      ClaimOutcome::kFull);
  EXPECT_EQ(claims->Claim(DocumentDigest128("7"), Proposal("n", "http://n/", 0))
                .outcome,
            ClaimOutcome::kDuplicate);
}

// Redis gone: every call answers at once (kUnavailable, an error), the
// caller stores in full; once Redis is back (after the rest), claims work.
TEST_F(RedisClaimsTest, Issue14_UnreachableRedisIsUnavailableNotBlocking) {
  Options o = RedisOptions();
  auto claims = NewRedisClaims(o);
  ASSERT_EQ(claims->Claim(DocumentDigest128("a"), Proposal("a", "http://a/", 1))
                .outcome,
            ClaimOutcome::kClaimed);
  server_->Kill();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    ClaimResult r = claims->Claim(DocumentDigest128("b" + std::to_string(i)),
                                  Proposal("b", "http://b/", 1));
    ASSERT_EQ(r.outcome, ClaimOutcome::kUnavailable);
    EXPECT_FALSE(r.error.empty());
  }
  EXPECT_FALSE(
      claims->Settle(DocumentDigest128("a"), "<urn:uuid:a>", true).ok());
  // One connect failure, then rests: 100 calls take far less than 100
  // timeouts.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(server_->Start());  // same port, empty (no persistence)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(claims->Claim(DocumentDigest128("c"), Proposal("c", "http://c/", 1))
                .outcome,
            ClaimOutcome::kClaimed);
}

}  // namespace
}  // namespace crawld::dedupe
