// The document feed: per-worker append-only JSON-lines segments and the
// cursor-addressed reader over all workers. Layout and the cursor
// contract: docs/STORE.md.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "base/json.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {

constexpr uint64_t kMinSegmentBytes = 4096;
// Longest feed line accepted by the reader; a writer line is a few hundred
// bytes plus two URLs, so anything near this is damage, not data.
constexpr size_t kMaxLineBytes = 16u << 20;
constexpr size_t kReadChunk = 256u << 10;
constexpr size_t kMaxLimit = 100000;

std::string Errno(const std::string& what) {
  const int e = errno;
  std::string msg = what + ": " + strerror(e);
  if (e == ENOSPC || e == EDQUOT) {
    msg += " (disk full: free space, then resume the crawl)";
  } else if (e == EROFS || e == EACCES || e == EPERM) {
    msg += " (the directory is not writable)";
  }
  return msg;
}

std::string SegmentName(int worker, uint32_t segment) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "feed-%05d-%08u.jsonl", worker, segment);
  return buf;
}

// Parses "feed-WWWWW-SSSSSSSS.jsonl".
bool ParseSegmentName(std::string_view name, int* worker, uint32_t* segment) {
  if (name.size() != 25 || name.substr(0, 5) != "feed-" || name[10] != '-' ||
      name.substr(19) != ".jsonl")
    return false;
  auto digits = [](std::string_view s, auto* out) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  return digits(name.substr(5, 5), worker) &&
         digits(name.substr(11, 8), segment);
}

// worker -> its segment numbers, ascending.
Result<std::map<int, std::vector<uint32_t>>> ListSegments(
    const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::IOError(Errno("feed: open dir " + dir));
  std::map<int, std::vector<uint32_t>> out;
  while (struct dirent* e = ::readdir(d)) {
    int worker;
    uint32_t segment;
    if (ParseSegmentName(e->d_name, &worker, &segment))
      out[worker].push_back(segment);
  }
  ::closedir(d);
  for (auto& [w, segs] : out) std::sort(segs.begin(), segs.end());
  return out;
}

void SyncDir(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

std::string FormatFeedLine(const FeedEntry& e) {
  // Compact JSON, members in this order (ordered_json).
  Json flags = Json::array();
  if (e.flags.noindex) flags.push_back("noindex");
  if (e.revisit) flags.push_back("revisit");
  Json line = {{"url", e.url},
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
  auto offset = num("offset"), length = num("length"), status = num("status"),
       time_us = num("time_us");
  if (!str("url", &e.url) || !str("warc", &e.warc_file) ||
      !str("digest", &e.digest) || !str("mime", &e.mime) || !offset ||
      *offset < 0 || !length || *length < 0 || !status || *status < 0 ||
      *status > 999 || !time_us)
    return std::nullopt;
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

}  // namespace

// ---------------------------------------------------------------------------
// FeedWriter
// ---------------------------------------------------------------------------

class FeedWriter::Impl {
 public:
  explicit Impl(FeedOptions o) : opt_(std::move(o)) {
    opt_.worker_id = std::clamp(opt_.worker_id, 0, 99999);
    opt_.segment_bytes = std::max(opt_.segment_bytes, kMinSegmentBytes);
    env_ = opt_.env != nullptr ? opt_.env : Env::Default();
  }
  ~Impl() {
    if (fd_ >= 0) env_->Close(fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  Status Init() {
    if (opt_.dir.empty()) return Status::InvalidArgument("feed: empty dir");
    if (env_->CreateDirs(opt_.dir) != 0)
      return Status::IOError(Errno("feed: cannot create " + opt_.dir));
    char lock_name[64];
    std::snprintf(lock_name, sizeof(lock_name), "/feed-%05d.lock",
                  opt_.worker_id);
    const std::string lock_path = opt_.dir + lock_name;
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) return Status::IOError(Errno("feed: open " + lock_path));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK)
        return Status::FailedPrecondition("feed: another writer holds " +
                                          lock_path);
      return Status::IOError(Errno("feed: flock " + lock_path));
    }
    auto segments = ListSegments(opt_.dir);
    if (!segments.ok()) return segments.status();
    auto it = segments->find(opt_.worker_id);
    if (it == segments->end()) return OpenSegment(0, /*create=*/true);
    return OpenSegment(it->second.back(), /*create=*/false);
  }

  Status Append(const FeedEntry& entry) {
    if (closed_) return Status::FailedPrecondition("feed: writer closed");
    if (offset_ >= opt_.segment_bytes) {
      if (Status s = Rotate(); !s.ok()) return s;
    }
    line_ = FormatFeedLine(entry);
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

  Status Flush() {
    if (fd_ < 0 || !opt_.fsync) return Status::Ok();
    if (env_->Sync(fd_, true) != 0)
      return Status::IOError(Errno("feed: fdatasync " + name_));
    return Status::Ok();
  }

  Status Close() {
    if (fd_ < 0) return Status::Ok();
    closed_ = true;
    Status s = CloseFd(fd_, name_);
    fd_ = -1;
    if (lock_fd_ >= 0) ::close(lock_fd_);
    lock_fd_ = -1;
    return s;
  }

 private:
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
  Env* env_;  // not owned
  int fd_ = -1;
  int lock_fd_ = -1;
  std::string name_;
  uint32_t segment_ = 0;
  uint64_t offset_ = 0;
  bool closed_ = false;
  std::string line_;
};

FeedWriter::FeedWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeedWriter::~FeedWriter() = default;

Result<std::unique_ptr<FeedWriter>> FeedWriter::Open(
    const FeedOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<FeedWriter>(new FeedWriter(std::move(impl)));
}

Status FeedWriter::Append(const FeedEntry& entry) {
  return impl_->Append(entry);
}
Status FeedWriter::Flush() { return impl_->Flush(); }
Status FeedWriter::Close() { return impl_->Close(); }

// ---------------------------------------------------------------------------
// FeedReader
// ---------------------------------------------------------------------------

namespace {

struct Position {
  uint32_t segment = 0;
  uint64_t offset = 0;
};

using Cursor = std::map<int, Position>;

// "<worker>:<segment>:<offset>" per worker, comma-separated, ascending
// worker. Decimal so it survives URLs, JSON and shell quoting untouched.
std::string FormatCursor(const Cursor& c) {
  std::string out;
  for (const auto& [w, p] : c) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(w) + ":" + std::to_string(p.segment) + ":" +
           std::to_string(p.offset);
  }
  return out;
}

Result<Cursor> ParseCursor(std::string_view s) {
  Cursor c;
  if (s.empty()) return c;
  auto bad = [&] {
    return Status::InvalidArgument("feed: malformed cursor '" +
                                   std::string(s.substr(0, 200)) + "'");
  };
  size_t start = 0;
  for (;;) {
    size_t end = s.find(',', start);
    std::string_view item = s.substr(start, end - start);
    int worker;
    uint32_t segment;
    uint64_t offset;
    const char* p = item.data();
    const char* e = item.data() + item.size();
    auto r1 = std::from_chars(p, e, worker);
    if (r1.ec != std::errc() || r1.ptr == e || *r1.ptr != ':') return bad();
    auto r2 = std::from_chars(r1.ptr + 1, e, segment);
    if (r2.ec != std::errc() || r2.ptr == e || *r2.ptr != ':') return bad();
    auto r3 = std::from_chars(r2.ptr + 1, e, offset);
    if (r3.ec != std::errc() || r3.ptr != e) return bad();
    if (worker < 0 || worker > 99999 || r1.ptr == p || r2.ptr == r1.ptr + 1 ||
        r3.ptr == r2.ptr + 1)
      return bad();
    if (!c.emplace(worker, Position{segment, offset}).second) return bad();
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return c;
}

struct Pending {
  FeedEntry entry;
  Position end;  // just after the entry
};

}  // namespace

class FeedReader::Impl {
 public:
  explicit Impl(std::string dir) : dir_(std::move(dir)) {}

  Result<FeedPage> Read(std::string_view cursor_text, size_t limit) {
    auto cursor = ParseCursor(cursor_text);
    if (!cursor.ok()) return cursor.status();
    auto segments = ListSegments(dir_);
    if (!segments.ok()) return segments.status();
    for (const auto& [w, pos] : *cursor) {
      if (Status s = CheckPosition(*segments, w, pos); !s.ok()) return s;
    }
    limit = std::min(limit, kMaxLimit);
    FeedPage page;
    if (limit == 0) {
      page.next_cursor = FormatCursor(*cursor);
      return page;
    }
    // Each worker's next `limit` entries, then a merge by fetch time, so
    // a busy worker cannot starve the others from a page.
    std::vector<std::pair<int, std::vector<Pending>>> queues;
    for (const auto& [w, segs] : *segments) {
      Position start{segs.front(), 0};
      if (auto it = cursor->find(w); it != cursor->end()) start = it->second;
      auto entries = ReadWorker(w, segs, start, limit);
      if (!entries.ok()) return entries.status();
      if (!entries->empty()) queues.emplace_back(w, std::move(*entries));
    }
    std::vector<size_t> next(queues.size(), 0);
    Cursor pos = *cursor;
    while (page.entries.size() < limit) {
      size_t best = queues.size();
      for (size_t q = 0; q < queues.size(); ++q) {
        if (next[q] >= queues[q].second.size()) continue;
        if (best == queues.size() ||
            queues[q].second[next[q]].entry.fetch_time_us <
                queues[best].second[next[best]].entry.fetch_time_us)
          best = q;
      }
      if (best == queues.size()) break;
      Pending& p = queues[best].second[next[best]++];
      pos[queues[best].first] = p.end;
      p.entry.cursor = FormatCursor(pos);
      page.entries.push_back(std::move(p.entry));
    }
    page.next_cursor = FormatCursor(pos);
    return page;
  }

 private:
  Status CheckPosition(const std::map<int, std::vector<uint32_t>>& segments,
                       int worker, const Position& pos) const {
    auto it = segments.find(worker);
    if (it == segments.end() ||
        !std::binary_search(it->second.begin(), it->second.end(), pos.segment))
      return Status::InvalidArgument("feed: cursor names " +
                                     SegmentName(worker, pos.segment) +
                                     ", which does not exist in " + dir_);
    if (pos.offset == 0) return Status::Ok();
    const std::string path = dir_ + "/" + SegmentName(worker, pos.segment);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(Errno("feed: open " + path));
    char c = 0;
    ssize_t n = ::pread(fd, &c, 1, static_cast<off_t>(pos.offset - 1));
    ::close(fd);
    if (n != 1 || c != '\n')
      return Status::InvalidArgument("feed: cursor offset " +
                                     std::to_string(pos.offset) + " in " +
                                     path + " is not the end of an entry");
    return Status::Ok();
  }

  // Up to `limit` complete entries of one worker after `start`.
  Result<std::vector<Pending>> ReadWorker(int worker,
                                          const std::vector<uint32_t>& segs,
                                          Position start, size_t limit) {
    std::vector<Pending> out;
    Position pos = start;
    auto seg_it = std::lower_bound(segs.begin(), segs.end(), pos.segment);
    while (out.size() < limit && seg_it != segs.end()) {
      const std::string path = dir_ + "/" + SegmentName(worker, *seg_it);
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Status::IOError(Errno("feed: open " + path));
      bool at_end = false;
      Status s = ReadSegment(fd, path, &pos, limit, &out, &at_end);
      ::close(fd);
      if (!s.ok()) return s;
      if (!at_end) break;
      // Only move past a segment once a later one exists: until then the
      // writer may still append to this one.
      if (++seg_it == segs.end()) break;
      pos = Position{*seg_it, 0};
    }
    return out;
  }

  // Reads lines from pos.offset until `limit` entries or the end; sets
  // *at_end when everything complete in the file was consumed. A partial
  // last line is left for later (it is being written, or a crash left it
  // for the writer to cut).
  Status ReadSegment(int fd, const std::string& path, Position* pos,
                     size_t limit, std::vector<Pending>* out, bool* at_end) {
    std::string buf;
    uint64_t file_off = pos->offset;
    *at_end = false;
    struct stat st;
    if (::fstat(fd, &st) != 0)
      return Status::IOError(Errno("feed: stat " + path));
    for (;;) {
      // Sized to what is there: a consumer polling a quiet feed should not
      // pay for a large buffer.
      const uint64_t size = static_cast<uint64_t>(st.st_size);
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
        auto entry = ParseFeedLine(line);
        if (!entry)
          return Status::Corruption("feed: " + path + ": offset " +
                                    std::to_string(pos->offset) +
                                    ": not a feed entry");
        pos->offset += nl + 1 - consumed;
        consumed = nl + 1;
        out->push_back(Pending{std::move(*entry), *pos});
        if (out->size() >= limit) return Status::Ok();
      }
      buf.erase(0, consumed);
      if (n == 0) {
        *at_end = true;
        return Status::Ok();
      }
      if (buf.size() > kMaxLineBytes)
        return Status::Corruption("feed: " + path + ": offset " +
                                  std::to_string(pos->offset) +
                                  ": line longer than 16 MiB");
    }
  }

  std::string dir_;
};

FeedReader::FeedReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeedReader::~FeedReader() = default;

Result<std::unique_ptr<FeedReader>> FeedReader::Open(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::IOError("feed: " + dir + " is not a readable directory");
  return std::unique_ptr<FeedReader>(
      new FeedReader(std::make_unique<Impl>(dir)));
}

Result<FeedPage> FeedReader::Read(std::string_view cursor, size_t limit) {
  return impl_->Read(cursor, limit);
}

}  // namespace crawld::store
