// http/internal.h: helpers shared by the files of http/. Private to this
// folder; nothing outside it includes this.
#ifndef CRAWLD_HTTP_INTERNAL_H_
#define CRAWLD_HTTP_INTERNAL_H_

#include <string_view>
#include <vector>

namespace crawld::http::internal {

// s split at every sep; n separators give n + 1 parts (empty ones kept).
std::vector<std::string_view> Split(std::string_view s, char sep);

}  // namespace crawld::http::internal

#endif  // CRAWLD_HTTP_INTERNAL_H_
