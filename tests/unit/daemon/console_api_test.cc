// The admin API's parts added for the web console (daemon/console_api.h):
// the host table's query, order and merge; host states; the ring of
// recent fetches; a record read back from its WARC, with hostile
// parameters refused. Issue 18.
#include "daemon/console_api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/store.h"

namespace crawld::daemon {
namespace {

QueryParams Q(std::initializer_list<std::pair<std::string, std::string>> l) {
  return QueryParams(l);
}

TEST(HostQuery, DefaultsAndEveryKnob) {
  auto q = ParseHostQuery({});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->sort, "queued");
  EXPECT_TRUE(q->descending);
  EXPECT_EQ(q->limit, 100u);
  q = ParseHostQuery(Q({{"q", "Farm"},
                        {"state", "backing_off"},
                        {"sort", "host"},
                        {"limit", "1000"}}));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->q, "farm");  // case-insensitive
  EXPECT_EQ(q->state, "backing_off");
  EXPECT_FALSE(q->descending);  // names sort ascending by default
  EXPECT_EQ(q->limit, 1000u);
  q = ParseHostQuery(Q({{"sort", "credit"}, {"order", "asc"}}));
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->descending);
}

// Bad input gets a clear error naming the parameter, never a guess.
TEST(HostQuery, BadParametersAreRefusedByName) {
  const std::vector<std::pair<QueryParams, std::string>> bad = {
      {Q({{"limit", "0"}}), "limit"},
      {Q({{"limit", "1001"}}), "limit"},
      {Q({{"limit", "99999999999999999999999"}}), "limit"},
      {Q({{"limit", "-5"}}), "limit"},
      {Q({{"limit", " 5"}}), "limit"},
      {Q({{"limit", ""}}), "limit"},
      {Q({{"sort", "nope"}}), "sort"},
      {Q({{"order", "up"}}), "order"},
      {Q({{"state", "sleeping"}}), "state"},
      {Q({{"q", std::string(257, 'a')}}), "q"},
      {Q({{"sort_by", "host"}}), "sort_by"},
      {Q({{"q", "a"}, {"q", "b"}}), "q"},
  };
  for (const auto& [params, name] : bad) {
    auto q = ParseHostQuery(params);
    ASSERT_FALSE(q.ok()) << name;
    EXPECT_EQ(q.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(q.status().message().find(name), std::string::npos)
        << q.status().message();
  }
}

Json Row(const std::string& host, int queued, double credit) {
  frontier::HostInfo info;
  info.queued = static_cast<size_t>(queued);
  info.credit = credit;
  return HostRow(host, info, "ready", 0);
}

// The supervisor sorts the union of its workers' pages with the same
// order: the merge equals sorting everything at once.
TEST(HostQuery, MergeOfSortedPagesEqualsOneSort) {
  HostQuery q;
  q.sort = "queued";
  q.limit = 3;
  std::vector<Json> w0 = {Row("http://a", 5, 0), Row("http://c", 9, 0),
                          Row("http://e", 1, 0)};
  std::vector<Json> w1 = {Row("http://b", 5, 0), Row("http://d", 7, 0)};
  std::vector<Json> all = w0;
  all.insert(all.end(), w1.begin(), w1.end());
  SortHostRows(q, &w0);
  SortHostRows(q, &w1);
  std::vector<Json> merged = w0;
  merged.insert(merged.end(), w1.begin(), w1.end());
  SortHostRows(q, &merged);
  SortHostRows(q, &all);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged, all);
  // Ties by name: a before b at queued 5.
  EXPECT_EQ(merged[0]["host"], "http://c");
  EXPECT_EQ(merged[1]["host"], "http://d");
  EXPECT_EQ(merged[2]["host"], "http://a");
}

TEST(HostQuery, FiltersByNameAndState) {
  HostQuery q;
  q.q = "farm";
  Json row = Row("http://H1.FARM.test:80", 1, 0);
  EXPECT_TRUE(HostRowMatches(row, q));
  q.state = "idle";
  EXPECT_FALSE(HostRowMatches(row, q));
  q.state = "ready";
  EXPECT_TRUE(HostRowMatches(row, q));
  q.q = "other";
  EXPECT_FALSE(HostRowMatches(row, q));
}

TEST(HostState, EachHostIsInExactlyOneState) {
  frontier::HostInfo info;
  EXPECT_EQ(HostStateName(info, 0), "idle");
  info.queued = 3;
  EXPECT_EQ(HostStateName(info, 0), "ready");
  info.next_fetch_us = 100;
  EXPECT_EQ(HostStateName(info, 50), "waiting");
  EXPECT_EQ(HostStateName(info, 100), "ready");
  info.page_budget = 2;
  info.pages = 2;
  EXPECT_EQ(HostStateName(info, 100), "waiting");  // over its page budget
  info.consecutive_errors = 2;
  EXPECT_EQ(HostStateName(info, 100), "backing_off");
  info.in_flight = true;
  EXPECT_EQ(HostStateName(info, 100), "active");
  info.retired = true;
  EXPECT_EQ(HostStateName(info, 100), "retired");
}

TEST(RecentFetches, NewestFirstPerHostAndBounded) {
  RecentFetches ring({/*capacity=*/4});
  for (int i = 0; i < 6; ++i) {
    ring.Add({i % 2 == 0 ? "http://a" : "http://b",
              "http://a/" + std::to_string(i), 200, "", i, 10, 0, false});
  }
  const Json a = ring.ForHost("http://a", 10);
  ASSERT_EQ(a.size(), 2u);  // 0 and 1 fell out of the ring of 4
  EXPECT_EQ(a[0]["url"], "http://a/4");
  EXPECT_EQ(a[1]["url"], "http://a/2");
  EXPECT_EQ(ring.ForHost("http://b", 1).size(), 1u);
  EXPECT_TRUE(ring.ForHost("http://c", 10).empty());
}

TEST(RecordQuery, OnlyPlainWarcNamesAndBoundedLengths) {
  auto q = ParseRecordQuery(Q({{"warc", "crawld-1-00000-00000.warc.gz"},
                               {"offset", "398"},
                               {"length", "458"}}));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->offset, 398u);
  for (const char* warc : {"../x.warc.gz", "a/b.warc.gz", ".hidden.warc.gz",
                           "x.warc.gz.tmp", "x.txt", "", "%2e%2e.warc"}) {
    EXPECT_FALSE(
        ParseRecordQuery(Q({{"warc", warc}, {"offset", "0"}, {"length", "1"}}))
            .ok())
        << warc;
  }
  for (const char* length : {"0", "8388609", "-1", "1e3", ""}) {
    EXPECT_FALSE(
        ParseRecordQuery(
            Q({{"warc", "a.warc"}, {"offset", "0"}, {"length", length}}))
            .ok())
        << length;
  }
  EXPECT_FALSE(ParseRecordQuery(Q({{"warc", "a.warc"}, {"offset", "0"}})).ok());
  EXPECT_FALSE(
      ParseRecordQuery(
          Q({{"warc", "a.warc"}, {"offset", "0"}, {"length", "1"}, {"x", "1"}}))
          .ok());
}

TEST(RecordQuery, MissingFileIsNotFoundAndJunkIsInvalid) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "console_api_test_warc")
          .string();
  std::filesystem::create_directories(dir);
  auto r = ReadRecordJson(dir, {"none.warc.gz", 0, 10});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  { std::ofstream(dir + "/junk.warc") << "not a WARC record at all\r\n\r\n"; }
  r = ReadRecordJson(dir, {"junk.warc", 0, 20});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(RecordQuery, AResponseRecordIsReadBackAsText) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "console_api_test_rec")
          .string();
  std::filesystem::create_directories(dir);
  const std::string block =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
      "<p>hi \xff</p>";
  const std::string record =
      "WARC/1.1\r\nWARC-Type: response\r\n"
      "WARC-Target-URI: http://h/p\r\n"
      "WARC-Date: 2026-11-27T00:00:00Z\r\n"
      "WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000000>\r\n"
      "Content-Type: application/http;msgtype=response\r\n"
      "Content-Length: " +
      std::to_string(block.size()) + "\r\n\r\n" + block + "\r\n\r\n";
  { std::ofstream(dir + "/one.warc", std::ios::binary) << record; }
  auto r = ReadRecordJson(dir, {"one.warc", 0, record.size()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["type"], "response");
  EXPECT_EQ((*r)["target_uri"], "http://h/p");
  EXPECT_EQ((*r)["http_head"], "HTTP/1.1 200 OK\r\nContent-Type: text/html");
  EXPECT_EQ((*r)["body_bytes"], 11);
  EXPECT_EQ((*r)["truncated"], false);
  // The invalid byte is data: dumped as U+FFFD, never an error.
  EXPECT_NE(json::Dump(*r).find("<p>hi \xef\xbf\xbd</p>"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crawld::daemon
