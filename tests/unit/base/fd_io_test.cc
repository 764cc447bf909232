#include "base/fd_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace crawld {
namespace {

// A temporary file, removed at the end of the test.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/crawld-fd-io-XXXXXX";
    fd_ = ::mkstemp(name);
    path_ = name;
  }
  ~TempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
};

TEST(FdIo, WholeWritesAndReadsAtThePosition) {
  TempFile f;
  ASSERT_GE(f.fd(), 0);
  const std::string data(300000, 'x');
  ASSERT_TRUE(WriteFull(f.fd(), data.data(), data.size()));
  ASSERT_EQ(::lseek(f.fd(), 0, SEEK_SET), 0);
  std::string back(data.size(), '\0');
  EXPECT_EQ(ReadFull(f.fd(), back.data(), back.size()), ReadResult::kDone);
  EXPECT_EQ(back, data);
  // The file ends before the next byte: kEnd, not an error.
  char one = 0;
  EXPECT_EQ(ReadFull(f.fd(), &one, 1), ReadResult::kEnd);
}

TEST(FdIo, PositionalCallsLeaveThePositionAlone) {
  TempFile f;
  ASSERT_TRUE(WriteFull(f.fd(), "0123456789", 10));
  ASSERT_TRUE(PwriteFull(f.fd(), "ab", 2, 4));
  EXPECT_EQ(::lseek(f.fd(), 0, SEEK_CUR), 10);
  char buf[4] = {};
  EXPECT_EQ(PreadFull(f.fd(), buf, 4, 3), ReadResult::kDone);
  EXPECT_EQ(std::string(buf, 4), "3ab6");
  EXPECT_EQ(::lseek(f.fd(), 0, SEEK_CUR), 10);
  // Asking past the end reads what is there and says the file ended.
  EXPECT_EQ(PreadFull(f.fd(), buf, 4, 8), ReadResult::kEnd);
}

TEST(FdIo, FailuresSayWhy) {
  char buf[8] = {};
  errno = 0;
  EXPECT_EQ(ReadFull(-1, buf, sizeof(buf)), ReadResult::kError);
  EXPECT_EQ(errno, EBADF);
  errno = 0;
  EXPECT_EQ(PreadFull(-1, buf, sizeof(buf), 0), ReadResult::kError);
  EXPECT_EQ(errno, EBADF);
  errno = 0;
  EXPECT_FALSE(WriteFull(-1, buf, sizeof(buf)));
  EXPECT_EQ(errno, EBADF);
  errno = 0;
  EXPECT_FALSE(PwriteFull(-1, buf, sizeof(buf), 0));
  EXPECT_EQ(errno, EBADF);
  // Nothing to move is done at once, whatever the descriptor.
  EXPECT_EQ(ReadFull(-1, buf, 0), ReadResult::kDone);
  EXPECT_TRUE(WriteFull(-1, buf, 0));
}

void Ignore(int) {}

// A pipe gives short reads (the writer sends small pieces) and, with a
// handler installed without SA_RESTART, reads interrupted by a signal:
// the whole read still returns every byte in order.
TEST(FdIo, ShortAndInterruptedReadsContinue) {
  struct sigaction sa = {};
  struct sigaction old = {};
  sa.sa_handler = Ignore;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);

  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::string expect;
  for (int i = 0; i < 200; ++i) expect += std::to_string(i) + ";";
  std::string got(expect.size(), '\0');
  std::atomic<bool> reading{false};
  ReadResult result = ReadResult::kError;
  std::thread reader([&] {
    reading = true;
    result = ReadFull(p[0], got.data(), got.size());
  });
  while (!reading) std::this_thread::yield();
  for (size_t at = 0; at < expect.size(); at += 97) {
    // The reader is blocked in read(2) most of these times.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::pthread_kill(reader.native_handle(), SIGUSR1);
    const size_t n = std::min<size_t>(97, expect.size() - at);
    ASSERT_TRUE(WriteFull(p[1], expect.data() + at, n));
  }
  reader.join();
  ::close(p[0]);
  ::close(p[1]);
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(result, ReadResult::kDone);
  EXPECT_EQ(got, expect);
}

}  // namespace
}  // namespace crawld
