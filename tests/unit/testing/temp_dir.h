// tests/unit/testing/temp_dir.h: helpers shared by the unit tests of
// several components. TempDir: a fresh directory for one test, removed
// with everything in it at the end.
#ifndef CRAWLD_TESTS_UNIT_TESTING_TEMP_DIR_H_
#define CRAWLD_TESTS_UNIT_TESTING_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

// Not "testing": inside namespace crawld that would hide gtest's.
namespace crawld::test {

// Made under the system's temporary directory as `prefix` + six random
// characters (mkdtemp). A directory that cannot be made fails the test
// (EXPECT) and leaves path() a name that does not exist. The destructor
// removes the directory and everything in it, ignoring errors.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "crawld-test-") {
    std::string tmpl = (std::filesystem::temp_directory_path() /
                        (std::string(prefix) + "XXXXXX"));
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name: a file or directory inside it (not made).
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace crawld::test

#endif  // CRAWLD_TESTS_UNIT_TESTING_TEMP_DIR_H_
