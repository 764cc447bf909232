// base/fd_io.cc: see fd_io.h.
#include "base/fd_io.h"

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

namespace crawld {
namespace {

// One loop for the four calls: `step` moves up to `left` bytes at `done`
// bytes into the transfer and returns what the system call returned.
template <typename Step>
ReadResult Loop(size_t n, Step step) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = step(done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadResult::kError;
    }
    if (r == 0) return ReadResult::kEnd;
    done += static_cast<size_t>(r);
  }
  return ReadResult::kDone;
}

bool Written(ReadResult r) {
  if (r == ReadResult::kEnd) errno = EIO;  // no progress and no error
  return r == ReadResult::kDone;
}

}  // namespace

ReadResult ReadFull(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  return Loop(
      n, [&](size_t done, size_t left) { return ::read(fd, p + done, left); });
}

ReadResult PreadFull(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  return Loop(n, [&](size_t done, size_t left) {
    return ::pread(fd, p + done, left, static_cast<off_t>(offset + done));
  });
}

bool WriteFull(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  return Written(Loop(n, [&](size_t done, size_t left) {
    return ::write(fd, p + done, left);
  }));
}

bool PwriteFull(int fd, const void* buf, size_t n, uint64_t offset) {
  const auto* p = static_cast<const char*>(buf);
  return Written(Loop(n, [&](size_t done, size_t left) {
    return ::pwrite(fd, p + done, left, static_cast<off_t>(offset + done));
  }));
}

}  // namespace crawld
