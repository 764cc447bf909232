// DocumentTable; see dedupe.h.
#include <algorithm>

#include "dedupe/bloom_internal.h"
#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

constexpr size_t kFirstSlots = 1024;

}  // namespace

DocumentTable::DocumentTable(size_t max_entries)
    : max_entries_(std::max<size_t>(1, max_entries)) {}

size_t DocumentTable::Home(const Digest128& key) const {
  // Digests are uniform already; a SimHash's low word is 0, so mix both.
  return static_cast<size_t>(internal::Mix(key.high ^ (key.low * 3))) &
         (slots_.size() - 1);
}

const DocumentCopy* DocumentTable::Find(const Digest128& key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(key);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.copy.length == 0) return nullptr;
    if (s.key == key) return &s.copy;
  }
}

bool DocumentTable::Replace(const Digest128& key, const DocumentCopy& copy) {
  if (copy.length == 0) return false;
  auto* found = const_cast<DocumentCopy*>(Find(key));
  if (found == nullptr) return false;
  *found = copy;
  return true;
}

bool DocumentTable::Insert(const Digest128& key, const DocumentCopy& copy) {
  if (copy.length == 0 || size_ >= max_entries_) return false;
  // At most 70% full, so that a miss (most lookups) ends soon.
  if ((size_ + 1) * 10 > slots_.size() * 7) Grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(key);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.copy.length == 0) {
      s = {key, copy};
      ++size_;
      return true;
    }
    if (s.key == key) return false;
  }
}

void DocumentTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? kFirstSlots : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.copy.length == 0) continue;
    size_t i = Home(s.key);
    while (slots_[i].copy.length != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace crawld::dedupe
