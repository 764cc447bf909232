#include "dedupe/dedupe.h"

#include <xxhash.h>

#include "dedupe/bloom_internal.h"

namespace crawld::dedupe {
namespace {

using internal::ForEachBloomBit;
using internal::kSlotSeed;
using internal::Mix;

constexpr size_t kInitialSlots = 1024;

}  // namespace

SeenSet::SeenSet(const Options& options) {
  const internal::BloomGeometry g =
      internal::ChooseGeometry(internal::Sanitize(options));
  bloom_bits_ = g.bits;
  bloom_hashes_ = g.hashes;
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

Digest128 DocumentDigest128(std::string_view body) {
  const XXH128_hash_t h = XXH3_128bits(body.data(), body.size());
  return {h.high64, h.low64};
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
