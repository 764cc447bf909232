// dedupe/dedupe.h: the URL-seen set and document checksums of one worker.
//
// SeenSet answers "was this URL fingerprint ever queued here?" A Bloom
// filter (B. H. Bloom, "Space/time trade-offs in hash coding with allowable
// errors", CACM 13(7), 1970) answers the common case, a never-seen URL, from
// memory without touching the exact set; every "maybe" is confirmed against an
// exact set of 64-bit fingerprints, so a Bloom false positive costs a lookup
// but never drops a new URL. Bloom indexes come from one 64-bit fingerprint by
// double hashing (Kirsch and Mitzenmacher, "Less Hashing, Same Performance",
// https://www.eecs.harvard.edu/~michaelm/postscripts/rsa2008.pdf).
//
// This first version keeps the exact set in memory (an open-addressing hash
// set of uint64, 11 to 22 bytes per URL with its load kept in (3/8, 3/4]);
// the next version moves it to the worker's LevelDB and keeps only the Bloom
// filter resident.
//
// DocumentDigest is the exact-duplicate body checksum: XXH3-128
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md) in the
// canonical big-endian byte order that xxh128sum prints.
#ifndef CRAWLD_DEDUPE_DEDUPE_H_
#define CRAWLD_DEDUPE_DEDUPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crawld::dedupe {

struct Options {
  // --- Performance ---

  // URLs the worker expects to see (count); sizes the Bloom filter. Going
  // past it keeps answers exact but raises the Bloom false-positive rate
  // (more exact-set lookups). Clamped to [1, 2^36].
  uint64_t expected_urls = 10'000'000;
  // Target Bloom false-positive rate at expected_urls (probability).
  // Clamped to [1e-9, 0.5].
  double bloom_fp_rate = 0.01;
};

// URL-seen set: Bloom filter in front of an exact set of 64-bit fingerprints,
// so a Bloom false positive never drops a new URL.
// Owned by one worker loop; not thread-safe. Not copyable; movable.
class SeenSet {
 public:
  // Allocates the Bloom filter (about expected_urls x 9.6 bits at 1%); the
  // exact set starts small and grows.
  explicit SeenSet(const Options& options);
  SeenSet(SeenSet&&) noexcept = default;
  SeenSet& operator=(SeenSet&&) noexcept = default;
  SeenSet(const SeenSet&) = delete;
  SeenSet& operator=(const SeenSet&) = delete;

  // Returns true if `fingerprint` was not in the set (and adds it), false if
  // it was. Every 64-bit value, 0 included, is a valid fingerprint.
  bool InsertIfNew(uint64_t fingerprint);

  // True if `fingerprint` was inserted before. Exact: no false positives.
  bool Contains(uint64_t fingerprint) const;

  // Fingerprints in the set (count).
  size_t size() const { return size_; }
  // Fraction of Bloom bits set, in [0, 1]; about 0.5 at expected_urls with
  // the optimal number of hashes.
  double bloom_fill() const;
  // Lookups (by InsertIfNew or Contains) where the Bloom filter said "maybe"
  // and the exact set said no (count).
  uint64_t bloom_false_positives() const { return bloom_false_positives_; }
  // Bloom filter geometry, chosen from Options: bits (m) and hashes (k).
  uint64_t bloom_bits() const { return bloom_bits_; }
  int bloom_hashes() const { return bloom_hashes_; }

 private:
  bool BloomMayContain(uint64_t fingerprint) const;
  void BloomAdd(uint64_t fingerprint);
  bool ExactContains(uint64_t fingerprint) const;
  void ExactInsert(uint64_t fingerprint);  // REQUIRES: not present
  void ExactGrow();

  // Bloom filter.
  std::vector<uint64_t> bloom_words_;
  uint64_t bloom_bits_ = 0;
  int bloom_hashes_ = 0;
  uint64_t bloom_set_bits_ = 0;
  mutable uint64_t bloom_false_positives_ = 0;  // a statistic, not state

  // Exact set: linear probing over a power-of-two table; slot value 0 means
  // empty, so fingerprint 0 is kept in a flag of its own.
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
  size_t used_slots_ = 0;
  bool has_zero_ = false;
  size_t size_ = 0;
};

// The body checksum for exact-duplicate detection: XXH3-128 of `body` as 32
// lower-case hex characters (canonical big-endian order, as xxh128sum prints).
// Stable across runs, machines and versions of this program.
std::string DocumentDigest(std::string_view body);

}  // namespace crawld::dedupe

#endif  // CRAWLD_DEDUPE_DEDUPE_H_
