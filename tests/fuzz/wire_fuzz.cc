// Fuzz target for the exchange's batch encoding (cluster/wire.h), which
// one worker reads from another (or from Redis). Invariants: decoding
// never crashes; a batch it accepts holds only what ValidateMessage
// allows (a URL within the limit, finite credit >= 0, a sitemap kind of
// 0..2, a changefreq of 0..7); and what it accepted, written again, reads
// back to the same URLs and is then written byte for byte the same.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/wire.h"

namespace {

using crawld::cluster::UrlMessage;

bool Same(const UrlMessage& a, const UrlMessage& b) {
  return a.url == b.url && a.depth == b.depth &&
         std::bit_cast<uint64_t>(a.credit) ==
             std::bit_cast<uint64_t>(b.credit) &&
         a.seed_host == b.seed_host && a.seen_mark == b.seen_mark &&
         a.sitemap_kind == b.sitemap_kind && a.sitemap_of == b.sitemap_of &&
         a.changefreq == b.changefreq && a.lastmod_s == b.lastmod_s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wire = crawld::cluster::wire;
  constexpr uint32_t kMaxUrl = 8192;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  wire::BatchHeader h;
  std::vector<UrlMessage> urls;
  if (!wire::DecodeBatch(in, &h, &urls, kMaxUrl).ok()) return 0;
  for (const UrlMessage& m : urls) {
    if (m.url.empty() || m.url.size() > kMaxUrl) std::abort();
    if (!std::isfinite(m.credit) || m.credit < 0) std::abort();
    if (m.sitemap_kind > 2 || m.changefreq > 7) std::abort();
    if (m.sitemap_kind == 0 && !m.sitemap_of.empty()) std::abort();
  }
  std::string again;
  wire::EncodeBatch(h, urls, &again);
  wire::BatchHeader h2;
  std::vector<UrlMessage> urls2;
  if (!wire::DecodeBatch(again, &h2, &urls2, kMaxUrl).ok()) std::abort();
  if (h2.from != h.from || h2.incarnation != h.incarnation || h2.id != h.id ||
      urls2.size() != urls.size()) {
    std::abort();
  }
  for (size_t i = 0; i < urls.size(); ++i) {
    if (!Same(urls[i], urls2[i])) std::abort();
  }
  std::string third;
  wire::EncodeBatch(h2, urls2, &third);
  if (third != again) std::abort();
  return 0;
}
