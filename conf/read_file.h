// conf/read_file.h (private to conf/): reads a small text file whole, for
// the config, the filter rules and the overrides file alike.
#ifndef CRAWLD_CONF_READ_FILE_H_
#define CRAWLD_CONF_READ_FILE_H_

#include <cstddef>
#include <string>

#include "base/status.h"

namespace crawld::conf::internal {

// The bytes of `path`. IOError "<path>: <strerror>" when it cannot be
// opened or read, "<path>: larger than <max_bytes> bytes" past the cap,
// "<path>: path contains a NUL byte".
[[nodiscard]] Result<std::string> ReadSmallFile(const std::string& path,
                                                size_t max_bytes);

}  // namespace crawld::conf::internal

#endif  // CRAWLD_CONF_READ_FILE_H_
