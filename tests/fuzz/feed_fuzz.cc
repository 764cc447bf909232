// Fuzz target for the document feed's formats (store/feed_internal.h): the
// cursor, the mark file image, the feed line and its id, and the merge of
// nodes' pages (issue 14 part 7).
//
// The first byte picks the parser; the rest is its input. Invariants
// checked, beyond not crashing:
// 1. A cursor that parses prints back to a cursor of the same ID.
// 2. A mark image that parses formats back to an image that parses to the
//    same mark.
// 3. A feed line that parses has FeedLineId equal to its id, and its
//    formatted line parses back to the same entry.
// 4. The merge of pages built from the input returns ascending IDs, none
//    above any page's watermark, at most `limit` of them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "store/feed_internal.h"
#include "store/store.h"

namespace {

using crawld::store::FeedEntry;
using crawld::store::FeedMerge;
using crawld::store::FeedPage;
using crawld::store::MergeFeedPages;
using crawld::store::ParseFeedCursor;
namespace internal = crawld::store::internal;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "feed_fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

void Cursor(std::string_view in) {
  auto c = ParseFeedCursor(in);
  if (!c.ok()) return;
  auto again = ParseFeedCursor(std::to_string(*c));
  Check(again.ok() && *again == *c, "cursor round trip");
}

void Mark(std::string_view in) {
  auto m = internal::ParseFeedMark(in);
  if (!m) return;
  const std::string image = internal::FormatFeedMark(*m);
  Check(image.size() == internal::kFeedMarkBytes, "mark image size");
  auto again = internal::ParseFeedMark(image);
  Check(again.has_value(), "formatted mark parses");
  Check(again->node == m->node && again->worker == m->worker &&
            again->boot_id == m->boot_id && again->anchor_ms == m->anchor_ms &&
            again->generation == m->generation &&
            again->last_id == m->last_id && again->busy == m->busy,
        "mark round trip");
}

void Line(std::string_view in) {
  auto e = internal::ParseFeedLine(in);
  auto id = internal::FeedLineId(in);
  if (!e) return;
  Check(id.has_value() && *id == e->id, "FeedLineId agrees with the line");
  std::string line = internal::FormatFeedLine(*e);
  Check(!line.empty() && line.back() == '\n', "line ends in a newline");
  line.pop_back();
  auto again = internal::ParseFeedLine(line);
  // Invalid UTF-8 in a string is written as U+FFFD, so only what survives
  // that is compared.
  Check(again.has_value(), "formatted line parses");
  Check(again->id == e->id && again->offset == e->offset &&
            again->length == e->length && again->status == e->status &&
            again->fetch_time_us == e->fetch_time_us &&
            again->revisit == e->revisit &&
            again->flags.noindex == e->flags.noindex,
        "line round trip");
}

void Merge(std::string_view in) {
  if (in.size() < 2) return;
  const size_t limit = static_cast<uint8_t>(in[0]) % 16;
  std::vector<FeedPage> pages(1 + static_cast<uint8_t>(in[1]) % 4);
  in.remove_prefix(2);
  size_t p = 0;
  uint64_t next = 0;
  while (in.size() >= 2) {
    const uint8_t step = static_cast<uint8_t>(in[0]);
    const uint8_t what = static_cast<uint8_t>(in[1]);
    in.remove_prefix(2);
    next += step;
    FeedPage& page = pages[p % pages.size()];
    if (what % 5 == 0) {
      page.watermark = next;
      ++p;
    } else if (page.entries.empty() || page.entries.back().id < next) {
      FeedEntry e;
      e.id = next;
      page.entries.push_back(e);
    }
  }
  uint64_t bound = UINT64_MAX;
  for (const FeedPage& page : pages) bound = std::min(bound, page.watermark);
  FeedMerge m = MergeFeedPages(pages, limit);
  Check(m.order.size() <= limit, "merge over its limit");
  uint64_t last = 0;
  for (auto [pi, ei] : m.order) {
    Check(pi < pages.size() && ei < pages[pi].entries.size(), "merge index");
    const uint64_t id = pages[pi].entries[ei].id;
    Check(id > last || (last == 0 && id == 0), "merge order");
    Check(id <= bound, "merge past a watermark");
    Check(id <= m.watermark, "entry past the merged watermark");
    last = id;
  }
  Check(m.watermark <= bound, "merged watermark past a page's");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Cursor(in);
      break;
    case 1:
      Mark(in);
      break;
    case 2:
      Line(in);
      break;
    default:
      Merge(in);
      break;
  }
  return 0;
}
