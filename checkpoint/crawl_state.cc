#include "checkpoint/crawl_state.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace crawld::checkpoint {

namespace {

// Keys (docs/CHECKPOINT.md, "Key layout").
constexpr std::string_view kMetaKey = "meta";
constexpr std::string_view kInFlightKey = "inflight";
constexpr std::string_view kDoneKey = "done";
constexpr std::string_view kOutboxKey = "outbox";
constexpr std::string_view kCountsKey = "counts";
constexpr std::string_view kHostPrefix = "host/";
constexpr std::string_view kQueryVariantsPrefix = "trapq/";

// --- encoding: LevelDB's util/coding.h shapes -------------------------------

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutBytes(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

void PutDouble(std::string* out, double d) {
  PutFixed64(out, std::bit_cast<uint64_t>(d));
}

// A cursor over one value; every Get fails (and stays failed) on a short or
// malformed input, so a decoder checks ok() once at the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      if (in_.empty()) return Fail();
      const uint8_t b = static_cast<uint8_t>(in_.front());
      in_.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail();
  }
  uint64_t Fixed64() {
    if (in_.size() < 8) return Fail();
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(8);
    return v;
  }
  uint8_t Byte() {
    if (in_.empty()) return static_cast<uint8_t>(Fail());
    const uint8_t b = static_cast<uint8_t>(in_.front());
    in_.remove_prefix(1);
    return b;
  }
  std::string Bytes() {
    const uint64_t n = Varint();
    if (!ok_ || n > in_.size()) {
      Fail();
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  double Double() { return std::bit_cast<double>(Fixed64()); }
  // A count of entries, each at least `min_bytes` long: bounds the
  // reservation a corrupt count could ask for.
  size_t Count(size_t min_bytes) {
    const uint64_t n = Varint();
    if (ok_ && n > in_.size() / min_bytes) Fail();
    return ok_ ? static_cast<size_t>(n) : 0;
  }

  bool ok() const { return ok_; }
  bool done() const { return ok_ && in_.empty(); }

 private:
  uint64_t Fail() {
    ok_ = false;
    in_ = {};
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

Status Corrupt(std::string_view key) {
  return Status::Corruption("checkpoint: value of '" + std::string(key) +
                            "' does not decode");
}

// --- the values -------------------------------------------------------------

std::string EncodeMeta(const CrawlMeta& m) {
  std::string v;
  PutVarint(&v, kCrawlStateVersion);
  PutVarint(&v, m.pages);
  PutVarint(&v, m.bytes);
  PutVarint(&v, m.robots_fetches);
  PutBytes(&v, m.warc_file);
  PutVarint(&v, m.warc_size);
  PutVarint(&v, static_cast<uint64_t>(m.workers));
  PutBytes(&v, m.settle_file);
  PutVarint(&v, m.settle_offset);
  return v;
}

void PutUrlEntry(std::string* v, const UrlEntry& e) {
  PutBytes(v, e.host_key);
  PutBytes(v, e.url);
  PutBytes(v, e.seed_host);
  PutVarint(v, e.depth);
  v->push_back(static_cast<char>(e.redirects));
  v->push_back(static_cast<char>(e.retries));
  PutDouble(v, e.credit);
}

UrlEntry GetUrlEntry(Reader& r) {
  UrlEntry e;
  e.host_key = r.Bytes();
  e.url = r.Bytes();
  e.seed_host = r.Bytes();
  e.depth = static_cast<uint16_t>(r.Varint());
  e.redirects = r.Byte();
  e.retries = r.Byte();
  e.credit = r.Double();
  return e;
}

void PutRoutedUrl(std::string* v, const RoutedUrl& m) {
  PutVarint(v, static_cast<uint64_t>(m.to_worker));
  // Flags: 1 seen mark; 2 a sitemap, 4 a child sitemap (layout 4), which
  // sitemap_of follows; 8 sitemap hints, changefreq and lastmod last.
  uint8_t flags = m.seen_mark ? 1 : 0;
  if (m.sitemap_kind == 1) flags |= 2;
  if (m.sitemap_kind == 2) flags |= 4;
  if (m.changefreq != 0 || m.lastmod_s != 0) flags |= 8;
  v->push_back(static_cast<char>(flags));
  PutBytes(v, m.url);
  PutBytes(v, m.seed_host);
  PutVarint(v, m.depth);
  PutDouble(v, m.credit);
  if ((flags & 6) != 0) PutBytes(v, m.sitemap_of);
  if ((flags & 8) != 0) {
    v->push_back(static_cast<char>(m.changefreq));
    PutVarint(v, m.lastmod_s);
  }
}

RoutedUrl GetRoutedUrl(Reader& r) {
  RoutedUrl m;
  m.to_worker = static_cast<int>(r.Varint());
  const uint8_t flags = r.Byte();
  m.seen_mark = (flags & 1) != 0;
  m.url = r.Bytes();
  m.seed_host = r.Bytes();
  m.depth = static_cast<uint16_t>(r.Varint());
  m.credit = r.Double();
  if ((flags & 6) != 0) {
    m.sitemap_kind = (flags & 2) != 0 ? 1 : 2;
    m.sitemap_of = r.Bytes();
  }
  if ((flags & 8) != 0) {
    const uint8_t freq = r.Byte();
    m.changefreq = freq <= 7 ? freq : 0;  // sitemap::ChangeFreq::kNever
    m.lastmod_s =
        static_cast<uint32_t>(std::min<uint64_t>(r.Varint(), UINT32_MAX));
  }
  return m;
}

std::string EncodeHost(const HostState& h) {
  std::string v;
  uint8_t flags = 0;
  if (h.robots.has_value()) flags |= 1;
  if (h.robots.has_value() && h.robots->has_body) flags |= 2;
  v.push_back(static_cast<char>(flags));
  if (h.robots.has_value()) {
    PutFixed64(&v, static_cast<uint64_t>(h.robots->expires_unix_us));
    if (h.robots->has_body) PutBytes(&v, h.robots->body);
  }
  PutVarint(&v, h.admitted_urls);
  return v;
}

std::optional<HostState> DecodeHost(std::string_view value) {
  Reader r(value);
  HostState h;
  const uint8_t flags = r.Byte();
  if ((flags & 1) != 0) {
    RobotsCopy copy;
    copy.expires_unix_us = static_cast<int64_t>(r.Fixed64());
    copy.has_body = (flags & 2) != 0;
    if (copy.has_body) copy.body = r.Bytes();
    h.robots = std::move(copy);
  }
  h.admitted_urls = r.Varint();
  if (!r.done()) return std::nullopt;
  return h;
}

std::string QueryVariantsKey(uint64_t key) {
  std::string k(kQueryVariantsPrefix);
  // Big-endian: the keys sort by value (docs/CHECKPOINT.md).
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>(key >> (8 * i)));
  return k;
}

template <typename T, typename PutFn>
std::string EncodeList(const std::vector<T>& items, PutFn put) {
  std::string v;
  PutVarint(&v, items.size());
  for (const T& item : items) put(&v, item);
  return v;
}

}  // namespace

void EncodeCrawlState(const CrawlState& s, Store::Batch* batch) {
  batch->Put(kMetaKey, EncodeMeta(s.meta));
  batch->Put(kInFlightKey, EncodeList(s.in_flight, PutUrlEntry));
  batch->Put(kDoneKey, EncodeList(s.done, [](std::string* v, uint64_t fp) {
               PutVarint(v, fp);
             }));
  batch->Put(kOutboxKey, EncodeList(s.outbox, PutRoutedUrl));
  std::string counts;
  PutVarint(&counts, s.counts.size());
  for (const auto& [name, n] : s.counts) {
    PutBytes(&counts, name);
    PutVarint(&counts, n);
  }
  batch->Put(kCountsKey, counts);
  for (const auto& [host_key, host] : s.hosts) {
    batch->Put(std::string(kHostPrefix) + host_key, EncodeHost(host));
  }
  for (const auto& [key, variants] : s.query_variants) {
    std::string v;
    PutVarint(&v, variants);
    batch->Put(QueryVariantsKey(key), v);
  }
}

Result<std::optional<RobotsCopy>> LoadRobotsCopy(const Store& store,
                                                 std::string_view host_key) {
  const std::string key = std::string(kHostPrefix) + std::string(host_key);
  Result<std::optional<std::string>> value = store.Get(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<RobotsCopy>();
  std::optional<HostState> h = DecodeHost(**value);
  if (!h.has_value()) return Corrupt(key);
  return std::move(h->robots);
}

Result<CrawlMeta> LoadCrawlMeta(const Store& store) {
  CrawlMeta meta;
  Result<std::optional<std::string>> value = store.Get(kMetaKey);
  if (!value.ok()) return value.status();
  if (!value->has_value()) {
    // No checkpoint of this layout. Keys of the first layout ("meta/...")
    // would be misread as nothing: refuse rather than start over silently.
    bool old = false;
    Status scan =
        store.ScanPrefix("meta/", [&old](std::string_view, std::string_view) {
          old = true;
          return false;
        });
    if (!scan.ok()) return scan;
    if (old) {
      return Status::FailedPrecondition(
          "checkpoint: written by an older crawld (layout 1); this one "
          "reads layout " +
          std::to_string(kCrawlStateVersion) +
          " (docs/CHECKPOINT.md): start the crawl in a new data directory");
    }
    return meta;
  }
  Reader r(**value);
  const uint64_t version = r.Varint();
  if (r.ok() && version != kCrawlStateVersion &&
      version != kCrawlStateVersionNoSitemaps &&
      version != kCrawlStateVersionNoSettle) {
    return Status::FailedPrecondition(
        "checkpoint: layout " + std::to_string(version) +
        ", this crawld reads layout " + std::to_string(kCrawlStateVersion) +
        " (docs/CHECKPOINT.md)");
  }
  meta.pages = r.Varint();
  meta.bytes = r.Varint();
  meta.robots_fetches = r.Varint();
  meta.warc_file = r.Bytes();
  meta.warc_size = r.Varint();
  meta.workers = static_cast<int>(r.Varint());
  if (version != kCrawlStateVersionNoSettle) {
    meta.settle_file = r.Bytes();
    meta.settle_offset = r.Varint();
  }
  if (!r.done() || meta.workers < 1) return Corrupt(kMetaKey);
  return meta;
}

Result<CrawlState> LoadCrawlState(const Store& store, const LoadCallbacks& on) {
  CrawlState s;
  auto get = [&store](std::string_view key) -> Result<std::string> {
    Result<std::optional<std::string>> v = store.Get(key);
    if (!v.ok()) return v.status();
    return v->value_or(std::string());
  };
  Result<CrawlMeta> meta = LoadCrawlMeta(store);
  if (!meta.ok()) return meta.status();
  s.meta = std::move(meta).value();

  struct ListKey {
    std::string_view key;
    std::function<void(Reader&)> item;
    size_t min_bytes;
  };
  const ListKey lists[] = {
      {kInFlightKey, [&s](Reader& r) { s.in_flight.push_back(GetUrlEntry(r)); },
       14},
      {kDoneKey, [&s](Reader& r) { s.done.push_back(r.Varint()); }, 1},
      {kOutboxKey, [&s](Reader& r) { s.outbox.push_back(GetRoutedUrl(r)); },
       13},
      {kCountsKey,
       [&s](Reader& r) {
         std::string name = r.Bytes();
         const uint64_t n = r.Varint();
         s.counts[std::move(name)] = n;
       },
       2},
  };
  for (const ListKey& list : lists) {
    Result<std::string> value = get(list.key);
    if (!value.ok()) return value.status();
    if (value->empty()) continue;  // no checkpoint yet
    Reader r(*value);
    const size_t n = r.Count(list.min_bytes);
    for (size_t i = 0; i < n && r.ok(); ++i) list.item(r);
    if (!r.done()) return Corrupt(list.key);
  }

  Status bad = Status::Ok();
  Status scan = store.ScanPrefix(
      kHostPrefix, [&](std::string_view key, std::string_view value) {
        std::optional<HostState> h = DecodeHost(value);
        if (!h.has_value()) {
          bad = Corrupt(key);
          return false;
        }
        if (on.host) on.host(key.substr(kHostPrefix.size()), std::move(*h));
        return true;
      });
  if (!scan.ok()) return scan;
  if (!bad.ok()) return bad;
  scan = store.ScanPrefix(
      kQueryVariantsPrefix, [&](std::string_view key, std::string_view value) {
        Reader r(value);
        const uint64_t variants = r.Varint();
        if (key.size() != kQueryVariantsPrefix.size() + 8 || !r.done()) {
          bad = Corrupt(key);
          return false;
        }
        uint64_t k = 0;
        for (char c : key.substr(kQueryVariantsPrefix.size())) {
          k = (k << 8) | static_cast<uint8_t>(c);
        }
        if (on.query_variants) {
          on.query_variants(k, static_cast<uint32_t>(variants));
        }
        return true;
      });
  if (!scan.ok()) return scan;
  if (!bad.ok()) return bad;
  return s;
}

std::string EncodeInboxFrame(const std::vector<RoutedUrl>& batch) {
  const std::string payload = EncodeList(batch, PutRoutedUrl);
  std::string frame;
  frame.reserve(8 + payload.size());
  const uint32_t len = static_cast<uint32_t>(payload.size());
  const uint32_t sum = XXH32(payload.data(), payload.size(), 0);
  for (int i = 0; i < 4; ++i)
    frame.push_back(static_cast<char>(len >> (8 * i)));
  for (int i = 0; i < 4; ++i)
    frame.push_back(static_cast<char>(sum >> (8 * i)));
  frame += payload;
  return frame;
}

size_t DecodeInboxLog(std::string_view log,
                      const std::function<void(RoutedUrl&&)>& out) {
  size_t frames = 0;
  while (log.size() >= 8) {
    uint32_t len = 0, sum = 0;
    for (int i = 0; i < 4; ++i) {
      len |= static_cast<uint32_t>(static_cast<uint8_t>(log[i])) << (8 * i);
      sum |= static_cast<uint32_t>(static_cast<uint8_t>(log[4 + i])) << (8 * i);
    }
    if (log.size() - 8 < len) break;
    const std::string_view payload = log.substr(8, len);
    if (XXH32(payload.data(), payload.size(), 0) != sum) break;
    Reader r(payload);
    std::vector<RoutedUrl> batch;
    const size_t n = r.Count(13);
    for (size_t i = 0; i < n && r.ok(); ++i) batch.push_back(GetRoutedUrl(r));
    if (!r.done()) break;
    for (RoutedUrl& m : batch) out(std::move(m));
    ++frames;
    log.remove_prefix(8 + len);
  }
  return frames;
}

}  // namespace crawld::checkpoint
