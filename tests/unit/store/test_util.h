// Helpers shared by the store tests written for issues 17 and 19: a
// temporary directory, file reading, a WARC record builder for verifier
// tests, and the consistency check of a WARC with its CDXJ index and feed.
#ifndef CRAWLD_TESTS_UNIT_STORE_TEST_UTIL_H_
#define CRAWLD_TESTS_UNIT_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "store/store.h"

namespace crawld::store::testing {

namespace fs = std::filesystem;

// A fresh directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "store-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

inline std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

inline bool Has(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) {
    return s.find(needle) != std::string::npos;
  });
}

// One uncompressed WARC/1.1 record: `fields` ("Name: value" lines without
// CRLF) plus Content-Length and WARC-Block-Digest computed from `block`.
inline std::string RawRecord(const std::string& type, const std::string& id,
                             const std::vector<std::string>& fields,
                             const std::string& block) {
  std::string r = "WARC/1.1\r\nWARC-Type: " + type +
                  "\r\nWARC-Record-ID: " + id +
                  "\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n";
  for (const std::string& f : fields) r += f + "\r\n";
  r += "WARC-Block-Digest: " + Sha1Digest(block) + "\r\n";
  r += "Content-Length: " + std::to_string(block.size()) + "\r\n\r\n";
  return r + block + "\r\n\r\n";
}

inline std::string RawWarcinfo() {
  return RawRecord(
      "warcinfo", "<urn:uuid:00000000-0000-4000-8000-000000000000>",
      {"Content-Type: application/warc-fields"}, "software: test\r\n");
}

// The WARC files of `dir`, sorted by name.
inline std::vector<std::string> Files(const std::string& dir,
                                      const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    if (p.size() >= suffix.size() &&
        p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Checks that a crawl's store agrees with itself: every WARC verifies;
// every CDXJ line names a complete record of its WARC with that URL; the
// feed holds exactly the CDXJ lines' records, in the same order; and the
// URLs indexed are `expected_urls` (in order). `warc_dir` and `index_dir`
// as in store::Options.
inline void ExpectConsistent(const std::string& warc_dir,
                             const std::string& index_dir,
                             const std::vector<std::string>& expected_urls) {
  std::vector<std::string> indexed;
  struct Where {
    std::string file;
    uint64_t offset;
    bool operator==(const Where& o) const {
      return file == o.file && offset == o.offset;
    }
  };
  std::vector<Where> cdxj_where;
  for (const std::string& warc : Files(warc_dir, ".warc.gz")) {
    auto report = VerifyFile(warc);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->ok()) << warc << "\n" << Joined(report->defects);
    const std::string base = fs::path(warc).filename().string();
    const std::string cdxj = index_dir + "/" + base + ".cdxj";
    std::istringstream lines(ReadAll(cdxj));
    std::string line;
    while (std::getline(lines, line)) {
      auto e = ParseCdxjLine(line);
      ASSERT_TRUE(e.ok()) << cdxj << ": " << line;
      EXPECT_EQ(e->filename, base);
      auto rec = ReadRecordAt(warc, e->offset, e->length);
      ASSERT_TRUE(rec.ok()) << rec.status().ToString();
      EXPECT_EQ(rec->Header("WARC-Target-URI"), e->url);
      indexed.push_back(e->url);
      cdxj_where.push_back({base, e->offset});
    }
  }
  EXPECT_EQ(indexed, expected_urls);
  auto feed = FeedReader::Open(index_dir + "/feed");
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  auto page = (*feed)->Read("", 100000);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  std::vector<Where> feed_where;
  for (const FeedEntry& f : page->entries) {
    feed_where.push_back({f.warc_file, f.offset});
  }
  EXPECT_TRUE(feed_where == cdxj_where)
      << feed_where.size() << " feed entries, " << cdxj_where.size()
      << " index lines";
}

}  // namespace crawld::store::testing

#endif  // CRAWLD_TESTS_UNIT_STORE_TEST_UTIL_H_
