// UrlSeenStore: an exact in-memory pair table (or, over its memory budget,
// a Bloom filter + hot cache) and the pending batch in memory, exact
// fingerprints in LevelDB. See dedupe.h for the contract.
#include <fcntl.h>
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "base/fd_io.h"
#include "dedupe/bloom_internal.h"
#include "dedupe/dedupe.h"
#include "dedupe/pair_table.h"

namespace crawld::dedupe {
namespace {

using internal::Mix;

// A one-byte tag keeps fingerprints apart from the meta keys, and from other
// state should this database ever be shared with the checkpoint store.
constexpr char kFingerprintTag = 'f';
constexpr size_t kKeySize = 17;  // tag + host_hash + fingerprint
constexpr std::string_view kEpochKey = "m:epoch";
constexpr std::string_view kCountKey = "m:count";
// Present from BeginCheckpoint() to the Flush() after it (no value).
constexpr std::string_view kCheckpointKey = "m:checkpointing";
constexpr const char* kBloomFile = "seen.bloom";
constexpr const char* kBloomTmpFile = "seen.bloom.tmp";
constexpr const char* kTableFile = "seen.table";
constexpr const char* kTableTmpFile = "seen.table.tmp";

// "CRWDBLM1" read as a little-endian integer: a file written on a machine of
// the other byte order fails this check and is rebuilt, not misread.
constexpr uint64_t kBloomMagic = 0x314d4c4257445243ULL;
constexpr uint32_t kBloomVersion = 1;

struct Key {
  uint64_t host = 0;
  uint64_t fp = 0;
  bool operator==(const Key&) const = default;
};

// The Bloom filter sees one 64-bit value per key; for a fixed host it is a
// bijection of the fingerprint, so one host's URLs never collide here.
uint64_t BloomKey(const Key& k) { return internal::BloomKey(k.host, k.fp); }

void PutBE64(char* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

uint64_t GetBE64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::array<char, kKeySize> EncodeKey(const Key& k) {
  std::array<char, kKeySize> out;
  out[0] = kFingerprintTag;
  PutBE64(out.data() + 1, k.host);
  PutBE64(out.data() + 9, k.fp);
  return out;
}

std::array<char, 9> HostPrefix(uint64_t host) {
  std::array<char, 9> out;
  out[0] = kFingerprintTag;
  PutBE64(out.data() + 1, host);
  return out;
}

leveldb::Slice ToSlice(const char* p, size_t n) { return leveldb::Slice(p, n); }

Status Translate(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string msg = "dedupe: ";
  msg += what;
  msg += ": ";
  msg += s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(msg));
  // LevelDB reports a held LOCK and every file failure as IOError.
  return Status::IOError(std::move(msg));
}

Status Errno(std::string_view what, const std::string& path) {
  std::string msg = "dedupe: ";
  msg += what;
  msg += " ";
  msg += path;
  msg += ": ";
  msg += std::strerror(errno);
  return Status::IOError(std::move(msg));
}

// Fixed-size header of seen.bloom, followed by the filter's 64-bit words.
// Host byte order; the magic catches a foreign one.
struct BloomHeader {
  uint64_t magic;
  uint32_t version;
  int32_t hashes;
  uint64_t bits;
  uint64_t count;       // fingerprints in LevelDB when saved
  uint64_t epoch;       // LevelDB write epoch when saved
  uint64_t data_sum;    // XXH3-64 of the words
  uint64_t header_sum;  // XXH3-64 of the fields above
};
static_assert(sizeof(BloomHeader) == 56);

uint64_t HeaderSum(const BloomHeader& h) {
  return XXH3_64bits(&h, offsetof(BloomHeader, header_sum));
}

// "CRWDTBL1": seen.table, the exact table saved by Close() so that the
// next Open skips the scan of LevelDB. Header, then the table's slot words,
// host keys and host ids. Host byte order, like seen.bloom.
constexpr uint64_t kTableMagic = 0x314c425444575243ULL;
constexpr uint32_t kTableVersion = 1;

struct TableHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  uint64_t count;  // fingerprints in LevelDB when saved
  uint64_t epoch;  // LevelDB write epoch when saved
  uint64_t slots;
  uint64_t size;
  uint64_t hosts;
  uint64_t host_slots;
  uint64_t data_sum;    // XXH3-64 of the three arrays, in file order
  uint64_t header_sum;  // XXH3-64 of the fields above
};
static_assert(sizeof(TableHeader) == 80);

uint64_t HeaderSum(const TableHeader& h) {
  return XXH3_64bits(&h, offsetof(TableHeader, header_sum));
}

template <typename T>
size_t ByteSize(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

// XXH3-64 of several buffers as one stream.
class StreamSum {
 public:
  StreamSum() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~StreamSum() { XXH3_freeState(state_); }
  StreamSum(const StreamSum&) = delete;
  StreamSum& operator=(const StreamSum&) = delete;
  void Add(const void* p, size_t n) { XXH3_64bits_update(state_, p, n); }
  uint64_t Digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

uint64_t RoundUpPow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

struct UrlSeenStore::Rep {
  Options options;

  // Declared before db so that they outlive it: the DB uses both.
  std::unique_ptr<const leveldb::FilterPolicy> filter;
  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<leveldb::DB> db;
  leveldb::WriteOptions write_options;

  // The exact pair table, while table_active; every stored and pending
  // key is in it. When it would outgrow Options::exact_table_bytes it is
  // dropped for good (until the next Open), and lookups go to the Bloom
  // filter, which is kept up to date in both modes for that moment.
  internal::PairTable table{0, 0};
  bool table_active = false;
  bool table_loaded = false;  // from seen.table at Open

  // Bloom filter over BloomKey().
  std::vector<uint64_t> bloom;
  uint64_t bloom_bits = 0;
  int bloom_hashes = 0;
  bool bloom_loaded = false;
  // The epoch seen.bloom was saved at; meaningful when bloom_saved.
  uint64_t saved_epoch = 0;
  bool bloom_saved = false;

  // Hot cache: direct-mapped, holds keys known to be present. Lossy by
  // design: a collision evicts, and an eviction only costs a LevelDB read.
  std::vector<Key> cache_keys;
  std::vector<uint8_t> cache_used;
  uint64_t cache_mask = 0;

  // Inserted but not yet written: the batch itself, and an open-addressing
  // set over the same keys (load <= 1/2) so lookups see them.
  leveldb::WriteBatch batch;
  std::vector<Key> pending_keys;
  std::vector<uint8_t> pending_used;
  std::vector<uint32_t> pending_slots;  // used slots, to clear cheaply
  uint64_t pending_mask = 0;

  uint64_t stored = 0;  // fingerprints in LevelDB
  uint64_t epoch = 0;   // LevelDB writes ever made by this store's directory
  bool closed = false;
  // kCheckpointKey is on disk (set, or found at Open); the next Flush()
  // deletes it.
  bool checkpoint_marked = false;
  bool checkpoint_interrupted = false;  // found at Open

  uint64_t lookups = 0;
  uint64_t store_reads = 0;
  uint64_t bloom_false_positives = 0;

  std::string Path(const char* name) const { return options.dir + "/" + name; }

  bool BloomMayContain(uint64_t bk) const {
    return internal::ForEachBloomBit(
        bk, bloom_bits, bloom_hashes,
        [this](uint64_t bit) { return (bloom[bit >> 6] >> (bit & 63)) & 1; });
  }
  void BloomAdd(uint64_t bk) {
    internal::ForEachBloomBit(bk, bloom_bits, bloom_hashes,
                              [this](uint64_t bit) {
                                bloom[bit >> 6] |= uint64_t{1} << (bit & 63);
                                return true;
                              });
  }

  size_t CacheSlot(uint64_t bk) const {
    return static_cast<size_t>(Mix(bk ^ internal::kSlotSeed) & cache_mask);
  }
  bool CacheHas(const Key& k, uint64_t bk) const {
    if (cache_keys.empty()) return false;
    const size_t i = CacheSlot(bk);
    return cache_used[i] && cache_keys[i] == k;
  }
  void CacheAdd(const Key& k, uint64_t bk) {
    if (cache_keys.empty()) return;
    const size_t i = CacheSlot(bk);
    cache_keys[i] = k;
    cache_used[i] = 1;
  }
  void CacheClear() { std::fill(cache_used.begin(), cache_used.end(), 0); }

  // Different seed from the cache so that the two tables do not share
  // collisions.
  size_t PendingStart(uint64_t bk) const {
    return static_cast<size_t>(Mix(bk ^ internal::kBloomSeed2) & pending_mask);
  }
  bool PendingHas(const Key& k, uint64_t bk) const {
    for (size_t i = PendingStart(bk);; i = (i + 1) & pending_mask) {
      if (!pending_used[i]) return false;
      if (pending_keys[i] == k) return true;
    }
  }
  void PendingAdd(const Key& k, uint64_t bk) {
    size_t i = PendingStart(bk);
    while (pending_used[i]) i = (i + 1) & pending_mask;
    pending_keys[i] = k;
    pending_used[i] = 1;
    pending_slots.push_back(static_cast<uint32_t>(i));
    const auto key = EncodeKey(k);
    batch.Put(ToSlice(key.data(), key.size()), leveldb::Slice());
  }
  // Doubles the pending set (flush_only: it holds everything since the
  // last Flush), keeping its keys.
  void PendingGrow() {
    std::vector<Key> keys;
    keys.reserve(pending_slots.size());
    for (uint32_t i : pending_slots) keys.push_back(pending_keys[i]);
    const uint64_t n = (pending_mask + 1) * 2;
    pending_keys.assign(n, Key{});
    pending_used.assign(n, 0);
    pending_mask = n - 1;
    pending_slots.clear();
    for (const Key& k : keys) {
      size_t i = PendingStart(BloomKey(k));
      while (pending_used[i]) i = (i + 1) & pending_mask;
      pending_keys[i] = k;
      pending_used[i] = 1;
      pending_slots.push_back(static_cast<uint32_t>(i));
    }
  }
  void PendingClear() {
    for (uint32_t i : pending_slots) pending_used[i] = 0;
    pending_slots.clear();
    batch.Clear();
  }

  // One batch: the fingerprints plus the meta keys that date the Bloom file.
  // On failure the batch stays for a retry; the meta puts left in it are
  // overridden by the next attempt's (later puts of a key win).
  Status WriteWithMeta(leveldb::WriteBatch& b, uint64_t new_stored) {
    char buf[8];
    PutBE64(buf, epoch + 1);
    b.Put(ToSlice(kEpochKey.data(), kEpochKey.size()), ToSlice(buf, 8));
    PutBE64(buf, new_stored);
    b.Put(ToSlice(kCountKey.data(), kCountKey.size()), ToSlice(buf, 8));
    Status s = Translate(db->Write(write_options, &b), "write batch");
    if (!s.ok()) return s;
    ++epoch;
    stored = new_stored;
    return Status::Ok();
  }

  Status WritePending() {
    if (pending_slots.empty()) return Status::Ok();
    Status s = WriteWithMeta(batch, stored + pending_slots.size());
    if (s.ok()) PendingClear();
    return s;
  }

  Result<uint64_t> ReadMeta(std::string_view key) const {
    std::string value;
    leveldb::Status s = db->Get(leveldb::ReadOptions(),
                                ToSlice(key.data(), key.size()), &value);
    if (s.IsNotFound()) return uint64_t{0};
    if (!s.ok()) return Translate(s, "read meta");
    if (value.size() != 8) {
      return Status::Corruption("dedupe: meta key " + std::string(key) +
                                " has " + std::to_string(value.size()) +
                                " bytes, want 8");
    }
    return GetBE64(value.data());
  }

  void DropTable() {
    table.Release();
    table_active = false;
  }

  Result<bool> Lookup(const Key& k) {
    ++lookups;
    // Exact and in memory: no Bloom probe (the table's miss costs fewer
    // cache misses than k Bloom bits), no LevelDB read.
    if (table_active) return table.Contains(k.host, PairKeyOf(k));
    const uint64_t bk = BloomKey(k);
    if (!BloomMayContain(bk)) return false;
    if (CacheHas(k, bk) || PendingHas(k, bk)) return true;
    ++store_reads;
    const auto key = EncodeKey(k);
    std::string value;
    leveldb::Status s = db->Get(leveldb::ReadOptions(),
                                ToSlice(key.data(), key.size()), &value);
    if (s.ok()) {
      CacheAdd(k, bk);
      return true;
    }
    if (s.IsNotFound()) {
      ++bloom_false_positives;
      return false;
    }
    return Translate(s, "read fingerprint");
  }

  // True when seen.bloom matches this database and geometry exactly.
  bool LoadBloom() {
    const std::string path = Path(kBloomFile);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    BloomHeader h;
    struct stat st;
    const size_t data_bytes = bloom.size() * sizeof(uint64_t);
    bool ok =
        ::fstat(fd, &st) == 0 &&
        static_cast<uint64_t>(st.st_size) == sizeof(BloomHeader) + data_bytes &&
        ReadFull(fd, &h, sizeof(h)) == ReadResult::kDone &&
        h.magic == kBloomMagic && h.version == kBloomVersion &&
        h.header_sum == HeaderSum(h) && h.hashes == bloom_hashes &&
        h.bits == bloom_bits && h.count == stored && h.epoch == epoch &&
        ReadFull(fd, bloom.data(), data_bytes) == ReadResult::kDone &&
        XXH3_64bits(bloom.data(), data_bytes) == h.data_sum;
    ::close(fd);
    if (!ok) std::fill(bloom.begin(), bloom.end(), 0);
    return ok;
  }

  static uint64_t PairKeyOf(const Key& k) {
    return internal::PairKey(k.host, k.fp);
  }

  // True when seen.table matches this database exactly and fits the budget.
  bool LoadTable() {
    const std::string path = Path(kTableFile);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    TableHeader h;
    struct stat st;
    internal::PairTable::Image im;
    bool ok = ::fstat(fd, &st) == 0 &&
              ReadFull(fd, &h, sizeof(h)) == ReadResult::kDone &&
              h.magic == kTableMagic && h.version == kTableVersion &&
              h.header_sum == HeaderSum(h) && h.count == stored &&
              h.epoch == epoch && h.size == stored &&
              // Bounds before allocating: a header cannot ask for more
              // than the budget (nor overflow the size arithmetic).
              h.slots <= options.exact_table_bytes / 12 &&
              h.host_slots <= options.exact_table_bytes / 12 &&
              static_cast<uint64_t>(st.st_size) ==
                  sizeof(h) + h.slots * 12 + h.host_slots * 12;
    if (ok) {
      im.slots = h.slots;
      im.size = h.size;
      im.hosts = h.hosts;
      im.words.resize(h.slots * 3);
      im.host_keys.resize(h.host_slots);
      im.host_ids.resize(h.host_slots);
      ok = ReadFull(fd, im.words.data(), ByteSize(im.words)) ==
               ReadResult::kDone &&
           ReadFull(fd, im.host_keys.data(), ByteSize(im.host_keys)) ==
               ReadResult::kDone &&
           ReadFull(fd, im.host_ids.data(), ByteSize(im.host_ids)) ==
               ReadResult::kDone;
    }
    ::close(fd);
    if (!ok) return false;
    StreamSum sum;
    sum.Add(im.words.data(), ByteSize(im.words));
    sum.Add(im.host_keys.data(), ByteSize(im.host_keys));
    sum.Add(im.host_ids.data(), ByteSize(im.host_ids));
    return sum.Digest() == h.data_sum && table.Adopt(std::move(im));
  }

  // Saves the table (REQUIRES: nothing pending) for the next Open. A write
  // of ~12 bytes a slot: Close only, not at every Flush; after a kill the
  // file is stale (epoch) and Open scans instead.
  Status SaveTable() {
    if (!table_active) return Status::Ok();
    const std::string tmp = Path(kTableTmpFile);
    const std::string path = Path(kTableFile);
    TableHeader h{};
    h.magic = kTableMagic;
    h.version = kTableVersion;
    h.count = stored;
    h.epoch = epoch;
    h.slots = table.slots();
    h.size = table.size();
    h.hosts = table.hosts();
    h.host_slots = table.host_keys().size();
    StreamSum sum;
    sum.Add(table.words().data(), ByteSize(table.words()));
    sum.Add(table.host_keys().data(), ByteSize(table.host_keys()));
    sum.Add(table.host_ids().data(), ByteSize(table.host_ids()));
    h.data_sum = sum.Digest();
    h.header_sum = HeaderSum(h);
    const int fd =
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("create", tmp);
    bool ok =
        WriteFull(fd, &h, sizeof(h)) &&
        WriteFull(fd, table.words().data(), ByteSize(table.words())) &&
        WriteFull(fd, table.host_keys().data(), ByteSize(table.host_keys())) &&
        WriteFull(fd, table.host_ids().data(), ByteSize(table.host_ids())) &&
        (!options.sync || ::fsync(fd) == 0);
    Status s = ok ? Status::Ok() : Errno("write", tmp);
    if (::close(fd) != 0 && s.ok()) s = Errno("close", tmp);
    if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      s = Errno("rename to", path);
    }
    if (!s.ok()) ::unlink(tmp.c_str());
    return s;
  }

  // One scan of the database that fills what Open needs: the pair table
  // when fill_table, the Bloom filter when fill_bloom. Stops early once
  // neither needs more (the table went over budget, the Bloom was loaded).
  Status ScanKeys(bool fill_bloom, bool fill_table) {
    if (fill_bloom) std::fill(bloom.begin(), bloom.end(), 0);
    leveldb::ReadOptions ro;
    ro.fill_cache = false;  // one pass over everything: keep the hot blocks
    std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
    uint64_t n = 0;
    const char tag = kFingerprintTag;
    for (it->Seek(ToSlice(&tag, 1)); it->Valid(); it->Next()) {
      const leveldb::Slice key = it->key();
      if (key.empty() || key[0] != kFingerprintTag) break;
      if (key.size() != kKeySize) {
        return Status::Corruption("dedupe: fingerprint key of " +
                                  std::to_string(key.size()) +
                                  " bytes, want 17");
      }
      const Key k{GetBE64(key.data() + 1), GetBE64(key.data() + 9)};
      if (fill_bloom) BloomAdd(BloomKey(k));
      if (fill_table && table_active && !table.Add(k.host, PairKeyOf(k))) {
        DropTable();
        if (!fill_bloom) return Status::Ok();
      }
      ++n;
    }
    if (Status s = Translate(it->status(), "scan"); !s.ok()) return s;
    if (n != stored) {
      // The count is only a check for the Bloom file; the keys are the truth.
      leveldb::WriteBatch b;
      if (Status s = WriteWithMeta(b, n); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status SaveBloom() {
    if (bloom_saved && saved_epoch == epoch) return Status::Ok();
    const std::string tmp = Path(kBloomTmpFile);
    const std::string path = Path(kBloomFile);
    const size_t data_bytes = bloom.size() * sizeof(uint64_t);
    BloomHeader h{};
    h.magic = kBloomMagic;
    h.version = kBloomVersion;
    h.hashes = bloom_hashes;
    h.bits = bloom_bits;
    h.count = stored;
    h.epoch = epoch;
    h.data_sum = XXH3_64bits(bloom.data(), data_bytes);
    h.header_sum = HeaderSum(h);
    const int fd =
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("create", tmp);
    bool ok = WriteFull(fd, &h, sizeof(h)) &&
              WriteFull(fd, bloom.data(), data_bytes) &&
              (!options.sync || ::fsync(fd) == 0);
    Status s = ok ? Status::Ok() : Errno("write", tmp);
    if (::close(fd) != 0 && s.ok()) s = Errno("close", tmp);
    if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      s = Errno("rename to", path);
    }
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    if (options.sync) {
      // The rename is durable only once the directory is.
      const int dfd = ::open(options.dir.c_str(), O_RDONLY | O_CLOEXEC);
      if (dfd < 0) return Errno("open", options.dir);
      const bool synced = ::fsync(dfd) == 0;
      ::close(dfd);
      if (!synced) return Errno("fsync", options.dir);
    }
    saved_epoch = epoch;
    bloom_saved = true;
    return Status::Ok();
  }

  Status CheckOpen() const {
    if (closed) return Status::FailedPrecondition("dedupe: store is closed");
    return Status::Ok();
  }
};

UrlSeenStore::UrlSeenStore(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

UrlSeenStore::~UrlSeenStore() {
  if (rep_) (void)Close();
}

Result<std::unique_ptr<UrlSeenStore>> UrlSeenStore::Open(
    const Options& options) {
  if (options.dir.empty()) {
    return Status::InvalidArgument("dedupe: Options::dir is empty");
  }
  auto rep = std::make_unique<Rep>();
  Options& o = rep->options;
  o = internal::Sanitize(options);
  o.batch_size = std::clamp<size_t>(o.batch_size, 1, 1'000'000);
  o.hot_cache_entries = std::min<size_t>(o.hot_cache_entries, size_t{1} << 30);

  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  if (ec)
    return Status::IOError("dedupe: create " + o.dir + ": " + ec.message());

  // LevelDB's own per-table Bloom filters spare the disk reads of levels
  // that do not hold a key: most of the cost of a "seen" answer.
  rep->filter.reset(leveldb::NewBloomFilterPolicy(10));
  rep->cache.reset(
      leveldb::NewLRUCache(std::max<size_t>(o.cache_bytes, size_t{1} << 20)));
  leveldb::Options lo;
  lo.create_if_missing = true;
  lo.paranoid_checks = true;  // report corruption instead of skipping it
  lo.block_cache = rep->cache.get();
  lo.filter_policy = rep->filter.get();
  lo.write_buffer_size = std::clamp<size_t>(o.write_buffer_bytes,
                                            size_t{64} << 10, size_t{1} << 30);
  // Random fingerprints barely compress, but the block headers do, just
  // enough for LevelDB to keep Snappy blocks: then every read of a block
  // not in the block cache decompresses it (measured: 5 us a lookup at 10 M
  // keys). Uncompressed blocks are read in place from LevelDB's mmap, so
  // the OS page cache serves them.
  lo.compression = leveldb::kNoCompression;
  leveldb::DB* db = nullptr;
  if (Status s = Translate(leveldb::DB::Open(lo, o.dir, &db), "open " + o.dir);
      !s.ok()) {
    return s;
  }
  rep->db.reset(db);
  rep->write_options.sync = o.sync;

  const internal::BloomGeometry g = internal::ChooseGeometry(o);
  rep->bloom_bits = g.bits;
  rep->bloom_hashes = g.hashes;
  rep->bloom.assign((g.bits + 63) / 64, 0);
  if (o.hot_cache_entries > 0) {
    const uint64_t n = RoundUpPow2(o.hot_cache_entries);
    rep->cache_keys.assign(n, Key{});
    rep->cache_used.assign(n, 0);
    rep->cache_mask = n - 1;
  }
  const uint64_t pending_slots = RoundUpPow2(2 * o.batch_size);
  rep->pending_keys.assign(pending_slots, Key{});
  rep->pending_used.assign(pending_slots, 0);
  rep->pending_mask = pending_slots - 1;
  rep->pending_slots.reserve(o.batch_size);

  Result<uint64_t> epoch = rep->ReadMeta(kEpochKey);
  if (!epoch.ok()) return epoch.status();
  Result<uint64_t> count = rep->ReadMeta(kCountKey);
  if (!count.ok()) return count.status();
  rep->epoch = *epoch;
  rep->stored = *count;
  {
    std::string value;
    leveldb::Status mark = rep->db->Get(
        leveldb::ReadOptions(),
        ToSlice(kCheckpointKey.data(), kCheckpointKey.size()), &value);
    if (!mark.ok() && !mark.IsNotFound()) {
      return Translate(mark, "read checkpoint mark");
    }
    rep->checkpoint_interrupted = mark.ok();
    rep->checkpoint_marked = mark.ok();
  }
  rep->bloom_loaded = rep->LoadBloom();
  if (rep->bloom_loaded) {
    rep->saved_epoch = rep->epoch;
    rep->bloom_saved = true;
  }
  bool fill_table = false;
  if (o.exact_table_bytes > 0) {
    rep->table = internal::PairTable(o.exact_table_bytes, o.expected_urls);
    rep->table_active = true;
    rep->table_loaded = rep->LoadTable();
    // Else sized for the stored keys (growth lands on expected_urls as in a
    // fresh run); a store already over the budget skips the scan.
    if (!rep->table_loaded) {
      fill_table = rep->table.Reserve(rep->stored);
      if (!fill_table) rep->DropTable();
    }
  }
  if (fill_table || !rep->bloom_loaded) {
    if (Status s = rep->ScanKeys(!rep->bloom_loaded, fill_table); !s.ok()) {
      return s;
    }
  }
  return std::unique_ptr<UrlSeenStore>(new UrlSeenStore(std::move(rep)));
}

Result<bool> UrlSeenStore::InsertIfNew(uint64_t host_hash,
                                       uint64_t fingerprint) {
  Rep& r = *rep_;
  if (Status s = r.CheckOpen(); !s.ok()) return s;
  const Key k{host_hash, fingerprint};
  Result<bool> present = r.Lookup(k);
  if (!present.ok()) return present.status();
  if (*present) return false;
  // Written before adding, not after, so that an error leaves this call
  // without effect.
  if (r.options.flush_only) {
    // Kept at most half full, so that probes stay short.
    if (2 * (r.pending_slots.size() + 1) > r.pending_mask + 1) r.PendingGrow();
  } else if (r.pending_slots.size() >= r.options.batch_size) {
    if (Status s = r.WritePending(); !s.ok()) return s;
  }
  const uint64_t bk = BloomKey(k);
  r.PendingAdd(k, bk);
  r.BloomAdd(bk);
  r.CacheAdd(k, bk);
  if (r.table_active && !r.table.Add(k.host, Rep::PairKeyOf(k))) {
    // Over budget: the Bloom filter, cache and pending set already hold
    // this key, which is all the fallback path needs.
    r.DropTable();
  }
  return true;
}

Result<bool> UrlSeenStore::Contains(uint64_t host_hash, uint64_t fingerprint) {
  if (Status s = rep_->CheckOpen(); !s.ok()) return s;
  return rep_->Lookup(Key{host_hash, fingerprint});
}

Status UrlSeenStore::Flush() {
  Rep& r = *rep_;
  if (Status s = r.CheckOpen(); !s.ok()) return s;
  const leveldb::Slice mark(kCheckpointKey.data(), kCheckpointKey.size());
  if (r.checkpoint_marked && !r.pending_slots.empty()) {
    // Cleared in the same batch as the fingerprints: never one without
    // the other. (A failed write keeps the delete in the batch.)
    r.batch.Delete(mark);
  }
  const bool with_batch = !r.pending_slots.empty();
  if (Status s = r.WritePending(); !s.ok()) return s;
  if (r.checkpoint_marked && !with_batch) {
    leveldb::WriteBatch b;
    b.Delete(mark);
    if (Status s = Translate(r.db->Write(r.write_options, &b), "write batch");
        !s.ok()) {
      return s;
    }
  }
  r.checkpoint_marked = false;
  return r.SaveBloom();
}

Status UrlSeenStore::BeginCheckpoint() {
  Rep& r = *rep_;
  if (Status s = r.CheckOpen(); !s.ok()) return s;
  if (r.checkpoint_marked) return Status::Ok();
  // Not synced, as the fingerprints are not: LevelDB's log is with the OS
  // when Put returns, which is what a kill -9 needs.
  if (Status s = Translate(
          r.db->Put(r.write_options,
                    ToSlice(kCheckpointKey.data(), kCheckpointKey.size()),
                    leveldb::Slice()),
          "write checkpoint mark");
      !s.ok()) {
    return s;
  }
  r.checkpoint_marked = true;
  return Status::Ok();
}

bool UrlSeenStore::checkpoint_interrupted() const {
  return rep_->checkpoint_interrupted;
}

Status UrlSeenStore::Close() {
  Rep& r = *rep_;
  if (r.closed) return Status::Ok();
  if (r.options.flush_only && !r.pending_slots.empty()) {
    // Not flushed: dropped, and no Bloom or table file is saved that would
    // claim them (the next Open rebuilds both from LevelDB).
    r.PendingClear();
    r.db.reset();
    r.DropTable();
    r.closed = true;
    return Status::Ok();
  }
  // A failed batch keeps the store open so that a retry can still save it.
  if (Status s = r.WritePending(); !s.ok()) return s;
  // A failed Bloom or table save loses nothing: the next Open rebuilds
  // them from LevelDB.
  Status s = r.SaveBloom();
  if (Status t = r.SaveTable(); s.ok()) s = t;
  r.db.reset();
  r.DropTable();
  r.closed = true;
  return s;
}

Status UrlSeenStore::ForEachOfHost(uint64_t host_hash,
                                   const std::function<bool(uint64_t)>& visit) {
  Rep& r = *rep_;
  if (Status s = r.CheckOpen(); !s.ok()) return s;
  if (Status s = r.WritePending(); !s.ok()) return s;
  const auto prefix = HostPrefix(host_hash);
  const leveldb::Slice p = ToSlice(prefix.data(), prefix.size());
  std::unique_ptr<leveldb::Iterator> it(r.db->NewIterator({}));
  for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
    if (it->key().size() != kKeySize) {
      return Status::Corruption("dedupe: fingerprint key of " +
                                std::to_string(it->key().size()) +
                                " bytes, want 17");
    }
    if (!visit(GetBE64(it->key().data() + 9))) break;
  }
  return Translate(it->status(), "scan host");
}

Result<uint64_t> UrlSeenStore::EraseHost(uint64_t host_hash) {
  Rep& r = *rep_;
  if (Status s = r.CheckOpen(); !s.ok()) return s;
  if (Status s = r.WritePending(); !s.ok()) return s;
  const auto prefix = HostPrefix(host_hash);
  const leveldb::Slice p = ToSlice(prefix.data(), prefix.size());
  leveldb::WriteBatch b;
  uint64_t n = 0;
  std::vector<uint64_t> fps;  // to take out of the table once written
  {
    std::unique_ptr<leveldb::Iterator> it(r.db->NewIterator({}));
    for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
      if (it->key().size() != kKeySize) {
        return Status::Corruption("dedupe: fingerprint key of " +
                                  std::to_string(it->key().size()) +
                                  " bytes, want 17");
      }
      b.Delete(it->key());
      if (r.table_active) fps.push_back(GetBE64(it->key().data() + 9));
      ++n;
    }
    if (Status s = Translate(it->status(), "scan host"); !s.ok()) return s;
  }
  if (n == 0) return uint64_t{0};
  if (Status s = r.WriteWithMeta(b, r.stored - std::min(n, r.stored));
      !s.ok()) {
    return s;
  }
  r.CacheClear();
  for (uint64_t fp : fps)
    r.table.Erase(host_hash, internal::PairKey(host_hash, fp));
  return n;
}

uint64_t UrlSeenStore::size() const {
  return rep_->stored + rep_->pending_slots.size();
}
size_t UrlSeenStore::pending() const { return rep_->pending_slots.size(); }
bool UrlSeenStore::bloom_loaded() const { return rep_->bloom_loaded; }
uint64_t UrlSeenStore::bloom_false_positives() const {
  return rep_->bloom_false_positives;
}
uint64_t UrlSeenStore::lookups() const { return rep_->lookups; }
uint64_t UrlSeenStore::store_reads() const { return rep_->store_reads; }
uint64_t UrlSeenStore::bloom_bits() const { return rep_->bloom_bits; }
int UrlSeenStore::bloom_hashes() const { return rep_->bloom_hashes; }
bool UrlSeenStore::exact_table_active() const { return rep_->table_active; }
bool UrlSeenStore::exact_table_loaded() const { return rep_->table_loaded; }
size_t UrlSeenStore::exact_table_bytes() const { return rep_->table.bytes(); }

}  // namespace crawld::dedupe
