#include "conf/read_file.h"

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace crawld::conf::internal {

Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  if (path.find('\0') != std::string::npos) {
    return Status::IOError(path + ": path contains a NUL byte");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::IOError(path + ": " +
                           std::generic_category().message(errno));
  }
  std::string text;
  char buf[65536];
  bool too_large = false;
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    text.append(buf, n);
    if (text.size() > max_bytes) {
      too_large = true;
      break;
    }
    if (n < sizeof(buf)) break;
  }
  const bool failed = std::ferror(f) != 0;
  const int err = errno;  // from the failed read, e.g. EISDIR
  std::fclose(f);
  if (failed) {
    return Status::IOError(path + ": " + std::generic_category().message(err));
  }
  if (too_large) {
    return Status::IOError(path + ": larger than " + std::to_string(max_bytes) +
                           " bytes");
  }
  return text;
}

}  // namespace crawld::conf::internal
