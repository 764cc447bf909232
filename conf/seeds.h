// conf/seeds.h: reading a seed file. One URL per line; blank lines and
// lines starting with '#' are skipped; surrounding whitespace is trimmed; a
// UTF-8 byte order mark at the start of the file is ignored.
// A line that is not an absolute http(s) URL is reported with its line
// number and skipped: junk in a seed list never stops a crawl.
#ifndef CRAWLD_CONF_SEEDS_H_
#define CRAWLD_CONF_SEEDS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::conf {

struct SeedList {
  std::vector<std::string> urls;    // canonical, in file order, no duplicates
  std::vector<std::string> errors;  // "<file>:<line>: <reason>: <text>"
};

// Parses seed text; `source` names it in error messages.
SeedList ParseSeeds(std::string_view text, std::string_view source);

// Reads and parses a seed file. Fails with IOError when it cannot be read.
[[nodiscard]] Result<SeedList> LoadSeeds(const std::string& path);

}  // namespace crawld::conf

#endif  // CRAWLD_CONF_SEEDS_H_
