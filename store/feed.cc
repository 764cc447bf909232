// The document feed: per-worker append-only JSON-lines segments, feed IDs
// handed out through a shared-memory mark file per worker, and the reader
// that returns the entries of all workers in ID order up to a watermark.
// Layout, the ID bits, the cursor contract and why the order is exact:
// docs/STORE.md, "Document feed".
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <limits>

#include "base/json.h"
#include "store/feed_internal.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {

using internal::Errno;

constexpr uint64_t kMinSegmentBytes = 4096;
// Longest feed line accepted by the reader; a writer line is a few hundred
// bytes plus two URLs, so anything near this is damage, not data.
constexpr size_t kMaxLineBytes = 16u << 20;
constexpr size_t kReadChunk = 256u << 10;
constexpr size_t kMaxLimit = 100000;
// The reader's binary search over a segment stops at windows this small
// and reads the rest line by line.
constexpr uint64_t kSeekWindow = 16u << 10;
constexpr uint64_t kMaxFeedId = (1ull << 63) - 1;
constexpr char kMarkMagic[8] = {'c', 'r', 'a', 'w', 'l', 'd', 'F', 'M'};
constexpr uint32_t kMarkVersion = 1;
constexpr size_t kBootIdBytes = 40;
constexpr char kDirLock[] = "/feed.lock";

std::string SegmentName(int worker, uint32_t segment) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "feed-%05d-%08u.jsonl", worker, segment);
  return buf;
}

std::string MarkName(int worker) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "feed-%05d.mark", worker);
  return buf;
}

template <typename T>
bool Digits(std::string_view s, T* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Parses "feed-WWWWW-SSSSSSSS.jsonl".
bool ParseSegmentName(std::string_view name, int* worker, uint32_t* segment) {
  if (name.size() != 25 || name.substr(0, 5) != "feed-" || name[10] != '-' ||
      name.substr(19) != ".jsonl")
    return false;
  return Digits(name.substr(5, 5), worker) &&
         Digits(name.substr(11, 8), segment);
}

// Parses "feed-WWWWW.mark".
bool ParseMarkName(std::string_view name, int* worker) {
  if (name.size() != 15 || name.substr(0, 5) != "feed-" ||
      name.substr(10) != ".mark")
    return false;
  return Digits(name.substr(5, 5), worker);
}

struct DirListing {
  std::map<int, std::vector<uint32_t>> segments;  // ascending per worker
  std::vector<int> marks;                         // workers with a mark
};

Result<DirListing> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::IOError(Errno("feed: open dir " + dir));
  DirListing out;
  while (struct dirent* e = ::readdir(d)) {
    int worker;
    uint32_t segment;
    if (ParseSegmentName(e->d_name, &worker, &segment)) {
      out.segments[worker].push_back(segment);
    } else if (ParseMarkName(e->d_name, &worker)) {
      out.marks.push_back(worker);
    }
  }
  ::closedir(d);
  for (auto& [w, segs] : out.segments) std::sort(segs.begin(), segs.end());
  std::sort(out.marks.begin(), out.marks.end());
  return out;
}

void SyncDir(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

Status WriteAllAt(Env* env, int fd, std::string_view data, uint64_t at,
                  const std::string& name) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w =
        env->Pwrite(fd, data.data() + done, data.size() - done, at + done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Errno("feed: write " + name));
    }
    if (w == 0) return Status::IOError("feed: write " + name + ": no progress");
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

// OFD locks (fcntl F_OFD_*): owned by the open file description, so two
// writers in one process conflict as two processes do, they go away with
// the process (kill -9 included), and unlike flock() a reader can ask
// whether one is held without taking it (F_OFD_GETLK), so a reader never
// makes a starting writer fail.
int OfdLock(int fd, short type, bool wait) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  for (;;) {
    int rc = ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
    if (rc == 0 || errno != EINTR) return rc;
  }
}

bool OfdWriteLocked(int fd) {
  struct flock fl = {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) return false;
  return fl.l_type != F_UNLCK;
}

// The directory lock serializes writer starts against readers' snapshots
// of the marks: a reader never sees a mark half-written, and a writer that
// starts after a snapshot sees every mark the snapshot saw.
class DirLock {
 public:
  DirLock() = default;
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  // Writer: creates the lock file through `env`, takes it exclusively.
  Status Exclusive(Env* env, const std::string& dir) {
    const std::string path = dir + kDirLock;
    fd_ = env->Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::IOError(Errno("feed: open " + path));
    if (OfdLock(fd_, F_WRLCK, true) != 0)
      return Status::IOError(Errno("feed: lock " + path));
    return Status::Ok();
  }
  // Reader: shared; no lock file means no writer ever started here.
  void Shared(const std::string& dir) {
    fd_ = ::open((dir + kDirLock).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0 && OfdLock(fd_, F_RDLCK, true) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_ = -1;
};

class SystemFeedClock : public FeedClock {
 public:
  SystemFeedClock() {
    int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[64];
      ssize_t n = ::read(fd, buf, sizeof(buf));
      ::close(fd);
      if (n > 0) {
        boot_.assign(buf, static_cast<size_t>(n));
        while (!boot_.empty() && (boot_.back() == '\n' || boot_.size() > 39))
          boot_.pop_back();
      }
    }
  }
  int64_t WallMs() const override { return Now(CLOCK_REALTIME); }
  int64_t MonoMs() const override { return Now(CLOCK_MONOTONIC); }
  std::string BootId() const override { return boot_; }

 private:
  static int64_t Now(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  }
  std::string boot_;  // "" when unknown: then no two boots compare equal
};

// Two boot ids name the same boot; an unknown one ("") never does.
bool SameBoot(const std::string& a, const std::string& b) {
  return !a.empty() && a == b;
}

// The ID just below millisecond `ms` (feed epoch): every ID handed out at
// or after `ms` is greater. 0 for ms <= 0.
uint64_t BelowMs(int64_t ms) {
  if (ms <= 0) return 0;
  const uint64_t id = internal::ComposeFeedId(ms, 0, 0, 0);
  return id == 0 ? kMaxFeedId : id - 1;
}

// A mark file as read by a writer starting or by a reader: the mark, and
// whether its writer is live (holds the OFD lock).
struct MarkView {
  int worker = 0;
  bool live = false;
  std::optional<internal::FeedMark> mark;
};

// Reads `path` through a read-only shared mapping: the fields a writer sets
// at its start are copied (they change only under the directory lock,
// which the caller holds), last and busy are read atomically (they change
// while the writer runs), busy first (see Bound()).
MarkView ReadMark(const std::string& path, int worker) {
  MarkView v;
  v.worker = worker;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return v;
  v.live = OfdWriteLocked(fd);
  struct stat st;
  if (::fstat(fd, &st) == 0 &&
      static_cast<uint64_t>(st.st_size) >= internal::kFeedMarkBytes) {
    void* map =
        ::mmap(nullptr, internal::kFeedMarkBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      auto* base = static_cast<char*>(map);
      std::string image(base, internal::kFeedMarkLastOffset);
      auto* busy =
          reinterpret_cast<uint64_t*>(base + internal::kFeedMarkBusyOffset);
      auto* last =
          reinterpret_cast<uint64_t*>(base + internal::kFeedMarkLastOffset);
      const uint64_t b = std::atomic_ref<uint64_t>(*busy).load();
      const uint64_t l = std::atomic_ref<uint64_t>(*last).load();
      image.append(reinterpret_cast<const char*>(&l), 8);
      image.append(reinterpret_cast<const char*>(&b), 8);
      image.append(internal::kFeedMarkBytes - image.size(), '\0');
      v.mark = internal::ParseFeedMark(image);
      ::munmap(map, internal::kFeedMarkBytes);
    }
  }
  ::close(fd);
  return v;
}

// Reads the line starting at `start` of the file open as `fd` (at most
// kMaxLineBytes): *line gets it without its newline, *next the offset
// after the newline. false when there is no complete line there.
Result<bool> LineAt(int fd, const std::string& path, uint64_t start,
                    std::string* line, uint64_t* next) {
  line->clear();
  char buf[4096];
  uint64_t off = start;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(Errno("feed: read " + path));
    if (n == 0) return false;
    std::string_view got(buf, static_cast<size_t>(n));
    size_t nl = got.find('\n');
    if (nl != std::string_view::npos) {
      line->append(got.substr(0, nl));
      *next = off + nl + 1;
      return true;
    }
    line->append(got);
    off += static_cast<uint64_t>(n);
    if (line->size() > kMaxLineBytes)
      return Status::Corruption("feed: " + path + ": offset " +
                                std::to_string(start) +
                                ": line longer than 16 MiB");
  }
}

// The first offset >= at (at > 0) where a line starts: just after the
// first '\n' at or after at - 1. `end` when there is none before it.
Result<uint64_t> NextLineStart(int fd, const std::string& path, uint64_t at,
                               uint64_t end) {
  char buf[4096];
  uint64_t off = at - 1;
  while (off < end) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(Errno("feed: read " + path));
    if (n == 0) break;
    const void* nl = memchr(buf, '\n', static_cast<size_t>(n));
    if (nl != nullptr)
      return off + static_cast<uint64_t>(static_cast<const char*>(nl) - buf) +
             1;
    off += static_cast<uint64_t>(n);
  }
  return end;
}

Status NotAnEntry(const std::string& path, uint64_t offset) {
  return Status::Corruption("feed: " + path + ": offset " +
                            std::to_string(offset) +
                            ": not a feed entry with an id (a feed written "
                            "before feed IDs cannot be read by ID)");
}

}  // namespace

const FeedClock* FeedClock::Default() {
  static const SystemFeedClock* clock = new SystemFeedClock();
  return clock;
}

FeedIdParts SplitFeedId(uint64_t id) {
  FeedIdParts p;
  p.unix_ms = static_cast<int64_t>(id >> kFeedTimeShift) + kFeedEpochMs;
  p.node = static_cast<int>((id >> (kFeedSeqBits + kFeedWorkerBits)) &
                            ((1u << kFeedNodeBits) - 1));
  p.worker =
      static_cast<int>((id >> kFeedSeqBits) & ((1u << kFeedWorkerBits) - 1));
  p.sequence = static_cast<int>(id & ((1u << kFeedSeqBits) - 1));
  return p;
}

Result<uint64_t> ParseFeedCursor(std::string_view s) {
  if (s.empty()) return uint64_t{0};
  uint64_t id = 0;
  if (s.size() <= 19 && Digits(s, &id) && id <= kMaxFeedId) return id;
  std::string msg =
      "feed: malformed cursor '" + std::string(s.substr(0, 200)) + "'";
  if (s.find(':') != std::string_view::npos)
    msg +=
        " (a per-worker cursor of crawld before feed IDs; a cursor is now "
        "the decimal ID of the last entry processed: start again from \"\")";
  return Status::InvalidArgument(msg);
}

FeedMerge MergeFeedPages(const std::vector<FeedPage>& pages, size_t limit) {
  FeedMerge out;
  if (pages.empty() || limit == 0) return out;
  uint64_t bound = kMaxFeedId;
  for (const FeedPage& p : pages) bound = std::min(bound, p.watermark);
  std::vector<size_t> next(pages.size(), 0);
  uint64_t last = 0;
  bool cut = false;
  for (;;) {
    size_t best = pages.size();
    for (size_t i = 0; i < pages.size(); ++i) {
      const auto& es = pages[i].entries;
      // Skip what is not above the last one taken (a duplicate).
      while (next[i] < es.size() && !out.order.empty() &&
             es[next[i]].id <= last)
        ++next[i];
      if (next[i] >= es.size() || es[next[i]].id > bound) continue;
      if (best == pages.size() ||
          es[next[i]].id < pages[best].entries[next[best]].id)
        best = i;
    }
    if (best == pages.size()) break;
    if (out.order.size() >= limit) {
      cut = true;
      break;
    }
    last = pages[best].entries[next[best]].id;
    out.order.emplace_back(best, next[best]++);
  }
  out.watermark = cut ? last : bound;
  return out;
}

namespace internal {

uint64_t ComposeFeedId(int64_t ms, int node, int worker, int sequence) {
  if (ms < 0 || ms >= (int64_t{1} << 41)) return 0;
  const uint64_t nw =
      (static_cast<uint64_t>(node) & ((1u << kFeedNodeBits) - 1))
          << kFeedWorkerBits |
      (static_cast<uint64_t>(worker) & ((1u << kFeedWorkerBits) - 1));
  return static_cast<uint64_t>(ms) << kFeedTimeShift | nw << kFeedSeqBits |
         (static_cast<uint64_t>(sequence) & ((1u << kFeedSeqBits) - 1));
}

uint64_t NextFeedId(uint64_t last, int64_t now_ms, int node, int worker) {
  const uint64_t cand =
      ComposeFeedId(std::max<int64_t>(now_ms, 0), node, worker, 0);
  if (cand == 0 && now_ms > 0) return 0;  // past 2093
  if (cand > last) return cand;
  // The clock is not past `last` (same millisecond, or `last` came from a
  // writer whose clock ran ahead): the next free slot after it.
  const int64_t ms = static_cast<int64_t>(last >> kFeedTimeShift);
  const uint64_t mine = ComposeFeedId(ms, node, worker, 0);
  if (mine == 0) return 0;
  if (mine > last) return mine;
  const int seq = static_cast<int>(last & ((1u << kFeedSeqBits) - 1));
  if ((last >> kFeedSeqBits) == (mine >> kFeedSeqBits) &&
      seq + 1 < (1 << kFeedSeqBits))
    return mine + static_cast<uint64_t>(seq) + 1;
  return ComposeFeedId(ms + 1, node, worker, 0);
}

std::string FormatFeedMark(const FeedMark& m) {
  std::string out(kFeedMarkBytes, '\0');
  char* p = out.data();
  auto put32 = [&](size_t at, uint32_t v) { memcpy(p + at, &v, 4); };
  auto put64 = [&](size_t at, uint64_t v) { memcpy(p + at, &v, 8); };
  memcpy(p, kMarkMagic, 8);
  put32(8, kMarkVersion);
  put32(12, static_cast<uint32_t>(m.node));
  put32(16, static_cast<uint32_t>(m.worker));
  const size_t boot = std::min(m.boot_id.size(), kBootIdBytes - 1);
  put32(20, static_cast<uint32_t>(boot));
  memcpy(p + 24, m.boot_id.data(), boot);
  put64(64, static_cast<uint64_t>(m.anchor_ms));
  put64(72, m.generation);
  put64(kFeedMarkLastOffset, m.last_id);
  put64(kFeedMarkBusyOffset, m.busy ? 1 : 0);
  return out;
}

std::optional<FeedMark> ParseFeedMark(std::string_view bytes) {
  if (bytes.size() < kFeedMarkBytes || memcmp(bytes.data(), kMarkMagic, 8) != 0)
    return std::nullopt;
  const char* p = bytes.data();
  auto get32 = [&](size_t at) {
    uint32_t v;
    memcpy(&v, p + at, 4);
    return v;
  };
  auto get64 = [&](size_t at) {
    uint64_t v;
    memcpy(&v, p + at, 8);
    return v;
  };
  FeedMark m;
  const uint32_t node = get32(12), worker = get32(16), boot = get32(20);
  const uint64_t busy = get64(kFeedMarkBusyOffset);
  if (get32(8) != kMarkVersion || node >= (1u << kFeedNodeBits) ||
      worker > 99999 || boot >= kBootIdBytes || busy > 1)
    return std::nullopt;
  // An anchor far outside the 41-bit ID time is damage; inheriting it
  // would end every writer's IDs.
  const auto anchor = static_cast<int64_t>(get64(64));
  if (anchor <= -(int64_t{1} << 41) || anchor >= (int64_t{1} << 41))
    return std::nullopt;
  m.node = static_cast<int>(node);
  m.worker = static_cast<int>(worker);
  m.boot_id.assign(p + 24, boot);
  for (char c : m.boot_id) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return std::nullopt;
  }
  m.anchor_ms = static_cast<int64_t>(get64(64));
  m.generation = get64(72);
  m.last_id = get64(kFeedMarkLastOffset);
  m.busy = busy == 1;
  if (m.last_id > kMaxFeedId) return std::nullopt;
  return m;
}

std::string FormatFeedLine(const FeedEntry& e) {
  // Compact JSON, members in this order (ordered_json), "id" first so that
  // the reader's binary search reads it without parsing the line. A string:
  // IDs pass 2^53, where JavaScript numbers stop being exact.
  Json flags = Json::array();
  if (e.flags.noindex) flags.push_back("noindex");
  if (e.revisit) flags.push_back("revisit");
  Json line = {{"id", std::to_string(e.id)},
               {"url", e.url},
               {"warc", e.warc_file},
               {"offset", e.offset},
               {"length", e.length},
               {"digest", e.digest},
               {"status", e.status},
               {"mime", e.mime},
               {"time", internal::FormatWarcDate(e.fetch_time_us)},
               {"time_us", e.fetch_time_us},
               {"flags", std::move(flags)}};
  if (!e.flags.near_duplicate_of.empty()) {
    line["near_duplicate_of"] = e.flags.near_duplicate_of;
  }
  return json::Dump(line) + "\n";
}

std::optional<FeedEntry> ParseFeedLine(std::string_view line) {
  auto obj = internal::ParseFlatJsonObject(line);
  if (!obj) return std::nullopt;
  FeedEntry e;
  auto str = [&](std::string_view key, std::string* out) {
    const Json* v = json::Find(*obj, key);
    if (v == nullptr || !v->is_string()) return false;
    *out = v->get<std::string>();
    return true;
  };
  // ParseFlatJsonObject keeps integers within 18 digits.
  auto num = [&](std::string_view key) -> std::optional<int64_t> {
    const Json* v = json::Find(*obj, key);
    if (v == nullptr || !v->is_number_integer()) return std::nullopt;
    return v->get<int64_t>();
  };
  std::string id;
  auto offset = num("offset"), length = num("length"), status = num("status"),
       time_us = num("time_us");
  if (!str("id", &id) || !str("url", &e.url) || !str("warc", &e.warc_file) ||
      !str("digest", &e.digest) || !str("mime", &e.mime) || !offset ||
      *offset < 0 || !length || *length < 0 || !status || *status < 0 ||
      *status > 999 || !time_us)
    return std::nullopt;
  auto parsed = ParseFeedCursor(id);
  if (!parsed.ok() || *parsed == 0) return std::nullopt;
  e.id = *parsed;
  e.offset = static_cast<uint64_t>(*offset);
  e.length = static_cast<uint64_t>(*length);
  e.status = static_cast<int>(*status);
  e.fetch_time_us = *time_us;
  if (const Json* flags = json::Find(*obj, "flags"); flags != nullptr) {
    if (!flags->is_array()) return std::nullopt;
    for (const Json& f : *flags) {
      if (f == "noindex") e.flags.noindex = true;
      if (f == "revisit") e.revisit = true;
    }
  }
  str("near_duplicate_of", &e.flags.near_duplicate_of);
  return e;
}

std::optional<uint64_t> FeedLineId(std::string_view line) {
  constexpr std::string_view kPrefix = "{\"id\":\"";
  if (line.substr(0, kPrefix.size()) == kPrefix) {
    std::string_view rest = line.substr(kPrefix.size());
    size_t q = rest.find('"');
    if (q != std::string_view::npos) {
      auto id = ParseFeedCursor(rest.substr(0, q));
      if (id.ok() && *id != 0) return *id;
    }
  }
  auto e = ParseFeedLine(line);
  if (!e) return std::nullopt;
  return e->id;
}

}  // namespace internal

// ---------------------------------------------------------------------------
// FeedWriter
// ---------------------------------------------------------------------------

class FeedWriter::Impl {
 public:
  explicit Impl(FeedOptions o) : opt_(std::move(o)) {
    opt_.worker_id = std::clamp(opt_.worker_id, 0, 99999);
    opt_.segment_bytes = std::max(opt_.segment_bytes, kMinSegmentBytes);
    env_ = opt_.env != nullptr ? opt_.env : Env::Default();
    clock_ = opt_.clock != nullptr ? opt_.clock : FeedClock::Default();
  }
  ~Impl() {
    if (map_ != nullptr) {
      Busy().store(0);
      ::munmap(map_, internal::kFeedMarkBytes);
    }
    if (fd_ >= 0) env_->Close(fd_);
    if (mark_fd_ >= 0) env_->Close(mark_fd_);
  }

  Status Init() {
    if (opt_.dir.empty()) return Status::InvalidArgument("feed: empty dir");
    if (opt_.node_id < 0 || opt_.node_id >= (1 << kFeedNodeBits))
      return Status::InvalidArgument(
          "feed: node id " + std::to_string(opt_.node_id) + " out of 0..1023");
    if (env_->CreateDirs(opt_.dir) != 0)
      return Status::IOError(Errno("feed: cannot create " + opt_.dir));
    const std::string mark_path = opt_.dir + "/" + MarkName(opt_.worker_id);
    mark_fd_ = env_->Open(mark_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (mark_fd_ < 0) return Status::IOError(Errno("feed: open " + mark_path));
    if (OfdLock(mark_fd_, F_WRLCK, false) != 0) {
      if (errno == EAGAIN || errno == EACCES)
        return Status::FailedPrecondition("feed: another writer holds " +
                                          mark_path);
      return Status::IOError(Errno("feed: lock " + mark_path));
    }
    DirLock dir_lock;
    if (Status s = dir_lock.Exclusive(env_, opt_.dir); !s.ok()) return s;
    auto listing = ListDir(opt_.dir);
    if (!listing.ok()) return listing.status();

    // Every ID this dir's writers handed out, and every bound a reader
    // could have drawn from their clocks, lie below what this writer
    // starts from.
    const std::string boot = clock_->BootId();
    uint64_t floor = 0;
    int64_t anchor = std::numeric_limits<int64_t>::min();
    uint64_t generation = 0;
    for (int w : listing->marks) {
      MarkView v = ReadMark(opt_.dir + "/" + MarkName(w), w);
      if (!v.mark) continue;
      floor = std::max(floor, v.mark->last_id);
      if (SameBoot(v.mark->boot_id, boot))
        anchor = std::max(anchor, v.mark->anchor_ms);
      if (w == opt_.worker_id) {
        generation = v.mark->generation;
      } else if (v.live && v.mark->node == opt_.node_id &&
                 (v.mark->worker & 0xff) == (opt_.worker_id & 0xff)) {
        return Status::FailedPrecondition(
            "feed: live writer of worker " + std::to_string(w) +
            " has the same feed ID bits as worker " +
            std::to_string(opt_.worker_id) + " (worker ids modulo 256)");
      }
    }
    auto it = listing->segments.find(opt_.worker_id);
    Status s = it == listing->segments.end()
                   ? OpenSegment(0, /*create=*/true)
                   : OpenSegment(it->second.back(), /*create=*/false);
    if (!s.ok()) return s;
    if (offset_ > 0) {
      // The feed itself, in case the mark was lost.
      auto last = LastLineId(opt_.dir + "/" + name_, offset_);
      if (!last.ok()) return last.status();
      floor = std::max(floor, *last);
    }
    const int64_t mono = clock_->MonoMs();
    anchor = std::max(anchor, clock_->WallMs() - kFeedEpochMs - mono);
    anchor =
        std::max(anchor, static_cast<int64_t>(floor >> kFeedTimeShift) - mono);
    anchor_ms_ = anchor;
    last_id_ = floor;

    internal::FeedMark m;
    m.node = opt_.node_id;
    m.worker = opt_.worker_id;
    m.boot_id = boot;
    m.anchor_ms = anchor;
    m.generation = generation + 1;
    m.last_id = floor;
    m.busy = false;
    if (Status w = WriteAllAt(env_, mark_fd_, internal::FormatFeedMark(m), 0,
                              MarkName(opt_.worker_id));
        !w.ok())
      return w;
    void* map = ::mmap(nullptr, internal::kFeedMarkBytes,
                       PROT_READ | PROT_WRITE, MAP_SHARED, mark_fd_, 0);
    if (map == MAP_FAILED)
      return Status::IOError(Errno("feed: mmap " + mark_path));
    map_ = static_cast<char*>(map);
    return Status::Ok();
  }

  Result<uint64_t> BeginEntry() {
    if (closed_) return Status::FailedPrecondition("feed: writer closed");
    if (open_id_ != 0)
      return Status::FailedPrecondition("feed: an entry is already open");
    // Busy first, then the clock: a reader that saw busy == 0 read its
    // clock before this store, so the ID below is above its bound
    // (docs/STORE.md, "Why the order is exact").
    Busy().store(1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint64_t id = internal::NextFeedId(
        last_id_, anchor_ms_ + clock_->MonoMs(), opt_.node_id, opt_.worker_id);
    if (id == 0) {
      Busy().store(0);
      return Status::ResourceExhausted("feed: the feed ID clock is past 2093");
    }
    last_id_ = id;
    Last().store(id);
    open_id_ = id;
    return id;
  }

  void AbortEntry() {
    if (open_id_ == 0) return;
    open_id_ = 0;
    Busy().store(0);
  }

  Status Append(const FeedEntry& entry) {
    if (closed_) return Status::FailedPrecondition("feed: writer closed");
    FeedEntry e = entry;
    if (e.id == 0) {
      if (open_id_ != 0)
        return Status::InvalidArgument("feed: entry without the open id");
      auto id = BeginEntry();
      if (!id.ok()) return id.status();
      e.id = *id;
    } else if (e.id != open_id_) {
      return Status::InvalidArgument("feed: entry id " + std::to_string(e.id) +
                                     " is not the open entry's");
    }
    Status s = Write(e);
    AbortEntry();  // the entry is over, written or not
    return s;
  }

  Status Flush() {
    if (fd_ < 0 || !opt_.fsync) return Status::Ok();
    if (env_->Sync(fd_, true) != 0)
      return Status::IOError(Errno("feed: fdatasync " + name_));
    return Status::Ok();
  }

  Status Close() {
    if (closed_) return Status::Ok();
    AbortEntry();
    closed_ = true;
    Status s;
    if (fd_ >= 0) s = CloseFd(fd_, name_);
    fd_ = -1;
    if (map_ != nullptr) ::munmap(map_, internal::kFeedMarkBytes);
    map_ = nullptr;
    if (mark_fd_ >= 0) env_->Close(mark_fd_);  // releases the lock
    mark_fd_ = -1;
    return s;
  }

 private:
  std::atomic_ref<uint64_t> Busy() {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(map_ + internal::kFeedMarkBusyOffset));
  }
  std::atomic_ref<uint64_t> Last() {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(map_ + internal::kFeedMarkLastOffset));
  }

  Status Write(const FeedEntry& e) {
    if (offset_ >= opt_.segment_bytes) {
      if (Status s = Rotate(); !s.ok()) return s;
    }
    line_ = internal::FormatFeedLine(e);
    const uint64_t start = offset_;
    Status s = WriteAllAt(env_, fd_, line_, start, name_);
    if (!s.ok()) {
      if (env_->Ftruncate(fd_, start) != 0) {
        // The segment may now end in a partial line; readers never return
        // it, and the next Open cuts it. Refuse to append after it.
        closed_ = true;
        return Status::IOError(s.message() +
                               "; rollback failed too: " + strerror(errno));
      }
      return s;
    }
    offset_ = start + line_.size();
    return Status::Ok();
  }

  // The id of the last complete line of the `size` bytes of `path`; 0 when
  // it has none (a feed from before feed IDs).
  static Result<uint64_t> LastLineId(const std::string& path, uint64_t size) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(Errno("feed: open " + path));
    // The line ends at size - 1; find where it starts.
    uint64_t start = 0;
    std::string buf;
    uint64_t pos = size - 1;
    while (pos > 0 && size - pos <= kMaxLineBytes) {
      const uint64_t from = pos >= 4096 ? pos - 4096 : 0;
      buf.resize(pos - from);
      ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(from));
      if (n != static_cast<ssize_t>(buf.size())) break;
      size_t nl = buf.rfind('\n');
      if (nl != std::string::npos) {
        start = from + nl + 1;
        break;
      }
      pos = from;
    }
    std::string line;
    uint64_t next = 0;
    auto got = LineAt(fd, path, start, &line, &next);
    ::close(fd);
    if (!got.ok()) return got.status();
    if (!*got) return uint64_t{0};
    return internal::FeedLineId(line).value_or(0);
  }

  Status CloseFd(int fd, const std::string& name) const {
    Status result;
    if (opt_.fsync && env_->Sync(fd, false) != 0)
      result = Status::IOError(Errno("feed: fsync " + name));
    if (env_->Close(fd) != 0 && result.ok())
      result = Status::IOError(Errno("feed: close " + name));
    return result;
  }

  Status OpenSegment(uint32_t segment, bool create) {
    const std::string name = SegmentName(opt_.worker_id, segment);
    const std::string path = opt_.dir + "/" + name;
    uint64_t size = 0;
    if (!create) {
      // A crash mid-append leaves a partial last line: cut it so the next
      // line does not glue onto it.
      auto kept = TruncateToLastCompleteLine(path);
      if (!kept.ok()) return kept.status();
      size = *kept;
    }
    int fd = env_->Open(
        path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0644);
    if (fd < 0) return Status::IOError(Errno("feed: open " + path));
    if (create && opt_.fsync) SyncDir(opt_.dir);
    const int old_fd = fd_;
    const std::string old_name = name_;
    fd_ = fd;
    name_ = name;
    segment_ = segment;
    offset_ = size;
    if (old_fd >= 0) return CloseFd(old_fd, old_name);
    return Status::Ok();
  }

  Status Rotate() { return OpenSegment(segment_ + 1, /*create=*/true); }

  FeedOptions opt_;
  Env* env_;                // not owned
  const FeedClock* clock_;  // not owned
  int fd_ = -1;
  int mark_fd_ = -1;
  char* map_ = nullptr;  // the mark file, shared
  std::string name_;
  uint32_t segment_ = 0;
  uint64_t offset_ = 0;
  bool closed_ = false;
  std::string line_;
  int64_t anchor_ms_ = 0;  // feed-epoch ms at MonoMs() == 0
  uint64_t last_id_ = 0;
  uint64_t open_id_ = 0;  // the entry between BeginEntry and its end
};

FeedWriter::FeedWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeedWriter::~FeedWriter() = default;

Result<std::unique_ptr<FeedWriter>> FeedWriter::Open(
    const FeedOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<FeedWriter>(new FeedWriter(std::move(impl)));
}

Result<uint64_t> FeedWriter::BeginEntry() { return impl_->BeginEntry(); }
void FeedWriter::AbortEntry() { impl_->AbortEntry(); }
Status FeedWriter::Append(const FeedEntry& entry) {
  return impl_->Append(entry);
}
Status FeedWriter::Flush() { return impl_->Flush(); }
Status FeedWriter::Close() { return impl_->Close(); }

// ---------------------------------------------------------------------------
// FeedReader
// ---------------------------------------------------------------------------

class FeedReader::Impl {
 public:
  Impl(std::string dir, const FeedClock* clock)
      : dir_(std::move(dir)), clock_(clock) {}

  Result<FeedPage> Read(std::string_view cursor_text, size_t limit) {
    auto cursor = ParseFeedCursor(cursor_text);
    if (!cursor.ok()) return cursor.status();
    const uint64_t after = *cursor;
    limit = std::min(limit, kMaxLimit);
    FeedPage page;
    page.next_cursor = std::string(cursor_text);
    page.watermark = after;
    if (limit == 0) return page;
    // The bound first, the segments after: an entry at or below the bound
    // is complete in its segment by the time the bound is known (and a
    // segment started since is listed).
    auto bound_or = Bound();
    if (!bound_or.ok()) return bound_or.status();
    const uint64_t bound = *bound_or;
    auto listing = ListDir(dir_);
    if (!listing.ok()) return listing.status();
    if (bound == 0 && listing->marks.empty() && !listing->segments.empty())
      return Status::Corruption(
          "feed: " + dir_ +
          " has segments but no mark files: a feed written before feed IDs "
          "cannot be read by ID");
    if (bound <= after) return page;
    // Each worker's next `limit` entries, then a merge by ID.
    std::vector<std::vector<FeedEntry>> queues;
    for (const auto& [w, segs] : listing->segments) {
      auto entries = ReadWorker(w, segs, after, bound, limit);
      if (!entries.ok()) return entries.status();
      if (!entries->empty()) queues.push_back(std::move(*entries));
    }
    std::vector<size_t> next(queues.size(), 0);
    while (page.entries.size() < limit) {
      size_t best = queues.size();
      for (size_t q = 0; q < queues.size(); ++q) {
        if (next[q] >= queues[q].size()) continue;
        if (best == queues.size() ||
            queues[q][next[q]].id < queues[best][next[best]].id)
          best = q;
      }
      if (best == queues.size()) break;
      FeedEntry& e = queues[best][next[best]++];
      e.cursor = std::to_string(e.id);
      page.entries.push_back(std::move(e));
    }
    page.watermark = bound;
    if (!page.entries.empty()) {
      page.next_cursor = page.entries.back().cursor;
      if (page.entries.size() >= limit) page.watermark = page.entries.back().id;
    }
    return page;
  }

 private:
  // The highest ID up to which every entry is in the segments now and no
  // writer will ever add one (docs/STORE.md, "Why the order is exact").
  Result<uint64_t> Bound() {
    // The clock before any mark: a writer that we see idle takes its
    // next ID's time after this.
    const int64_t now = clock_->MonoMs();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::string boot = clock_->BootId();
    // Marks listed and read under the lock: a writer either finished its
    // start before (its mark is read here) or starts after (above us).
    DirLock lock;
    lock.Shared(dir_);
    auto listing = ListDir(dir_);
    if (!listing.ok()) return listing.status();
    const std::vector<int>& marks = listing->marks;
    uint64_t live_bound = kMaxFeedId;
    uint64_t max_last = 0;
    int64_t max_anchor = std::numeric_limits<int64_t>::min();
    bool anchored = false;
    for (int w : marks) {
      MarkView v = ReadMark(dir_ + "/" + MarkName(w), w);
      if (!v.mark) {
        // A live writer whose mark we cannot read holds the feed; a dead
        // one with a damaged mark wrote nothing we could place.
        if (v.live) live_bound = 0;
        continue;
      }
      const internal::FeedMark& m = *v.mark;
      max_last = std::max(max_last, m.last_id);
      const bool same_boot = SameBoot(m.boot_id, boot);
      if (same_boot) {
        max_anchor = std::max(max_anchor, m.anchor_ms);
        anchored = true;
      }
      if (!v.live) continue;  // any restart starts above `restart` below
      uint64_t b;
      if (m.busy) {
        b = m.last_id == 0 ? 0 : m.last_id - 1;
      } else if (same_boot) {
        b = std::max(m.last_id, BelowMs(m.anchor_ms + now));
      } else {
        b = m.last_id;  // another machine's clock: only its IDs tell
      }
      live_bound = std::min(live_bound, b);
    }
    // What a writer starting from now on starts above.
    uint64_t restart = max_last;
    if (anchored) restart = std::max(restart, BelowMs(max_anchor + now));
    return std::min(live_bound, restart);
  }

  // The first ID of a segment (cached: a line once written never changes);
  // nullopt for a segment without a complete line.
  Result<std::optional<uint64_t>> FirstId(int worker, uint32_t segment) {
    auto key = std::make_pair(worker, segment);
    if (auto it = first_ids_.find(key); it != first_ids_.end())
      return std::optional<uint64_t>(it->second);
    const std::string path = dir_ + "/" + SegmentName(worker, segment);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(Errno("feed: open " + path));
    std::string line;
    uint64_t next = 0;
    auto got = LineAt(fd, path, 0, &line, &next);
    ::close(fd);
    if (!got.ok()) return got.status();
    if (!*got) return std::optional<uint64_t>();
    auto id = internal::FeedLineId(line);
    if (!id) return NotAnEntry(path, 0);
    first_ids_[key] = *id;
    return std::optional<uint64_t>(*id);
  }

  // The offset of the first complete line of `path` (open as fd, `size`
  // bytes) whose ID is above `after`; `size` when there is none. A
  // segment's IDs ascend, so this is a binary search over line starts,
  // ending in a short scan.
  Result<uint64_t> SeekAfter(int fd, const std::string& path, uint64_t size,
                             uint64_t after) {
    // lo: 0 or a line start with ID <= after; hi: size or a line start
    // with ID > after.
    uint64_t lo = 0, hi = size;
    std::string line;
    while (hi - lo > kSeekWindow) {
      const uint64_t mid = lo + (hi - lo) / 2;
      auto s = NextLineStart(fd, path, mid, hi);
      if (!s.ok()) return s.status();
      if (*s >= hi) break;
      uint64_t next = 0;
      auto got = LineAt(fd, path, *s, &line, &next);
      if (!got.ok()) return got.status();
      if (!*got) {
        hi = *s;  // the tail being written
        continue;
      }
      auto id = internal::FeedLineId(line);
      if (!id) return NotAnEntry(path, *s);
      if (*id <= after) {
        lo = *s;
      } else {
        hi = *s;
      }
    }
    // The window [lo, hi) in one read, scanned in memory; a line that
    // runs past hi ends the scan (the line at hi, or the tail, follows).
    std::string window(static_cast<size_t>(hi - lo), '\0');
    size_t got = 0;
    while (got < window.size()) {
      ssize_t n = ::pread(fd, window.data() + got, window.size() - got,
                          static_cast<off_t>(lo + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(Errno("feed: read " + path));
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    window.resize(got);
    size_t pos = 0;
    for (;;) {
      const size_t nl = window.find('\n', pos);
      if (nl == std::string::npos) return hi;
      auto id =
          internal::FeedLineId(std::string_view(window).substr(pos, nl - pos));
      if (!id) return NotAnEntry(path, lo + pos);
      if (*id > after) return lo + pos;
      pos = nl + 1;
    }
  }

  // Up to `limit` complete entries of one worker with IDs in (after,
  // bound], in file order (which is ID order; checked).
  Result<std::vector<FeedEntry>> ReadWorker(int worker,
                                            const std::vector<uint32_t>& segs,
                                            uint64_t after, uint64_t bound,
                                            size_t limit) {
    std::vector<FeedEntry> out;
    // The last segment that starts at or below `after` holds the first
    // entry after it (or it is in the next one).
    size_t first = 0;
    for (size_t i = segs.size(); i-- > 0;) {
      auto id = FirstId(worker, segs[i]);
      if (!id.ok()) return id.status();
      if (id->has_value() && **id <= after) {
        first = i;
        break;
      }
    }
    uint64_t prev = 0;
    for (size_t i = first; i < segs.size() && out.size() < limit; ++i) {
      const std::string path = dir_ + "/" + SegmentName(worker, segs[i]);
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Status::IOError(Errno("feed: open " + path));
      bool done = false;
      Status s = ReadSegment(fd, path, i == first, after, bound, limit, &prev,
                             &out, &done);
      ::close(fd);
      if (!s.ok()) return s;
      if (done) break;
    }
    return out;
  }

  // Reads the entries of one segment with IDs in (after, bound] until
  // `limit` are in *out; *done when an ID above the bound was met. A
  // partial last line is left for later (it is being written, or a crash
  // left it for the writer to cut).
  Status ReadSegment(int fd, const std::string& path, bool seek, uint64_t after,
                     uint64_t bound, size_t limit, uint64_t* prev,
                     std::vector<FeedEntry>* out, bool* done) {
    struct stat st;
    if (::fstat(fd, &st) != 0)
      return Status::IOError(Errno("feed: stat " + path));
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    uint64_t line_off = 0;
    if (seek) {
      auto start = SeekAfter(fd, path, size, after);
      if (!start.ok()) return start.status();
      line_off = *start;
    }
    std::string buf;
    uint64_t file_off = line_off;
    for (;;) {
      // Sized to what is there: a consumer polling a quiet feed should not
      // pay for a large buffer.
      const size_t want =
          size > file_off
              ? static_cast<size_t>(std::min<uint64_t>(size - file_off,
                                                       kReadChunk))
              : 4096;  // the file grew since fstat, or this is its end
      size_t old = buf.size();
      buf.resize(old + want);
      ssize_t n =
          ::pread(fd, buf.data() + old, want, static_cast<off_t>(file_off));
      if (n < 0 && errno == EINTR) {
        buf.resize(old);
        continue;
      }
      if (n < 0) return Status::IOError(Errno("feed: read " + path));
      buf.resize(old + static_cast<size_t>(n));
      file_off += static_cast<uint64_t>(n);
      size_t consumed = 0;
      for (;;) {
        size_t nl = buf.find('\n', consumed);
        if (nl == std::string::npos) break;
        std::string_view line(buf.data() + consumed, nl - consumed);
        auto entry = internal::ParseFeedLine(line);
        if (!entry) return NotAnEntry(path, line_off);
        if (entry->id <= *prev)
          return Status::Corruption("feed: " + path + ": offset " +
                                    std::to_string(line_off) + ": id " +
                                    std::to_string(entry->id) +
                                    " is not above the one before it");
        *prev = entry->id;
        line_off += nl + 1 - consumed;
        consumed = nl + 1;
        if (entry->id <= after) continue;
        if (entry->id > bound) {
          *done = true;
          return Status::Ok();
        }
        out->push_back(std::move(*entry));
        if (out->size() >= limit) {
          *done = true;
          return Status::Ok();
        }
      }
      buf.erase(0, consumed);
      if (n == 0) return Status::Ok();
      if (buf.size() > kMaxLineBytes)
        return Status::Corruption("feed: " + path + ": offset " +
                                  std::to_string(line_off) +
                                  ": line longer than 16 MiB");
    }
  }

  std::string dir_;
  const FeedClock* clock_;  // not owned
  std::map<std::pair<int, uint32_t>, uint64_t> first_ids_;
};

FeedReader::FeedReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeedReader::~FeedReader() = default;

Result<std::unique_ptr<FeedReader>> FeedReader::Open(const std::string& dir,
                                                     const FeedClock* clock) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::IOError("feed: " + dir + " is not a readable directory");
  return std::unique_ptr<FeedReader>(new FeedReader(std::make_unique<Impl>(
      dir, clock != nullptr ? clock : FeedClock::Default())));
}

Result<FeedPage> FeedReader::Read(std::string_view cursor, size_t limit) {
  return impl_->Read(cursor, limit);
}

}  // namespace crawld::store
