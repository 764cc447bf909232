// HostTable's records of idle hosts leave memory and come back (issue 16):
// the same rules in force until the same moment, never a record whose copy
// is not durable, and a load error is never taken for "no copy".
#include "daemon/hosts.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/crawl_state.h"
#include "conf/overrides.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "frontier/frontier.h"
#include "tests/unit/testing/temp_dir.h"

namespace crawld::daemon {
namespace {

constexpr int64_t kS = 1'000'000;
constexpr int64_t kWall = 1'800'000'000 * kS;
const std::string kA = "http://a.test:80";
const std::string kRobots = "User-agent: *\nDisallow: /private\n";

class HostsTest : public ::testing::Test {
 protected:
  HostsTest() {
    store_ = checkpoint::Store::Open(dir_.Sub("state"), {}).value();
    frontier_ = frontier::Frontier::Open(frontier::Options()).value();
    HostTable::Options o;
    o.idle_evict_us = 10 * kS;
    o.policy.ttl_us = 100 * kS;
    table_ = std::make_unique<HostTable>(o, frontier_.get(), &stats_, &log_);
    table_->SetLoader([this](std::string_view key)
                          -> Result<std::optional<checkpoint::RobotsCopy>> {
      ++loads_;
      if (fail_loads_) return Status::IOError("disk on fire");
      return checkpoint::LoadRobotsCopy(*store_, key);
    });
  }

  // robots.txt of `key` answered `status` with `body` at `now`.
  HostTable::RobotsResult Fetched(const std::string& key, int status,
                                  const std::string& body, int64_t now) {
    EXPECT_EQ(table_->CheckPage(key, "/", now).kind,
              HostTable::Gate::kFetchRobots);
    RobotsFetch f;
    f.status = status;
    f.body = &body;
    return table_->OnRobotsFetched(key, f, now, kWall + now);
  }

  // What Recovery::Checkpoint does with the host table.
  void Checkpoint() {
    checkpoint::CrawlState st;
    table_->TakeDirty([&](const std::string& key,
                          const std::optional<checkpoint::RobotsCopy>& copy) {
      checkpoint::HostState h;
      h.robots = copy;
      st.hosts.emplace_back(key, h);
    });
    checkpoint::Store::Batch batch;
    checkpoint::EncodeCrawlState(st, &batch);
    ASSERT_TRUE(store_->Write(batch).ok());
  }

  test::TempDir dir_;
  std::unique_ptr<checkpoint::Store> store_;
  std::unique_ptr<frontier::Frontier> frontier_;
  CrawlStats stats_;
  EventLog log_;
  std::unique_ptr<HostTable> table_;
  int loads_ = 0;
  bool fail_loads_ = false;
};

TEST_F(HostsTest, AnIdleRecordComesBackWithTheSameRulesUntilTheSameMoment) {
  Fetched(kA, 200, kRobots, 1 * kS);  // in force until 101 s
  Checkpoint();
  EXPECT_EQ(table_->EvictIdle(5 * kS), 0u);  // used 4 s ago
  EXPECT_EQ(table_->EvictIdle(12 * kS), 1u);
  EXPECT_EQ(table_->Find(kA), nullptr);
  EXPECT_EQ(table_->size(), 0u);
  EXPECT_EQ(table_->evicted(), 1u);
  EXPECT_EQ(stats_.count("host_records_evicted"), 1u);
  // Its state shows without loading it.
  EXPECT_EQ(table_->StateOf(kA, 50 * kS), RobotsState::kReady);
  EXPECT_EQ(table_->StateOf(kA, 101 * kS), RobotsState::kUnknown);
  EXPECT_EQ(loads_, 0);

  // The next page: no robots.txt fetch, the same rules.
  HostTable::Gate g = table_->CheckPage(kA, "/private/x", 13 * kS);
  EXPECT_EQ(g.kind, HostTable::Gate::kDisallowed);
  EXPECT_EQ(g.verdict.rule, "Disallow: /private");
  EXPECT_EQ(table_->CheckPage(kA, "/public", 13 * kS).kind,
            HostTable::Gate::kAllowed);
  EXPECT_EQ(loads_, 1);
  EXPECT_EQ(stats_.count("host_records_loaded"), 1u);
  EXPECT_EQ(table_->evicted(), 0u);
  ASSERT_NE(table_->Find(kA), nullptr);
  ASSERT_TRUE(table_->Find(kA)->copy.has_value());
  EXPECT_EQ(table_->Find(kA)->copy->body, kRobots);
  EXPECT_EQ(table_->Find(kA)->copy->expires_unix_us, kWall + 101 * kS);

  // Evicted again, and past the same expiry: fetched again, as without
  // eviction, with the copy kept as the last good one.
  EXPECT_EQ(table_->EvictIdle(30 * kS), 1u);
  EXPECT_EQ(table_->CheckPage(kA, "/public", 101 * kS).kind,
            HostTable::Gate::kFetchRobots);
  EXPECT_TRUE(table_->Find(kA)->fetched != nullptr);
}

TEST_F(HostsTest, ARecordStaysWhileItsCopyIsNotDurableOrRobotsTxtIsUnderWay) {
  const std::string b = "http://b.test:80", c = "http://c.test:80",
                    d = "http://d.test:80";
  Fetched(kA, 200, kRobots, 0);  // copy not written yet
  EXPECT_EQ(table_->CheckPage(b, "/", 0).kind,
            HostTable::Gate::kFetchRobots);  // fetch under way
  Fetched(c, 503, "", 0);                    // failing
  Fetched(d, 404, "", 0);                    // allow-all, not written yet
  // An admin override applies to e (counted once per host when applied).
  const std::string e = "http://e.test:80";
  auto overrides =
      conf::Overrides::Parse("e.test  disallow  /tmp/\n", "ov.conf").value();
  table_->SetOverrides(overrides.get());
  Fetched(e, 200, kRobots, 0);
  EXPECT_EQ(table_->CheckPage(e, "/tmp/x", 0).kind,
            HostTable::Gate::kDisallowed);
  EXPECT_EQ(table_->EvictIdle(1000 * kS), 0u);
  EXPECT_EQ(table_->size(), 5u);

  Checkpoint();
  EXPECT_EQ(table_->EvictIdle(1000 * kS), 2u);  // a and d
  ASSERT_NE(table_->Find(e), nullptr);
  EXPECT_EQ(table_->Find(kA), nullptr);
  EXPECT_EQ(table_->Find(d), nullptr);
  ASSERT_NE(table_->Find(b), nullptr);
  EXPECT_EQ(table_->Find(b)->robots, RobotsState::kFetching);
  ASSERT_NE(table_->Find(c), nullptr);
  EXPECT_EQ(table_->Find(c)->robots, RobotsState::kUnreachable);

  // A 404's "no rules" comes back as allow-all.
  EXPECT_EQ(table_->CheckPage(d, "/anything", 1001 * kS).kind,
            HostTable::Gate::kFetchRobots);  // 100 s TTL is over
  EXPECT_TRUE(table_->Find(d)->fetched != nullptr);
}

// A restart restores every host as evicted: nothing parsed or held until
// the host's first page, which finds the rules and the Crawl-delay.
TEST_F(HostsTest, ARestartRestoresRecordsAsEvictedAndLoadsThemAtTheirPage) {
  const std::string body = kRobots + "Crawl-delay: 2\n";
  Fetched(kA, 200, body, 0);
  Checkpoint();
  const checkpoint::RobotsCopy copy = *table_->Find(kA)->copy;

  // The next process: a new frontier and table, the same store.
  frontier_ = frontier::Frontier::Open(frontier::Options()).value();
  HostTable::Options o;
  o.idle_evict_us = 10 * kS;
  HostTable next(o, frontier_.get(), &stats_, &log_);
  next.SetLoader([this](std::string_view key) {
    return checkpoint::LoadRobotsCopy(*store_, key);
  });
  const std::string expired = "http://old.test:80";
  checkpoint::RobotsCopy old = copy;
  old.expires_unix_us = kWall - kS;
  // Wall time 50 s after the fetch: 50 s of the 100 s TTL left.
  EXPECT_TRUE(next.Restore(kA, copy, 7 * kS, kWall + 50 * kS));
  EXPECT_FALSE(next.Restore(expired, old, 7 * kS, kWall + 50 * kS));
  EXPECT_EQ(next.size(), 0u);
  EXPECT_EQ(next.evicted(), 2u);
  EXPECT_EQ(next.StateOf(kA, 8 * kS), RobotsState::kReady);
  EXPECT_EQ(next.StateOf(expired, 8 * kS), RobotsState::kUnknown);

  HostTable::Gate g = next.CheckPage(kA, "/private/x", 8 * kS);
  EXPECT_EQ(g.kind, HostTable::Gate::kDisallowed);
  ASSERT_TRUE(frontier_->Host(kA).has_value());
  EXPECT_EQ(frontier_->Host(kA)->crawl_delay_us, 2 * kS);
  // In force until 50 s after the restart, as the copy said.
  EXPECT_EQ(next.Find(kA)->robots_valid_until_us, 57 * kS);
  EXPECT_EQ(next.CheckPage(kA, "/", 57 * kS).kind,
            HostTable::Gate::kFetchRobots);
}

TEST_F(HostsTest, WithoutALoaderOrWithEvictionOffNothingLeaves) {
  Fetched(kA, 200, kRobots, 0);
  Checkpoint();
  table_->SetLoader(nullptr);
  EXPECT_EQ(table_->EvictIdle(1000 * kS), 0u);

  HostTable::Options o;  // idle_evict_us = 0
  HostTable off(o, frontier_.get(), &stats_, &log_);
  off.SetLoader([](std::string_view) {
    return Result<std::optional<checkpoint::RobotsCopy>>(
        std::optional<checkpoint::RobotsCopy>());
  });
  (void)off.CheckPage(kA, "/", 0);
  EXPECT_EQ(off.EvictIdle(1000 * kS), 0u);
  EXPECT_EQ(off.size(), 1u);
}

TEST_F(HostsTest, AnEvictedCopyIsReadForTheCheckpointAndALoadErrorIsNoCopy) {
  Fetched(kA, 200, kRobots, 0);
  Checkpoint();
  ASSERT_EQ(table_->EvictIdle(20 * kS), 1u);

  // A checkpoint entry is written whole: the copy comes from the store.
  Result<std::optional<checkpoint::RobotsCopy>> copy = table_->CopyOf(kA);
  ASSERT_TRUE(copy.ok());
  ASSERT_TRUE(copy->has_value());
  EXPECT_EQ((*copy)->body, kRobots);
  // A host that never had a record has none, without a store read.
  const int loads = loads_;
  copy = table_->CopyOf("http://never.test:80");
  ASSERT_TRUE(copy.ok());
  EXPECT_FALSE(copy->has_value());
  EXPECT_EQ(loads_, loads);

  // The store fails: the checkpoint gets the error, not "no copy" (which
  // would erase the stored one) ...
  fail_loads_ = true;
  EXPECT_FALSE(table_->CopyOf(kA).ok());
  // ... and the host's next page fetches robots.txt first, never a page
  // without rules.
  EXPECT_EQ(table_->CheckPage(kA, "/private/x", 21 * kS).kind,
            HostTable::Gate::kFetchRobots);
  EXPECT_EQ(stats_.count("host_record_load_failed"), 1u);
}

}  // namespace
}  // namespace crawld::daemon
