// SimHash and the near-duplicate index. See dedupe.h for the contract.
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "dedupe/bloom_internal.h"
#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

bool IsWordByte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') || c >= 0x80;
}

unsigned char Lower(unsigned char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c;
}

uint64_t RoundUpPow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

uint64_t SimHash(std::string_view text, int shingle_words) {
  const size_t w = static_cast<size_t>(std::clamp(shingle_words, 1, 16));
  // The words, normalized and joined by single spaces, so that a shingle is
  // one contiguous range to hash whatever the separators were.
  std::string norm;
  norm.reserve(text.size());
  std::vector<size_t> starts;
  bool in_word = false;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (!IsWordByte(c)) {
      in_word = false;
      continue;
    }
    if (!in_word) {
      if (!norm.empty()) norm.push_back(' ');
      starts.push_back(norm.size());
      in_word = true;
    }
    norm.push_back(static_cast<char>(Lower(c)));
  }
  if (starts.empty()) return 0;

  // Branch-free so that the compiler vectorizes the 64 votes.
  int32_t votes[64] = {};
  auto add = [&votes](const char* p, size_t n) {
    const uint64_t h = XXH3_64bits(p, n);
    for (int i = 0; i < 64; ++i) {
      votes[i] += static_cast<int32_t>((h >> i) & 1) * 2 - 1;
    }
  };
  const size_t n = starts.size();
  if (n <= w) {
    add(norm.data(), norm.size());
  } else {
    for (size_t i = 0; i + w <= n; ++i) {
      const size_t end = i + w < n ? starts[i + w] - 1 : norm.size();
      add(norm.data() + starts[i], end - starts[i]);
    }
  }
  uint64_t out = 0;
  for (int i = 0; i < 64; ++i) {
    if (votes[i] > 0) out |= uint64_t{1} << i;
  }
  return out;
}

int HammingDistance(uint64_t a, uint64_t b) { return std::popcount(a ^ b); }

NearDupIndex::NearDupIndex(const Options& options) {
  max_distance_ = std::clamp(options.near_dup_max_distance, 0, 3);
  const size_t capacity =
      std::clamp<size_t>(options.near_dup_max_entries, 1, size_t{1} << 28);
  hashes_.assign(capacity, 0);
  // About 8 hashes per bucket at capacity: one or two cache lines.
  const uint64_t buckets = RoundUpPow2(std::max<size_t>(1, capacity / 8));
  bucket_mask_ = buckets - 1;
  const int blocks = max_distance_ + 1;
  int shift = 0;
  for (int b = 0; b < blocks; ++b) {
    // Widths differ by at most one bit: 64, 32+32, 22+21+21, 16 x 4.
    const int width = 64 / blocks + (b < 64 % blocks ? 1 : 0);
    Table t;
    t.shift = shift;
    t.mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    t.buckets.resize(buckets);
    tables_.push_back(std::move(t));
    shift += width;
  }
}

std::vector<uint64_t>& NearDupIndex::BucketOf(Table& t, uint64_t simhash) {
  return t.buckets[internal::Mix((simhash >> t.shift) & t.mask) & bucket_mask_];
}

const std::vector<uint64_t>& NearDupIndex::BucketOf(const Table& t,
                                                    uint64_t simhash) const {
  return t.buckets[internal::Mix((simhash >> t.shift) & t.mask) & bucket_mask_];
}

std::optional<uint64_t> NearDupIndex::FindNear(uint64_t simhash) const {
  // A bucket also holds other blocks that hash alike; the distance test
  // covers them (a far hash fails it whatever its block).
  for (const Table& t : tables_) {
    for (uint64_t h : BucketOf(t, simhash)) {
      if (HammingDistance(h, simhash) <= max_distance_) return h;
    }
  }
  return std::nullopt;
}

void NearDupIndex::Insert(uint64_t simhash) {
  if (size_ == hashes_.size()) {
    // Equal values are interchangeable, so removing any one copy of the
    // oldest is exact.
    const uint64_t old = hashes_[next_slot_];
    for (Table& t : tables_) {
      std::vector<uint64_t>& bucket = BucketOf(t, old);
      for (uint64_t& h : bucket) {
        if (h == old) {
          h = bucket.back();
          bucket.pop_back();
          break;
        }
      }
    }
  } else {
    ++size_;
  }
  hashes_[next_slot_] = simhash;
  for (Table& t : tables_) BucketOf(t, simhash).push_back(simhash);
  next_slot_ = next_slot_ + 1 == hashes_.size() ? 0 : next_slot_ + 1;
}

}  // namespace crawld::dedupe
