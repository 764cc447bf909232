#include "cluster/wire.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

namespace crawld::cluster::wire {
namespace {

constexpr uint8_t kMagic = 'B';
constexpr uint8_t kVersion = 2;
// magic, version, from, incarnation, id, count
constexpr size_t kHeaderBytes = 1 + 1 + 4 + 8 + 8 + 4;
// flags, depth, credit, url length, seed host length; then url, seed host,
// and with a sitemap flag: u8 sitemap_of length, sitemap_of. A batch
// without sitemaps is what version 2 wrote before them.
constexpr size_t kUrlFixedBytes = 1 + 2 + 8 + 4 + 2;
constexpr uint8_t kSeenMarkFlag = 1;
constexpr uint8_t kSitemapFlag = 2;       // frontier::ItemKind::kSitemap
constexpr uint8_t kChildSitemapFlag = 4;  // frontier::ItemKind::kChildSitemap
// --- Recrawl hand-off: with this flag, after everything above, u32
// capture length, capture (UrlMessage::capture). A batch without it is
// byte for byte what version 2 wrote before.
constexpr uint8_t kCaptureFlag = 8;
// --- end recrawl hand-off
// --- Sitemap hints: with this flag, after everything above: u8 changefreq,
// u32 lastmod (UrlMessage::changefreq, lastmod_s). A batch without hints
// is byte for byte what was written before them; a decoder from before
// them refuses a batch with hints as unknown flags (a mixed-version
// cluster exchanges no hints until every worker runs the new one). The
// high bit, so that flags added beside it do not collide. ---
constexpr uint8_t kHintsFlag = 0x80;
constexpr size_t kHintsBytes = 1 + 4;
constexpr uint8_t kMaxChangeFreq = 7;  // sitemap::ChangeFreq::kNever
bool HasHints(const UrlMessage& m) {
  return m.changefreq != 0 || m.lastmod_s != 0;
}
// --- end of sitemap hints ---
constexpr uint8_t kKnownFlags = kSeenMarkFlag | kSitemapFlag |
                                kChildSitemapFlag | kCaptureFlag | kHintsFlag;

}  // namespace

void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

void EncodeBatch(const BatchHeader& h, const std::vector<UrlMessage>& urls,
                 std::string* out) {
  size_t total = kHeaderBytes;
  for (const auto& m : urls) {
    total += kUrlFixedBytes + m.url.size() + m.seed_host.size() +
             (m.sitemap_kind != 0 ? 1 + m.sitemap_of.size() : 0) +
             (m.capture.empty() ? 0 : 4 + m.capture.size()) +
             (HasHints(m) ? kHintsBytes : 0);
  }
  out->reserve(out->size() + total);
  out->push_back(static_cast<char>(kMagic));
  out->push_back(static_cast<char>(kVersion));
  PutU32(h.from, out);
  PutU64(h.incarnation, out);
  PutU64(h.id, out);
  PutU32(static_cast<uint32_t>(urls.size()), out);
  for (const auto& m : urls) {
    uint8_t flags = m.seen_mark ? kSeenMarkFlag : 0;
    if (m.sitemap_kind == 1) flags |= kSitemapFlag;
    if (m.sitemap_kind == 2) flags |= kChildSitemapFlag;
    if (!m.capture.empty()) flags |= kCaptureFlag;
    if (HasHints(m)) flags |= kHintsFlag;
    out->push_back(static_cast<char>(flags));
    out->push_back(static_cast<char>(m.depth & 0xff));
    out->push_back(static_cast<char>(m.depth >> 8));
    PutU64(std::bit_cast<uint64_t>(m.credit), out);
    PutU32(static_cast<uint32_t>(m.url.size()), out);
    // ValidateMessage kept it to a host name's length.
    const size_t seed = std::min<size_t>(m.seed_host.size(), 0xffff);
    out->push_back(static_cast<char>(seed & 0xff));
    out->push_back(static_cast<char>(seed >> 8));
    out->append(m.url);
    out->append(m.seed_host, 0, seed);
    if ((flags & (kSitemapFlag | kChildSitemapFlag)) != 0) {
      // ValidateMessage kept it to 255 bytes.
      const size_t of = std::min<size_t>(m.sitemap_of.size(), 0xff);
      out->push_back(static_cast<char>(of));
      out->append(m.sitemap_of, 0, of);
    }
    if ((flags & kCaptureFlag) != 0) {
      // ValidateMessage kept it to MaxCaptureBytes.
      PutU32(static_cast<uint32_t>(m.capture.size()), out);
      out->append(m.capture);
    }
    if ((flags & kHintsFlag) != 0) {
      out->push_back(static_cast<char>(m.changefreq));
      PutU32(m.lastmod_s, out);
    }
  }
}

Status DecodeBatch(std::string_view in, BatchHeader* h,
                   std::vector<UrlMessage>* urls, uint32_t max_url_bytes) {
  if (in.size() < kHeaderBytes) return Status::Corruption("batch: truncated");
  const char* p = in.data();
  if (static_cast<uint8_t>(p[0]) != kMagic) {
    return Status::Corruption("batch: bad magic");
  }
  if (static_cast<uint8_t>(p[1]) != kVersion) {
    return Status::Corruption("batch: unknown version " +
                              std::to_string(static_cast<uint8_t>(p[1])));
  }
  h->from = GetU32(p + 2);
  h->incarnation = GetU64(p + 6);
  h->id = GetU64(p + 14);
  const uint32_t count = GetU32(p + 22);
  size_t pos = kHeaderBytes;
  // Each URL takes at least kUrlFixedBytes, so a hostile count cannot make
  // us reserve more than the input could hold.
  if (count > (in.size() - pos) / kUrlFixedBytes) {
    return Status::Corruption("batch: count exceeds size");
  }
  urls->clear();
  urls->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (in.size() - pos < kUrlFixedBytes) {
      return Status::Corruption("batch: truncated url header");
    }
    UrlMessage m;
    const uint8_t flags = static_cast<uint8_t>(p[pos]);
    if ((flags & ~kKnownFlags) != 0 ||
        (flags & (kSitemapFlag | kChildSitemapFlag)) ==
            (kSitemapFlag | kChildSitemapFlag)) {
      return Status::Corruption("batch: unknown url flags");
    }
    m.seen_mark = (flags & kSeenMarkFlag) != 0;
    m.depth =
        static_cast<uint16_t>(static_cast<unsigned char>(p[pos + 1]) |
                              (static_cast<unsigned char>(p[pos + 2]) << 8));
    m.credit = std::bit_cast<double>(GetU64(p + pos + 3));
    if (!std::isfinite(m.credit) || m.credit < 0) {
      return Status::Corruption("batch: bad credit");
    }
    const uint32_t len = GetU32(p + pos + 11);
    const uint32_t seed =
        static_cast<uint32_t>(static_cast<unsigned char>(p[pos + 15]) |
                              (static_cast<unsigned char>(p[pos + 16]) << 8));
    pos += kUrlFixedBytes;
    if (len == 0 || len > max_url_bytes) {
      return Status::Corruption("batch: bad url length " + std::to_string(len));
    }
    if (in.size() - pos < static_cast<size_t>(len) + seed) {
      return Status::Corruption("batch: truncated url");
    }
    m.url.assign(p + pos, len);
    pos += len;
    m.seed_host.assign(p + pos, seed);
    pos += seed;
    if ((flags & (kSitemapFlag | kChildSitemapFlag)) != 0) {
      m.sitemap_kind = (flags & kSitemapFlag) != 0 ? 1 : 2;
      if (pos >= in.size()) return Status::Corruption("batch: truncated url");
      const size_t of = static_cast<unsigned char>(p[pos]);
      ++pos;
      if (in.size() - pos < of)
        return Status::Corruption("batch: truncated url");
      m.sitemap_of.assign(p + pos, of);
      pos += of;
    }
    if ((flags & kCaptureFlag) != 0) {
      if (in.size() - pos < 4) {
        return Status::Corruption("batch: truncated capture");
      }
      const uint32_t clen = GetU32(p + pos);
      pos += 4;
      // Empty is never sent with the flag: a flag without a capture is not
      // what EncodeBatch writes.
      if (clen == 0 || clen > MaxCaptureBytes(max_url_bytes)) {
        return Status::Corruption("batch: bad capture length " +
                                  std::to_string(clen));
      }
      if (in.size() - pos < clen) {
        return Status::Corruption("batch: truncated capture");
      }
      m.capture.assign(p + pos, clen);
      pos += clen;
    }
    if ((flags & kHintsFlag) != 0) {
      if (in.size() - pos < kHintsBytes) {
        return Status::Corruption("batch: truncated hints");
      }
      m.changefreq = static_cast<uint8_t>(p[pos]);
      if (m.changefreq > kMaxChangeFreq) {
        return Status::Corruption("batch: bad changefreq");
      }
      m.lastmod_s = GetU32(p + pos + 1);
      // The flag without a hint is not what EncodeBatch writes (one
      // encoding per batch).
      if (!HasHints(m)) return Status::Corruption("batch: empty hints");
      pos += kHintsBytes;
    }
    urls->push_back(std::move(m));
  }
  if (pos != in.size()) return Status::Corruption("batch: trailing bytes");
  return Status::Ok();
}

void AppendFrameHeader(FrameType t, size_t body_len, std::string* out) {
  PutU32(static_cast<uint32_t>(body_len + 1), out);
  out->push_back(static_cast<char>(t));
}

Status SanitizeExchangeOptions(ExchangeOptions* o) {
  if (o->workers < 1 || o->workers > 65536) {
    return Status::InvalidArgument("exchange: workers must be in [1, 65536]");
  }
  if (o->self < 0 || o->self >= o->workers) {
    return Status::InvalidArgument("exchange: self must be in [0, workers)");
  }
  o->batch_urls = std::clamp(o->batch_urls, 1, 65536);
  o->flush_interval_ms = std::clamp(o->flush_interval_ms, 1, 60000);
  o->max_pending_urls = std::max(o->max_pending_urls, o->batch_urls);
  o->max_url_bytes = std::clamp(o->max_url_bytes, 1, 1 << 20);
  o->reconnect_min_ms = std::clamp(o->reconnect_min_ms, 1, 60000);
  o->reconnect_max_ms =
      std::clamp(o->reconnect_max_ms, o->reconnect_min_ms, 600000);
  return Status::Ok();
}

Status ValidateMessage(const UrlMessage& m, const ExchangeOptions& o) {
  if (m.url.empty()) return Status::InvalidArgument("exchange: empty url");
  if (m.url.size() > static_cast<size_t>(o.max_url_bytes)) {
    return Status::InvalidArgument("exchange: url longer than " +
                                   std::to_string(o.max_url_bytes) + " bytes");
  }
  if (!std::isfinite(m.credit) || m.credit < 0) {
    return Status::InvalidArgument("exchange: credit must be finite, >= 0");
  }
  if (m.seed_host.size() > 255) {
    return Status::InvalidArgument("exchange: seed host longer than 255");
  }
  if (m.sitemap_kind > 2 || m.sitemap_of.size() > 255) {
    return Status::InvalidArgument("exchange: bad sitemap kind or host");
  }
  if (m.capture.size() >
      MaxCaptureBytes(static_cast<size_t>(o.max_url_bytes))) {
    return Status::InvalidArgument("exchange: capture too long");
  }
  if (m.changefreq > kMaxChangeFreq) {
    return Status::InvalidArgument("exchange: changefreq must be 0..7");
  }
  return Status::Ok();
}

uint64_t NewIncarnation() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v;
}

uint64_t NowMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace crawld::cluster::wire
