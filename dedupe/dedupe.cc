#include "dedupe/dedupe.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

namespace crawld::dedupe {
namespace {

// MurmurHash3's 64-bit finalizer: a bijection with full avalanche, so even
// sequential fingerprints (tests, synthetic seeds) spread over the table.
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Different seeds give the Bloom filter and the exact set unrelated hashes.
constexpr uint64_t kBloomSeed1 = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kBloomSeed2 = 0xc2b2ae3d27d4eb4fULL;
constexpr uint64_t kSlotSeed = 0x165667b19e3779f9ULL;

constexpr size_t kInitialSlots = 1024;

Options Sanitize(Options o) {
  o.expected_urls = std::clamp<uint64_t>(o.expected_urls, 1, uint64_t{1} << 36);
  if (!(o.bloom_fp_rate >= 1e-9)) o.bloom_fp_rate = 1e-9;  // also NaN
  o.bloom_fp_rate = std::min(o.bloom_fp_rate, 0.5);
  return o;
}

// Kirsch-Mitzenmacher double hashing in exact mod-m arithmetic: index_i =
// (a + i*b) mod m, with b in [1, m) so the walk never stands still.
template <typename Fn>
bool ForEachBloomBit(uint64_t fingerprint, uint64_t m, int k, Fn&& fn) {
  uint64_t a = Mix(fingerprint ^ kBloomSeed1) % m;
  uint64_t b = Mix(fingerprint ^ kBloomSeed2) % (m - 1) + 1;
  for (int i = 0; i < k; ++i) {
    if (!fn(a)) return false;
    a += b;
    if (a >= m) a -= m;
  }
  return true;
}

}  // namespace

SeenSet::SeenSet(const Options& options) {
  const Options o = Sanitize(options);
  const double n = static_cast<double>(o.expected_urls);
  const double ln2 = std::log(2.0);
  // Optimal size and hash count for n items at rate p:
  // m = -n ln p / (ln 2)^2, k = (m / n) ln 2.
  const double m = std::ceil(-n * std::log(o.bloom_fp_rate) / (ln2 * ln2));
  bloom_bits_ = std::max<uint64_t>(64, static_cast<uint64_t>(m));
  bloom_hashes_ = static_cast<int>(std::clamp(
      std::lround(static_cast<double>(bloom_bits_) / n * ln2), 1L, 30L));
  bloom_words_.assign((bloom_bits_ + 63) / 64, 0);

  slots_.assign(kInitialSlots, 0);
  mask_ = kInitialSlots - 1;
}

bool SeenSet::BloomMayContain(uint64_t fingerprint) const {
  return ForEachBloomBit(fingerprint, bloom_bits_, bloom_hashes_,
                         [this](uint64_t bit) {
                           return (bloom_words_[bit >> 6] >> (bit & 63)) & 1;
                         });
}

void SeenSet::BloomAdd(uint64_t fingerprint) {
  ForEachBloomBit(fingerprint, bloom_bits_, bloom_hashes_,
                  [this](uint64_t bit) {
                    uint64_t& word = bloom_words_[bit >> 6];
                    const uint64_t mask = uint64_t{1} << (bit & 63);
                    bloom_set_bits_ += (word & mask) == 0;
                    word |= mask;
                    return true;
                  });
}

bool SeenSet::ExactContains(uint64_t fingerprint) const {
  if (fingerprint == 0) return has_zero_;
  for (uint64_t i = Mix(fingerprint ^ kSlotSeed) & mask_;;
       i = (i + 1) & mask_) {
    const uint64_t v = slots_[i];
    if (v == fingerprint) return true;
    if (v == 0) return false;  // the load cap guarantees an empty slot
  }
}

void SeenSet::ExactInsert(uint64_t fingerprint) {
  ++size_;
  if (fingerprint == 0) {
    has_zero_ = true;
    return;
  }
  // Keep the load at most 3/4: linear probing degrades fast above that.
  if ((used_slots_ + 1) * 4 > slots_.size() * 3) ExactGrow();
  uint64_t i = Mix(fingerprint ^ kSlotSeed) & mask_;
  while (slots_[i] != 0) i = (i + 1) & mask_;
  slots_[i] = fingerprint;
  ++used_slots_;
}

void SeenSet::ExactGrow() {
  std::vector<uint64_t> old(slots_.size() * 2, 0);
  old.swap(slots_);
  mask_ = slots_.size() - 1;
  for (uint64_t v : old) {
    if (v == 0) continue;
    uint64_t i = Mix(v ^ kSlotSeed) & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = v;
  }
}

bool SeenSet::InsertIfNew(uint64_t fingerprint) {
  if (BloomMayContain(fingerprint)) {
    if (ExactContains(fingerprint)) return false;
    ++bloom_false_positives_;
  } else {
    BloomAdd(fingerprint);
  }
  // A false positive already has all its bits set; adding them again would
  // change nothing.
  ExactInsert(fingerprint);
  return true;
}

bool SeenSet::Contains(uint64_t fingerprint) const {
  if (!BloomMayContain(fingerprint)) return false;
  if (ExactContains(fingerprint)) return true;
  ++bloom_false_positives_;
  return false;
}

double SeenSet::bloom_fill() const {
  return static_cast<double>(bloom_set_bits_) /
         static_cast<double>(bloom_bits_);
}

std::string DocumentDigest(std::string_view body) {
  const XXH128_hash_t h = XXH3_128bits(body.data(), body.size());
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = kHex[canon.digest[i] >> 4];
    out[2 * i + 1] = kHex[canon.digest[i] & 15];
  }
  return out;
}

}  // namespace crawld::dedupe
