// parser/gumbo_arena.h (private to parser/): a bump allocator for Gumbo.
//
// Gumbo allocates every node, attribute, vector and string buffer on its
// own, and gives them all back in gumbo_destroy_output: thousands of small
// malloc/free pairs per page. In a long-running worker the heap is
// fragmented and those calls cost about as much as a tenth of the parse.
// A parse's memory lives exactly as long as the parse, so one arena per
// Extractor hands out memory by bumping a pointer and takes it all back at
// once; the tree is never walked to be freed.
#ifndef CRAWLD_PARSER_GUMBO_ARENA_H_
#define CRAWLD_PARSER_GUMBO_ARENA_H_

#include <cstddef>
#include <vector>

namespace crawld::parser::internal {

class GumboArena {
 public:
  // Keeps at most `max_retained` bytes between parses (the block that held
  // the last parse, grown to fit it when it overflowed).
  explicit GumboArena(size_t max_retained);
  ~GumboArena();
  GumboArena(const GumboArena&) = delete;
  GumboArena& operator=(const GumboArena&) = delete;

  // 16-byte aligned, never null (aborts when memory is exhausted, as
  // Gumbo itself does not check).
  void* Allocate(size_t n);

  // Takes back everything allocated since the last Reset.
  void Reset();

  // Bytes handed out since the last Reset, padding included.
  size_t used() const { return used_; }

  // GumboOptions.allocator / .deallocator with userdata = the arena. The
  // deallocator does nothing: memory comes back at Reset.
  static void* GumboAllocate(void* arena, size_t n);
  static void GumboDeallocate(void* arena, void* p);

 private:
  struct Block {
    char* data;
    size_t size;
  };
  void NewBlock(size_t at_least);

  size_t max_retained_;
  std::vector<Block> blocks_;  // blocks_.back() is being bumped
  char* cursor_ = nullptr;
  char* end_ = nullptr;
  size_t used_ = 0;
};

}  // namespace crawld::parser::internal

#endif  // CRAWLD_PARSER_GUMBO_ARENA_H_
