// checkpoint/crawl_state.h: the typed crawl state round-trips through the
// store, and a damaged or foreign value is an error, never a misread
// (docs/CHECKPOINT.md).
#include "checkpoint/crawl_state.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <string>

namespace crawld::checkpoint {
namespace {

class StateDir {
 public:
  StateDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "crawl-state-XXXXXX")
            .string();
    path_ = mkdtemp(tmpl.data());
  }
  ~StateDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::unique_ptr<Store> Open() {
    auto s = Store::Open(path_ + "/db", Options());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

 private:
  std::string path_;
};

CrawlState Sample() {
  CrawlState s;
  s.meta.pages = 12345;
  s.meta.bytes = 1ull << 40;
  s.meta.robots_fetches = 17;
  s.meta.warc_file = "crawl-20261126030000-00001-00003.warc.gz";
  s.meta.warc_size = 987654321;
  s.meta.workers = 4;
  s.meta.settle_file = "crawl-20261126025959-00001-00002.warc.gz";
  s.meta.settle_offset = 4242;
  UrlEntry e;
  e.host_key = "http://a.test";
  e.url = "http://a.test/p?q=\t\n\xff";
  e.seed_host = "seed.test";
  e.depth = 65535;
  e.redirects = 7;
  e.retries = 2;
  e.credit = 0.125;
  s.in_flight = {e, UrlEntry{}};
  s.done = {0, 1, std::numeric_limits<uint64_t>::max()};
  RoutedUrl m;
  m.to_worker = 3;
  m.seen_mark = true;
  m.url = "https://b.test/";
  m.seed_host = "b.test";
  m.depth = 2;
  m.credit = 1e-300;
  RoutedUrl sm;
  sm.to_worker = 1;
  sm.url = "https://b.test/sitemap.xml";
  sm.sitemap_kind = 2;
  sm.sitemap_of = "a.test";
  RoutedUrl hinted;  // a sitemap's page with its hints
  hinted.to_worker = 2;
  hinted.url = "https://b.test/news/";
  hinted.changefreq = 2;
  hinted.lastmod_s = 0xfffffffeu;
  s.outbox = {m, sm, hinted};
  s.counts = {{"http_4xx", 3}, {"trap_calendar", 1ull << 50}};
  HostState h;
  h.robots = RobotsCopy{1764000000000000, true, "User-agent: *\nDisallow: /x"};
  h.admitted_urls = 99;
  HostState none;
  none.robots = RobotsCopy{-5, false, ""};
  s.hosts = {{"http://a.test", h},
             {"https://b.test:8443", none},
             {"http://c.test", HostState{}}};
  s.query_variants = {{0x0102030405060708ull, 5}, {0, 1}};
  return s;
}

TEST(CrawlState, RoundTripsEveryField) {
  StateDir dir;
  auto store = dir.Open();
  const CrawlState in = Sample();
  Store::Batch b;
  EncodeCrawlState(in, &b);
  ASSERT_TRUE(store->Write(b).ok());

  std::map<std::string, HostState> hosts;
  std::map<uint64_t, uint32_t> variants;
  LoadCallbacks on;
  on.host = [&](std::string_view k, HostState&& h) {
    hosts[std::string(k)] = std::move(h);
  };
  on.query_variants = [&](uint64_t k, uint32_t n) { variants[k] = n; };
  auto out = LoadCrawlState(*store, on);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->meta.pages, in.meta.pages);
  EXPECT_EQ(out->meta.bytes, in.meta.bytes);
  EXPECT_EQ(out->meta.robots_fetches, in.meta.robots_fetches);
  EXPECT_EQ(out->meta.warc_file, in.meta.warc_file);
  EXPECT_EQ(out->meta.warc_size, in.meta.warc_size);
  EXPECT_EQ(out->meta.workers, 4);
  EXPECT_EQ(out->meta.settle_file, in.meta.settle_file);
  EXPECT_EQ(out->meta.settle_offset, 4242u);
  ASSERT_EQ(out->in_flight.size(), 2u);
  const UrlEntry& e = out->in_flight[0];
  EXPECT_EQ(e.host_key, "http://a.test");
  EXPECT_EQ(e.url, in.in_flight[0].url);
  EXPECT_EQ(e.seed_host, "seed.test");
  EXPECT_EQ(e.depth, 65535);
  EXPECT_EQ(e.redirects, 7);
  EXPECT_EQ(e.retries, 2);
  EXPECT_EQ(e.credit, 0.125);
  EXPECT_EQ(out->done, in.done);
  ASSERT_EQ(out->outbox.size(), 3u);
  EXPECT_EQ(out->outbox[0].to_worker, 3);
  EXPECT_TRUE(out->outbox[0].seen_mark);
  EXPECT_EQ(out->outbox[0].url, "https://b.test/");
  EXPECT_EQ(out->outbox[0].seed_host, "b.test");
  EXPECT_EQ(out->outbox[0].credit, 1e-300);
  EXPECT_EQ(out->outbox[0].sitemap_kind, 0);
  EXPECT_FALSE(out->outbox[1].seen_mark);
  EXPECT_EQ(out->outbox[1].url, "https://b.test/sitemap.xml");
  EXPECT_EQ(out->outbox[1].sitemap_kind, 2);
  EXPECT_EQ(out->outbox[1].sitemap_of, "a.test");
  EXPECT_EQ(out->outbox[1].changefreq, 0);
  EXPECT_EQ(out->outbox[1].lastmod_s, 0u);
  ASSERT_EQ(out->outbox.size(), 3u);
  EXPECT_EQ(out->outbox[2].url, "https://b.test/news/");
  EXPECT_EQ(out->outbox[2].sitemap_kind, 0);
  EXPECT_EQ(out->outbox[2].changefreq, 2);
  EXPECT_EQ(out->outbox[2].lastmod_s, 0xfffffffeu);
  EXPECT_EQ(out->counts, in.counts);
  ASSERT_EQ(hosts.size(), 3u);
  ASSERT_TRUE(hosts["http://a.test"].robots.has_value());
  EXPECT_EQ(hosts["http://a.test"].robots->body, "User-agent: *\nDisallow: /x");
  EXPECT_TRUE(hosts["http://a.test"].robots->has_body);
  EXPECT_EQ(hosts["http://a.test"].robots->expires_unix_us, 1764000000000000);
  EXPECT_EQ(hosts["http://a.test"].admitted_urls, 99u);
  EXPECT_FALSE(hosts["https://b.test:8443"].robots->has_body);
  EXPECT_EQ(hosts["https://b.test:8443"].robots->expires_unix_us, -5);
  EXPECT_FALSE(hosts["http://c.test"].robots.has_value());
  EXPECT_EQ(variants,
            (std::map<uint64_t, uint32_t>{{0, 1}, {0x0102030405060708ull, 5}}));
}

TEST(CrawlState, AnEmptyStoreIsAnEmptyState) {
  StateDir dir;
  auto store = dir.Open();
  auto out = LoadCrawlState(*store, {});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->meta.pages, 0u);
  EXPECT_TRUE(out->in_flight.empty());
}

TEST(CrawlState, LaterHostEntriesReplaceEarlierOnes) {
  StateDir dir;
  auto store = dir.Open();
  CrawlState s = Sample();
  Store::Batch b;
  EncodeCrawlState(s, &b);
  ASSERT_TRUE(store->Write(b).ok());
  CrawlState next;
  HostState h;
  h.admitted_urls = 100;
  next.hosts = {{"http://a.test", h}};
  Store::Batch b2;
  EncodeCrawlState(next, &b2);
  ASSERT_TRUE(store->Write(b2).ok());
  std::map<std::string, HostState> hosts;
  LoadCallbacks on;
  on.host = [&](std::string_view k, HostState&& h2) {
    hosts[std::string(k)] = std::move(h2);
  };
  ASSERT_TRUE(LoadCrawlState(*store, on).ok());
  EXPECT_EQ(hosts.size(), 3u);  // the others stay as they were
  EXPECT_EQ(hosts["http://a.test"].admitted_urls, 100u);
  EXPECT_FALSE(hosts["http://a.test"].robots.has_value());
}

TEST(CrawlState, EveryTruncationOfAValueIsCorruption) {
  const CrawlState in = Sample();
  Store::Batch full;
  EncodeCrawlState(in, &full);
  for (const char* key : {"meta", "inflight", "outbox", "counts"}) {
    StateDir dir;
    auto store = dir.Open();
    ASSERT_TRUE(store->Write(full).ok());
    auto value = store->Get(key);
    ASSERT_TRUE(value.ok() && value->has_value()) << key;
    for (size_t cut = 1; cut < (*value)->size(); ++cut) {
      Store::Batch b;
      b.Put(key, std::string_view(**value).substr(0, cut));
      ASSERT_TRUE(store->Write(b).ok());
      auto out = LoadCrawlState(*store, {});
      ASSERT_FALSE(out.ok()) << key << " cut at " << cut;
      EXPECT_EQ(out.status().code(), Status::Code::kCorruption) << key;
    }
  }
}

TEST(CrawlState, AHugeCountCannotAllocate) {
  StateDir dir;
  auto store = dir.Open();
  Store::Batch full;
  EncodeCrawlState(Sample(), &full);
  ASSERT_TRUE(store->Write(full).ok());
  Store::Batch b;
  b.Put("done", std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9));
  ASSERT_TRUE(store->Write(b).ok());
  auto out = LoadCrawlState(*store, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kCorruption);
}

TEST(CrawlState, AnotherLayoutVersionIsRefused) {
  StateDir dir;
  auto store = dir.Open();
  Store::Batch b;
  b.Put("meta", std::string("\x09", 1));  // version 9
  ASSERT_TRUE(store->Write(b).ok());
  auto out = LoadCrawlState(*store, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kFailedPrecondition);
}

// A checkpoint of layout 2, written before the settle position existed,
// is read: a crawld upgraded in the middle of a crawl goes on with it.
TEST(CrawlState, LayoutTwoIsReadWithoutASettlePosition) {
  StateDir dir;
  auto store = dir.Open();
  std::string v;
  v.push_back(2);  // layout
  v.push_back(7);  // pages
  v.push_back(9);  // bytes
  v.push_back(1);  // robots fetches
  v.push_back(3);  // WARC name length
  v += "a.w";
  v.push_back(100);  // WARC size
  v.push_back(2);    // workers
  Store::Batch b;
  b.Put("meta", v);
  ASSERT_TRUE(store->Write(b).ok());
  auto out = LoadCrawlState(*store, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->meta.pages, 7u);
  EXPECT_EQ(out->meta.warc_file, "a.w");
  EXPECT_EQ(out->meta.warc_size, 100u);
  EXPECT_EQ(out->meta.workers, 2);
  EXPECT_TRUE(out->meta.settle_file.empty());
}

TEST(CrawlState, TheFirstLayoutIsRefusedNotMisread) {
  StateDir dir;
  auto store = dir.Open();
  Store::Batch b;
  b.Put("meta/pages", "100");
  ASSERT_TRUE(store->Write(b).ok());
  auto out = LoadCrawlState(*store, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(out.status().message().find("layout 1"), std::string::npos);
}

}  // namespace
}  // namespace crawld::checkpoint

namespace crawld::checkpoint {
namespace {

RoutedUrl Msg(int i) {
  RoutedUrl m;
  m.to_worker = 1;
  m.url = "http://h" + std::to_string(i) + ".test/p";
  m.seed_host = "s.test";
  m.depth = static_cast<uint16_t>(i);
  m.credit = i * 0.5;
  m.seen_mark = i % 2 == 1;
  return m;
}

TEST(InboxLog, FramesReadBackInOrder) {
  std::string log = EncodeInboxFrame({Msg(0), Msg(1)}) + EncodeInboxFrame({}) +
                    EncodeInboxFrame({Msg(2)});
  std::vector<RoutedUrl> got;
  EXPECT_EQ(DecodeInboxLog(log, [&](RoutedUrl&& m) { got.push_back(m); }), 3u);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].url, "http://h0.test/p");
  EXPECT_TRUE(got[1].seen_mark);
  EXPECT_EQ(got[2].depth, 2);
  EXPECT_EQ(got[2].credit, 1.0);
  EXPECT_EQ(got[2].seed_host, "s.test");
}

TEST(InboxLog, ATornTailIsIgnoredEveryWhereItIsCut) {
  const std::string first = EncodeInboxFrame({Msg(0)});
  const std::string second = EncodeInboxFrame({Msg(1), Msg(2)});
  const std::string log = first + second;
  for (size_t cut = first.size(); cut < log.size(); ++cut) {
    size_t urls = 0;
    EXPECT_EQ(DecodeInboxLog(std::string_view(log).substr(0, cut),
                             [&](RoutedUrl&&) { ++urls; }),
              1u)
        << cut;
    EXPECT_EQ(urls, 1u) << cut;
  }
}

TEST(InboxLog, ADamagedFrameStopsTheRead) {
  std::string log = EncodeInboxFrame({Msg(0)}) + EncodeInboxFrame({Msg(1)});
  log[log.size() - 3] ^= 0x40;
  size_t urls = 0;
  EXPECT_EQ(DecodeInboxLog(log, [&](RoutedUrl&&) { ++urls; }), 1u);
  EXPECT_EQ(urls, 1u);
}

}  // namespace
}  // namespace crawld::checkpoint
