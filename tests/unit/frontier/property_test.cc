// Randomized properties of the frontier with credit scheduling AND disk
// spill on (the production configuration), where no simple model predicts
// the exact order: FIFO per host, nothing lost or duplicated, politeness,
// budgets, and "the popped host had the most credit among ready hosts".
// Plus hostile manifests: Open() must fail cleanly or succeed, never crash.
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "frontier/frontier.h"

namespace crawld::frontier {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& tag) {
  return fs::temp_directory_path() /
         ("crawld-frontier-prop-" + std::to_string(::getpid()) + "-" + tag);
}

// Removes the directory however the test ends (a failed ASSERT returns).
struct DirGuard {
  fs::path dir;
  ~DirGuard() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

class CreditSpillProperties : public ::testing::TestWithParam<uint32_t> {};

TEST_P(CreditSpillProperties, HoldUnderRandomOperations) {
  const uint32_t seed = GetParam();
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const fs::path dir = TempDir(std::to_string(seed));
  fs::remove_all(dir);
  DirGuard guard{dir};
  Options o;
  o.spill_dir = dir.string();
  o.min_delay_us = uniform(0, 3) * 1000;
  o.max_delay_us = o.min_delay_us + 5000;
  o.seed_credit = static_cast<double>(uniform(0, 2));
  o.lambda_interval = static_cast<uint64_t>(uniform(1, 20));
  o.base_page_budget = static_cast<uint64_t>(uniform(0, 1) * uniform(5, 60));
  o.budget_pages_per_credit = static_cast<double>(uniform(0, 5));
  o.max_consecutive_errors = 1000;  // retirement is tested elsewhere
  o.head_items = static_cast<size_t>(uniform(1, 4));
  o.low_water_items = 1;
  o.chunk_items = static_cast<size_t>(uniform(1, 6));
  o.memory_budget_bytes = static_cast<size_t>(uniform(500, 5000));
  o.segment_bytes = 4096;
  auto opened = Frontier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Frontier& f = **opened;

  const int kHosts = static_cast<int>(uniform(2, 9));
  auto host_name = [](int64_t i) {
    return "http://h" + std::to_string(i) + ":80";
  };
  std::map<std::string, std::deque<std::string>> expected;  // FIFO per host
  std::map<std::string, std::string> in_flight;  // host -> popped url
  std::set<std::string> popped_urls;
  int64_t now = 0;
  int serial = 0;
  int pops = 0;
  for (int step = 0; step < 3000; ++step) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " step " +
                 std::to_string(step));
    const int64_t op = uniform(0, 99);
    if (op < 35) {
      const int64_t h = uniform(0, kHosts - 1);
      const std::string host = host_name(h);
      Item item;
      item.url = host + "/" + std::to_string(serial++);
      item.credit = static_cast<double>(uniform(0, 4));
      const std::string from = uniform(0, 1) ? host : host_name(h + 1);
      ASSERT_TRUE(f.Push(host, item, from));
      expected[host].push_back(item.url);
    } else if (op < 60) {
      // Which hosts may go now, and the most credit among them.
      double best = 0.0;
      bool any_ready = false;
      for (int h = 0; h < kHosts; ++h) {
        auto info = f.Host(host_name(h));
        if (!info || info->in_flight || info->retired || info->queued == 0 ||
            info->next_fetch_us > now ||
            (info->page_budget != 0 && info->pages >= info->page_budget)) {
          continue;
        }
        best = std::max(best, info->credit);
        any_ready = true;
      }
      std::map<std::string, double> before;
      for (int h = 0; h < kHosts; ++h) {
        if (auto info = f.Host(host_name(h)))
          before[host_name(h)] = info->credit;
      }
      auto r = f.Pop(now);
      ASSERT_EQ(r.has_value(), any_ready);
      if (!r) continue;
      ++pops;
      EXPECT_GE(before[r->host_key], best - 1e-9 * std::max(1.0, best));
      ASSERT_FALSE(expected[r->host_key].empty());
      ASSERT_EQ(r->item.url, expected[r->host_key].front());
      expected[r->host_key].pop_front();
      ASSERT_TRUE(popped_urls.insert(r->item.url).second) << "duplicate";
      EXPECT_GE(r->item.credit, 0.0);
      in_flight[r->host_key] = r->item.url;
    } else if (op < 80) {
      if (in_flight.empty()) continue;
      auto it = in_flight.begin();
      std::advance(it, uniform(0, static_cast<int64_t>(in_flight.size()) - 1));
      const std::string host = it->first;
      if (uniform(0, 7) == 0) {  // put back, as after a 429
        Item back;
        back.url = it->second;
        ASSERT_TRUE(f.PushFront(host, back));
        expected[host].push_front(it->second);
        popped_urls.erase(it->second);
      }
      in_flight.erase(it);
      f.Complete(host, now, Completion{});
    } else if (op < 85) {
      const int64_t h = uniform(0, kHosts - 1);
      f.AddCredit(host_name(h), static_cast<double>(uniform(0, 3)),
                  host_name(h + 1));
    } else if (op < 87) {
      ASSERT_TRUE(f.Checkpoint().ok()) << f.last_spill_error().ToString();
    } else {
      now += uniform(0, 4000);
    }
    size_t total = 0;
    for (const auto& [h, q] : expected) total += q.size();
    ASSERT_EQ(f.queued(), total);
    ASSERT_EQ(f.in_flight(), in_flight.size());
    ASSERT_LE(f.memory_bytes(),
              o.memory_budget_bytes + kHosts * (o.head_items + 1) * 200);
  }
  EXPECT_GT(pops, 0);
  EXPECT_EQ(f.spill_errors(), 0u);
  EXPECT_EQ(f.lost_items(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CreditSpillProperties,
                         ::testing::Range<uint32_t>(1, 25));

// Manifests with a valid header and checksum but random contents: the
// parser must reject them with an error (or accept a consistent one), never
// read out of bounds or crash.
TEST(HostileManifest, RandomPayloadsFailCleanly) {
  const fs::path dir = TempDir("manifest");
  DirGuard guard{dir};
  std::mt19937_64 rng(42);
  for (int round = 0; round < 300; ++round) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string payload(static_cast<size_t>(rng() % 200), '\0');
    for (char& c : payload) c = static_cast<char>(rng());
    if (round % 3 == 0 && payload.size() >= 16) {
      // Plausible small counts, so that the parser gets further.
      const uint64_t hosts = rng() % 3;
      std::memcpy(payload.data() + 8, &hosts, 8);
    }
    std::string file = "CRWLFRN1";
    const uint64_t len = payload.size();
    const uint64_t sum = XXH3_64bits(payload.data(), payload.size());
    file.append(reinterpret_cast<const char*>(&len), 8);
    file.append(reinterpret_cast<const char*>(&sum), 8);
    file.append(payload);
    std::ofstream(dir / "MANIFEST", std::ios::binary) << file;
    Options o;
    o.spill_dir = dir.string();
    auto f = Frontier::Open(o);
    if (!f.ok()) {
      EXPECT_TRUE(f.status().code() == Status::Code::kCorruption ||
                  f.status().code() == Status::Code::kIOError)
          << f.status().ToString();
    }
  }
}

}  // namespace
}  // namespace crawld::frontier
