// frontier/spill_items.h: the items of one spilled chunk as bytes and back
// (the layout: frontier.cc, "On-disk formats"; docs/CHECKPOINT.md). Inside
// the frontier; here so that tests can check every format version still
// decodes.
#ifndef CRAWLD_FRONTIER_SPILL_ITEMS_H_
#define CRAWLD_FRONTIER_SPILL_ITEMS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontier/frontier.h"

namespace crawld::frontier::spill {

// A chunk's magic says how its items are laid out.
constexpr uint32_t kChunkMagic = 0x344b4346;         // "FCK4": written now
constexpr uint32_t kChunkMagicNoHints = 0x334b4346;  // "FCK3": no changefreq
constexpr uint32_t kChunkMagicNoKind = 0x324b4346;   // "FCK2": pages only

// Appends `item` as kChunkMagic lays it out.
void EncodeItem(std::string* out, const Item& item);

// Appends the `count` items of a chunk payload of this magic to `out`;
// false (and `out` as it was) when the payload is not exactly that.
[[nodiscard]] bool DecodeItems(std::string_view payload, uint32_t magic,
                               uint32_t count, std::vector<Item>* out);

}  // namespace crawld::frontier::spill

#endif  // CRAWLD_FRONTIER_SPILL_ITEMS_H_
