// See gumbo_arena.h.
#include "parser/gumbo_arena.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace crawld::parser::internal {
namespace {

constexpr size_t kAlign = 16;
// The first block: a typical page's tree (16 KB of HTML needs about 150 KB).
constexpr size_t kFirstBlock = 256 << 10;

size_t AlignUp(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

}  // namespace

GumboArena::GumboArena(size_t max_retained, size_t budget)
    : max_retained_(max_retained), budget_(budget) {}

GumboArena::~GumboArena() {
  for (const Block& b : blocks_) std::free(b.data);
  for (void* p : overflow_) std::free(p);
}

void GumboArena::NewBlock(size_t at_least) {
  size_t size = blocks_.empty() ? kFirstBlock : blocks_.back().size * 2;
  size = std::max(size, AlignUp(at_least));
  void* p = std::aligned_alloc(kAlign, size);
  if (p == nullptr) std::abort();
  blocks_.push_back({static_cast<char*>(p), size});
  cursor_ = blocks_.back().data;
  end_ = cursor_ + size;
}

void* GumboArena::Allocate(size_t n) {
  n = AlignUp(std::max<size_t>(n, 1));
  if (used_ + n > budget_) {
    void* p = std::aligned_alloc(kAlign, n);
    if (p == nullptr) std::abort();
    overflow_.insert(p);
    return p;
  }
  if (static_cast<size_t>(end_ - cursor_) < n) NewBlock(n);
  void* p = cursor_;
  cursor_ += n;
  used_ += n;
  return p;
}

void GumboArena::Deallocate(void* p) {
  // Arena memory is never in the set; the common parse has an empty one.
  if (!overflow_.empty() && overflow_.erase(p) != 0) std::free(p);
}

void GumboArena::Reset() {
  for (void* p : overflow_) std::free(p);
  overflow_.clear();
  if (blocks_.size() > 1) {
    // The parse overflowed the first block: keep one block big enough for
    // a parse like it next time, within the retention limit.
    size_t want = kFirstBlock;
    while (want < used_ && want < max_retained_) want *= 2;
    for (const Block& b : blocks_) std::free(b.data);
    blocks_.clear();
    if (want <= max_retained_) NewBlock(want);
  } else if (!blocks_.empty()) {
    cursor_ = blocks_.front().data;
  }
  if (blocks_.empty()) cursor_ = end_ = nullptr;
  used_ = 0;
}

void* GumboArena::GumboAllocate(void* arena, size_t n) {
  return static_cast<GumboArena*>(arena)->Allocate(n);
}

void GumboArena::GumboDeallocate(void* arena, void* p) {
  static_cast<GumboArena*>(arena)->Deallocate(p);
}

}  // namespace crawld::parser::internal
