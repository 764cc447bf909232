// base/doc_buffer.h: a byte buffer for one fetched document that keeps small
// documents in memory and spills larger ones to an unlinked temporary file,
// so that the memory of many large transfers in flight stays bounded.
//
// The fetcher appends while the body arrives; the store and the parser read
// it afterwards. Writing and reading are not interleaved: Append() calls come
// first, then any number of reads.
#ifndef CRAWLD_BASE_DOC_BUFFER_H_
#define CRAWLD_BASE_DOC_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace crawld {

// Not thread-safe; owned by one event loop. Movable, not copyable.
class DocBuffer {
 public:
  struct Options {
    // Bytes kept in memory before the buffer spills to a temporary file.
    size_t memory_limit = 64 * 1024;
    // Directory for spill files; the file is unlinked right after creation,
    // so nothing is left behind after a crash.
    std::string spill_dir = "/tmp";
  };

  DocBuffer() : DocBuffer(Options()) {}
  explicit DocBuffer(const Options& options);
  ~DocBuffer();
  DocBuffer(DocBuffer&& other) noexcept;
  DocBuffer& operator=(DocBuffer&& other) noexcept;
  DocBuffer(const DocBuffer&) = delete;
  DocBuffer& operator=(const DocBuffer&) = delete;

  // Appends bytes. Fails (and keeps what it had) when a spill file cannot be
  // created or written, e.g. on a full disk.
  [[nodiscard]] Status Append(std::string_view data);

  // Total bytes appended so far.
  [[nodiscard]] uint64_t size() const { return size_; }
  // True when the content lives in a spill file.
  [[nodiscard]] bool spilled() const { return fd_ >= 0; }

  // Calls `sink` with consecutive chunks covering [offset, offset+length) of
  // the content (clamped to size()); stops early and returns the sink's
  // error if it returns one. The views passed to sink are valid only during
  // the call.
  [[nodiscard]] Status ForEachChunk(
      const std::function<Status(std::string_view)>& sink, uint64_t offset = 0,
      uint64_t length = UINT64_MAX) const;

  // The whole content when it lives in memory (not spilled): a view valid
  // until the next Append() or Clear(). Lets readers of the common, small
  // document skip a copy (issue 16: the body was copied once per reader).
  [[nodiscard]] std::optional<std::string_view> MemoryView() const {
    if (fd_ >= 0) return std::nullopt;
    return std::string_view(memory_);
  }

  // Copies at most `max_bytes` from the start into a string.
  [[nodiscard]] Result<std::string> ReadPrefix(size_t max_bytes) const;

  // Drops all content (and the spill file); the buffer can be reused.
  void Clear();

 private:
  Status Spill();

  Options options_;
  std::string memory_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace crawld

#endif  // CRAWLD_BASE_DOC_BUFFER_H_
