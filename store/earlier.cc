// store/earlier.cc: the captures of earlier crawls by payload digest
// (store.h, "Earlier crawls").
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/ascii.h"
#include "base/json.h"
#include "store/store.h"

namespace crawld::store {
namespace {

using Sha1 = std::array<uint8_t, 20>;

// The 20 bytes of a SHA-1 payload digest as CDXJ lines and WARC headers
// write it: base32 (RFC 4648, 32 characters, any case) or hex (40), with or
// without a "sha1:" label. nullopt for anything else (another algorithm).
std::optional<Sha1> DecodeSha1(std::string_view digest) {
  if (ascii::StartsWithIgnoreCase(digest, "sha1:")) digest.remove_prefix(5);
  Sha1 out{};
  if (digest.size() == 32) {
    uint64_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (char c : digest) {
      const char u = ascii::ToUpper(c);
      int v;
      if (u >= 'A' && u <= 'Z') {
        v = u - 'A';
      } else if (u >= '2' && u <= '7') {
        v = u - '2' + 26;
      } else {
        return std::nullopt;
      }
      acc = (acc << 5) | static_cast<uint64_t>(v);
      bits += 5;
      if (bits >= 8) {
        bits -= 8;
        out[n++] = static_cast<uint8_t>(acc >> bits);
      }
    }
    return out;  // 160 bits exactly: nothing left over
  }
  if (digest.size() == 40) {
    for (size_t i = 0; i < 20; ++i) {
      const int hi = ascii::HexValue(digest[2 * i]);
      const int lo = ascii::HexValue(digest[2 * i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return out;
  }
  return std::nullopt;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

namespace {

// A source as the CDXJ files it names (a data directory: every index file,
// in name order, which is the WARCs' order: their names start with the
// time they were opened) and where their WARCs are.
struct SourceFile {
  std::string cdxj;
  std::string warc_dir;
};

Result<std::vector<SourceFile>> Resolve(
    const std::vector<std::string>& sources) {
  std::vector<SourceFile> out;
  for (const std::string& source : sources) {
    if (IsDirectory(source)) {
      std::vector<std::string> cdxj;
      std::error_code ec;
      for (const auto& entry :
           std::filesystem::directory_iterator(source + "/index", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 5 && name.ends_with(".cdxj")) {
          cdxj.push_back(entry.path().string());
        }
      }
      if (ec) {
        return Status::NotFound("dedupe.earlier: " + source +
                                " is a directory without index/ (" +
                                ec.message() + ")");
      }
      std::sort(cdxj.begin(), cdxj.end());
      for (std::string& f : cdxj)
        out.push_back({std::move(f), source + "/warc"});
    } else if (IsFile(source)) {
      const size_t slash = source.rfind('/');
      out.push_back(
          {source, slash == std::string::npos ? "." : source.substr(0, slash)});
    } else {
      return Status::NotFound("dedupe.earlier: " + source +
                              " is neither a data directory nor a CDXJ file");
    }
  }
  return out;
}

// What the cache was built from: every CDXJ file's name, size and
// modification time, in order. A crawl that appended to an index, or an
// index replaced, gives another fingerprint.
uint64_t Fingerprint(const std::vector<SourceFile>& files) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const SourceFile& f : files) {
    struct stat sb {};
    (void)::stat(f.cdxj.c_str(), &sb);
    const int64_t meta[3] = {static_cast<int64_t>(sb.st_size),
                             static_cast<int64_t>(sb.st_mtim.tv_sec),
                             static_cast<int64_t>(sb.st_mtim.tv_nsec)};
    XXH3_64bits_update(st, f.cdxj.data(), f.cdxj.size() + 1);  // with '\0'
    XXH3_64bits_update(st, f.warc_dir.data(), f.warc_dir.size() + 1);
    XXH3_64bits_update(st, meta, sizeof(meta));
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

// The cache file: this header, the files and stats as JSON (meta_bytes),
// then at slots_offset the sorted slots as they are in memory (the same
// binary on the same machine writes and maps it, like the claim table).
constexpr char kCacheMagic[8] = {'C', 'R', 'W', 'L', 'D', 'E', 'A', 'R'};
constexpr uint32_t kCacheVersion = 1;
struct CacheHeader {
  char magic[8];
  uint32_t version;
  uint32_t slot_size;
  uint64_t fingerprint;
  uint64_t slots;
  uint64_t meta_bytes;
  uint64_t slots_offset;
  uint64_t checksum;  // XXH3 of the meta text and the slots
};

// Holds an exclusive flock on a lock file for its life (-1: none taken).
class LockFile {
 public:
  explicit LockFile(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~LockFile() {
    if (fd_ >= 0) ::close(fd_);  // drops the lock
  }
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  int fd_;
};

}  // namespace

EarlierCaptures::~EarlierCaptures() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

Result<std::unique_ptr<EarlierCaptures>> EarlierCaptures::Load(
    const std::vector<std::string>& sources, const std::string& cache) {
  auto files = Resolve(sources);
  if (!files.ok()) return files.status();
  std::unique_ptr<EarlierCaptures> e(new EarlierCaptures());
  uint64_t fingerprint = 0;
  std::optional<LockFile> lock;
  if (!cache.empty()) {
    std::error_code ec;
    const auto parent = std::filesystem::path(cache).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    // The first process builds; the others wait here, then map its file.
    lock.emplace(cache + ".lock");
    fingerprint = Fingerprint(*files);
    if (e->MapCache(cache, fingerprint)) return e;
  }
  for (const SourceFile& f : *files) {
    Status st = e->LoadFile(f.cdxj, f.warc_dir);
    if (!st.ok()) return st;
  }
  e->SortOwned();
  if (!cache.empty() && e->WriteCache(cache, fingerprint).ok()) {
    std::unique_ptr<EarlierCaptures> mapped(new EarlierCaptures());
    if (mapped->MapCache(cache, fingerprint)) return mapped;
  }
  return e;
}

void EarlierCaptures::SortOwned() {
  // By digest; among equal digests the first loaded (lowest file, then
  // offset) wins.
  std::stable_sort(owned_.begin(), owned_.end(),
                   [](const Slot& a, const Slot& b) {
                     return std::memcmp(a.sha1, b.sha1, 20) < 0;
                   });
  auto last = std::unique(owned_.begin(), owned_.end(),
                          [](const Slot& a, const Slot& b) {
                            return std::memcmp(a.sha1, b.sha1, 20) == 0;
                          });
  owned_.erase(last, owned_.end());
  owned_.shrink_to_fit();
  slots_ = owned_.data();
  size_ = owned_.size();
  stats_.captures = size_;
}

Status EarlierCaptures::WriteCache(const std::string& path,
                                   uint64_t fingerprint) const {
  Json files = Json::array();
  for (const File& f : files_)
    files.push_back(Json::array({f.cdxj, f.warc_dir}));
  const Json meta = {{"files", std::move(files)},
                     {"lines", stats_.lines},
                     {"revisits", stats_.revisits},
                     {"no_digest", stats_.no_digest},
                     {"malformed", stats_.malformed},
                     {"first_malformed", stats_.first_malformed}};
  const std::string text = json::Dump(meta);
  CacheHeader h{};
  std::memcpy(h.magic, kCacheMagic, sizeof(h.magic));
  h.version = kCacheVersion;
  h.slot_size = sizeof(Slot);
  h.fingerprint = fingerprint;
  h.slots = size_;
  h.meta_bytes = text.size();
  h.slots_offset = (sizeof(h) + text.size() + 63) / 64 * 64;
  h.checksum = XXH3_64bits_withSeed(slots_, size_ * sizeof(Slot),
                                    XXH3_64bits(text.data(), text.size()));
  // Written whole to a temporary name, then renamed: a reader never maps
  // half a file, and a writer killed mid-way leaves only the temporary.
  const std::string tmp = path + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("dedupe.earlier: cannot write " + tmp);
  std::string head(h.slots_offset, '\0');
  std::memcpy(head.data(), &h, sizeof(h));
  std::memcpy(head.data() + sizeof(h), text.data(), text.size());
  auto write_all = [fd](const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  const bool ok =
      write_all(head.data(), head.size()) &&
      write_all(reinterpret_cast<const char*>(slots_), size_ * sizeof(Slot));
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::IOError("dedupe.earlier: cannot write " + path);
  }
  return Status::Ok();
}

bool EarlierCaptures::MapCache(const std::string& path, uint64_t fingerprint) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat sb {};
  CacheHeader h{};
  const bool head_ok =
      ::fstat(fd, &sb) == 0 && static_cast<size_t>(sb.st_size) >= sizeof(h) &&
      ::pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h));
  const auto size = static_cast<uint64_t>(sb.st_size);
  // Every field is checked against the file's size before it is used: a
  // cache is a file anyone with access to the data directory can damage.
  if (!head_ok || std::memcmp(h.magic, kCacheMagic, sizeof(h.magic)) != 0 ||
      h.version != kCacheVersion || h.slot_size != sizeof(Slot) ||
      h.fingerprint != fingerprint || h.meta_bytes > size ||
      h.slots_offset < sizeof(h) + h.meta_bytes || h.slots_offset > size ||
      h.slots_offset % 64 != 0 ||
      h.slots > (size - h.slots_offset) / sizeof(Slot) ||
      h.slots_offset + h.slots * sizeof(Slot) != size) {
    ::close(fd);
    return false;
  }
  std::string text(h.meta_bytes, '\0');
  if (::pread(fd, text.data(), text.size(), sizeof(h)) !=
      static_cast<ssize_t>(text.size())) {
    ::close(fd);
    return false;
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) return false;
  // Damage anywhere (a slot's offset, a file name) would send Find to
  // the wrong line: the whole file is checked once, at a few GB/s.
  const auto* slots = reinterpret_cast<const Slot*>(
      static_cast<const char*>(map) + h.slots_offset);
  if (XXH3_64bits_withSeed(slots, h.slots * sizeof(Slot),
                           XXH3_64bits(text.data(), text.size())) !=
      h.checksum) {
    ::munmap(map, size);
    return false;
  }
  json::Limits limits;
  limits.max_bytes = size_t{1} << 30;
  auto meta = json::Parse(text, limits);
  const Json* files = meta.ok() ? json::Find(*meta, "files") : nullptr;
  bool ok = files != nullptr && files->is_array();
  std::vector<File> loaded;
  if (ok) {
    for (const Json& f : *files) {
      if (!f.is_array() || f.size() != 2 || !f[0].is_string() ||
          !f[1].is_string()) {
        ok = false;
        break;
      }
      loaded.push_back({f[0].get<std::string>(), f[1].get<std::string>()});
    }
  }
  auto num = [&](const char* key) -> uint64_t {
    const Json* v = json::Find(*meta, key);
    return v != nullptr && v->is_number_unsigned() ? v->get<uint64_t>() : 0;
  };
  for (uint64_t i = 0; ok && i < h.slots; ++i) {
    ok = slots[i].file < loaded.size();  // Find indexes files_ with it
  }
  if (!ok) {
    ::munmap(map, size);
    return false;
  }
  files_ = std::move(loaded);
  stats_ = Stats{};
  stats_.files = files_.size();
  stats_.lines = num("lines");
  stats_.revisits = num("revisits");
  stats_.no_digest = num("no_digest");
  stats_.malformed = num("malformed");
  if (const Json* fm = json::Find(*meta, "first_malformed");
      fm != nullptr && fm->is_string()) {
    stats_.first_malformed = fm->get<std::string>();
  }
  stats_.captures = h.slots;
  map_ = map;
  map_bytes_ = size;
  slots_ = slots;
  size_ = h.slots;
  return true;
}

Status EarlierCaptures::LoadFile(const std::string& cdxj,
                                 const std::string& warc_dir) {
  std::ifstream in(cdxj, std::ios::binary);
  if (!in) return Status::IOError("dedupe.earlier: cannot read " + cdxj);
  const auto file = static_cast<uint32_t>(files_.size());
  files_.push_back({cdxj, warc_dir});
  ++stats_.files;
  std::string line;
  uint64_t offset = 0;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    const uint64_t at = offset;
    offset += line.size() + 1;
    ++number;
    if (in.eof()) break;  // a torn last line (no '\n'): a crawl was cut
    ++stats_.lines;
    Result<CdxjEntry> entry = ParseCdxjLine(line);
    std::optional<Sha1> sha1;
    std::string why;
    if (!entry.ok()) {
      why = entry.status().message();
    } else if (entry->revisit || entry->mime == "warc/revisit") {
      ++stats_.revisits;
      continue;
    } else if (entry->digest.empty()) {
      ++stats_.no_digest;
      continue;
    } else if (entry->timestamp.size() < 14) {
      // A revisit names at least the second of its original.
      why = "timestamp '" + entry->timestamp + "' has fewer than 14 digits";
    } else if (sha1 = DecodeSha1(entry->digest); !sha1.has_value()) {
      why = "digest '" + entry->digest + "' is not a SHA-1";
    }
    if (!sha1.has_value()) {
      if (stats_.malformed++ == 0) {
        stats_.first_malformed =
            cdxj + ":" + std::to_string(number) + ": " + why;
      }
      continue;
    }
    Slot s;
    std::memcpy(s.sha1, sha1->data(), 20);
    s.file = file;
    s.offset = at;
    owned_.push_back(s);
  }
  if (in.bad()) return Status::IOError("dedupe.earlier: error reading " + cdxj);
  return Status::Ok();
}

Result<RevisitOf> EarlierCaptures::Find(std::string_view payload_digest) const {
  const std::optional<Sha1> key = DecodeSha1(payload_digest);
  if (!key.has_value()) {
    return Status::InvalidArgument("not a SHA-1 payload digest: " +
                                   std::string(payload_digest));
  }
  const Slot* end = slots_ + size_;
  const Slot* it =
      std::lower_bound(slots_, end, *key, [](const Slot& s, const Sha1& k) {
        return std::memcmp(s.sha1, k.data(), 20) < 0;
      });
  if (it == end || std::memcmp(it->sha1, key->data(), 20) != 0) {
    return Status::NotFound("no earlier capture");
  }
  const File& f = files_[it->file];
  std::ifstream in(f.cdxj, std::ios::binary);
  std::string line;
  if (!in || !in.seekg(static_cast<std::streamoff>(it->offset)) ||
      !std::getline(in, line)) {
    return Status::IOError("dedupe.earlier: cannot read back " + f.cdxj +
                           " at " + std::to_string(it->offset));
  }
  Result<CdxjEntry> entry = ParseCdxjLine(line);
  if (!entry.ok()) {
    return Status::Corruption("dedupe.earlier: " + f.cdxj + " at " +
                              std::to_string(it->offset) +
                              " changed since it was loaded");
  }
  return OriginalFromCdxj(*entry, f.warc_dir);
}

}  // namespace crawld::store
