// GumboArena: the bump allocator behind the Extractor's Gumbo parses.
#include "parser/gumbo_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>

namespace crawld::parser::internal {
namespace {

TEST(GumboArena, AlignedDistinctAndWritable) {
  GumboArena arena(1 << 20);
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
  GumboArena arena(1 << 20);
  void* first = arena.Allocate(64);
  arena.Allocate(1000);
  arena.Reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.Allocate(64), first);
}

TEST(GumboArena, OverflowGrowsAndKeepsWithinLimit) {
  GumboArena arena(2 << 20);
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
  GumboArena arena(1 << 20);
  void* p = GumboArena::GumboAllocate(&arena, 40);
  GumboArena::GumboDeallocate(&arena, p);  // a no-op until Reset
  EXPECT_EQ(arena.used(), 48u);
}

}  // namespace
}  // namespace crawld::parser::internal
