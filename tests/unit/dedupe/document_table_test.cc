// DocumentTable: the exact digest -> stored copy map behind revisit
// records and near-duplicate names (dedupe.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>

#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

DocumentCopy CopyFor(uint64_t i) {
  return {i * 1000, static_cast<int64_t>(i) * 7, static_cast<uint32_t>(i % 9),
          static_cast<uint32_t>(100 + i % 50)};
}

void ExpectSame(const DocumentCopy* got, const DocumentCopy& want) {
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->offset, want.offset);
  EXPECT_EQ(got->time_us, want.time_us);
  EXPECT_EQ(got->file, want.file);
  EXPECT_EQ(got->length, want.length);
}

TEST(DocumentTable, FindsEveryInsertedKeyAndNothingElse) {
  DocumentTable t(1'000'000);
  std::mt19937_64 rng(5);
  std::unordered_map<uint64_t, Digest128> keys;
  for (uint64_t i = 0; i < 50'000; ++i) {  // many growths
    const Digest128 k{rng(), rng()};
    keys[i] = k;
    ASSERT_TRUE(t.Insert(k, CopyFor(i)));
  }
  EXPECT_EQ(t.size(), 50'000u);
  for (const auto& [i, k] : keys) ExpectSame(t.Find(k), CopyFor(i));
  for (int i = 0; i < 50'000; ++i) {
    EXPECT_EQ(t.Find({rng(), rng()}), nullptr);
  }
  // 40-byte slots, at least 35% full just after a doubling: at most 115
  // bytes a document (a node and three strings took 300-400).
  EXPECT_EQ(sizeof(DocumentCopy) + sizeof(Digest128), 40u);
  EXPECT_LE(t.memory_bytes() / t.size(), 115u);
}

TEST(DocumentTable, FirstCopyWinsAndKeysDifferingInOneWordAreDistinct) {
  DocumentTable t(100);
  const Digest128 a{1, 2};
  EXPECT_TRUE(t.Insert(a, CopyFor(1)));
  EXPECT_FALSE(t.Insert(a, CopyFor(2)));
  ExpectSame(t.Find(a), CopyFor(1));
  EXPECT_EQ(t.Find({1, 3}), nullptr);
  EXPECT_EQ(t.Find({2, 2}), nullptr);
  // SimHash keys: low word 0, including the hash 0 itself.
  // Replace re-points a present key only.
  EXPECT_TRUE(t.Replace(a, CopyFor(5)));
  ExpectSame(t.Find(a), CopyFor(5));
  EXPECT_FALSE(t.Replace({5, 5}, CopyFor(6)));
  EXPECT_EQ(t.Find({5, 5}), nullptr);
  EXPECT_TRUE(t.Insert({0, 0}, CopyFor(3)));
  EXPECT_TRUE(t.Insert({7, 0}, CopyFor(4)));
  ExpectSame(t.Find({0, 0}), CopyFor(3));
  ExpectSame(t.Find({7, 0}), CopyFor(4));
}

TEST(DocumentTable, RefusesBeyondMaxEntriesAndEmptyCopies) {
  DocumentTable t(3);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(t.Insert({i, i}, CopyFor(i)));
  EXPECT_FALSE(t.Insert({9, 9}, CopyFor(9)));
  EXPECT_EQ(t.Find({9, 9}), nullptr);
  EXPECT_EQ(t.size(), 3u);
  DocumentTable u(10);
  EXPECT_FALSE(u.Insert({1, 1}, DocumentCopy{}));  // length 0
  EXPECT_EQ(u.Find({1, 1}), nullptr);
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
