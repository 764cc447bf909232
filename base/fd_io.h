// base/fd_io.h: whole reads and writes on a file descriptor. read(2),
// write(2), pread(2) and pwrite(2) may move fewer bytes than asked, or be
// interrupted by a signal (EINTR) before moving any; every caller that
// needs all n bytes loops the same way, so the loop lives here once.
//
// Plain functions on a caller's descriptor: no state, thread-safe as far
// as the descriptor is.
#ifndef CRAWLD_BASE_FD_IO_H_
#define CRAWLD_BASE_FD_IO_H_

#include <cstddef>
#include <cstdint>

namespace crawld {

// How a whole read ended.
enum class ReadResult {
  kDone,   // all n bytes read
  kEnd,    // the file ended first (errno untouched)
  kError,  // a read failed; errno says why
};

// Reads exactly n bytes into buf, from the descriptor's position.
[[nodiscard]] ReadResult ReadFull(int fd, void* buf, size_t n);
// Reads exactly n bytes into buf, from `offset` (the position is unchanged).
[[nodiscard]] ReadResult PreadFull(int fd, void* buf, size_t n,
                                   uint64_t offset);

// Writes all n bytes, at the descriptor's position. False when a write
// failed, with errno set (EIO when the kernel accepted no byte without
// saying why, which would otherwise loop for ever).
[[nodiscard]] bool WriteFull(int fd, const void* buf, size_t n);
// The same at `offset` (the position is unchanged).
[[nodiscard]] bool PwriteFull(int fd, const void* buf, size_t n,
                              uint64_t offset);

}  // namespace crawld

#endif  // CRAWLD_BASE_FD_IO_H_
