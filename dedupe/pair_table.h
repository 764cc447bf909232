// dedupe/pair_table.h: the exact in-memory (host_hash, fingerprint) set
// that UrlSeenStore keeps in front of LevelDB. Private to dedupe/.
//
// Exactness is on the pair, in 12 bytes a slot instead of the pair's 16:
// host hashes are interned into dense 32-bit ids (a worker sees far fewer
// hosts than URLs), and each slot holds the id plus a 64-bit key that is a
// bijection of the fingerprint for a fixed host (PairKey). Two pairs are
// equal exactly when their ids and keys are: no hash is trusted to be
// unique, so a collision of keys between hosts never drops a new URL.
//
// The table is linear probing over a slot array of any size (home slot by
// Lemire's multiply-shift range reduction), with backward-shift deletion (no
// tombstones). Its memory is capped: an operation that would need more
// than max_bytes fails, and the caller drops the table (Release) and falls
// back to its Bloom filter and LevelDB.
#ifndef CRAWLD_DEDUPE_PAIR_TABLE_H_
#define CRAWLD_DEDUPE_PAIR_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "dedupe/bloom_internal.h"

namespace crawld::dedupe::internal {

inline constexpr uint64_t kHostSeed = 0x27d4eb2f165667c5ULL;

// The Bloom filter's 64-bit value of a pair (kept as it was so that saved
// Bloom files stay valid): for a fixed host a bijection of the fingerprint.
inline uint64_t BloomKey(uint64_t host_hash, uint64_t fingerprint) {
  return fingerprint ^ Mix(host_hash ^ kHostSeed);
}

// The table's key of a pair: Mix of the Bloom key, still a bijection of the
// fingerprint for a fixed host, and well spread even for sequential
// fingerprints (the home slot is taken from its high bits).
inline uint64_t PairKey(uint64_t host_hash, uint64_t fingerprint) {
  return Mix(BloomKey(host_hash, fingerprint));
}

class PairTable {
 public:
  // `landing_entries`: the expected size; growth lands on a capacity that
  // holds it at ~70% load instead of overshooting to the next doubling.
  PairTable(size_t max_bytes, uint64_t landing_entries)
      : max_bytes_(max_bytes),
        landing_slots_(landing_entries + landing_entries * 3 / 7 + 1) {}

  // Sizes the table for `entries` without further growth. False (and
  // nothing allocated beyond the current table) if over the budget.
  bool Reserve(uint64_t entries) {
    return entries <= MaxEntries(slots_) || Grow(entries);
  }

  // True if (host_hash, key) is in the table. key = PairKey(host_hash, fp).
  bool Contains(uint64_t host_hash, uint64_t key) const {
    const uint32_t id = FindHost(host_hash);
    if (id == 0) return false;
    return FindSlot(id, key) != kNone;
  }

  // Adds a pair that is not in the table. False if that needs more memory
  // than the budget: the table is then unchanged, and the caller is
  // expected to Release() it.
  bool Add(uint64_t host_hash, uint64_t key) {
    if (size_ + 1 > MaxEntries(slots_) && !Grow(size_ + 1)) return false;
    uint32_t id = FindHost(host_hash);
    if (id == 0) {
      if (!AddHost(host_hash, &id)) return false;
    }
    Place(id, key);
    ++size_;
    return true;
  }

  // Removes the pair if present; true if it was.
  bool Erase(uint64_t host_hash, uint64_t key) {
    const uint32_t id = FindHost(host_hash);
    if (id == 0) return false;
    size_t i = FindSlot(id, key);
    if (i == kNone) return false;
    // Backward shift: pull each later entry of the run into the hole
    // unless its home lies cyclically in (hole, entry].
    for (size_t j = Next(i);; j = Next(j)) {
      const uint32_t jid = IdAt(j);
      if (jid == 0) break;
      const size_t home = Home(KeyAt(j));
      const bool stays =
          (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      SetSlot(i, jid, KeyAt(j));
      i = j;
    }
    SetSlot(i, 0, 0);
    --size_;
    return true;
  }

  // Frees everything; the table is empty and unusable until Reserve().
  void Release() {
    std::vector<uint32_t>().swap(words_);
    std::vector<uint64_t>().swap(host_keys_);
    std::vector<uint32_t>().swap(host_ids_);
    slots_ = host_mask_ = size_ = hosts_ = 0;
  }

  // The table's arrays, for saving it to a file and taking it back.
  struct Image {
    uint64_t slots = 0;
    uint64_t size = 0;
    uint64_t hosts = 0;
    std::vector<uint32_t> words;  // 3 per slot
    std::vector<uint64_t> host_keys;
    std::vector<uint32_t> host_ids;
  };
  const std::vector<uint32_t>& words() const { return words_; }
  const std::vector<uint64_t>& host_keys() const { return host_keys_; }
  const std::vector<uint32_t>& host_ids() const { return host_ids_; }
  uint64_t hosts() const { return hosts_; }

  // Replaces the table by `image` if it is consistent (sizes, counts, an
  // empty slot left in each array, ids in range) and within the budget;
  // false otherwise, the table unchanged. Entries in the wrong slot make
  // wrong answers, not a crash: the caller checksums the file against that.
  bool Adopt(Image&& image) {
    const uint64_t hs = image.host_keys.size();
    if (image.slots == 0 || image.words.size() != image.slots * kWords ||
        image.size > MaxEntries(image.slots) || hs == 0 || (hs & (hs - 1)) ||
        image.host_ids.size() != hs || image.hosts * 2 > hs ||
        image.slots * kWords * sizeof(uint32_t) + HostBytes(hs) > max_bytes_) {
      return false;
    }
    uint64_t used = 0;
    for (uint64_t i = 0; i < image.slots; ++i) {
      const uint32_t id = image.words[i * kWords];
      if (id > image.hosts) return false;
      used += id != 0;
    }
    uint64_t hosts = 0;
    for (uint32_t id : image.host_ids) {
      if (id > image.hosts) return false;
      hosts += id != 0;
    }
    if (used != image.size || hosts != image.hosts) return false;
    words_ = std::move(image.words);
    host_keys_ = std::move(image.host_keys);
    host_ids_ = std::move(image.host_ids);
    slots_ = image.slots;
    size_ = image.size;
    hosts_ = image.hosts;
    host_mask_ = hs - 1;
    return true;
  }

  uint64_t size() const { return size_; }
  uint64_t slots() const { return slots_; }
  // Memory held (bytes).
  size_t bytes() const {
    return words_.size() * sizeof(uint32_t) +
           host_keys_.size() * (sizeof(uint64_t) + sizeof(uint32_t));
  }

 private:
  static constexpr size_t kNone = ~size_t{0};
  static constexpr size_t kWords = 3;  // id, key low half, key high half
  static constexpr uint64_t kMinSlots = 4096;

  // Load capped at 4/5: an absent key then probes about 13 slots (Knuth),
  // three cache lines of 12-byte slots.
  static uint64_t MaxEntries(uint64_t slots) { return slots / 5 * 4; }

  size_t Home(uint64_t key) const {
    return static_cast<size_t>((static_cast<unsigned __int128>(key) * slots_) >>
                               64);
  }
  size_t Next(size_t i) const { return i + 1 == slots_ ? 0 : i + 1; }
  uint32_t IdAt(size_t i) const { return words_[i * kWords]; }
  uint64_t KeyAt(size_t i) const {
    uint64_t k;
    std::memcpy(&k, &words_[i * kWords + 1], sizeof(k));
    return k;
  }
  void SetSlot(size_t i, uint32_t id, uint64_t key) {
    words_[i * kWords] = id;
    std::memcpy(&words_[i * kWords + 1], &key, sizeof(key));
  }

  size_t FindSlot(uint32_t id, uint64_t key) const {
    if (slots_ == 0) return kNone;
    for (size_t i = Home(key);; i = Next(i)) {
      const uint32_t sid = IdAt(i);
      if (sid == 0) return kNone;  // the load cap guarantees an empty slot
      if (sid == id && KeyAt(i) == key) return i;
    }
  }

  void Place(uint32_t id, uint64_t key) {
    size_t i = Home(key);
    while (IdAt(i) != 0) i = Next(i);
    SetSlot(i, id, key);
  }

  size_t HostBytes(uint64_t host_slots) const {
    return host_slots * (sizeof(uint64_t) + sizeof(uint32_t));
  }

  // The smallest planned capacity that holds `entries`: doubling, but
  // landing on landing_slots_ when a doubling would pass it.
  uint64_t PlanSlots(uint64_t entries) const {
    uint64_t s = slots_ < kMinSlots ? kMinSlots : slots_;
    while (MaxEntries(s) < entries) {
      uint64_t next = s * 2;
      if (s < landing_slots_ && landing_slots_ < next) next = landing_slots_;
      s = next;
    }
    return s;
  }

  bool Grow(uint64_t entries) {
    const uint64_t new_slots = PlanSlots(entries);
    // The budget bounds what stays allocated; while rehashing the old array
    // is held as well, for a moment.
    if (new_slots * kWords * sizeof(uint32_t) + HostBytes(host_keys_.size()) >
        max_bytes_) {
      return false;
    }
    std::vector<uint32_t> old(new_slots * kWords, 0);
    old.swap(words_);  // words_ is now the new, empty array
    const uint64_t old_slots = slots_;
    slots_ = new_slots;
    for (uint64_t i = 0; i < old_slots; ++i) {
      const uint32_t id = old[i * kWords];
      if (id == 0) continue;
      uint64_t k;
      std::memcpy(&k, &old[i * kWords + 1], sizeof(k));
      Place(id, k);
    }
    return true;
  }

  // Host interning: a power-of-two linear-probing map host_hash -> id, id 0
  // meaning an empty slot, load at most 1/2.
  size_t HostSlot(uint64_t host_hash) const {
    return static_cast<size_t>(Mix(host_hash ^ kHostSeed) & host_mask_);
  }
  uint32_t FindHost(uint64_t host_hash) const {
    if (host_keys_.empty()) return 0;
    for (size_t i = HostSlot(host_hash);; i = (i + 1) & host_mask_) {
      const uint32_t id = host_ids_[i];
      if (id == 0 || host_keys_[i] == host_hash) return id;
    }
  }
  bool AddHost(uint64_t host_hash, uint32_t* id) {
    if (hosts_ + 1 >= 0xffffffffULL) return false;  // ids are 32-bit
    if ((hosts_ + 1) * 2 > host_keys_.size()) {
      const size_t n = host_keys_.empty() ? 1024 : host_keys_.size() * 2;
      if (words_.size() * sizeof(uint32_t) + HostBytes(n) > max_bytes_) {
        return false;
      }
      std::vector<uint64_t> keys(n, 0);
      std::vector<uint32_t> ids(n, 0);
      keys.swap(host_keys_);
      ids.swap(host_ids_);
      host_mask_ = n - 1;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (ids[i] != 0) PlaceHost(keys[i], ids[i]);
      }
    }
    *id = static_cast<uint32_t>(++hosts_);
    PlaceHost(host_hash, *id);
    return true;
  }
  void PlaceHost(uint64_t host_hash, uint32_t id) {
    size_t i = HostSlot(host_hash);
    while (host_ids_[i] != 0) i = (i + 1) & host_mask_;
    host_keys_[i] = host_hash;
    host_ids_[i] = id;
  }

  size_t max_bytes_;
  uint64_t landing_slots_;
  std::vector<uint32_t> words_;  // kWords per slot; id 0 = empty
  uint64_t slots_ = 0;
  uint64_t size_ = 0;
  std::vector<uint64_t> host_keys_;
  std::vector<uint32_t> host_ids_;
  uint64_t host_mask_ = 0;
  uint64_t hosts_ = 0;
};

}  // namespace crawld::dedupe::internal

#endif  // CRAWLD_DEDUPE_PAIR_TABLE_H_
