#include "base/doc_buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/fd_io.h"

namespace crawld {

DocBuffer::DocBuffer(const Options& options) : options_(options) {}

DocBuffer::~DocBuffer() { Clear(); }

DocBuffer::DocBuffer(DocBuffer&& other) noexcept
    : options_(std::move(other.options_)),
      memory_(std::move(other.memory_)),
      fd_(other.fd_),
      size_(other.size_) {
  other.fd_ = -1;
  other.size_ = 0;
  other.memory_.clear();
}

DocBuffer& DocBuffer::operator=(DocBuffer&& other) noexcept {
  if (this != &other) {
    Clear();
    options_ = std::move(other.options_);
    memory_ = std::move(other.memory_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
    other.size_ = 0;
    other.memory_.clear();
  }
  return *this;
}

void DocBuffer::Clear() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  memory_.clear();
  memory_.shrink_to_fit();
  size_ = 0;
}

static Status WriteAll(int fd, std::string_view data) {
  if (WriteFull(fd, data.data(), data.size())) return Status::Ok();
  return Status::IOError(std::string("spill write: ") + strerror(errno));
}

Status DocBuffer::Spill() {
  std::string path = options_.spill_dir + "/crawld-doc-XXXXXX";
  std::vector<char> tmpl(path.begin(), path.end());
  tmpl.push_back('\0');
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("cannot create spill file in " + options_.spill_dir +
                           ": " + strerror(errno));
  }
  // Unlink at once: the kernel frees the space when the fd closes, also
  // after a crash.
  ::unlink(tmpl.data());
  Status s = WriteAll(fd, memory_);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  fd_ = fd;
  memory_.clear();
  memory_.shrink_to_fit();
  return Status::Ok();
}

Status DocBuffer::Append(std::string_view data) {
  if (data.empty()) return Status::Ok();
  if (fd_ < 0 && memory_.size() + data.size() > options_.memory_limit) {
    Status s = Spill();
    if (!s.ok()) return s;
  }
  if (fd_ >= 0) {
    Status s = WriteAll(fd_, data);
    if (!s.ok()) return s;
  } else {
    memory_.append(data);
  }
  size_ += data.size();
  return Status::Ok();
}

Status DocBuffer::ForEachChunk(
    const std::function<Status(std::string_view)>& sink, uint64_t offset,
    uint64_t length) const {
  if (offset >= size_) return Status::Ok();
  uint64_t end = size_ - offset < length ? size_ : offset + length;
  if (fd_ < 0) {
    return sink(std::string_view(memory_).substr(offset, end - offset));
  }
  std::vector<char> buf(64 * 1024);
  uint64_t pos = offset;
  while (pos < end) {
    size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), end - pos));
    ssize_t n = ::pread(fd_, buf.data(), want, static_cast<off_t>(pos));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("spill read: ") + strerror(errno));
    }
    if (n == 0) return Status::Corruption("spill file shorter than expected");
    Status s = sink(std::string_view(buf.data(), static_cast<size_t>(n)));
    if (!s.ok()) return s;
    pos += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Result<std::string> DocBuffer::ReadPrefix(size_t max_bytes) const {
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(size_, max_bytes)));
  Status s = ForEachChunk(
      [&out](std::string_view chunk) {
        out.append(chunk);
        return Status::Ok();
      },
      0, max_bytes);
  if (!s.ok()) return s;
  return out;
}

}  // namespace crawld
