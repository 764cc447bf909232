// Revisit records (issue 17 Build 2 and 4, the store side): both WARC 1.1
// profiles, and revisits of records of an earlier crawl found through its
// CDXJ index. Spec: WARC 1.1 sections 5.11-5.13 (WARC-Refers-To,
// -Target-URI, -Date) and 6.7 (revisit; 6.7.2 identical payload digest,
// 6.7.3 server not modified).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <vector>

#include "store/store.h"
#include "tests/unit/store/test_util.h"

namespace crawld::store {
namespace {

using testing::Has;
using testing::Joined;
using testing::RawRecord;
using testing::RawWarcinfo;
using testing::TempDir;

constexpr char kRequest[] =
    "GET /page HTTP/1.1\r\nHost: example.test\r\nIf-None-Match: \"v1\"\r\n\r\n";
constexpr char kOk[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"v1\"\r\n"
    "Content-Length: 5\r\n\r\n";
constexpr char kNotModified[] =
    "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n";

Options CrawlOptions(const std::string& root, const std::string& prefix) {
  Options o;
  o.dir = root + "/warc";
  o.index_dir = root + "/index";
  o.prefix = prefix;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  return o;
}

FetchRecord Fetch(const std::string& head, const DocBuffer* body,
                  int64_t time_us) {
  FetchRecord r;
  r.target_uri = "http://example.test/page";
  r.ip = "127.0.0.1";
  r.fetch_time_us = time_us;
  r.request_head = kRequest;
  r.response_head = head;
  r.body = body;
  return r;
}

Record At(const Options& o, const RecordRef& ref) {
  auto rec = ReadRecordAt(o.dir + "/" + ref.file, ref.offset, ref.length);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return rec.ok() ? *rec : Record();
}

struct Original {
  WrittenExchange ex;
  Options options;
};

// The first crawl: one page, its WARC and CDXJ under `root`.
Original FirstCrawl(const std::string& root) {
  Original out;
  out.options = CrawlOptions(root, "first");
  auto w = WarcWriter::Open(out.options);
  EXPECT_TRUE(w.ok());
  DocBuffer body;
  EXPECT_TRUE(body.Append("hello").ok());
  auto ex = (*w)->WriteExchange(Fetch(kOk, &body, 1704164645123456));
  EXPECT_TRUE(ex.ok());
  out.ex = *ex;
  EXPECT_TRUE((*w)->Close().ok());
  return out;
}

// 6.7.3: a 304 is a server-not-modified revisit: its block is the 304
// response (nothing is cut, so no WARC-Truncated), it refers to the capture
// the validators came from, and the conditional request is kept.
TEST(Warc11, Sec6_7_3_ServerNotModifiedRevisitOfA304) {
  TempDir dir;
  Original first = FirstCrawl(dir.path());
  Options o = CrawlOptions(dir.path(), "second");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  RevisitOf of;
  of.profile = RevisitProfile::kServerNotModified;
  of.record_id = first.ex.response.record_id;
  of.target_uri = "http://example.test/page";
  of.date = "2024-01-02T03:04:05.123456Z";
  of.payload_digest = first.ex.payload_digest;
  auto rv =
      (*w)->WriteRevisit(Fetch(kNotModified, nullptr, 1706000000000000), of);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
  Record r = At(o, rv->revisit);
  EXPECT_EQ(r.type(), "revisit");
  EXPECT_EQ(r.Header("WARC-Profile"),
            "http://netpreserve.org/warc/1.1/revisit/server-not-modified");
  EXPECT_EQ(r.block, kNotModified);
  EXPECT_EQ(r.Header("WARC-Truncated"), "");
  EXPECT_EQ(r.Header("WARC-Refers-To"), first.ex.response.record_id);
  EXPECT_EQ(r.Header("WARC-Refers-To-Target-URI"), "http://example.test/page");
  EXPECT_EQ(r.Header("WARC-Refers-To-Date"), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(r.Header("WARC-Payload-Digest"), first.ex.payload_digest);
  Record req = At(o, rv->request);
  EXPECT_EQ(req.type(), "request");
  EXPECT_EQ(req.block, kRequest);
  EXPECT_EQ(req.Header("WARC-Concurrent-To"), rv->revisit.record_id);
  auto report = VerifyFile(o.dir + "/" + rv->revisit.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_TRUE(report->warnings.empty()) << Joined(report->warnings);
  // Indexed as pywb writes revisits, with the 304 and the original digest.
  auto lines = LookupCdxj(o.index_dir + "/" + rv->revisit.file + ".cdxj",
                          "http://example.test/page");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].mime, "warc/revisit");
  EXPECT_EQ((*lines)[0].status, 304);
  EXPECT_TRUE((*lines)[0].revisit);
  EXPECT_EQ("sha1:" + (*lines)[0].digest, first.ex.payload_digest);
}

TEST(Warc11, Sec6_7_Crawld_RevisitArgumentsAreChecked) {
  TempDir dir;
  Options o = CrawlOptions(dir.path(), "x");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  const uint64_t before = (*w)->current_offset();
  RevisitOf good;
  good.target_uri = "http://example.test/page";
  good.payload_digest = Sha1Digest("hello");
  auto code = [&](const RevisitOf& of, const char* head) {
    return (*w)->WriteRevisit(Fetch(head, nullptr, 1), of).status().code();
  };
  RevisitOf no_digest = good;
  no_digest.payload_digest.clear();  // 6.7.2: "shall include"
  EXPECT_EQ(code(no_digest, kOk), Status::Code::kInvalidArgument);
  RevisitOf no_uri = good;
  no_uri.target_uri.clear();
  EXPECT_EQ(code(no_uri, kOk), Status::Code::kInvalidArgument);
  RevisitOf bad_id = good;
  bad_id.record_id = "urn:uuid:no-brackets";
  EXPECT_EQ(code(bad_id, kOk), Status::Code::kInvalidArgument);
  RevisitOf bad_date = good;
  bad_date.date = "2024-01-02 03:04:05";
  EXPECT_EQ(code(bad_date, kOk), Status::Code::kInvalidArgument);
  RevisitOf not_modified = good;
  not_modified.profile = RevisitProfile::kServerNotModified;
  EXPECT_EQ(code(not_modified, kOk), Status::Code::kInvalidArgument);  // 200
  EXPECT_EQ((*w)->current_offset(), before);
  // A 304 without the last digest is fine (the field is then left out).
  RevisitOf bare = not_modified;
  bare.payload_digest.clear();
  auto rv = (*w)->WriteRevisit(Fetch(kNotModified, nullptr, 1), bare);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_EQ(At(o, rv->revisit).Header("WARC-Payload-Digest"), "");
}

// Issue 14: the crawl takes record ids on its loop (claims) while a pool
// thread writes records that take theirs: no two ids may ever be equal
// (two unlocked draws from one generator did return the same id, and
// `crawlctl warc verify` found the duplicate after a kill -9 run).
TEST(Warc11, Issue14_Sec5_2_RecordIdsStayUniqueWhileAnotherThreadWrites) {
  TempDir dir;
  Options o = CrawlOptions(dir.path(), "x");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body;
  ASSERT_TRUE(body.Append("hello").ok());
  std::vector<std::string> ids;
  std::vector<WrittenExchange> written;
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      auto ex = (*w)->WriteExchange(Fetch(kOk, &body, 1704164645123456 + i));
      ASSERT_TRUE(ex.ok()) << ex.status().ToString();
      written.push_back(*ex);
    }
  });
  for (int i = 0; i < 20000; ++i) ids.push_back((*w)->NewRecordId());
  writer.join();
  for (const WrittenExchange& ex : written) {
    ids.push_back(At(o, ex.response).Header("WARC-Record-ID"));
    ids.push_back(At(o, ex.request).Header("WARC-Record-ID"));
  }
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size());
}

// Issue 14: a worker names a response record before writing it (its
// document claim carries the id, so that other workers can write revisits
// of it before it exists); the writer uses that id, and checks it.
TEST(Warc11, Issue14_Sec5_2_ResponseUnderAPreAssignedRecordId) {
  TempDir dir;
  Options o = CrawlOptions(dir.path(), "x");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  const std::string id = (*w)->NewRecordId();
  EXPECT_EQ(id.rfind("<urn:uuid:", 0), 0u) << id;
  EXPECT_EQ(id.size(), 47u) << id;
  EXPECT_NE((*w)->NewRecordId(), id);
  DocBuffer body;
  ASSERT_TRUE(body.Append("hello").ok());
  FetchRecord f = Fetch(kOk, &body, 1704164645123456);
  f.record_id = id;
  auto ex = (*w)->WriteExchange(f);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->response.record_id, id);
  EXPECT_NE(ex->request.record_id, id);
  Record response = At(o, ex->response);
  EXPECT_EQ(response.Header("WARC-Record-ID"), id);
  EXPECT_EQ(At(o, ex->request).Header("WARC-Concurrent-To"), id);
  // A revisit written by another writer (another worker) against the id.
  Options o2 = CrawlOptions(dir.path(), "y");
  o2.worker_id = 1;
  auto w2 = WarcWriter::Open(o2);
  ASSERT_TRUE(w2.ok());
  FetchRecord copy = Fetch(kOk, nullptr, 1704164646000000);
  copy.target_uri = "http://mirror.test/page";
  auto rv = (*w2)->WriteRevisit(copy, id, "http://example.test/page",
                                1704164645123456, Sha1Digest("hello"));
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  Record revisit = At(o2, *rv);
  EXPECT_EQ(revisit.Header("WARC-Refers-To"), id);
  EXPECT_EQ(revisit.Header("WARC-Refers-To-Date"),
            response.Header("WARC-Date"));
  EXPECT_EQ(revisit.Header("WARC-Payload-Digest"),
            response.Header("WARC-Payload-Digest"));
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_TRUE((*w2)->Close().ok());
  auto report = VerifyFile(o.dir + "/" + ex->response.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);

  // Not a record id, or one that would forge a field: refused, nothing
  // written.
  Options o3 = CrawlOptions(dir.path(), "z");
  o3.worker_id = 2;
  auto w3 = WarcWriter::Open(o3);
  ASSERT_TRUE(w3.ok());
  const uint64_t before = (*w3)->current_offset();
  for (const char* bad : {"urn:uuid:no-brackets", "<no-scheme>", "<urn:a b>",
                          "<urn:x>\r\nWARC-Type: forged"}) {
    FetchRecord r = Fetch(kOk, &body, 1);
    r.record_id = bad;
    EXPECT_EQ((*w3)->WriteExchange(r).status().code(),
              Status::Code::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ((*w3)->current_offset(), before);
}

// Issue 17 Build 4: dedupe against an earlier crawl. Its CDXJ line gives
// the URL, the second, the digest and where the record is; with its WARC
// at hand, the record id and the exact date are read from it.
TEST(Warc11, Issue17_Sec5_11_RevisitOfAnEarlierCrawlWithItsWarcAtHand) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  auto lines = LookupCdxj(
      first.options.index_dir + "/" + first.ex.response.file + ".cdxj",
      "http://example.test/page");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  auto of = OriginalFromCdxj((*lines)[0], first.options.dir);
  ASSERT_TRUE(of.ok()) << of.status().ToString();
  EXPECT_EQ(of->profile, RevisitProfile::kIdenticalPayloadDigest);
  EXPECT_EQ(of->record_id, first.ex.response.record_id);
  EXPECT_EQ(of->target_uri, "http://example.test/page");
  EXPECT_EQ(of->date, "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(of->payload_digest, first.ex.payload_digest);

  Options o = CrawlOptions(dir.path() + "/crawl2", "second");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  auto rv = (*w)->WriteRevisit(Fetch(kOk, nullptr, 1706000000000000), *of);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
  Record r = At(o, rv->revisit);
  EXPECT_EQ(r.Header("WARC-Refers-To"), first.ex.response.record_id);
  EXPECT_EQ(r.Header("WARC-Refers-To-Date"), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(r.Header("WARC-Truncated"), "length");
  auto report = VerifyFile(o.dir + "/" + rv->revisit.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  // The record id is in the other crawl's file: a Concurrent-To outside
  // the file is a warning, a Refers-To outside it is expected.
  EXPECT_TRUE(report->warnings.empty()) << Joined(report->warnings);
}

// Without the earlier crawl's WARC, the line alone: no WARC-Refers-To,
// the date to the second.
TEST(Warc11, Issue17_Sec5_12_Sec5_13_RevisitOfAnEarlierCrawlFromItsIndexAlone) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  auto lines = LookupCdxj(
      first.options.index_dir + "/" + first.ex.response.file + ".cdxj",
      "http://example.test/page");
  ASSERT_TRUE(lines.ok());
  auto of = OriginalFromCdxj((*lines)[0], dir.path() + "/elsewhere");
  ASSERT_TRUE(of.ok()) << of.status().ToString();
  EXPECT_EQ(of->record_id, "");
  EXPECT_EQ(of->date, "2024-01-02T03:04:05Z");
  EXPECT_EQ(of->payload_digest, first.ex.payload_digest);
  Options o = CrawlOptions(dir.path() + "/crawl2", "second");
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  auto rv = (*w)->WriteRevisit(Fetch(kOk, nullptr, 1706000000000000), *of);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
  Record r = At(o, rv->revisit);
  EXPECT_EQ(r.Header("WARC-Refers-To"), "");
  EXPECT_EQ(r.Header("WARC-Refers-To-Target-URI"), "http://example.test/page");
  EXPECT_EQ(r.Header("WARC-Refers-To-Date"), "2024-01-02T03:04:05Z");
  auto report = VerifyFile(o.dir + "/" + rv->revisit.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
}

TEST(Cdxj, Issue17_OriginalFromCdxjRefusesRevisitsAndStaleLines) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  auto lines = LookupCdxj(
      first.options.index_dir + "/" + first.ex.response.file + ".cdxj",
      "http://example.test/page");
  ASSERT_TRUE(lines.ok());
  CdxjEntry revisit = (*lines)[0];
  revisit.mime = "warc/revisit";
  revisit.revisit = true;
  EXPECT_EQ(OriginalFromCdxj(revisit, first.options.dir).status().code(),
            Status::Code::kInvalidArgument);
  CdxjEntry no_digest = (*lines)[0];
  no_digest.digest.clear();
  EXPECT_EQ(OriginalFromCdxj(no_digest, first.options.dir).status().code(),
            Status::Code::kInvalidArgument);
  CdxjEntry moved = (*lines)[0];
  moved.offset = first.ex.request.offset;  // points at the request record
  moved.length = first.ex.request.length;
  EXPECT_EQ(OriginalFromCdxj(moved, first.options.dir).status().code(),
            Status::Code::kCorruption);
  CdxjEntry other = (*lines)[0];
  other.url = "http://example.test/other";
  EXPECT_EQ(OriginalFromCdxj(other, first.options.dir).status().code(),
            Status::Code::kCorruption);
}

// Issue 17 Build 4: the earlier crawls a crawl is started with, loaded
// by payload digest from their CDXJ indexes.
TEST(EarlierCaptures, Issue17_FindsAPayloadOfAnEarlierCrawlByItsDigest) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  auto e = EarlierCaptures::Load({dir.path() + "/crawl1"});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->size(), 1u);
  EXPECT_EQ((*e)->stats().files, 1u);
  EXPECT_EQ((*e)->stats().captures, 1u);
  auto of = (*e)->Find(Sha1Digest("hello"));
  ASSERT_TRUE(of.ok()) << of.status().ToString();
  EXPECT_EQ(of->record_id, first.ex.response.record_id);
  EXPECT_EQ(of->target_uri, "http://example.test/page");
  EXPECT_EQ(of->date, "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(of->payload_digest, first.ex.payload_digest);
  // Lower case and hex are the same digest; another payload is not there.
  std::string lower = Sha1Digest("hello");
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  EXPECT_TRUE((*e)->Find(lower).ok());
  EXPECT_TRUE((*e)->Find("sha1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d").ok());
  EXPECT_EQ((*e)->Find(Sha1Digest("hello!")).status().code(),
            Status::Code::kNotFound);
  EXPECT_EQ((*e)->Find("md5:xyz").status().code(),
            Status::Code::kInvalidArgument);
}

TEST(EarlierCaptures, Issue17_ACdxjFileSourceAndTheFirstSourceWins) {
  TempDir dir;
  Original one = FirstCrawl(dir.path() + "/crawl1");
  Original two = FirstCrawl(dir.path() + "/crawl2");
  const std::string cdxj2 =
      two.options.index_dir + "/" + two.ex.response.file + ".cdxj";
  // A CDXJ file names its WARCs beside it: none here, so the line alone.
  auto e = EarlierCaptures::Load({cdxj2, dir.path() + "/crawl1"});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->stats().files, 2u);
  EXPECT_EQ((*e)->size(), 1u);
  auto of = (*e)->Find(Sha1Digest("hello"));
  ASSERT_TRUE(of.ok()) << of.status().ToString();
  EXPECT_EQ(of->record_id, "");
  EXPECT_EQ(of->date, "2024-01-02T03:04:05Z");
  auto other = EarlierCaptures::Load({dir.path() + "/crawl1", cdxj2});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->Find(Sha1Digest("hello"))->record_id,
            one.ex.response.record_id);
}

TEST(EarlierCaptures, Issue17_BadLinesAreCountedAndAMissingSourceIsAnError) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  const std::string cdxj =
      first.options.index_dir + "/" + first.ex.response.file + ".cdxj";
  {
    std::ofstream out(cdxj, std::ios::app);
    out << "not a cdxj line\n";
    out << "com,example)/r 20240102030405 {\"url\": \"http://example.com/r\", "
           "\"mime\": \"warc/revisit\", \"status\": \"200\", \"digest\": "
           "\"FYYVT6MIVFGE647PQKEMRQHAKS7D2TW4\", \"length\": \"1\", "
           "\"offset\": \"0\", \"filename\": \"x.warc.gz\", "
           "\"flags\": [\"revisit\"]}\n";
    out << "com,example)/torn 2024";  // a crawl killed mid-line
  }
  auto e = EarlierCaptures::Load({dir.path() + "/crawl1"});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->stats().lines, 3u);
  EXPECT_EQ((*e)->stats().malformed, 1u);
  EXPECT_EQ((*e)->stats().revisits, 1u);
  EXPECT_NE((*e)->stats().first_malformed.find(cdxj + ":2: "),
            std::string::npos)
      << (*e)->stats().first_malformed;
  EXPECT_TRUE((*e)->Find(Sha1Digest("hello")).ok());
  auto missing = EarlierCaptures::Load({dir.path() + "/nowhere"});
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.path() + "/nowhere"),
            std::string::npos);
}

// The node's workers share one index: the first builds the cache file,
// the others map it and find the same captures; a changed source, or a
// damaged cache, is rebuilt from the CDXJ files, never trusted.
TEST(EarlierCaptures, Issue17_TheCacheIsSharedAndRebuiltWhenASourceChanges) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  const std::string cache = dir.path() + "/data/dedupe/earlier.idx";
  auto built = EarlierCaptures::Load({dir.path() + "/crawl1"}, cache);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_GT((*built)->mapped_bytes(), 0u);
  EXPECT_EQ((*built)->memory_bytes(), 0u);
  auto mapped = EarlierCaptures::Load({dir.path() + "/crawl1"}, cache);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ((*mapped)->size(), 1u);
  EXPECT_EQ((*mapped)->stats().files, 1u);
  EXPECT_EQ((*mapped)->stats().lines, 1u);
  auto of = (*mapped)->Find(Sha1Digest("hello"));
  ASSERT_TRUE(of.ok()) << of.status().ToString();
  EXPECT_EQ(of->record_id, first.ex.response.record_id);

  // The earlier crawl's index grew (another capture): the cache is stale.
  const std::string cdxj =
      first.options.index_dir + "/" + first.ex.response.file + ".cdxj";
  {
    std::ofstream out(cdxj, std::ios::app);
    out << "not a cdxj line\n";
  }
  auto again = EarlierCaptures::Load({dir.path() + "/crawl1"}, cache);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->stats().lines, 2u);
  EXPECT_EQ((*again)->stats().malformed, 1u);
  EXPECT_NE((*again)->stats().first_malformed.find(cdxj + ":2: "),
            std::string::npos);
  EXPECT_TRUE((*again)->Find(Sha1Digest("hello")).ok());

  // Damage at every byte of the header and a cut file: rebuilt, same
  // answers.
  std::string image;
  {
    std::ifstream in(cache, std::ios::binary);
    image.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(image.size(), 64u);
  for (size_t at : {size_t{0}, size_t{9}, size_t{16}, size_t{24}, size_t{40},
                    size_t{48}, image.size() - 1}) {
    std::string bad = image;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    {
      std::ofstream out(cache, std::ios::binary | std::ios::trunc);
      out << bad;
    }
    auto e = EarlierCaptures::Load({dir.path() + "/crawl1"}, cache);
    ASSERT_TRUE(e.ok()) << at;
    EXPECT_EQ((*e)->size(), 1u) << at;
    EXPECT_TRUE((*e)->Find(Sha1Digest("hello")).ok()) << at;
  }
  {
    std::ofstream out(cache, std::ios::binary | std::ios::trunc);
    out << image.substr(0, image.size() - 8);
  }
  auto cut = EarlierCaptures::Load({dir.path() + "/crawl1"}, cache);
  ASSERT_TRUE(cut.ok());
  EXPECT_TRUE((*cut)->Find(Sha1Digest("hello")).ok());
  // A cache that cannot be written: the index is held in memory.
  auto unwritable = EarlierCaptures::Load({dir.path() + "/crawl1"},
                                          cdxj + "/not-a-dir/earlier.idx");
  ASSERT_TRUE(unwritable.ok()) << unwritable.status().ToString();
  EXPECT_EQ((*unwritable)->mapped_bytes(), 0u);
  EXPECT_TRUE((*unwritable)->Find(Sha1Digest("hello")).ok());
}

// A line that no longer describes its record (the WARC was replaced) is
// no revisit target: Corruption, never a pointer at the wrong record.
TEST(EarlierCaptures, Issue17_AStaleIndexIsCorruptionNotAWrongRevisit) {
  TempDir dir;
  Original first = FirstCrawl(dir.path() + "/crawl1");
  auto e = EarlierCaptures::Load({dir.path() + "/crawl1"});
  ASSERT_TRUE(e.ok());
  {
    // The same name, other contents (the first crawl's WARC replaced).
    std::ofstream out(first.options.dir + "/" + first.ex.response.file,
                      std::ios::binary | std::ios::trunc);
    out << std::string(first.ex.response.offset + first.ex.response.length,
                       'x');
  }
  auto stale = (*e)->Find(Sha1Digest("hello"));
  EXPECT_EQ(stale.status().code(), Status::Code::kCorruption)
      << stale.status().ToString();
}

// What verify says of revisits written by other tools.
TEST(Warc11, Sec6_7_VerifyJudgesRevisitFields) {
  auto verify = [](const std::vector<std::string>& fields,
                   const std::string& block) {
    return VerifyBytes(
        RawWarcinfo() +
            RawRecord("revisit",
                      "<urn:uuid:22222222-2222-4222-8222-222222222222>", fields,
                      block),
        "revisit.warc");
  };
  const std::string uri = "WARC-Target-URI: http://example.test/";
  const std::string http = "Content-Type: application/http;msgtype=response";
  const std::string identical =
      "WARC-Profile: "
      "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
  const std::string digest = "WARC-Payload-Digest: " + Sha1Digest("x");
  const std::string refers = "WARC-Refers-To-Target-URI: http://example.test/";
  // WARC 1.0's profile URI and an empty block are fine.
  VerifyReport v10 = verify(
      {uri,
       "WARC-Profile: "
       "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
       digest, refers},
      "");
  EXPECT_TRUE(v10.ok()) << Joined(v10.defects);
  EXPECT_TRUE(v10.warnings.empty()) << Joined(v10.warnings);
  // 6.7.2: the digest "shall" be there.
  VerifyReport no_digest = verify({uri, identical, refers}, "");
  EXPECT_TRUE(Has(no_digest.defects, "without WARC-Payload-Digest"))
      << Joined(no_digest.defects);
  // A block without WARC-Truncated: length: a warning (warcio writes them).
  VerifyReport untruncated =
      verify({uri, identical, digest, refers, http}, kOk);
  EXPECT_TRUE(untruncated.ok()) << Joined(untruncated.defects);
  EXPECT_TRUE(Has(untruncated.warnings, "WARC-Truncated: length"));
  // A block that is not HTTP, malformed references.
  VerifyReport not_http =
      verify({uri, identical, digest, refers, http}, "not http\r\n\r\n");
  EXPECT_TRUE(Has(not_http.defects, "not an HTTP response"));
  VerifyReport bad_refs =
      verify({uri, identical, digest, refers, "WARC-Refers-To: no-brackets",
              "WARC-Refers-To-Date: yesterday"},
             "");
  EXPECT_TRUE(Has(bad_refs.defects, "malformed WARC-Refers-To 'no-brackets'"))
      << Joined(bad_refs.defects);
  EXPECT_TRUE(Has(bad_refs.defects, "malformed WARC-Refers-To-Date"));
  // An unknown profile cannot be interpreted; nothing names the original.
  VerifyReport odd = verify({uri, "WARC-Profile: http://example.test/p"}, "");
  EXPECT_TRUE(odd.ok()) << Joined(odd.defects);
  EXPECT_TRUE(Has(odd.warnings, "unknown WARC-Profile"));
  EXPECT_TRUE(Has(odd.warnings, "its original cannot be found"));
}

}  // namespace
}  // namespace crawld::store
