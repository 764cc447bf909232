#include "conf/seeds.h"

#include <gtest/gtest.h>

namespace crawld::conf {
namespace {

TEST(CrawldSeeds, JunkLinesAreReportedWithLineNumbersAndSkipped) {
  SeedList s = ParseSeeds(
      "# my seeds\n"
      "http://Example.COM/a\n"
      "\n"
      "   not a url   \n"
      "ftp://example.com/file\n"
      "https://example.org:443/b#frag\n",
      "seeds.txt");
  ASSERT_EQ(s.urls.size(), 2u);
  EXPECT_EQ(s.urls[0], "http://example.com/a");
  EXPECT_EQ(s.urls[1], "https://example.org/b");
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].rfind("seeds.txt:4: ", 0), 0u) << s.errors[0];
  EXPECT_NE(s.errors[0].find("not a url"), std::string::npos);
  EXPECT_EQ(s.errors[1].rfind("seeds.txt:5: ", 0), 0u) << s.errors[1];
}

TEST(CrawldSeeds, DuplicatesAfterCanonicalizationAreKeptOnce) {
  SeedList s = ParseSeeds("http://a.test/\nHTTP://A.TEST:80/\n", "x");
  EXPECT_EQ(s.urls.size(), 1u);
  EXPECT_TRUE(s.errors.empty());
}

TEST(CrawldSeeds, CrlfLineEndsAndNoFinalNewline) {
  SeedList s = ParseSeeds("http://a.test/\r\nhttp://b.test/", "x");
  ASSERT_EQ(s.urls.size(), 2u);
  EXPECT_EQ(s.urls[1], "http://b.test/");
}

// Issue 19: a UTF-8 BOM at the start of a seeds file lost the first seed.
TEST(CrawldSeeds, Issue19_ByteOrderMarkIsNotPartOfTheFirstSeed) {
  SeedList s =
      ParseSeeds("\xEF\xBB\xBFhttp://a.test/\r\nhttp://b.test/\n", "x");
  EXPECT_EQ(s.errors, std::vector<std::string>{});
  EXPECT_EQ(s.urls,
            (std::vector<std::string>{"http://a.test/", "http://b.test/"}));
}

TEST(CrawldSeeds, MissingFileIsAnIOError) {
  auto r = LoadSeeds("/nonexistent/seeds.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
}

}  // namespace
}  // namespace crawld::conf
