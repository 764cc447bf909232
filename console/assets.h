// console/assets.h: the table of embedded assets that
// cmake/embed-assets.cmake generates. Private to console/.
#ifndef CRAWLD_CONSOLE_ASSETS_H_
#define CRAWLD_CONSOLE_ASSETS_H_

#include <cstddef>
#include <string_view>

namespace crawld::console::internal {

struct EmbeddedAsset {
  std::string_view name;  // file name under console/assets/
  std::string_view type;  // Content-Type
  std::string_view etag;  // strong ETag, quoted
  std::string_view data;
};

// Immutable, in the order of CONSOLE_ASSETS in console/CMakeLists.txt.
extern const EmbeddedAsset kAssets[];
extern const size_t kAssetCount;

}  // namespace crawld::console::internal

#endif  // CRAWLD_CONSOLE_ASSETS_H_
