#include "daemon/event_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace crawld::daemon {
namespace {

TEST(CrawldEventLog, JsonStringEscapesControlAndQuotes) {
  std::string out;
  AppendJsonString(&out, "a\"b\\c\nd\x01");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(CrawldEventLog, WritesOneJsonObjectPerLine) {
  std::string path = testing::TempDir() + "/event_log_test.jsonl";
  std::remove(path.c_str());
  {
    EventLog log;
    ASSERT_TRUE(log.Open(path).ok());
    log.Write(Level::kWarn, "fetch_error", {{"url", "http://x/\"q\""}});
    log.Write(Level::kDebug, "dropped");  // below the default level
    log.Flush();
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  EXPECT_NE(text.find("\"level\":\"warn\",\"event\":\"fetch_error\","
                      "\"url\":\"http://x/\\\"q\\\"\"}\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("dropped"), std::string::npos);
}

TEST(CrawldEventLog, UnwritablePathIsAnError) {
  EventLog log;
  EXPECT_FALSE(log.Open("/nonexistent-dir/x.jsonl").ok());
}

}  // namespace
}  // namespace crawld::daemon
