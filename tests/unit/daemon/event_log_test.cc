#include "daemon/event_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/json.h"

namespace crawld::daemon {
namespace {

TEST(CrawldEventLog, WritesOneJsonObjectPerLine) {
  std::string path = testing::TempDir() + "/event_log_test.jsonl";
  std::remove(path.c_str());
  {
    EventLog log;
    ASSERT_TRUE(log.Open(path).ok());
    log.Write(Level::kWarn, "fetch_error", {{"url", "http://x/\"q\""}});
    log.Write(Level::kInfo, "odd", {{"msg", "bad \xFF byte\n"}});
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
  // Every line is JSON, even with bytes that are not UTF-8 in a field.
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    Result<Json> j = json::Parse(line);
    ASSERT_TRUE(j.ok()) << line;
    EXPECT_EQ(json::Find(*j, "time")->get<std::string>().size(), 27u);
    ++n;
  }
  EXPECT_EQ(n, 2);
}

// A kill -9 takes no logged line with it: each line is in the file (with
// the OS) as soon as Write() returns, without a Flush(). Before, a process
// killed within its first second of a run left no line of that run.
TEST(CrawldEventLog, EachLineReachesTheFileAtOnce) {
  std::string path = testing::TempDir() + "/event_log_at_once.jsonl";
  std::remove(path.c_str());
  EventLog log;
  ASSERT_TRUE(log.Open(path).ok());
  log.Write(Level::kInfo, "crawl_start");
  log.Write(Level::kInfo, "checkpoint", {{"why", "start"}});
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("\"event\":\"checkpoint\",\"why\":\"start\"}\n"),
            std::string::npos)
      << ss.str();
}

TEST(CrawldEventLog, UnwritablePathIsAnError) {
  EventLog log;
  EXPECT_FALSE(log.Open("/nonexistent-dir/x.jsonl").ok());
}

}  // namespace
}  // namespace crawld::daemon
