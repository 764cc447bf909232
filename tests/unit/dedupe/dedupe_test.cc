// Tests of the URL-seen set and the document digest (dedupe/dedupe.h).
#include "dedupe/dedupe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <unordered_set>

namespace crawld::dedupe {
namespace {

// The exact set behind the Bloom filter means no new URL is ever reported as
// seen, even with the filter saturated far beyond its design load.
TEST(SeenSet, NoFalseDropsAgainstUnorderedSet) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    Options o;
    o.expected_urls = 1000;  // overfilled 20x below: many false positives
    o.bloom_fp_rate = 0.1;
    SeenSet seen(o);
    std::unordered_set<uint64_t> model;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 200'000; ++i) {
      // A small range gives many repeats; edges include 0 and UINT64_MAX.
      uint64_t fp;
      switch (rng() % 8) {
        case 0:
          fp = 0;
          break;
        case 1:
          fp = std::numeric_limits<uint64_t>::max() - rng() % 4;
          break;
        case 2:
          fp = rng();
          break;
        default:
          fp = rng() % 40'000;
          break;
      }
      if (rng() % 3 == 0) {
        ASSERT_EQ(seen.Contains(fp), model.count(fp) == 1) << fp;
      } else {
        ASSERT_EQ(seen.InsertIfNew(fp), model.insert(fp).second) << fp;
      }
      ASSERT_EQ(seen.size(), model.size());
    }
    EXPECT_GT(seen.bloom_false_positives(), 0u) << "exact path never tested";
    for (uint64_t fp : model) ASSERT_TRUE(seen.Contains(fp)) << fp;
  }
}

TEST(SeenSet, SequentialFingerprintsSurviveTableGrowth) {
  Options o;
  o.expected_urls = 100'000;
  SeenSet seen(o);
  for (uint64_t i = 0; i < 300'000; ++i) ASSERT_TRUE(seen.InsertIfNew(i));
  for (uint64_t i = 0; i < 300'000; ++i) ASSERT_FALSE(seen.InsertIfNew(i));
  for (uint64_t i = 300'000; i < 310'000; ++i) ASSERT_FALSE(seen.Contains(i));
  EXPECT_EQ(seen.size(), 300'000u);
}

// Optimal geometry: m = -n ln p / (ln 2)^2 bits, k = round((m / n) ln 2).
TEST(BloomFilter, GeometryIsOptimalForExpectedUrlsAndRate) {
  Options o;  // 10M URLs at 1%
  SeenSet seen(o);
  const double m = -1e7 * std::log(0.01) / (std::log(2.0) * std::log(2.0));
  EXPECT_NEAR(static_cast<double>(seen.bloom_bits()), m, 1.0);
  EXPECT_EQ(seen.bloom_hashes(), 7);
  o.expected_urls = 1000;
  o.bloom_fp_rate = 0.001;
  EXPECT_EQ(SeenSet(o).bloom_hashes(), 10);
}

// At the design load the measured false-positive rate matches the target.
// 200,000 probes at p = 0.01 give ~2,000 false positives with a standard
// deviation of ~45, so the +-30% band is more than 10 sigma wide; the seed
// is fixed, so the test is deterministic anyway.
void CheckFalsePositiveRate(double target, uint64_t n, uint64_t probes) {
  Options o;
  o.expected_urls = n;
  o.bloom_fp_rate = target;
  SeenSet seen(o);
  std::mt19937_64 rng(42);
  std::unordered_set<uint64_t> inserted;
  while (inserted.size() < n) {
    uint64_t fp = rng();
    if (inserted.insert(fp).second) {
      ASSERT_TRUE(seen.InsertIfNew(fp));
    }
  }
  EXPECT_NEAR(seen.bloom_fill(), 0.5, 0.02);
  const uint64_t before = seen.bloom_false_positives();
  uint64_t probed = 0;
  while (probed < probes) {
    uint64_t fp = rng();
    if (inserted.count(fp)) continue;
    ASSERT_FALSE(seen.Contains(fp));
    ++probed;
  }
  const double rate =
      static_cast<double>(seen.bloom_false_positives() - before) /
      static_cast<double>(probes);
  EXPECT_GT(rate, target * 0.7) << "rate " << rate;
  EXPECT_LT(rate, target * 1.3) << "rate " << rate;
}

TEST(BloomFilter, MeasuredFalsePositiveRateNearOnePercentTarget) {
  CheckFalsePositiveRate(0.01, 100'000, 200'000);
}

TEST(BloomFilter, MeasuredFalsePositiveRateNearTenthPercentTarget) {
  CheckFalsePositiveRate(0.001, 100'000, 1'000'000);
}

TEST(SeenSet, CrawldOptionsAreSanitized) {
  Options o;
  o.expected_urls = 0;
  o.bloom_fp_rate = std::numeric_limits<double>::quiet_NaN();
  SeenSet seen(o);
  EXPECT_GE(seen.bloom_bits(), 64u);
  EXPECT_GE(seen.bloom_hashes(), 1);
  EXPECT_TRUE(seen.InsertIfNew(7));
  EXPECT_FALSE(seen.InsertIfNew(7));
  o.bloom_fp_rate = 2.0;
  SeenSet seen2(o);
  EXPECT_TRUE(seen2.InsertIfNew(7));
  EXPECT_TRUE(seen2.Contains(7));
}

// XXH3-128 known answer: the empty input, as printed by `xxh128sum`.
TEST(DocumentDigest, Xxh3_128KnownAnswerForEmptyBody) {
  EXPECT_EQ(DocumentDigest(""), "99aa06d3014798d86001c324468d497f");
}

TEST(DocumentDigest, StableAndDistinct) {
  const std::string body = "<html><body>hello</body></html>";
  const std::string d = DocumentDigest(body);
  ASSERT_EQ(d.size(), 32u);
  EXPECT_EQ(d.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(DocumentDigest(body), d);
  EXPECT_EQ(DocumentDigest(std::string(body)), d);
  EXPECT_NE(DocumentDigest(body + " "), d);
  // Known answer (xxh128sum of "abc"); a change here would break every
  // revisit record already written.
  EXPECT_EQ(DocumentDigest("abc"), "06b05ab6733a618578af5f94892f3950");
}

TEST(DocumentDigest, LargeBodyCoversTheLongInputPath) {
  std::string big(1 << 20, 'x');
  std::string d = DocumentDigest(big);
  big[12345] = 'y';
  EXPECT_NE(DocumentDigest(big), d);
}

TEST(DocumentDigest128, IsTheHexDigestInTwoWords) {
  const std::string body = "<html>same bytes</html>";
  const Digest128 d = DocumentDigest128(body);
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx",
                static_cast<unsigned long long>(d.high),
                static_cast<unsigned long long>(d.low));
  EXPECT_EQ(std::string(hex), DocumentDigest(body));
}

}  // namespace
}  // namespace crawld::dedupe
