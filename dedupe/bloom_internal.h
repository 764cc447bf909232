// dedupe/bloom_internal.h: Bloom filter arithmetic shared by SeenSet and
// UrlSeenStore. Private to dedupe/.
#ifndef CRAWLD_DEDUPE_BLOOM_INTERNAL_H_
#define CRAWLD_DEDUPE_BLOOM_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dedupe/dedupe.h"

namespace crawld::dedupe::internal {

// MurmurHash3's 64-bit finalizer: a bijection with full avalanche, so even
// sequential fingerprints (tests, synthetic seeds) spread over the table.
inline uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Different seeds give the Bloom filter and the exact set unrelated hashes.
inline constexpr uint64_t kBloomSeed1 = 0x9e3779b97f4a7c15ULL;
inline constexpr uint64_t kBloomSeed2 = 0xc2b2ae3d27d4eb4fULL;
inline constexpr uint64_t kSlotSeed = 0x165667b19e3779f9ULL;

inline Options Sanitize(Options o) {
  o.expected_urls = std::clamp<uint64_t>(o.expected_urls, 1, uint64_t{1} << 36);
  if (!(o.bloom_fp_rate >= 1e-9)) o.bloom_fp_rate = 1e-9;  // also NaN
  o.bloom_fp_rate = std::min(o.bloom_fp_rate, 0.5);
  return o;
}

struct BloomGeometry {
  uint64_t bits = 0;
  int hashes = 0;
};

// Optimal size and hash count for n items at rate p:
// m = -n ln p / (ln 2)^2, k = (m / n) ln 2.
inline BloomGeometry ChooseGeometry(const Options& sanitized) {
  const double n = static_cast<double>(sanitized.expected_urls);
  const double ln2 = std::log(2.0);
  const double m =
      std::ceil(-n * std::log(sanitized.bloom_fp_rate) / (ln2 * ln2));
  BloomGeometry g;
  g.bits = std::max<uint64_t>(64, static_cast<uint64_t>(m));
  g.hashes = static_cast<int>(
      std::clamp(std::lround(static_cast<double>(g.bits) / n * ln2), 1L, 30L));
  return g;
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

}  // namespace crawld::dedupe::internal

#endif  // CRAWLD_DEDUPE_BLOOM_INTERNAL_H_
