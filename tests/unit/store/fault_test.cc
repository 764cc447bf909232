// Store fault injection (issue 19 item 3 and Build 3): a disk that fills up
// while a record is written, a read-only directory. Through the Env seam of
// store::Options (LevelDB's ErrorEnv is the model), and, when the test runs
// as root, on a real small tmpfs in a private mount namespace.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>

#include "store/store.h"
#include "tests/unit/store/test_util.h"

namespace crawld::store {
namespace {

using testing::ExpectConsistent;
using testing::Files;
using testing::Joined;
using testing::TempDir;
namespace fs = std::filesystem;

// A disk with `free` bytes left, shared by every file written through this
// Env (WARC, CDXJ and feed alike): a write that does not fit writes what
// fits, and the next one fails with ENOSPC, as a full file system does.
// Truncation gives the bytes back. Everything else is the real POSIX Env.
class FullDiskEnv : public Env {
 public:
  explicit FullDiskEnv(uint64_t free) : free_(free) {}

  void set_free(uint64_t free) { free_ = free; }
  uint64_t enospc_count() const { return enospc_; }

  int Open(const std::string& path, int flags, int mode) override {
    return base_->Open(path, flags, mode);
  }
  ssize_t Pwrite(int fd, const void* data, size_t size,
                 uint64_t offset) override {
    const uint64_t cur = Size(fd);
    const uint64_t end = offset + size;
    const uint64_t growth = end > cur ? end - cur : 0;
    if (growth <= free_) {
      ssize_t n = base_->Pwrite(fd, data, size, offset);
      if (n > 0 && offset + static_cast<uint64_t>(n) > cur) {
        free_ -= offset + static_cast<uint64_t>(n) - cur;
      }
      return n;
    }
    // Only what fits; the rest fails on the next call.
    const uint64_t room = cur + free_ > offset ? cur + free_ - offset : 0;
    if (room == 0) {
      ++enospc_;
      errno = ENOSPC;
      return -1;
    }
    ssize_t n = base_->Pwrite(fd, data, static_cast<size_t>(room), offset);
    if (n > 0) free_ = 0;
    return n;
  }
  int Ftruncate(int fd, uint64_t size) override {
    const uint64_t cur = Size(fd);
    const int rc = base_->Ftruncate(fd, size);
    if (rc == 0 && size < cur) free_ += cur - size;
    return rc;
  }
  int Sync(int fd, bool data_only) override {
    return base_->Sync(fd, data_only);
  }
  int Close(int fd) override { return base_->Close(fd); }
  int CreateDirs(const std::string& path) override {
    return base_->CreateDirs(path);
  }

 private:
  static uint64_t Size(int fd) {
    struct stat st;
    return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

  Env* base_ = Env::Default();
  uint64_t free_;
  uint64_t enospc_ = 0;
};

// A directory on a read-only file system: creating anything fails.
class ReadOnlyEnv : public FullDiskEnv {
 public:
  ReadOnlyEnv() : FullDiskEnv(UINT64_MAX) {}
  int Open(const std::string& path, int flags, int mode) override {
    if (flags & O_CREAT) {
      errno = EROFS;
      return -1;
    }
    return FullDiskEnv::Open(path, flags, mode);
  }
};

std::string Noise(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

Options StoreOptions(const std::string& root, Env* env) {
  Options o;
  o.dir = root + "/warc";
  o.index_dir = root + "/index";
  o.worker_id = 1;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  o.env = env;
  return o;
}

// One of three kinds of write, chosen by `i`: an exchange with an
// incompressible body, an identical-payload revisit, a metadata record.
// Returns the URL indexed by the write ("" for metadata, not indexed).
Status WriteOne(WarcWriter* w, int i, std::string* indexed_url) {
  const std::string url = "http://disk.test/" + std::to_string(i);
  const std::string body_text = Noise(3000 + (i * 577) % 9000, i);
  DocBuffer body;
  if (Status s = body.Append(body_text); !s.ok()) return s;
  FetchRecord r;
  r.target_uri = url;
  r.ip = "127.0.0.1";
  r.fetch_time_us = 1704164645000000 + i;
  r.request_head = "GET /" + std::to_string(i) + " HTTP/1.1\r\n\r\n";
  r.response_head =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_text.size()) +
      "\r\n\r\n";
  r.body = &body;
  indexed_url->clear();
  switch (i % 3) {
    case 0: {
      auto ex = w->WriteExchange(r);
      if (ex.ok()) *indexed_url = url;
      return ex.status();
    }
    case 1: {
      RevisitOf o;
      o.target_uri = "http://disk.test/original";
      o.date = "2024-01-02T03:04:05Z";
      o.payload_digest = Sha1Digest(body_text);
      auto rv = w->WriteRevisit(r, o);
      if (rv.ok()) *indexed_url = url;
      return rv.status();
    }
    default:
      return w
          ->WriteMetadata(url, "", r.fetch_time_us, "application/warc-fields",
                          "outlink: " + url + "/x\r\n")
          .status();
  }
}

// Issue 19 item 3: whatever byte the disk fills up at (in a WARC member,
// its request, the CDXJ line, the feed line, a rotation's warcinfo), the
// write fails with a clear IOError, the WARC ends at its last complete
// record, the index and the feed name exactly the records that are there;
// once space is freed the writer goes on, in the same file or the next.
TEST(StoreFault, Issue19_DiskFullAtAnyPointLosesNothingAndRecovers) {
  int opened = 0, failed_open = 0, tested = 0;
  for (uint64_t capacity = 0; capacity < 120000; capacity += 1409) {
    TempDir dir;
    FullDiskEnv env(capacity);
    Options o = StoreOptions(dir.path(), &env);
    o.rotate_bytes = 30000;  // several files, so rotation can fail too
    auto w = WarcWriter::Open(o);
    if (!w.ok()) {
      // Not even the first warcinfo fits: a clear error at open.
      ++failed_open;
      EXPECT_EQ(w.status().code(), Status::Code::kIOError);
      EXPECT_NE(w.status().message().find("No space left on device"),
                std::string::npos)
          << w.status().ToString();
      continue;
    }
    ++opened;
    std::vector<std::string> urls;
    Status failure;
    int i = 0;
    for (; i < 200; ++i) {
      std::string url;
      failure = WriteOne(w->get(), i, &url);
      if (!failure.ok()) break;
      if (!url.empty()) urls.push_back(url);
    }
    ASSERT_FALSE(failure.ok()) << "capacity " << capacity << " never filled";
    ++tested;
    EXPECT_EQ(failure.code(), Status::Code::kIOError) << failure.ToString();
    EXPECT_NE(failure.message().find("No space left on device"),
              std::string::npos)
        << failure.ToString();
    EXPECT_NE(failure.message().find("disk full"), std::string::npos);
    // The file being written ends where the writer says.
    const std::string current = o.dir + "/" + (*w)->current_file();
    EXPECT_EQ(fs::file_size(current), (*w)->current_offset());
    ExpectConsistent(o.dir, o.index_dir, urls);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "at capacity " << capacity << ", write " << i;
      return;
    }
    // Space is freed: the failed write goes through, and the next ones.
    env.set_free(UINT64_MAX / 2);
    for (int k = i; k < i + 3; ++k) {
      std::string url;
      Status s = WriteOne(w->get(), k, &url);
      ASSERT_TRUE(s.ok()) << "capacity " << capacity << ": " << s.ToString();
      if (!url.empty()) urls.push_back(url);
    }
    ASSERT_TRUE((*w)->Close().ok());
    ExpectConsistent(o.dir, o.index_dir, urls);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "after freeing space, capacity " << capacity;
      return;
    }
  }
  EXPECT_GT(failed_open, 0);
  EXPECT_GT(tested, 60);
  std::printf("disk-full points tested: %d (and %d failed opens)\n", tested,
              failed_open);
}

// A rotation that cannot write the new file's warcinfo leaves the writer on
// the old file, and nothing of the new file behind.
TEST(StoreFault, Issue19_DiskFullAtRotationStaysOnTheOldFile) {
  TempDir dir;
  FullDiskEnv env(UINT64_MAX / 2);
  Options o = StoreOptions(dir.path(), &env);
  o.rotate_bytes = 1;  // every write starts a new file
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  std::string url;
  ASSERT_TRUE(WriteOne(w->get(), 0, &url).ok());
  const std::string file = (*w)->current_file();
  env.set_free(100);  // less than a warcinfo
  Status s = WriteOne(w->get(), 3, &url);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_EQ((*w)->current_file(), file);
  EXPECT_EQ(Files(o.dir, ".warc.gz").size(), 1u);
  EXPECT_EQ(Files(o.index_dir, ".cdxj").size(), 1u);
  env.set_free(UINT64_MAX / 2);
  ASSERT_TRUE(WriteOne(w->get(), 3, &url).ok());
  EXPECT_NE((*w)->current_file(), file);
  ASSERT_TRUE((*w)->Close().ok());
  ExpectConsistent(o.dir, o.index_dir,
                   {"http://disk.test/0", "http://disk.test/3"});
}

// Issue 19 Build 3: a directory that cannot be written is a clear error at
// open, naming the path and the cause.
TEST(StoreFault, Issue19_ReadOnlyDirectoryIsAClearErrorAtOpen) {
  TempDir dir;
  ReadOnlyEnv env;
  auto w = WarcWriter::Open(StoreOptions(dir.path(), &env));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Status::Code::kIOError);
  EXPECT_NE(w.status().message().find("Read-only file system"),
            std::string::npos)
      << w.status().ToString();
  EXPECT_NE(w.status().message().find("not writable"), std::string::npos);
  EXPECT_NE(w.status().message().find(dir.path()), std::string::npos);

  // The same with the real file system, where permissions bind us (they do
  // not bind root, whose case the tmpfs test below covers).
  if (::geteuid() != 0) {
    TempDir ro;
    fs::create_directories(ro.path() + "/warc");
    fs::permissions(ro.path() + "/warc",
                    fs::perms::owner_read | fs::perms::owner_exec);
    Options o = StoreOptions(ro.path(), nullptr);
    o.index_dir.clear();
    auto real = WarcWriter::Open(o);
    ASSERT_FALSE(real.ok());
    EXPECT_EQ(real.status().code(), Status::Code::kIOError);
    EXPECT_NE(real.status().message().find("Permission denied"),
              std::string::npos)
        << real.status().ToString();
  }
}

// --- A real small tmpfs (root only) ----------------------------------------

// A tmpfs of `size` mounted on a fresh directory in a mount namespace of
// this process's own (so nothing outside the test sees it, and it goes
// with the process whatever happens); unmounted at the end.
class Tmpfs {
 public:
  explicit Tmpfs(const std::string& size) {
    if (::geteuid() != 0) {
      why_not_ = "not running as root (mount needs CAP_SYS_ADMIN)";
      return;
    }
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      why_not_ = std::string("no private mount namespace: ") + strerror(errno);
      return;
    }
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                ("size=" + size).c_str()) != 0) {
      why_not_ = std::string("mount tmpfs: ") + strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  // E.g. Remount(0, "size=4m") or Remount(MS_RDONLY, "").
  bool Remount(unsigned long flags, const std::string& data) {
    return ::mount("tmpfs", dir_.path().c_str(), "tmpfs",
                   MS_REMOUNT | MS_NOSUID | MS_NODEV | flags,
                   data.c_str()) == 0;
  }
  bool ok() const { return mounted_; }
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string why_not_;
};

// Issue 19 item 3 on a real file system: a 256 KiB tmpfs fills up; the
// WARC, index and feed stay consistent; after the tmpfs grows, the crawl
// writes on.
TEST(StoreFault, Issue19_RealTmpfsFillsUpThenRecovers) {
  Tmpfs disk("256k");
  if (!disk.ok()) {
    std::printf("SKIPPED the real-tmpfs test: %s\n", disk.why_not().c_str());
    GTEST_SKIP() << disk.why_not();
  }
  Options o = StoreOptions(disk.path(), nullptr);
  o.rotate_bytes = 60000;
  o.feed_segment_bytes = 4096;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<std::string> urls;
  Status failure;
  int i = 0;
  for (; i < 500 && failure.ok(); ++i) {
    std::string url;
    failure = WriteOne(w->get(), i, &url);
    if (failure.ok() && !url.empty()) urls.push_back(url);
  }
  ASSERT_FALSE(failure.ok()) << "256 KiB never filled";
  EXPECT_EQ(failure.code(), Status::Code::kIOError);
  EXPECT_NE(failure.message().find("No space left on device"),
            std::string::npos)
      << failure.ToString();
  std::printf("tmpfs full after %zu indexed records: %s\n", urls.size(),
              failure.ToString().c_str());
  ExpectConsistent(o.dir, o.index_dir, urls);
  ASSERT_TRUE(disk.Remount(0, "size=4m")) << strerror(errno);
  for (int k = i - 1; k < i + 5; ++k) {
    std::string url;
    Status s = WriteOne(w->get(), k, &url);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (!url.empty()) urls.push_back(url);
  }
  ASSERT_TRUE((*w)->Close().ok());
  ExpectConsistent(o.dir, o.index_dir, urls);
}

// Root is not stopped by permissions: a read-only mount is the real case.
TEST(StoreFault, Issue19_RealReadOnlyMountIsAClearErrorAtOpen) {
  Tmpfs disk("64k");
  if (!disk.ok()) {
    std::printf("SKIPPED the read-only mount test: %s\n",
                disk.why_not().c_str());
    GTEST_SKIP() << disk.why_not();
  }
  ASSERT_TRUE(disk.Remount(MS_RDONLY, "")) << strerror(errno);
  auto w = WarcWriter::Open(StoreOptions(disk.path(), nullptr));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Status::Code::kIOError);
  EXPECT_NE(w.status().message().find("Read-only file system"),
            std::string::npos)
      << w.status().ToString();
  EXPECT_NE(w.status().message().find(disk.path()), std::string::npos);
}

}  // namespace
}  // namespace crawld::store
