// Tests of SimHash, HammingDistance and NearDupIndex (dedupe/dedupe.h).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

// Synthetic prose: words drawn from a fixed random vocabulary, so texts are
// deterministic and share words the way pages of one language do.
class TextMaker {
 public:
  explicit TextMaker(uint64_t seed) : rng_(seed) {
    for (int i = 0; i < 5'000; ++i) {
      std::string w;
      const int len = 3 + static_cast<int>(rng_() % 7);
      for (int j = 0; j < len; ++j)
        w.push_back(static_cast<char>('a' + rng_() % 26));
      vocab_.push_back(std::move(w));
    }
  }
  std::vector<int> Words(size_t n) {
    std::vector<int> ids(n);
    for (int& id : ids) id = static_cast<int>(rng_() % vocab_.size());
    return ids;
  }
  std::string Text(const std::vector<int>& ids) const {
    std::string s;
    for (int id : ids) {
      s += vocab_[static_cast<size_t>(id)];
      s += ' ';
    }
    return s;
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> vocab_;
};

TEST(HammingDistance, CountsDifferingBits) {
  EXPECT_EQ(HammingDistance(0, 0), 0);
  EXPECT_EQ(HammingDistance(0, ~uint64_t{0}), 64);
  EXPECT_EQ(HammingDistance(0b1011, 0b0110), 3);
}

TEST(SimHash, IdenticalTextsDistanceZero) {
  TextMaker m(1);
  const std::string t = m.Text(m.Words(500));
  EXPECT_EQ(HammingDistance(SimHash(t), SimHash(std::string(t))), 0);
  EXPECT_NE(SimHash(t), 0u);
}

TEST(SimHash, CaseAndSeparatorsDoNotMatter) {
  EXPECT_EQ(SimHash("Hello, World! The quick brown fox."),
            SimHash("hello world   the QUICK brown\nfox"));
  EXPECT_NE(SimHash("hello world the quick brown fox"),
            SimHash("hello world the quick brown dog"));
}

TEST(SimHash, EmptyAndShortTexts) {
  EXPECT_EQ(SimHash(""), 0u);
  EXPECT_EQ(SimHash(" ,.;!? \n\t"), 0u);
  EXPECT_NE(SimHash("word"), 0u);  // fewer words than a shingle: one feature
  EXPECT_EQ(SimHash("word", 1), SimHash("WORD", 16));
  // Out-of-range shingle sizes are clamped, not trusted.
  EXPECT_EQ(SimHash("a b c d", -5), SimHash("a b c d", 1));
  EXPECT_EQ(SimHash("a b c d e", 1000), SimHash("a b c d e", 16));
}

// Statistics over 40 texts, not one lucky pair: a one-word change in 500
// words moves the hash by a few bits, and most stay within k = 3.
TEST(SimHash, OneWordChangeIsSmallDistance) {
  TextMaker m(2);
  int total = 0;
  int within3 = 0;
  int worst = 0;
  constexpr int kTexts = 40;
  for (int i = 0; i < kTexts; ++i) {
    std::vector<int> a = m.Words(500);
    std::vector<int> b = a;
    const size_t at = m.rng()() % b.size();
    b[at] = (b[at] + 1 + static_cast<int>(m.rng()() % 4'000)) % 5'000;
    const int d = HammingDistance(SimHash(m.Text(a)), SimHash(m.Text(b)));
    total += d;
    within3 += d <= 3;
    worst = std::max(worst, d);
  }
  EXPECT_LE(static_cast<double>(total) / kTexts, 3.0);
  EXPECT_GE(within3, kTexts * 3 / 4);
  EXPECT_LE(worst, 12);
}

// Charikar's definition, spelled out: each 2-word shingle votes +1 or -1
// on every bit of its hash; a bit is set when the vote is positive.
uint64_t PlainSimHash(const std::vector<std::string>& words) {
  std::vector<std::string> shingles;
  if (words.size() <= 2) {
    std::string all;
    for (const std::string& w : words) all += (all.empty() ? "" : " ") + w;
    shingles.push_back(all);
  } else {
    for (size_t i = 0; i + 2 <= words.size(); ++i) {
      shingles.push_back(words[i] + " " + words[i + 1]);
    }
  }
  int votes[64] = {};
  for (const std::string& sh : shingles) {
    const uint64_t h = XXH3_64bits(sh.data(), sh.size());
    for (int i = 0; i < 64; ++i) votes[i] += ((h >> i) & 1) ? 1 : -1;
  }
  uint64_t out = 0;
  for (int i = 0; i < 64; ++i) {
    if (votes[i] > 0) out |= uint64_t{1} << i;
  }
  return out;
}

// The counting is done in byte-wide lanes flushed every 255 shingles:
// sizes around those boundaries must give exactly the plain votes.
TEST(SimHash, EqualsPlainVoting) {
  TextMaker m(11);
  for (size_t n : {1, 2, 3, 255, 256, 257, 511, 600, 5000}) {
    const std::vector<int> ids = m.Words(n);
    const std::string text = m.Text(ids);
    std::vector<std::string> words;
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      if (i == text.size() || text[i] == ' ') {
        if (i > start) words.push_back(text.substr(start, i - start));
        start = i + 1;
      }
    }
    EXPECT_EQ(SimHash(text), PlainSimHash(words)) << n << " words";
  }
}

// Separators around and between words (leading ones too) are one space in
// the shingles, on both paths: fewer words than a shingle (the whole text
// is one feature) and more.
TEST(SimHash, SeparatorsAreOneSpaceInTheShingles) {
  EXPECT_EQ(SimHash(" \t,word"), PlainSimHash({"word"}));
  EXPECT_EQ(SimHash("..Word,\n\nNext!  "), PlainSimHash({"word", "next"}));
  EXPECT_EQ(SimHash("\n  one, TWO;three\tfour. "),
            PlainSimHash({"one", "two", "three", "four"}));
}

TEST(SimHash, UnrelatedTextsAreFarApart) {
  TextMaker m(3);
  int total = 0;
  int nearest = 64;
  constexpr int kPairs = 40;
  for (int i = 0; i < kPairs; ++i) {
    const int d = HammingDistance(SimHash(m.Text(m.Words(500))),
                                  SimHash(m.Text(m.Words(500))));
    total += d;
    nearest = std::min(nearest, d);
  }
  // Independent hashes differ in 32 bits on average.
  EXPECT_GE(static_cast<double>(total) / kPairs, 26.0);
  EXPECT_GE(nearest, 12);
}

uint64_t FlipBits(uint64_t h, int n, std::mt19937_64& rng) {
  uint64_t mask = 0;
  while (std::popcount(mask) < n) mask |= uint64_t{1} << (rng() % 64);
  return h ^ mask;
}

// The index must answer exactly as a linear scan does, for every k.
TEST(NearDupIndex, AgreesWithLinearScan) {
  for (int k = 0; k <= 3; ++k) {
    Options o;
    o.near_dup_max_distance = k;
    o.near_dup_max_entries = 4'096;
    NearDupIndex index(o);
    ASSERT_EQ(index.max_distance(), k);
    std::mt19937_64 rng(100 + static_cast<uint64_t>(k));
    std::vector<uint64_t> stored;
    for (int i = 0; i < 2'000; ++i) {
      stored.push_back(rng());
      const NearDupIndex::Inserted in = index.Insert(stored.back());
      EXPECT_EQ(in.slot, static_cast<uint32_t>(i));  // the ring's order
      EXPECT_FALSE(in.evicted.has_value());
    }
    int found = 0;
    for (int q = 0; q < 4'000; ++q) {
      const uint64_t base = stored[rng() % stored.size()];
      const uint64_t query = FlipBits(base, static_cast<int>(rng() % 6), rng);
      bool expect = false;
      for (uint64_t h : stored) expect |= HammingDistance(h, query) <= k;
      const std::optional<NearDupIndex::Match> got = index.FindNear(query);
      ASSERT_EQ(got.has_value(), expect) << "k=" << k << " q=" << q;
      if (got) {
        ++found;
        EXPECT_LE(HammingDistance(got->simhash, query), k);
        // The slot is where that simhash went in.
        ASSERT_LT(got->slot, stored.size());
        EXPECT_EQ(stored[got->slot], got->simhash);
      }
    }
    EXPECT_GT(found, 0);
  }
}

// The bucket arrays start small and double as the index fills (1,024
// buckets, then up to capacity / 8): answers stay exact across each
// doubling, and after wrapping around at capacity.
TEST(NearDupIndex, AgreesWithLinearScanAcrossBucketGrowth) {
  Options o;
  o.near_dup_max_entries = 20'000;  // 1,024 -> 2,048 buckets at 8,193
  NearDupIndex index(o);
  std::mt19937_64 rng(21);
  std::vector<uint64_t> stored;
  auto check = [&](int queries) {
    for (int q = 0; q < queries; ++q) {
      const uint64_t base = stored[rng() % stored.size()];
      const uint64_t query = FlipBits(base, static_cast<int>(rng() % 6), rng);
      bool expect = false;
      for (uint64_t h : stored) expect |= HammingDistance(h, query) <= 3;
      const auto got = index.FindNear(query);
      ASSERT_EQ(got.has_value(), expect) << stored.size() << " q=" << q;
      if (got) {
        EXPECT_EQ(stored[got->slot], got->simhash);
      }
    }
  };
  for (int i = 0; i < 20'000; ++i) {
    stored.push_back(rng());
    index.Insert(stored.back());
    if (i == 8'191 || i == 8'192 || i == 8'193) check(200);
  }
  check(1'000);
  // Wrapped: slot i now holds the (20,000 + i)-th insert.
  for (int i = 0; i < 5'000; ++i) {
    const uint64_t h = rng();
    EXPECT_EQ(index.Insert(h).evicted, stored[i]);
    stored[i] = h;
  }
  check(1'000);
}

TEST(NearDupIndex, ForgetsTheOldestWhenFull) {
  Options o;
  o.near_dup_max_entries = 4;
  NearDupIndex index(o);
  std::mt19937_64 rng(5);
  std::vector<uint64_t> h;
  for (int i = 0; i < 6; ++i) h.push_back(rng());
  std::vector<NearDupIndex::Inserted> in;
  for (uint64_t x : h) in.push_back(index.Insert(x));
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.capacity(), 4u);
  // The fifth and sixth reuse the oldest slots and say whom they forgot.
  EXPECT_EQ(in[4].slot, 0u);
  EXPECT_EQ(in[4].evicted, h[0]);
  EXPECT_EQ(in[5].slot, 1u);
  EXPECT_EQ(in[5].evicted, h[1]);
  EXPECT_FALSE(index.FindNear(h[0]).has_value());
  EXPECT_FALSE(index.FindNear(h[1]).has_value());
  for (size_t i = 2; i < 6; ++i) {
    const auto got = index.FindNear(h[i]);
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_EQ(got->simhash, h[i]);
    EXPECT_EQ(got->slot, i % 4);
  }
  // Wrapping around many times keeps the buckets consistent: each
  // simhash is found under the slot it was given, and only while stored.
  std::vector<uint64_t> in_slot(4);
  for (int i = 0; i < 1'000; ++i) {
    const uint64_t x = rng();
    const NearDupIndex::Inserted r = index.Insert(x);
    ASSERT_TRUE(r.evicted.has_value());
    if (i >= 4) {
      EXPECT_EQ(*r.evicted, in_slot[r.slot]);
    }
    in_slot[r.slot] = x;
  }
  for (uint32_t s = 0; s < 4; ++s) {
    const auto got = index.FindNear(in_slot[s]);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->slot, s);
  }
  const uint64_t last = rng();
  index.Insert(last);
  EXPECT_EQ(index.FindNear(FlipBits(last, 3, rng))->simhash, last);
  EXPECT_EQ(index.size(), 4u);
}

TEST(NearDupIndex, DuplicatesAndClampedOptions) {
  Options o;
  o.near_dup_max_distance = 9;  // beyond what the block split supports
  o.near_dup_max_entries = 0;
  NearDupIndex index(o);
  EXPECT_EQ(index.max_distance(), 3);
  EXPECT_EQ(index.capacity(), 1u);
  index.Insert(42);
  EXPECT_EQ(index.Insert(42).evicted, 42u);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.FindNear(42 ^ 0b111)->simhash, 42u);
  EXPECT_FALSE(index.FindNear(42 ^ 0b1111).has_value());
}

// End to end: a page and its one-word edit are near-duplicates; another
// page is not.
TEST(NearDupIndex, FindsEditedPage) {
  TextMaker m(4);
  std::vector<int> page = m.Words(500);
  NearDupIndex index(Options{});
  const uint64_t original = SimHash(m.Text(page));
  index.Insert(original);
  int hits = 0;
  for (int i = 0; i < 20; ++i) {
    std::vector<int> edit = page;
    edit[m.rng()() % edit.size()] = static_cast<int>(m.rng()() % 5'000);
    hits += index.FindNear(SimHash(m.Text(edit))).has_value();
    EXPECT_FALSE(index.FindNear(SimHash(m.Text(m.Words(500)))).has_value());
  }
  EXPECT_GE(hits, 15);
}

}  // namespace
}  // namespace crawld::dedupe
