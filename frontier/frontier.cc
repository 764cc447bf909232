#include "frontier/frontier.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "base/fd_io.h"
#include "frontier/ip_gate.h"
#include "frontier/spill_items.h"

namespace crawld::frontier {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// now + delay without overflow: a huge Retry-After means "not in this run",
// never a time in the past.
int64_t SaturatingAdd(int64_t now_us, int64_t delay_us) {
  if (delay_us > 0 && now_us > kNever - delay_us) return kNever;
  return now_us + delay_us;
}

Options Sanitize(Options o) {
  o.min_delay_us = std::max<int64_t>(o.min_delay_us, 0);
  o.max_delay_us = std::max(o.max_delay_us, o.min_delay_us);
  if (!(o.delay_factor >= 0.0)) o.delay_factor = 0.0;  // also catches NaN
  o.delay_factor = std::min(o.delay_factor, 1000.0);
  o.max_crawl_delay_us = std::max<int64_t>(o.max_crawl_delay_us, 0);
  o.max_consecutive_errors = std::max(o.max_consecutive_errors, 1);
  o.error_backoff_base_us = std::max<int64_t>(o.error_backoff_base_us, 0);
  o.max_backoff_us = std::max(o.max_backoff_us, o.error_backoff_base_us);
  if (!(o.seed_credit >= 0.0)) o.seed_credit = 0.0;
  if (!(o.tax >= 0.0)) o.tax = 0.0;
  o.tax = std::min(o.tax, 1.0);
  o.lambda_interval = std::max<uint64_t>(o.lambda_interval, 1);
  if (!(o.budget_pages_per_credit >= 0.0)) o.budget_pages_per_credit = 0.0;
  o.head_items = std::max<size_t>(o.head_items, 1);
  o.low_water_items = std::clamp<size_t>(o.low_water_items, 1, o.head_items);
  o.chunk_items = std::max<size_t>(o.chunk_items, 1);
  // At most 1 GiB, so that a chunk's offset fits the 32 bits ChunkRef has.
  o.segment_bytes = std::clamp<uint64_t>(o.segment_bytes, 4096, 1u << 30);
  return o;
}

double CleanCredit(double c) { return c >= 0.0 ? c : 0.0; }  // NaN too

// Memory estimate of one queued item: the struct plus the URL's heap block
// (none while it fits the small-string buffer).
size_t ItemBytes(const Item& item) {
  auto heap = [](const std::string& s) {
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
  };
  return sizeof(Item) + heap(item.url) + heap(item.seed_host) +
         heap(item.sitemap_of);
}

// --- On-disk formats (native byte order; little-endian hosts only) ---
//
// Chunk record in a segment file:
//   u32 magic, u32 item count, u32 payload bytes, u64 XXH3 of payload,
//   payload = per item: u32 url bytes, url, u64 fingerprint, u16 depth,
//   u8 redirects, u8 retries, f64 credit, u64 redirect_from, u16 seed host
//   bytes, seed host, u8 kind (ItemKind), u8 sitemap_of bytes, sitemap_of,
//   u8 changefreq (Item::changefreq; bit 7: Item::revisit).
//   Older chunks are still read: magic "FCK3" (before sitemap hints) ends
//   each item at sitemap_of (changefreq 0), "FCK2" (before sitemaps) at
//   the seed host (a page).
// Manifest (spill_dir/MANIFEST, replaced by rename):
//   8 bytes magic, u64 payload bytes, u64 XXH3 of payload, payload =
//   f64 lambda, u64 hosts, per host: u32 key bytes, key, u8 retired,
//   i64 crawl delay, f64 credit, f64 inbound credit, u64 pages, u64 fetched,
//   u64 dropped, u32 chunks, per chunk: u32 segment, u32 count, u64 offset,
//   u32 bytes.
using spill::kChunkMagic;
using spill::kChunkMagicNoHints;
using spill::kChunkMagicNoKind;
constexpr size_t kChunkHeader = 4 + 4 + 4 + 8;
constexpr uint8_t kMaxChangeFreq = 7;  // sitemap::ChangeFreq::kNever
constexpr char kManifestMagic[8] = {'C', 'R', 'W', 'L', 'F', 'R', 'N', '1'};
constexpr uint32_t kMaxUrlBytes = 1u << 24;  // sanity bound when decoding

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Bounds-checked reader over a byte string; any overrun sets !ok.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <typename T>
  T Get() {
    T v{};
    if (data_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view Bytes(size_t n) {
    if (data_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  bool ok() const { return ok_; }
  bool done() const { return pos_ == data_.size(); }
  size_t pos() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

namespace spill {

void EncodeItem(std::string* out, const Item& item) {
  Put<uint32_t>(out, static_cast<uint32_t>(item.url.size()));
  out->append(item.url);
  Put<uint64_t>(out, item.fingerprint);
  Put<uint16_t>(out, item.depth);
  Put<uint8_t>(out, item.redirects);
  Put<uint8_t>(out, item.retries);
  Put<double>(out, item.credit);
  Put<uint64_t>(out, item.redirect_from);
  // Host names are at most 253 bytes; a longer one is not a host.
  const size_t seed = std::min<size_t>(item.seed_host.size(), 0xffff);
  Put<uint16_t>(out, static_cast<uint16_t>(seed));
  out->append(item.seed_host, 0, seed);
  Put<uint8_t>(out, static_cast<uint8_t>(item.kind));
  const size_t of = std::min<size_t>(item.sitemap_of.size(), 0xff);
  Put<uint8_t>(out, static_cast<uint8_t>(of));
  out->append(item.sitemap_of, 0, of);
  // Bit 7: Item::revisit (changefreq is at most 7).
  Put<uint8_t>(
      out, static_cast<uint8_t>(item.changefreq | (item.revisit ? 0x80 : 0)));
}

namespace {

// Appends the next `count` items `r` holds, laid out as `magic` says (a
// known one); false if they are not there or malformed.
bool DecodeRun(Reader& r, uint32_t magic, uint32_t count,
               std::vector<Item>* out) {
  for (uint32_t i = 0; i < count; ++i) {
    Item item;
    const uint32_t len = r.Get<uint32_t>();
    if (len > kMaxUrlBytes) return false;
    item.url = std::string(r.Bytes(len));
    item.fingerprint = r.Get<uint64_t>();
    item.depth = r.Get<uint16_t>();
    item.redirects = r.Get<uint8_t>();
    item.retries = r.Get<uint8_t>();
    item.credit = CleanCredit(r.Get<double>());
    item.redirect_from = r.Get<uint64_t>();
    item.seed_host = std::string(r.Bytes(r.Get<uint16_t>()));
    if (magic != kChunkMagicNoKind) {
      const uint8_t kind = r.Get<uint8_t>();
      if (kind > static_cast<uint8_t>(ItemKind::kChildSitemap)) return false;
      item.kind = static_cast<ItemKind>(kind);
      item.sitemap_of = std::string(r.Bytes(r.Get<uint8_t>()));
    }
    if (magic == kChunkMagic) {
      // An unknown value is no hint rather than a lost chunk.
      const uint8_t byte = r.Get<uint8_t>();
      const uint8_t freq = byte & 0x7f;
      item.changefreq = freq <= kMaxChangeFreq ? freq : 0;
      item.revisit = (byte & 0x80) != 0;
    }
    if (!r.ok()) return false;
    out->push_back(std::move(item));
  }
  return true;
}

}  // namespace

bool DecodeItems(std::string_view payload, uint32_t magic, uint32_t count,
                 std::vector<Item>* out) {
  if (magic != kChunkMagic && magic != kChunkMagicNoHints &&
      magic != kChunkMagicNoKind) {
    return false;
  }
  Reader r(payload);
  const size_t first = out->size();
  if (!DecodeRun(r, magic, count, out) || !r.done()) {
    out->resize(first);
    return false;
  }
  return true;
}

}  // namespace spill

namespace {

std::string ErrnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  if (WriteFull(fd, data.data(), data.size())) return Status::Ok();
  return Status::IOError(ErrnoText("write " + path));
}

Status ReadAllAt(int fd, char* buf, size_t len, uint64_t offset,
                 const std::string& path) {
  switch (PreadFull(fd, buf, len, offset)) {
    case ReadResult::kDone:
      return Status::Ok();
    case ReadResult::kEnd:
      return Status::Corruption(path + ": chunk past end of file");
    case ReadResult::kError:
      break;
  }
  return Status::IOError(ErrnoText("read " + path));
}

}  // namespace

// One spilled run of a host's queue, in a segment file.
// 24 bytes: a host queue holds one per spilled chunk, and with 100,000
// hosts (tails of a few items each) there are millions.
struct ChunkRef {
  uint32_t segment = 0;
  uint32_t count = 0;
  uint32_t offset = 0;  // < segment_bytes (at most 1 GiB)
  uint32_t bytes = 0;
  // Items of the chunk already moved to the head (a refill under memory
  // pressure takes only what the head has room for), and where in the
  // payload the next one begins, so a refill decodes only what it takes.
  uint32_t taken = 0;
  uint32_t taken_bytes = 0;
};

// A FIFO queue in a vector read from `first_`: what a host keeps in memory
// (its head, its spilled chunks' references). Not a std::deque, which
// allocates about 500 bytes even when empty: two per host were 100 MB of
// the frontier's memory with 100,000 hosts.
template <typename T>
class FifoVector {
 public:
  bool empty() const { return first_ == items_.size(); }
  size_t size() const { return items_.size() - first_; }
  T& front() { return items_[first_]; }
  const T& front() const { return items_[first_]; }
  void push_back(T v) { items_.push_back(std::move(v)); }
  // O(size) when nothing was popped before it (a put-back is rare).
  void push_front(T v) {
    if (first_ > 0) {
      items_[--first_] = std::move(v);
    } else {
      items_.insert(items_.begin(), std::move(v));
    }
  }
  void pop_front() {
    if (++first_ == items_.size()) {
      Release();
    } else if (first_ >= 8 && 2 * first_ >= items_.size()) {
      // Amortized O(1), and the capacity stays within a few times what is
      // held: memory_bytes_ counts items, not a vector's spare room.
      items_.erase(items_.begin(),
                   items_.begin() + static_cast<ptrdiff_t>(first_));
      first_ = 0;
      if (items_.capacity() > 4 * items_.size() + 16) items_.shrink_to_fit();
    }
  }
  typename std::vector<T>::iterator begin() {
    return items_.begin() + static_cast<ptrdiff_t>(first_);
  }
  typename std::vector<T>::iterator end() { return items_.end(); }
  typename std::vector<T>::const_iterator begin() const {
    return items_.begin() + static_cast<ptrdiff_t>(first_);
  }
  typename std::vector<T>::const_iterator end() const { return items_.end(); }
  void Release() {
    std::vector<T>().swap(items_);
    first_ = 0;
  }
  // For MergeSmallChunks, which replaces a run at the end.
  std::vector<T>& items() { return items_; }
  size_t first() const { return first_; }

 private:
  std::vector<T> items_;
  size_t first_ = 0;
};

// Append-only segment files. A segment is referenced by live chunks (in
// host queues) and by the chunks of the last manifest; it is deleted when
// neither refers to it any more and it is no longer appended to.
struct Frontier::SpillStore {
  struct Segment {
    int fd = -1;
    uint64_t size = 0;
    uint64_t refs = 0;
    bool dirty = false;  // written since the last sync
  };

  std::string dir;
  uint64_t segment_bytes = 0;
  std::map<uint32_t, Segment> segments;
  uint32_t current = 0;  // 0: no segment open for appends
  uint32_t next_id = 1;
  // The references the last manifest holds, per segment (count): kept as
  // counts, since a copy of every ChunkRef doubled the frontier's memory.
  std::map<uint32_t, uint64_t> manifest_refs;
  std::string scratch;
  bool opened = false;  // Open() succeeded: unreferenced files may go

  ~SpillStore() {
    // Live queues die with the frontier; only what the manifest refers to
    // is worth keeping on disk. A store whose Open() failed deletes nothing:
    // the files are what the operator needs to look into.
    std::set<uint32_t> keep;
    for (const auto& [id, refs] : manifest_refs) keep.insert(id);
    for (auto& [id, seg] : segments) {
      if (seg.fd >= 0) ::close(seg.fd);
      if (opened && keep.count(id) == 0) ::unlink(Path(id).c_str());
    }
  }

  std::string Path(uint32_t id) const {
    char name[32];
    std::snprintf(name, sizeof(name), "seg-%08u.log", id);
    return dir + "/" + name;
  }

  static bool ParseName(const std::string& name, uint32_t* id) {
    unsigned v = 0;
    char tail[8] = {0};
    if (std::sscanf(name.c_str(), "seg-%8u.%4s", &v, tail) != 2) return false;
    if (std::string(tail) != "log" || name.size() != 16) return false;
    *id = v;
    return true;
  }

  void Ref(uint32_t id) { ++segments[id].refs; }

  void Unref(uint32_t id, uint64_t n = 1) {
    auto it = segments.find(id);
    if (it == segments.end() || it->second.refs == 0) return;
    it->second.refs -= std::min(n, it->second.refs);
    if (it->second.refs == 0 && id != current) {
      if (it->second.fd >= 0) ::close(it->second.fd);
      ::unlink(Path(id).c_str());
      segments.erase(it);
    }
  }

  // Appends one chunk of `items`; the caller takes the returned reference
  // (already counted in refs).
  template <typename It>
  Result<ChunkRef> Append(It begin, It end) {
    if (current == 0 || segments[current].size >= segment_bytes) {
      if (Status s = Roll(); !s.ok()) return s;
    }
    scratch.assign(kChunkHeader, '\0');
    uint32_t count = 0;
    for (It it = begin; it != end; ++it, ++count) {
      spill::EncodeItem(&scratch, *it);
    }
    const uint32_t payload =
        static_cast<uint32_t>(scratch.size() - kChunkHeader);
    const uint64_t sum = XXH3_64bits(scratch.data() + kChunkHeader, payload);
    char* h = scratch.data();
    std::memcpy(h, &kChunkMagic, 4);
    std::memcpy(h + 4, &count, 4);
    std::memcpy(h + 8, &payload, 4);
    std::memcpy(h + 12, &sum, 8);
    Segment& seg = segments[current];
    if (Status s = WriteAll(seg.fd, scratch, Path(current)); !s.ok()) {
      // A partial record may be on disk: never append after it.
      Status r = Roll();
      (void)r;
      return s;
    }
    // Roll() above keeps seg.size below segment_bytes (at most 1 GiB).
    ChunkRef ref{current, count, static_cast<uint32_t>(seg.size),
                 static_cast<uint32_t>(scratch.size())};
    seg.size += scratch.size();
    seg.dirty = true;
    ++seg.refs;
    return ref;
  }

  Status Roll() {
    const uint32_t old = current;
    const uint32_t id = next_id;
    const std::string path = Path(id);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError(ErrnoText("open " + path));
    ++next_id;
    segments[id].fd = fd;
    current = id;
    if (old != 0) {
      // Unref() spares the current segment; now it is an ordinary one.
      auto it = segments.find(old);
      if (it != segments.end() && it->second.refs == 0) {
        ++it->second.refs;
        Unref(old);
      }
    }
    return Status::Ok();
  }

  // Appends the chunk's items not taken yet, at most `max_items` of them,
  // to `out`; `next_byte` (if given) gets where in the payload the first
  // item left begins. The whole chunk is read and its checksum checked.
  Status Read(const ChunkRef& ref, std::vector<Item>* out,
              uint32_t max_items = UINT32_MAX, uint32_t* next_byte = nullptr) {
    auto it = segments.find(ref.segment);
    if (it == segments.end() || it->second.fd < 0) {
      return Status::NotFound(Path(ref.segment) + ": segment missing");
    }
    const std::string path = Path(ref.segment);
    if (ref.bytes < kChunkHeader) return Status::Corruption(path + ": chunk");
    scratch.resize(ref.bytes);
    if (Status s = ReadAllAt(it->second.fd, scratch.data(), ref.bytes,
                             ref.offset, path);
        !s.ok()) {
      return s;
    }
    Reader r(scratch);
    const uint32_t magic = r.Get<uint32_t>();
    const uint32_t count = r.Get<uint32_t>();
    const uint32_t payload = r.Get<uint32_t>();
    const uint64_t sum = r.Get<uint64_t>();
    if ((magic != kChunkMagic && magic != kChunkMagicNoHints &&
         magic != kChunkMagicNoKind) ||
        count != ref.count || payload != ref.bytes - kChunkHeader ||
        sum != XXH3_64bits(scratch.data() + kChunkHeader, payload)) {
      return Status::Corruption(path + ": bad chunk at offset " +
                                std::to_string(ref.offset));
    }
    if (ref.taken == 0 && max_items >= count) {
      if (!spill::DecodeItems(
              std::string_view(scratch).substr(kChunkHeader, payload), magic,
              count, out)) {
        return Status::Corruption(path + ": undecodable chunk at offset " +
                                  std::to_string(ref.offset));
      }
      if (next_byte != nullptr) *next_byte = payload;
      return Status::Ok();
    }
    const uint32_t n = std::min(max_items, count - std::min(count, ref.taken));
    const size_t first = out->size();
    Reader rest(std::string_view(scratch).substr(
        kChunkHeader + std::min(ref.taken_bytes, payload)));
    if (ref.taken > count || ref.taken_bytes > payload ||
        !spill::DecodeRun(rest, magic, n, out) ||
        (ref.taken + n == count && !rest.done())) {
      out->resize(first);
      return Status::Corruption(path + ": undecodable chunk at offset " +
                                std::to_string(ref.offset));
    }
    if (next_byte != nullptr) {
      *next_byte = ref.taken_bytes + static_cast<uint32_t>(rest.pos());
    }
    return Status::Ok();
  }

  Status Sync() {
    for (auto& [id, seg] : segments) {
      if (!seg.dirty) continue;
      if (::fdatasync(seg.fd) != 0) {
        return Status::IOError(ErrnoText("fdatasync " + Path(id)));
      }
      seg.dirty = false;
    }
    return Status::Ok();
  }
};

struct Frontier::HostState {
  const std::string* key = nullptr;  // the map's key; nodes never move
  uint64_t seq = 0;                  // creation order, the last tie-break
  // Queue order: head, then chunks (on disk), then tail.
  FifoVector<Item> head;
  FifoVector<ChunkRef> chunks;
  std::vector<Item> tail;
  size_t queued = 0;
  bool in_tail_list = false;
  int in_flight = 0;               // fetches running (page or robots.txt)
  int max_in_flight = 1;           // 1 unless an admin override says otherwise
  int64_t delay_override_us = -1;  // replaces the gap when >= 0
  bool retired = false;
  int64_t next_fetch_us = 0;
  int64_t last_complete_us = -1;  // -1: never completed
  int64_t crawl_delay_us = 0;
  int consecutive_errors = 0;
  uint64_t fetched = 0;
  uint64_t dropped = 0;
  // AOPIC. While queued > 0 the credit is credit_raw + shared_sum_.
  double credit_raw = 0.0;
  double inbound_credit = 0.0;
  uint64_t pages = 0;
  uint64_t version = 0;  // bumped whenever older heap entries become stale
};

struct Frontier::HeapEntry {
  int64_t next_fetch_us;
  double credit;
  uint64_t seq;
  uint64_t version;
  HostState* host;
};

namespace {

// std::*_heap builds a max-heap; "a < b" here means a is served after b.
struct ServedLater {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    if (a.next_fetch_us != b.next_fetch_us) {
      return a.next_fetch_us > b.next_fetch_us;
    }
    if (a.credit != b.credit) return a.credit < b.credit;
    return a.seq > b.seq;
  }
};

struct LessCredit {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    if (a.credit != b.credit) return a.credit < b.credit;
    if (a.next_fetch_us != b.next_fetch_us) {
      return a.next_fetch_us > b.next_fetch_us;
    }
    return a.seq > b.seq;
  }
};

}  // namespace

size_t Frontier::KeyHash::operator()(std::string_view s) const noexcept {
  return std::hash<std::string_view>()(s);
}

Frontier::Frontier(const Options& options) : options_(Sanitize(options)) {
  options_.spill_dir.clear();
}

Frontier::~Frontier() = default;

Result<std::unique_ptr<Frontier>> Frontier::Open(const Options& options) {
  std::unique_ptr<Frontier> f(new Frontier(options));
  if (options.spill_dir.empty()) return f;
  f->options_.spill_dir = options.spill_dir;
  const std::string& dir = options.spill_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(dir + ": " + ec.message());
  auto store = std::make_unique<SpillStore>();
  store->dir = dir;
  store->segment_bytes = f->options_.segment_bytes;

  // Segments on disk, before anything refers to them.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    uint32_t id = 0;
    if (!SpillStore::ParseName(entry.path().filename().string(), &id)) continue;
    store->segments[id];  // fd opened below if referenced
    store->next_id = std::max(store->next_id, id + 1);
  }
  if (ec) return Status::IOError(dir + ": " + ec.message());

  const std::string manifest = dir + "/MANIFEST";
  std::string data;
  if (std::filesystem::exists(manifest, ec)) {
    int fd = ::open(manifest.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(ErrnoText("open " + manifest));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Status s = Status::IOError(ErrnoText("read " + manifest));
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }

  if (!data.empty()) {
    Reader head(data);
    std::string_view magic = head.Bytes(8);
    const uint64_t len = head.Get<uint64_t>();
    const uint64_t sum = head.Get<uint64_t>();
    if (!head.ok() || magic != std::string_view(kManifestMagic, 8) ||
        len != data.size() - 24 ||
        sum != XXH3_64bits(data.data() + 24, data.size() - 24)) {
      return Status::Corruption(manifest + ": bad header or checksum");
    }
    Reader r(std::string_view(data).substr(24));
    f->lambda_ = CleanCredit(r.Get<double>());
    const uint64_t nhosts = r.Get<uint64_t>();
    for (uint64_t i = 0; i < nhosts && r.ok(); ++i) {
      const uint32_t klen = r.Get<uint32_t>();
      std::string key(r.Bytes(klen));
      if (!r.ok()) break;
      HostState& h = f->GetOrCreate(key);
      h.retired = r.Get<uint8_t>() != 0;
      h.crawl_delay_us = r.Get<int64_t>();
      h.credit_raw = CleanCredit(r.Get<double>());
      h.inbound_credit = CleanCredit(r.Get<double>());
      h.pages = r.Get<uint64_t>();
      h.fetched = r.Get<uint64_t>();
      h.dropped = r.Get<uint64_t>();
      if (h.retired) ++f->retired_hosts_;
      const uint32_t nchunks = r.Get<uint32_t>();
      for (uint32_t c = 0; c < nchunks && r.ok(); ++c) {
        ChunkRef ref;
        ref.segment = r.Get<uint32_t>();
        ref.count = r.Get<uint32_t>();
        const uint64_t offset = r.Get<uint64_t>();
        if (offset > UINT32_MAX) {
          return Status::Corruption(manifest + ": chunk offset " +
                                    std::to_string(offset));
        }
        ref.offset = static_cast<uint32_t>(offset);
        ref.bytes = r.Get<uint32_t>();
        if (!r.ok()) break;
        if (store->segments.count(ref.segment) == 0) {
          return Status::Corruption(manifest + ": refers to missing " +
                                    store->Path(ref.segment));
        }
        store->Ref(ref.segment);  // the manifest's reference
        store->Ref(ref.segment);  // the live queue's
        ++store->manifest_refs[ref.segment];
        h.chunks.push_back(ref);
        h.queued += ref.count;
      }
    }
    if (!r.ok() || !r.done()) {
      return Status::Corruption(manifest + ": truncated host records");
    }
  }

  // Open what the checkpoint refers to; only then drop the rest.
  for (auto& [id, seg] : store->segments) {
    if (seg.refs == 0) continue;
    const std::string path = store->Path(id);
    seg.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (seg.fd < 0) return Status::IOError(ErrnoText("open " + path));
  }
  for (auto it = store->segments.begin(); it != store->segments.end();) {
    if (it->second.refs == 0) {
      ::unlink(store->Path(it->first).c_str());
      it = store->segments.erase(it);
    } else {
      ++it;
    }
  }
  store->opened = true;
  f->store_ = std::move(store);

  // Every active host first, so that the heads' share of the memory
  // budget (HeadCap) is known before the first refill.
  for (auto& [key, hp] : f->hosts_) {
    HostState& h = *hp;
    if (h.queued == 0) continue;
    f->queued_ += h.queued;
    f->OnQueuedChange(h, 0);
  }
  for (auto& [key, hp] : f->hosts_) {
    HostState& h = *hp;
    if (h.queued == 0) continue;
    const size_t before = h.queued;
    f->Refill(h);  // may lose unreadable chunks (counted)
    if (h.queued == 0) f->OnQueuedChange(h, before);
    f->Reschedule(h);
  }
  return f;
}

Frontier::HostState* Frontier::Find(std::string_view host_key) {
  auto it = hosts_.find(host_key);
  return it == hosts_.end() ? nullptr : it->second.get();
}

Frontier::HostState& Frontier::GetOrCreate(std::string_view host_key) {
  auto it = hosts_.find(host_key);
  if (it == hosts_.end()) {
    it = hosts_.emplace(std::string(host_key), std::make_unique<HostState>())
             .first;
    it->second->key = &it->first;
    it->second->seq = next_host_seq_++;
    it->second->credit_raw = options_.seed_credit;
  }
  return *it->second;
}

uint64_t Frontier::PageBudget(const HostState& host) const {
  if (!options_.credit_scheduling || options_.base_page_budget == 0) return 0;
  const double extra = options_.budget_pages_per_credit * host.inbound_credit;
  const double total = static_cast<double>(options_.base_page_budget) + extra;
  if (!(total < 1.8e19)) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(total);
}

double Frontier::CreditOf(const HostState& host) const {
  return host.queued > 0 ? host.credit_raw + shared_sum_ : host.credit_raw;
}

bool Frontier::Schedulable(const HostState& host) const {
  if (host.in_flight >= host.max_in_flight || host.retired ||
      host.queued == 0) {
    return false;
  }
  const uint64_t budget = PageBudget(host);
  // A revisit at the head goes whatever the budget (Item::revisit).
  return budget == 0 || host.pages < budget ||
         (!host.head.empty() && host.head.front().revisit);
}

bool Frontier::AtPageBudget(std::string_view host_key) const {
  auto it = hosts_.find(host_key);
  if (it == hosts_.end()) return false;
  const uint64_t budget = PageBudget(*it->second);
  return budget != 0 && it->second->pages >= budget;
}

void Frontier::Reschedule(HostState& host) {
  ++host.version;
  if (Schedulable(host)) {
    // Credit mode orders by credit_raw: all entries are of active hosts,
    // whose credits differ from it by the same shared_sum_.
    const double credit =
        options_.credit_scheduling ? host.credit_raw : host.head.front().credit;
    time_heap_.push_back(
        HeapEntry{host.next_fetch_us, credit, host.seq, host.version, &host});
    std::push_heap(time_heap_.begin(), time_heap_.end(), ServedLater());
  }
  // Each host has at most one valid entry; rebuild once garbage dominates so
  // the heaps stay O(hosts) however often heads and credits change.
  if (time_heap_.size() + ready_heap_.size() > 2 * hosts_.size() + 64) {
    auto stale = [](const HeapEntry& e) {
      return e.version != e.host->version;
    };
    std::erase_if(time_heap_, stale);
    std::make_heap(time_heap_.begin(), time_heap_.end(), ServedLater());
    std::erase_if(ready_heap_, stale);
    std::make_heap(ready_heap_.begin(), ready_heap_.end(), LessCredit());
  }
  DropStaleTops();
}

void Frontier::DropStaleTops() {
  while (!time_heap_.empty() &&
         time_heap_.front().version != time_heap_.front().host->version) {
    std::pop_heap(time_heap_.begin(), time_heap_.end(), ServedLater());
    time_heap_.pop_back();
  }
  while (!ready_heap_.empty() &&
         ready_heap_.front().version != ready_heap_.front().host->version) {
    std::pop_heap(ready_heap_.begin(), ready_heap_.end(), LessCredit());
    ready_heap_.pop_back();
  }
}

void Frontier::OnQueuedChange(HostState& host, size_t before) {
  if (before == 0 && host.queued > 0) {
    ++active_hosts_;
    host.credit_raw -= shared_sum_;  // joins the share-outs from now on
  } else if (before > 0 && host.queued == 0) {
    --active_hosts_;
    host.credit_raw += shared_sum_;
  }
}

void Frontier::AddItemBytes(const Item& item) {
  memory_bytes_ += ItemBytes(item);
  ++memory_items_;
}

void Frontier::SubItemBytes(const Item& item) {
  memory_bytes_ -= std::min(memory_bytes_, ItemBytes(item));
  if (memory_items_ > 0) --memory_items_;
}

size_t Frontier::HeadCap() const {
  if (store_ == nullptr) return options_.head_items;
  // Heads are never spilled, so with many active hosts the heads decide
  // the memory: they get half of the budget (a refill under pressure stops
  // at the cap), and the tails, spilled first, the other half.
  const size_t item =
      memory_items_ > 0 ? std::max(memory_bytes_ / memory_items_, sizeof(Item))
                        : sizeof(Item) + 64;
  const size_t hosts = std::max<size_t>(active_hosts_, 1);
  const size_t share = options_.memory_budget_bytes / 2 / hosts / item;
  return std::clamp<size_t>(share, 1, options_.head_items);
}

void Frontier::DropQueue(HostState& host) {
  const size_t before = host.queued;
  for (const Item& item : host.head) SubItemBytes(item);
  for (const Item& item : host.tail) SubItemBytes(item);
  for (const ChunkRef& c : host.chunks) store_->Unref(c.segment);
  host.dropped += host.queued;
  dropped_ += host.queued;
  queued_ -= host.queued;
  host.queued = 0;
  host.head.Release();
  host.chunks.Release();
  std::vector<Item>().swap(host.tail);
  OnQueuedChange(host, before);
}

int64_t Frontier::Gap(const HostState& host) const {
  if (host.delay_override_us >= 0) return host.delay_override_us;
  return std::max(options_.min_delay_us, host.crawl_delay_us);
}

void Frontier::SetHostPoliteness(std::string_view host_key, int64_t delay_us,
                                 int max_in_flight) {
  HostState& host = GetOrCreate(host_key);
  host.delay_override_us = delay_us < 0 ? -1 : delay_us;
  host.max_in_flight = std::max(1, max_in_flight);
  Reschedule(host);
}

void Frontier::SpillTail(HostState& host) {
  if (host.tail.empty()) return;
  auto ref = store_->Append(host.tail.begin(), host.tail.end());
  if (!ref.ok()) {
    ++spill_errors_;
    last_spill_error_ = ref.status();
    // Keep the items in memory; do not hammer a failing disk on every push.
    spill_retry_at_push_ = pushes_ + 1024;
    spill_failing_ = true;
    return;
  }
  spill_failing_ = false;
  spilled_items_ += host.tail.size();
  for (const Item& item : host.tail) SubItemBytes(item);
  host.chunks.push_back(*ref);
  MergeSmallChunks(host);
  // Not clear(): a cleared vector keeps its capacity, which memory_bytes_
  // does not count, and every host keeps one.
  std::vector<Item>().swap(host.tail);
}

void Frontier::MergeSmallChunks(HostState& host) {
  // With many active hosts the budget leaves each tail a few items, so the
  // tails go out as chunks of a few items, and their references (24 bytes
  // each) outgrew the items' own budget: 10 M URLs over 100,000 hosts made
  // about 4 M of them. A run of small chunks at the end of a queue is
  // written again as one, so each item is written about twice at most.
  constexpr size_t kRun = 8;
  const size_t small = std::max<size_t>(options_.chunk_items / 4, 2);
  std::vector<ChunkRef>& refs = host.chunks.items();
  size_t start = refs.size();
  while (start > host.chunks.first() && refs.size() - start < kRun &&
         refs[start - 1].count < small && refs[start - 1].taken == 0) {
    --start;
  }
  if (refs.size() - start < kRun) return;
  std::vector<Item> items;
  for (size_t i = start; i < refs.size(); ++i) {
    if (Status s = store_->Read(refs[i], &items); !s.ok()) return;  // as is
  }
  auto merged = store_->Append(items.begin(), items.end());
  if (!merged.ok()) return;  // the small chunks are still there
  for (size_t i = start; i < refs.size(); ++i) store_->Unref(refs[i].segment);
  refs.resize(start);
  refs.push_back(*merged);
}

void Frontier::EnforceBudget() {
  if (store_ == nullptr || memory_bytes_ <= options_.memory_budget_bytes ||
      pushes_ < spill_retry_at_push_) {
    return;
  }
  auto& list = tail_hosts_;
  while (memory_bytes_ > options_.memory_budget_bytes && !list.empty()) {
    HostState* h = list.front();
    list.pop_front();
    h->in_tail_list = false;
    SpillTail(*h);
    if (!h->tail.empty()) {  // the write failed: try again later
      h->in_tail_list = true;
      list.push_back(h);
      return;
    }
  }
}

void Frontier::Refill(HostState& host) {
  if (store_ == nullptr) return;
  const size_t cap = HeadCap();
  std::vector<Item> items;
  while (host.head.size() < cap) {
    if (!host.chunks.empty()) {
      ChunkRef& ref = host.chunks.front();
      // Without pressure up to chunk_items come in (a whole chunk, unless
      // MergeSmallChunks made it larger); under pressure only what the head
      // has room for. The rest of the chunk stays on disk for the next
      // refill.
      const size_t room = cap < options_.head_items ? cap - host.head.size()
                                                    : options_.chunk_items;
      const auto want =
          static_cast<uint32_t>(std::min<size_t>(room, UINT32_MAX));
      items.clear();
      uint32_t next_byte = 0;
      Status s = store_->Read(ref, &items, want, &next_byte);
      if (!s.ok()) {
        // Counted and reported, never silent; the queue goes on without it.
        const uint32_t lost = ref.count - ref.taken;
        store_->Unref(ref.segment);
        host.chunks.pop_front();
        ++spill_errors_;
        last_spill_error_ = s;
        lost_items_ += lost;
        host.queued -= lost;
        queued_ -= lost;
        continue;
      }
      for (Item& item : items) {
        AddItemBytes(item);
        host.head.push_back(std::move(item));
      }
      ref.taken += static_cast<uint32_t>(items.size());
      ref.taken_bytes = next_byte;
      if (ref.taken >= ref.count) {
        store_->Unref(ref.segment);
        host.chunks.pop_front();
      }
    } else if (!host.tail.empty()) {
      for (Item& item : host.tail) host.head.push_back(std::move(item));
      host.tail.clear();
    } else {
      break;
    }
  }
}

void Frontier::ShareLambda() {
  pops_since_share_ = 0;
  if (active_hosts_ == 0 || !(lambda_ > 0.0)) return;
  shared_sum_ += lambda_ / static_cast<double>(active_hosts_);
  lambda_ = 0.0;
}

Status Frontier::TryPush(std::string_view host_key, Item item,
                         std::string_view from_host_key) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired) {
    ++host.dropped;
    ++dropped_;
    return Status::FailedPrecondition(std::string(host_key) + ": retired");
  }
  ++pushes_;  // refused attempts count too, so the disk is retried
  if (store_ != nullptr && spill_failing_ &&
      memory_bytes_ > 2 * options_.memory_budget_bytes) {
    EnforceBudget();  // retries the disk once the wait is over
  }
  if (store_ != nullptr && spill_failing_ &&
      memory_bytes_ > 2 * options_.memory_budget_bytes) {
    ++host.dropped;
    ++dropped_;
    return Status::ResourceExhausted(
        "frontier memory over budget, spill "
        "failing: " +
        last_spill_error_.ToString());
  }
  item.credit = CleanCredit(item.credit);  // keeps the heaps ordered
  const size_t before = host.queued;
  if (options_.credit_scheduling) {
    host.credit_raw += item.credit;
    if (from_host_key != host_key) host.inbound_credit += item.credit;
  }
  const size_t head_cap = HeadCap();
  const bool to_head =
      store_ == nullptr ||
      (host.chunks.empty() && host.tail.empty() && host.head.size() < head_cap);
  AddItemBytes(item);
  if (to_head) {
    host.head.push_back(std::move(item));
  } else {
    host.tail.push_back(std::move(item));
    if (host.tail.size() >= options_.chunk_items &&
        pushes_ >= spill_retry_at_push_) {
      SpillTail(host);
    }
    if (!host.tail.empty() && !host.in_tail_list) {
      host.in_tail_list = true;
      tail_hosts_.push_back(&host);
    }
  }
  ++host.queued;
  ++queued_;
  OnQueuedChange(host, before);
  // Without credit scheduling only a new head changes the host's entry.
  if (options_.credit_scheduling || before == 0) Reschedule(host);
  EnforceBudget();
  return Status::Ok();
}

bool Frontier::Push(std::string_view host_key, Item item,
                    std::string_view from_host_key) {
  return TryPush(host_key, std::move(item), from_host_key).ok();
}

bool Frontier::PushFront(std::string_view host_key, Item item) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired) {
    ++host.dropped;
    ++dropped_;
    return false;
  }
  item.credit = CleanCredit(item.credit);
  const size_t before = host.queued;
  if (options_.credit_scheduling) {
    host.credit_raw += item.credit;
    if (!item.revisit && host.pages > 0) --host.pages;
  }
  AddItemBytes(item);
  host.head.push_front(std::move(item));
  ++host.queued;
  ++queued_;
  OnQueuedChange(host, before);
  Reschedule(host);  // the head, and so its credit, changed
  return true;
}

void Frontier::AddCredit(std::string_view host_key, double amount,
                         std::string_view from_host_key) {
  if (!(amount > 0.0) || !std::isfinite(amount)) return;
  HostState& host = GetOrCreate(host_key);
  host.credit_raw += amount;
  if (from_host_key != host_key) host.inbound_credit += amount;
  if (options_.credit_scheduling) Reschedule(host);
}

std::optional<Frontier::Ready> Frontier::Pop(int64_t now_us) {
  HostState* picked = nullptr;
  if (options_.credit_scheduling) {
    // Hosts whose time has come move to the credit-ordered heap.
    while (!time_heap_.empty() && time_heap_.front().next_fetch_us <= now_us) {
      HeapEntry e = time_heap_.front();
      std::pop_heap(time_heap_.begin(), time_heap_.end(), ServedLater());
      time_heap_.pop_back();
      if (e.version == e.host->version) {
        ready_heap_.push_back(e);
        std::push_heap(ready_heap_.begin(), ready_heap_.end(), LessCredit());
      }
      DropStaleTops();
    }
    if (ready_heap_.empty()) return std::nullopt;
    picked = ready_heap_.front().host;
    std::pop_heap(ready_heap_.begin(), ready_heap_.end(), LessCredit());
    ready_heap_.pop_back();
  } else {
    if (time_heap_.empty() || time_heap_.front().next_fetch_us > now_us) {
      return std::nullopt;
    }
    picked = time_heap_.front().host;
    std::pop_heap(time_heap_.begin(), time_heap_.end(), ServedLater());
    time_heap_.pop_back();
  }
  HostState& host = *picked;

  Ready ready{*host.key, std::move(host.head.front())};
  host.head.pop_front();
  SubItemBytes(ready.item);
  if (options_.credit_scheduling) {
    // The page's equal share of its host's credit (host-level AOPIC).
    const double credit = CreditOf(host);
    const double page =
        credit > 0.0 ? credit / static_cast<double>(host.queued) : 0.0;
    host.credit_raw -= page;
    const double tax = page * options_.tax;
    lambda_ += tax;
    ready.item.credit = page - tax;
  }
  const size_t before = host.queued;
  --host.queued;
  --queued_;
  if (!ready.item.revisit) ++host.pages;  // the budget counts new pages
  ++host.in_flight;
  ++in_flight_;
  // Under pressure the low water mark is a quarter of the lowered head, so
  // that a refill still takes several items per read.
  const size_t cap = HeadCap();
  const size_t low_water = cap < options_.head_items
                               ? std::max<size_t>(cap / 4, 1)
                               : options_.low_water_items;
  if (host.head.size() < low_water) Refill(host);
  OnQueuedChange(host, before);
  Reschedule(host);  // in flight: invalidates nothing else, cleans the tops
  if (options_.credit_scheduling &&
      ++pops_since_share_ >= options_.lambda_interval) {
    ShareLambda();
  }
  return ready;
}

void Frontier::Complete(std::string_view host_key, int64_t now_us,
                        const Completion& completion) {
  HostState* found = Find(host_key);
  if (found == nullptr || found->in_flight == 0) {
    ++ignored_completions_;
    return;
  }
  HostState& host = *found;
  --host.in_flight;
  --in_flight_;
  ++host.fetched;
  host.last_complete_us = now_us;

  const int64_t gap = Gap(host);
  int64_t delay = gap;
  if (completion.outcome == Outcome::kSuccess) {
    host.consecutive_errors = 0;
    delay = SuccessDelayUs(gap, options_.delay_factor,
                           completion.response_time_us, options_.max_delay_us);
  } else {
    ++host.consecutive_errors;
    if (completion.outcome == Outcome::kRetryLater &&
        completion.retry_after_us >= 0) {
      delay = std::max(gap, completion.retry_after_us);
    } else {
      // base x 2^(errors-1), doubling with a cap check so it never overflows.
      int64_t backoff = options_.error_backoff_base_us;
      for (int i = 1; i < host.consecutive_errors; ++i) {
        if (backoff >= options_.max_backoff_us / 2) {
          backoff = options_.max_backoff_us;
          break;
        }
        backoff *= 2;
      }
      delay = std::max(gap, std::min(backoff, options_.max_backoff_us));
    }
    if (host.consecutive_errors >= options_.max_consecutive_errors &&
        !host.retired) {
      host.retired = true;
      ++retired_hosts_;
      DropQueue(host);
    }
  }
  host.next_fetch_us = SaturatingAdd(now_us, delay);
  Reschedule(host);
}

void Frontier::Release(std::string_view host_key) {
  HostState* host = Find(host_key);
  if (host == nullptr || host->in_flight == 0) {
    ++ignored_completions_;
    return;
  }
  --host->in_flight;
  --in_flight_;
  Reschedule(*host);
}

bool Frontier::Acquire(std::string_view host_key, int64_t now_us) {
  HostState& host = GetOrCreate(host_key);
  if (host.retired || host.in_flight >= host.max_in_flight ||
      host.next_fetch_us > now_us) {
    return false;
  }
  ++host.in_flight;
  ++in_flight_;
  Reschedule(host);
  return true;
}

void Frontier::SetCrawlDelay(std::string_view host_key,
                             int64_t crawl_delay_us) {
  HostState& host = GetOrCreate(host_key);
  host.crawl_delay_us =
      std::clamp<int64_t>(crawl_delay_us, 0, options_.max_crawl_delay_us);
  if (host.in_flight == 0 && host.last_complete_us >= 0) {
    // Capped like the success delay, so the order of the two calls is moot.
    const int64_t earliest =
        SaturatingAdd(host.last_complete_us,
                      std::min(host.crawl_delay_us, options_.max_delay_us));
    if (earliest > host.next_fetch_us) {
      host.next_fetch_us = earliest;
      Reschedule(host);
    }
  }
}

void Frontier::Retire(std::string_view host_key) {
  HostState& host = GetOrCreate(host_key);
  if (!host.retired) {
    host.retired = true;
    ++retired_hosts_;
  }
  DropQueue(host);
  Reschedule(host);
}

Status Frontier::ForEachQueued(
    const std::function<void(std::string_view, const Item&)>& visit) const {
  Status result = Status::Ok();
  std::vector<Item> items;
  for (const auto& [key, hp] : hosts_) {
    const HostState& h = *hp;
    if (h.queued == 0) continue;
    for (const Item& item : h.head) visit(key, item);
    for (const ChunkRef& ref : h.chunks) {
      items.clear();
      if (Status s = store_->Read(ref, &items); !s.ok()) {
        result = s;
        continue;
      }
      for (const Item& item : items) visit(key, item);
    }
    for (const Item& item : h.tail) visit(key, item);
  }
  return result;
}

Status Frontier::TakeQueue(std::string_view host_key,
                           const std::function<void(Item&&)>& out) {
  HostState* host = Find(host_key);
  if (host == nullptr || host->queued == 0) return Status::Ok();
  const size_t before = host->queued;
  Status result = Status::Ok();
  for (Item& item : host->head) {
    SubItemBytes(item);
    out(std::move(item));
  }
  std::vector<Item> items;
  for (const ChunkRef& ref : host->chunks) {
    items.clear();
    Status s = store_->Read(ref, &items);
    store_->Unref(ref.segment);
    if (!s.ok()) {
      ++spill_errors_;
      last_spill_error_ = s;
      lost_items_ += ref.count - ref.taken;
      result = s;
      continue;
    }
    for (Item& item : items) out(std::move(item));
  }
  for (Item& item : host->tail) {
    SubItemBytes(item);
    out(std::move(item));
  }
  host->head.Release();
  host->chunks.Release();
  std::vector<Item>().swap(host->tail);
  queued_ -= host->queued;
  host->queued = 0;
  OnQueuedChange(*host, before);
  Reschedule(*host);
  return result;
}

std::vector<std::string> Frontier::QueuedHosts() const {
  std::vector<std::string> keys;
  for (const auto& [key, host] : hosts_) {
    if (host->queued > 0) keys.push_back(key);
  }
  return keys;
}

Status Frontier::Checkpoint(
    const std::vector<std::pair<std::string, Item>>& in_flight) {
  if (store_ == nullptr) return Status::Ok();
  std::unordered_map<std::string_view, std::vector<Item>> held;
  for (const auto& [key, item] : in_flight) held[key].push_back(item);
  // The manifest goes to its file as it is made, about 1 MiB at a time:
  // with 100,000 hosts it is tens of MB, which as one string was the
  // checkpoint's share of the peak RSS. Its header (magic, payload bytes,
  // payload XXH3) is written over the first 24 bytes once known.
  const std::string dir = store_->dir;
  const std::string tmp = dir + "/MANIFEST.tmp";
  Status failed;
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) failed = Status::IOError(ErrnoText("open " + tmp));
  if (failed.ok()) failed = WriteAll(fd, std::string(24, '\0'), tmp);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> sum(
      XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(sum.get());
  uint64_t payload_bytes = 0;
  std::string payload;
  auto flush = [&] {
    if (!failed.ok()) return;
    XXH3_64bits_update(sum.get(), payload.data(), payload.size());
    payload_bytes += payload.size();
    failed = WriteAll(fd, payload, tmp);
    payload.clear();
  };
  Put<double>(&payload, lambda_);
  Put<uint64_t>(&payload, hosts_.size());
  std::map<uint32_t, uint64_t> refs;  // the new manifest's, per segment
  auto append = [&](auto begin, auto end, std::vector<ChunkRef>* out) {
    if (begin == end || !failed.ok()) return;
    auto ref = store_->Append(begin, end);
    if (!ref.ok()) {
      failed = ref.status();
      return;
    }
    ++refs[ref->segment];  // Append() counted the manifest's reference
    out->push_back(*ref);
  };
  std::vector<ChunkRef> host_refs;
  std::vector<Item> partial;
  for (auto& [key, hp] : hosts_) {
    HostState& h = *hp;
    host_refs.clear();
    if (auto it = held.find(key); it != held.end()) {
      append(it->second.begin(), it->second.end(), &host_refs);
    }
    append(h.head.begin(), h.head.end(), &host_refs);
    for (const ChunkRef& c : h.chunks) {
      if (c.taken > 0) {
        // Part of it is in the head already and the manifest has no room
        // for that: what is left of it is written again, as a chunk of its
        // own (only a queue's first chunk is ever partly taken).
        if (!failed.ok()) break;
        partial.clear();
        if (Status s = store_->Read(c, &partial); !s.ok()) {
          failed = s;
          break;
        }
        append(partial.begin(), partial.end(), &host_refs);
        continue;
      }
      store_->Ref(c.segment);
      ++refs[c.segment];
      host_refs.push_back(c);
    }
    append(h.tail.begin(), h.tail.end(), &host_refs);
    if (!failed.ok()) break;
    Put<uint32_t>(&payload, static_cast<uint32_t>(key.size()));
    payload.append(key);
    Put<uint8_t>(&payload, h.retired ? 1 : 0);
    Put<int64_t>(&payload, h.crawl_delay_us);
    Put<double>(&payload, CreditOf(h));
    Put<double>(&payload, h.inbound_credit);
    Put<uint64_t>(&payload, h.pages);
    Put<uint64_t>(&payload, h.fetched);
    Put<uint64_t>(&payload, h.dropped);
    Put<uint32_t>(&payload, static_cast<uint32_t>(host_refs.size()));
    for (const ChunkRef& c : host_refs) {
      Put<uint32_t>(&payload, c.segment);
      Put<uint32_t>(&payload, c.count);
      Put<uint64_t>(&payload, c.offset);
      Put<uint32_t>(&payload, c.bytes);
    }
    if (payload.size() >= (1u << 20)) flush();
  }
  flush();
  // The segments first: the manifest must never name a chunk not on disk.
  if (failed.ok()) failed = store_->Sync();
  if (failed.ok()) {
    std::string header(kManifestMagic, 8);
    Put<uint64_t>(&header, payload_bytes);
    Put<uint64_t>(&header, XXH3_64bits_digest(sum.get()));
    if (::lseek(fd, 0, SEEK_SET) != 0) {
      failed = Status::IOError(ErrnoText("seek " + tmp));
    } else {
      failed = WriteAll(fd, header, tmp);
    }
  }
  if (failed.ok() && ::fsync(fd) != 0) {
    failed = Status::IOError(ErrnoText("fsync " + tmp));
  }
  if (fd >= 0) ::close(fd);
  if (failed.ok() && ::rename(tmp.c_str(), (dir + "/MANIFEST").c_str()) != 0) {
    failed = Status::IOError(ErrnoText("rename " + tmp));
  }
  if (failed.ok()) {
    // The rename is durable only once the directory is synced.
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  std::map<uint32_t, uint64_t> released;
  if (failed.ok()) {
    released.swap(store_->manifest_refs);
    store_->manifest_refs = std::move(refs);
  } else {
    released = std::move(refs);  // the old manifest stays the valid one
    ++spill_errors_;
    last_spill_error_ = failed;
  }
  for (const auto& [id, n] : released) store_->Unref(id, n);
  return failed;
}

int64_t Frontier::NextReadyUs() const {
  // Reschedule() and Pop() leave valid entries on top (DropStaleTops).
  int64_t next = time_heap_.empty() ? kNever : time_heap_.front().next_fetch_us;
  if (!ready_heap_.empty()) {
    next = std::min(next, ready_heap_.front().next_fetch_us);
  }
  return next;
}

bool Frontier::Idle() const {
  return in_flight_ == 0 && time_heap_.empty() && ready_heap_.empty();
}

void Frontier::ForEachHost(
    const std::function<void(std::string_view, const HostInfo&)>& fn) const {
  for (const auto& [key, state] : hosts_) {
    std::optional<HostInfo> info = Host(key);
    if (info.has_value()) fn(key, *info);
  }
}

std::optional<HostInfo> Frontier::Host(std::string_view host_key) const {
  auto it = hosts_.find(host_key);
  if (it == hosts_.end()) return std::nullopt;
  const HostState& h = *it->second;
  HostInfo info;
  info.queued = h.queued;
  info.in_memory = h.head.size() + h.tail.size();
  info.in_flight = h.in_flight > 0;
  info.max_in_flight = h.max_in_flight;
  info.next_fetch_us = h.next_fetch_us;
  info.consecutive_errors = h.consecutive_errors;
  info.retired = h.retired;
  info.crawl_delay_us = h.crawl_delay_us;
  info.fetched = h.fetched;
  info.dropped = h.dropped;
  // Spending a host's whole credit can leave -1e-17 of rounding behind.
  info.credit = std::max(0.0, CreditOf(h));
  info.inbound_credit = h.inbound_credit;
  info.pages = h.pages;
  info.page_budget = PageBudget(h);
  return info;
}

}  // namespace crawld::frontier
