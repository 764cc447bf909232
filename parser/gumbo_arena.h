// parser/gumbo_arena.h (private to parser/): a bump allocator for Gumbo.
//
// Gumbo allocates every node, attribute, vector and string buffer on its
// own, and gives them all back in gumbo_destroy_output: thousands of small
// malloc/free pairs per page. In a long-running worker the heap is
// fragmented and those calls cost about as much as a tenth of the parse.
// A parse's memory lives exactly as long as the parse, so one arena per
// Extractor hands out memory by bumping a pointer and takes it all back at
// once; the tree is never walked to be freed.
//
// Nothing freed during a parse is reused, so a parse takes several times
// the memory it would with malloc (17x the input measured on a link-heavy
// page: ~70 MB for a 4 MiB one). Past a budget the arena therefore hands
// out malloc'd memory, freed as Gumbo frees it, and the rest at Reset.
#ifndef CRAWLD_PARSER_GUMBO_ARENA_H_
#define CRAWLD_PARSER_GUMBO_ARENA_H_

#include <cstddef>
#include <unordered_set>
#include <vector>

namespace crawld::parser::internal {

class GumboArena {
 public:
  // Keeps at most `max_retained` bytes between parses (the block that held
  // the last parse, grown to fit it when it overflowed). Beyond `budget`
  // bytes of arena memory in one parse, allocations come from malloc.
  GumboArena(size_t max_retained, size_t budget);
  ~GumboArena();
  GumboArena(const GumboArena&) = delete;
  GumboArena& operator=(const GumboArena&) = delete;

  // 16-byte aligned, never null (aborts when memory is exhausted, as
  // Gumbo itself does not check).
  void* Allocate(size_t n);

  // Gives back memory from Allocate: malloc'd memory now, arena memory at
  // the next Reset.
  void Deallocate(void* p);

  // Takes back everything allocated since the last Reset.
  void Reset();

  // Bytes handed out from the arena since the last Reset, padding included.
  size_t used() const { return used_; }
  // Allocations past the budget not yet given back.
  size_t overflow_count() const { return overflow_.size(); }

  // GumboOptions.allocator / .deallocator with userdata = the arena.
  static void* GumboAllocate(void* arena, size_t n);
  static void GumboDeallocate(void* arena, void* p);

 private:
  struct Block {
    char* data;
    size_t size;
  };
  void NewBlock(size_t at_least);

  size_t max_retained_;
  size_t budget_;
  std::unordered_set<void*> overflow_;  // malloc'd past the budget
  std::vector<Block> blocks_;           // blocks_.back() is being bumped
  char* cursor_ = nullptr;
  char* end_ = nullptr;
  size_t used_ = 0;
};

}  // namespace crawld::parser::internal

#endif  // CRAWLD_PARSER_GUMBO_ARENA_H_
