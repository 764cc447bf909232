// GumboArena: the bump allocator behind the Extractor's Gumbo parses.
#include "parser/gumbo_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>

namespace crawld::parser::internal {
namespace {

constexpr size_t kNoBudget = size_t{1} << 40;

TEST(GumboArena, AlignedDistinctAndWritable) {
  GumboArena arena(1 << 20, kNoBudget);
  std::set<uintptr_t> seen;
  for (size_t n : {1, 3, 16, 17, 100, 4096, 1}) {
    void* p = arena.Allocate(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << n;
    std::memset(p, 0xab, n);  // ASan: the whole request is ours
    EXPECT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(p)).second);
  }
  EXPECT_GE(arena.used(), 1u + 3 + 16 + 17 + 100 + 4096 + 1);
}

TEST(GumboArena, ResetReusesMemory) {
  GumboArena arena(1 << 20, kNoBudget);
  void* first = arena.Allocate(64);
  arena.Allocate(1000);
  arena.Reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.Allocate(64), first);
}

TEST(GumboArena, OverflowGrowsAndKeepsWithinLimit) {
  GumboArena arena(2 << 20, kNoBudget);
  // Beyond the first block, and one request larger than any block so far.
  for (int i = 0; i < 1000; ++i) std::memset(arena.Allocate(1000), 1, 1000);
  void* big = arena.Allocate(3 << 20);
  std::memset(big, 2, 3 << 20);
  EXPECT_GE(arena.used(), (3u << 20) + 1000u * 1000u);
  arena.Reset();
  // The next parse like it fits in one retained block of at most 2 MiB:
  // allocations up to that size come from one contiguous run.
  char* a = static_cast<char*>(arena.Allocate(1 << 20));
  char* b = static_cast<char*>(arena.Allocate(512 << 10));
  EXPECT_EQ(b, a + (1 << 20));
}

TEST(GumboArena, GumboCallbacksUseTheArena) {
  GumboArena arena(1 << 20, kNoBudget);
  void* p = GumboArena::GumboAllocate(&arena, 40);
  GumboArena::GumboDeallocate(&arena, p);  // a no-op until Reset
  EXPECT_EQ(arena.used(), 48u);
}

// Past the budget, memory comes from malloc and goes back when Gumbo frees
// it, or at Reset (LeakSanitizer checks that nothing is left behind).
TEST(GumboArena, PastTheBudgetMemoryIsMallocdAndFreed) {
  GumboArena arena(1 << 20, 4096);
  void* in = arena.Allocate(4000);
  EXPECT_EQ(arena.overflow_count(), 0u);
  void* a = arena.Allocate(200);
  void* b = arena.Allocate(100000);
  EXPECT_EQ(arena.overflow_count(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
  std::memset(a, 1, 200);
  std::memset(b, 2, 100000);
  GumboArena::GumboDeallocate(&arena, a);
  GumboArena::GumboDeallocate(&arena, in);  // arena memory: kept until Reset
  EXPECT_EQ(arena.overflow_count(), 1u);
  EXPECT_EQ(arena.used(), 4000u);
  arena.Reset();
  EXPECT_EQ(arena.overflow_count(), 0u);
  EXPECT_EQ(arena.Allocate(16), in);  // the budget is per parse
  arena.Allocate(8000);  // over again, left for the destructor to free
}

}  // namespace
}  // namespace crawld::parser::internal
