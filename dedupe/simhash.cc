// SimHash and the near-duplicate index. See dedupe.h for the contract.
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dedupe/bloom_internal.h"
#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

// kWordFold[c] is the byte c stands for in a word (ASCII letters lowered,
// digits and non-ASCII bytes as they are), or 0 for a separator.
constexpr std::array<unsigned char, 256> MakeWordFold() {
  std::array<unsigned char, 256> t{};
  for (unsigned c = 0; c < 256; ++c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c >= 0x80) {
      t[c] = static_cast<unsigned char>(c);
    } else if (c >= 'A' && c <= 'Z') {
      t[c] = static_cast<unsigned char>(c + 32);
    }
  }
  return t;
}
constexpr std::array<unsigned char, 256> kWordFold = MakeWordFold();

// kSpread[b] has byte j equal to bit j of b.
constexpr std::array<uint64_t, 256> MakeSpread() {
  std::array<uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned j = 0; j < 8; ++j) {
      t[b] |= uint64_t{(b >> j) & 1} << (8 * j);
    }
  }
  return t;
}
constexpr std::array<uint64_t, 256> kSpread = MakeSpread();

uint64_t RoundUpPow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

uint64_t SimHash(std::string_view text, int shingle_words) {
  const size_t w = static_cast<size_t>(std::clamp(shingle_words, 1, 16));
  // The words, normalized, each after one space, so that a shingle is one
  // contiguous range to hash whatever the separators were: " w1 w2 w3".
  // The loop has no branch on the text (each byte is written, then kept or
  // overwritten by moving `put` or not): with words of a few letters, the
  // branches were mispredicted often, and it runs 1.3-1.5x faster so.
  const size_t size = text.size();
  // At most one byte more than the text: a space is written only before a
  // word, and only the first word's is not paid for by a dropped separator.
  const auto norm = std::make_unique_for_overwrite<char[]>(size + 1);
  // Where each word starts in `norm`; a word but the last takes at least
  // two bytes of the text (a letter and a separator).
  const auto starts = std::make_unique_for_overwrite<size_t[]>(size / 2 + 2);
  char* const begin = norm.get();
  char* put = begin;
  size_t n = 0;  // words
  bool in_word = false;
  for (char ch : text) {
    const unsigned char f = kWordFold[static_cast<unsigned char>(ch)];
    const bool letter = f != 0;
    const bool first = letter && !in_word;
    *put = ' ';
    put += first;
    starts[n] = static_cast<size_t>(put - begin);
    n += first;
    *put = static_cast<char>(f);
    put += letter;
    in_word = letter;
  }
  if (n == 0) return 0;
  const size_t length = static_cast<size_t>(put - begin);

  // Bit i of the result is set when more than half of the shingle hashes
  // have bit i set. Counting 64 bits one by one per shingle cost more than
  // hashing it; instead each hash byte is spread into eight one-byte
  // counters by a table and added to a lane word, and the lanes are
  // flushed into wide counts before a byte can overflow.
  uint32_t counts[64] = {};
  uint64_t lanes[8] = {};
  unsigned pending = 0;
  auto flush = [&] {
    for (int k = 0; k < 8; ++k) {
      for (int j = 0; j < 8; ++j) {
        counts[k * 8 + j] +=
            static_cast<uint32_t>((lanes[k] >> (8 * j)) & 0xff);
      }
      lanes[k] = 0;
    }
    pending = 0;
  };
  size_t total = 0;
  auto add = [&](const char* p, size_t n) {
    const uint64_t h = XXH3_64bits(p, n);
    for (int k = 0; k < 8; ++k) lanes[k] += kSpread[(h >> (8 * k)) & 0xff];
    ++total;
    if (++pending == 255) flush();
  };
  if (n <= w) {
    add(begin + 1, length - 1);  // the whole text, without the first space
  } else {
    for (size_t i = 0; i + w <= n; ++i) {
      const size_t end = i + w < n ? starts[i + w] - 1 : length;
      add(begin + starts[i], end - starts[i]);
    }
  }
  flush();
  uint64_t out = 0;
  for (int i = 0; i < 64; ++i) {
    if (uint64_t{counts[i]} * 2 > total) out |= uint64_t{1} << i;
  }
  return out;
}

int HammingDistance(uint64_t a, uint64_t b) { return std::popcount(a ^ b); }

NearDupIndex::NearDupIndex(const Options& options) {
  max_distance_ = std::clamp(options.near_dup_max_distance, 0, 3);
  const size_t capacity =
      std::clamp<size_t>(options.near_dup_max_entries, 1, size_t{1} << 28);
  capacity_ = capacity;
  // Filled in insertion order: reserved (address space), touched as it
  // fills, so a small crawl does not pay for the whole ring.
  hashes_.reserve(capacity);
  // About 8 hashes per bucket, one or two cache lines: the bucket arrays
  // double with the contents up to capacity / 8 buckets, so that an index
  // holding little costs little (24 bytes a bucket per block: 12 MB for
  // 1 M entries and 4 blocks, in each worker, were paid at start before).
  max_buckets_ = RoundUpPow2(std::max<size_t>(1, capacity / 8));
  const uint64_t buckets = std::min<uint64_t>(max_buckets_, kFirstBuckets);
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

size_t NearDupIndex::BucketIndex(const Table& t, uint64_t simhash) const {
  return internal::Mix((simhash >> t.shift) & t.mask) & bucket_mask_;
}

void NearDupIndex::GrowBuckets() {
  // Doubling adds one bit to the mask: bucket i splits into i and i + n,
  // in place, so the entries are never held twice.
  const size_t n = bucket_mask_ + 1;
  bucket_mask_ = 2 * n - 1;
  for (Table& t : tables_) {
    t.buckets.resize(2 * n);
    for (size_t i = 0; i < n; ++i) {
      std::vector<Entry>& stay = t.buckets[i];
      std::vector<Entry>& move = t.buckets[i + n];
      size_t kept = 0;
      for (const Entry& e : stay) {
        if (BucketIndex(t, e.simhash) == i) {
          stay[kept++] = e;
        } else {
          move.push_back(e);
        }
      }
      stay.resize(kept);
      stay.shrink_to_fit();
    }
  }
}

std::vector<NearDupIndex::Entry>& NearDupIndex::BucketOf(Table& t,
                                                         uint64_t simhash) {
  return t.buckets[BucketIndex(t, simhash)];
}

const std::vector<NearDupIndex::Entry>& NearDupIndex::BucketOf(
    const Table& t, uint64_t simhash) const {
  return t.buckets[BucketIndex(t, simhash)];
}

std::optional<NearDupIndex::Match> NearDupIndex::FindNear(
    uint64_t simhash) const {
  // A bucket also holds other blocks that hash alike; the distance test
  // covers them (a far hash fails it whatever its block).
  for (const Table& t : tables_) {
    for (const Entry& e : BucketOf(t, simhash)) {
      const uint64_t h = e.simhash;
      if (HammingDistance(h, simhash) <= max_distance_) {
        return Match{h, e.slot};
      }
    }
  }
  return std::nullopt;
}

NearDupIndex::Inserted NearDupIndex::Insert(uint64_t simhash) {
  Inserted out;
  out.slot = static_cast<uint32_t>(next_slot_);
  if (hashes_.size() < capacity_) {
    hashes_.push_back(simhash);
    if (hashes_.size() > 8 * (bucket_mask_ + 1) &&
        bucket_mask_ + 1 < max_buckets_) {
      GrowBuckets();
    }
  } else {
    // The oldest leaves every table: its entries are the ones with its
    // slot (equal simhashes may sit beside it under other slots).
    const uint64_t old = hashes_[next_slot_];
    out.evicted = old;
    for (Table& t : tables_) {
      std::vector<Entry>& bucket = BucketOf(t, old);
      for (Entry& e : bucket) {
        if (e.slot == out.slot) {
          e = bucket.back();
          bucket.pop_back();
          break;
        }
      }
    }
    hashes_[next_slot_] = simhash;
  }
  for (Table& t : tables_) BucketOf(t, simhash).push_back({simhash, out.slot});
  next_slot_ = next_slot_ + 1 == capacity_ ? 0 : next_slot_ + 1;
  return out;
}

}  // namespace crawld::dedupe
