// store/feed_internal.h: the feed's formats, for feed.cc, its tests and its
// fuzz target only (no other component includes this).
//
// - A feed line: one compact JSON object, "id" first (docs/STORE.md).
// - A mark file, feed-<worker>.mark: kFeedMarkBytes bytes that the writer
//   maps shared and readers on the same machine map read-only. Host byte
//   order: the file is only meaningful on the machine that wrote it (a
//   reader elsewhere sees another boot id and uses the IDs alone).
//
//   offset  size  field
//        0     8  magic "crawldFM"
//        8     4  version (1)
//       12     4  node id
//       16     4  worker id (global)
//       20     4  length of the boot id
//       24    40  boot id (text, NUL-padded)
//       64     8  anchor: feed-epoch ms when MonoMs() was 0 (int64)
//       72     8  generation: opens of this worker's feed
//       80     8  last ID handed out (atomic)
//       88     8  busy: 1 while the entry holding `last` may be unwritten
//                 (atomic)
//       96    32  zero
#ifndef CRAWLD_STORE_FEED_INTERNAL_H_
#define CRAWLD_STORE_FEED_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/store.h"

namespace crawld::store::internal {

inline constexpr size_t kFeedMarkBytes = 128;
inline constexpr size_t kFeedMarkLastOffset = 80;
inline constexpr size_t kFeedMarkBusyOffset = 88;

struct FeedMark {
  int node = 0;
  int worker = 0;
  std::string boot_id;
  int64_t anchor_ms = 0;
  uint64_t generation = 0;
  uint64_t last_id = 0;
  bool busy = false;
};

// The kFeedMarkBytes image of `m` (boot_id cut to 39 bytes).
[[nodiscard]] std::string FormatFeedMark(const FeedMark& m);
// Parses an image; nullopt for anything FormatFeedMark cannot have written
// (short, wrong magic or version, ids out of range, busy not 0/1, an ID
// with bit 63 set, a boot id with control bytes).
[[nodiscard]] std::optional<FeedMark> ParseFeedMark(std::string_view bytes);

// The feed line of `e` (id included), newline included.
[[nodiscard]] std::string FormatFeedLine(const FeedEntry& e);
// Parses one line without its newline; nullopt when it is not a feed
// entry with a valid id.
[[nodiscard]] std::optional<FeedEntry> ParseFeedLine(std::string_view line);
// The id of a feed line, from its leading {"id":"..." when it has one (the
// cheap path the reader's binary search takes), else from the whole line.
[[nodiscard]] std::optional<uint64_t> FeedLineId(std::string_view line);

// The ID of millisecond `ms` (feed epoch) for node/worker/sequence;
// 0 when ms is out of the 41-bit range. Worker is taken modulo 256.
[[nodiscard]] uint64_t ComposeFeedId(int64_t ms, int node, int worker,
                                     int sequence);
// The smallest ID greater than `last` with this node and worker whose
// millisecond is at least now_ms (negative now_ms counts as 0). 0 when
// that is past the 41-bit range.
[[nodiscard]] uint64_t NextFeedId(uint64_t last, int64_t now_ms, int node,
                                  int worker);

}  // namespace crawld::store::internal

#endif  // CRAWLD_STORE_FEED_INTERNAL_H_
