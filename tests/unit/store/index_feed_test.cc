// Tests for the store's CDXJ index (SURT keys, lines, sort, lookup), the
// document feed (cursor contract, crash repair, restart) and conversion
// records. Layout: docs/STORE.md.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "store/store.h"

namespace crawld::store {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (fs::temp_directory_path() / "store_index_test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void AppendRaw(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f << data;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The record stored in `file` at the gzip member [offset, offset+length):
// what an indexer does with a CDXJ line or a feed entry.
Record RecordAt(const std::string& path, uint64_t offset, uint64_t length) {
  Result<Record> rec = ReadRecordAt(path, offset, length);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return rec.ok() ? *rec : Record();
}

const char kRequestHead[] =
    "GET /page HTTP/1.1\r\nHost: example.test\r\nUser-Agent: crawld-test\r\n"
    "\r\n";
const char kResponseHead[] =
    "HTTP/1.1 200 OK\r\nContent-Type: Text/HTML; charset=utf-8\r\n"
    "Content-Length: 5\r\n\r\n";

Options IndexOptions(const TempDir& dir) {
  Options o;
  o.dir = dir.path() + "/warc";
  o.index_dir = dir.path() + "/index";
  o.worker_id = 2;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  return o;
}

FetchRecord Fetch(const DocBuffer* body, std::string uri) {
  FetchRecord r;
  r.target_uri = std::move(uri);
  r.ip = "127.0.0.1";
  r.fetch_time_us = 1704164645123456;  // 2024-01-02T03:04:05.123456Z
  r.request_head = kRequestHead;
  r.response_head = kResponseHead;
  r.body = body;
  return r;
}

DocBuffer Body(std::string_view text) {
  DocBuffer b;
  EXPECT_TRUE(b.Append(text).ok());
  return b;
}

// --- SURT: the python `surt` package's own test cases (WaybackURLKeyMaker,
// IAURLCanonicalizer and GoogleURLCanonicalizer tests), which pywb uses. ---

TEST(Surt, WaybackUrlKeyMakerExamples) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "-"},
      {"filedesc:foo.arc.gz", "filedesc:foo.arc.gz"},
      {"filedesc://foo.arc.gz", "filedesc://foo.arc.gz"},
      {"warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"},
      {"dns:archive.org", "dns:archive.org"},
      {"mailto:foo@example.com", "mailto:foo@example.com"},
      {"http://www.archive.org/", "org,archive)/"},
      {"http://archive.org/", "org,archive)/"},
      {"http://archive.org/goo/", "org,archive)/goo"},
      {"http://archive.org/goo/?", "org,archive)/goo"},
      {"http://archive.org/goo/?b&a", "org,archive)/goo?a&b"},
      {"http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"},
      {"http://archive.org/index.php?PHPSESSID="
       "0123456789abcdefghijklemopqrstuv&action=profile;u=4221",
       "org,archive)/index.php?action=profile;u=4221"},
      {"whois://whois.isoc.org.il/shaveh.co.il",
       "il,org,isoc,whois)/shaveh.co.il"},
      {"http://www.example.com/", "com,example)/"},
      {"ftp://www.example.com/", "com,example)/"},
      // The "Yahoo web bug" case: escapes decoded, args sorted, lower case.
      {"http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//"
       "web.archive.org/web/20090517140029/http%3A//"
       "anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%"
       "20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2",
       "com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%"
       "20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/"
       "20090517140029/http://anthonystewarthead.electric-chi.com/"
       "&s=1366x768&v=1.2"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Surt(in), want) << in;
}

TEST(Surt, IaCanonicalizerExamples) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://ARCHIVE.ORG/", "org,archive)/"},
      {"http://www.archive.org:80/", "org,archive)/"},
      {"https://www.archive.org:80/", "org,archive:80)/"},
      {"http://www.archive.org:443/", "org,archive:443)/"},
      {"https://www.archive.org:443/", "org,archive)/"},
      {"http://www.archive.org/big/", "org,archive)/big"},
      {"http://archive.org/index.html?b=b&a=b",
       "org,archive)/index.html?a=b&b=b"},
      {"http://www34.archive.org/index.html?b=a&b=b&a=b",
       "org,archive)/index.html?a=b&b=a&b=b"},
      {"http://www2.www2foo.com/", "com,www2foo)/"},
      {"http://www2foo.com/", "com,www2foo)/"},
      {"http://example.com/foo?X=Y", "com,example)/foo?x=y"},
      // The example in store.h and docs/STORE.md.
      {"http://www.Example.com/A/?b=2&a=1", "com,example)/a?a=1&b=2"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Surt(in), want) << in;
}

TEST(Surt, GoogleCanonicalizerExamples) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://host/%25%32%35", "host)/%25"},
      {"http://host/%25%32%35%25%32%35", "host)/%25%25"},
      {"http://host/%2525252525252525", "host)/%25"},
      {"http://host/asdf%25%32%35asd", "host)/asdf%25asd"},
      {"http://host/%%%25%32%35asd%%", "host)/%25%25%25asd%25%25"},
      {"http://www.google.com/foo\tbar\rbaz\n2", "com,google)/foobarbaz2"},
      {"http://evil.com/foo#bar#baz", "com,evil)/foo"},
      {"http://evil.com/foo;", "com,evil)/foo;"},
      {"http://host.com//twoslashes?more//slashes",
       "com,host)/twoslashes?more//slashes"},
      {"http://168.188.99.26/.secure/x", "168.188.99.26)/.secure/x"},
      {"http://notrailingslash.com", "com,notrailingslash)/"},
      {"http://www.gotaport.com:1234/", "com,gotaport:1234)/"},
      {"http://www.google.com.../", "com,google)/"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Surt(in), want) << in;
}

TEST(Surt, QuerySessionIdsAreDropped) {
  const std::string id32 = "0123456789abcdefghijklemopqrstuv";
  // Same results as surt's stripQuerySessionID regexes followed by the
  // argument sort.
  EXPECT_EQ(Surt("http://a.com/x?jsessionid=" + id32), "com,a)/x");
  EXPECT_EQ(Surt("http://a.com/x?jsessionid=" + id32 + "0"),
            "com,a)/x?jsessionid=" + id32 + "0");
  EXPECT_EQ(Surt("http://a.com/x?jsessionid=" + id32 + "&x=y"), "com,a)/x?x=y");
  EXPECT_EQ(Surt("http://a.com/x?one=two&jsessionid=" + id32 + "&x=y"),
            "com,a)/x?one=two&x=y");
  EXPECT_EQ(Surt("http://a.com/x?one=two&phpsessid=" + id32),
            "com,a)/x?&one=two");
  EXPECT_EQ(Surt("http://a.com/x?aspsessionidABCDEFGH="
                 "ABCDEFGHIJKLMNOPQRSTUVWX&x=y"),
            "com,a)/x?x=y");
  EXPECT_EQ(Surt("http://a.com/x?CFID=1169580&CFTOKEN=48630702&dtstamp=22%"
                 "2F08%2F2006"),
            "com,a)/x?dtstamp=22/08/2006");
}

TEST(Surt, HostileInputNeverSplitsTheLine) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string url = "http://";
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) url.push_back(static_cast<char>(rng()));
    std::string key = Surt(url);
    EXPECT_EQ(key.find_first_of(std::string(" \n\r\0", 4)), std::string::npos)
        << key;
  }
  EXPECT_EQ(Surt("http://user:pw@Example.com:0080/a b"), "com,example)/a%20b");
}

// --- CDXJ lines ---

TEST(Cdxj, LineFormatIsPywbCompatible) {
  CdxjEntry e;
  e.surt = "com,example)/";
  e.timestamp = "20240102030405";
  e.url = "http://example.com/";
  e.mime = "text/html";
  e.status = 200;
  e.digest = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
  e.length = 1043;
  e.offset = 551;
  e.filename = "crawld-20240102030405-00002-00000.warc.gz";
  EXPECT_EQ(FormatCdxjLine(e),
            "com,example)/ 20240102030405 {\"url\": \"http://example.com/\", "
            "\"mime\": \"text/html\", \"status\": \"200\", \"digest\": "
            "\"3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\", \"length\": \"1043\", "
            "\"offset\": \"551\", \"filename\": "
            "\"crawld-20240102030405-00002-00000.warc.gz\"}\n");
  e.flags.noindex = true;
  e.revisit = true;
  e.flags.near_duplicate_of = "http://example.com/\"other\"";
  auto back = ParseCdxjLine(FormatCdxjLine(e));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->surt, e.surt);
  EXPECT_EQ(back->timestamp, e.timestamp);
  EXPECT_EQ(back->url, e.url);
  EXPECT_EQ(back->status, 200);
  EXPECT_EQ(back->digest, e.digest);
  EXPECT_EQ(back->length, 1043u);
  EXPECT_EQ(back->offset, 551u);
  EXPECT_EQ(back->filename, e.filename);
  EXPECT_TRUE(back->flags.noindex);
  EXPECT_TRUE(back->revisit);
  EXPECT_EQ(back->flags.near_duplicate_of, e.flags.near_duplicate_of);
}

TEST(Cdxj, MalformedLinesAreClearErrors) {
  for (const char* bad :
       {"", "key", "key 2024", "key notdigits {}", "key 2024 {",
        "key 2024 {\"url\": 1}", "key 2024 {\"url\": \"u\"}",
        "key 2024 {\"url\": \"u\", \"length\": \"x\", \"offset\": \"0\", "
        "\"filename\": \"f\"}",
        "key 2024 {\"url\": \"u\", \"length\": \"1\", \"offset\": \"0\", "
        "\"filename\": \"f\", \"flags\": \"noindex\"}"}) {
    auto r = ParseCdxjLine(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = "k 20240102030405 {\"url\": \"";
    const int n = static_cast<int>(rng() % 60);
    for (int k = 0; k < n; ++k) junk.push_back(static_cast<char>(rng()));
    (void)ParseCdxjLine(junk);  // must not crash or trip a sanitizer
  }
}

// --- The writer's index ---

TEST(Cdxj, WriterIndexesResponsesAndRevisitsOnly) {
  TempDir dir;
  Options o = IndexOptions(dir);
  o.conversion_records = true;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  DocBuffer body = Body("hello");
  auto a = (*w)->WriteExchange(Fetch(&body, "http://www.example.test/a/"));
  ASSERT_TRUE(a.ok());
  const std::string outlinks = OutlinksMetadataBlock(
      {"http://example.test/b", "http://evil.test/\r\nWARC-Type: x", "",
       "http://example.test/c"});
  EXPECT_EQ(outlinks,
            "outlink: http://example.test/b\r\n"
            "outlink: http://example.test/c\r\n");
  auto meta = (*w)->WriteMetadata("http://www.example.test/a/",
                                  a->response.record_id, 1704164645123456,
                                  "application/warc-fields", outlinks);
  ASSERT_TRUE(meta.ok());
  auto conv =
      (*w)->WriteConversion("http://www.example.test/a/", a->response.record_id,
                            1704164645123456, "hello");
  ASSERT_TRUE(conv.ok());
  FetchRecord again = Fetch(nullptr, "http://example.test/b?z=1&a=2");
  again.fetch_time_us = 1704250000000000;  // 2024-01-03T02:46:40Z
  again.flags.noindex = true;
  auto rv = (*w)->WriteRevisit(again, a->response.record_id,
                               "http://www.example.test/a/", 1704164645123456,
                               a->payload_digest);
  ASSERT_TRUE(rv.ok());
  const std::string index = (*w)->current_index_path();
  EXPECT_EQ(index, dir.path() + "/index/" + (*w)->current_file() + ".cdxj");
  const std::string warc = dir.path() + "/warc/" + (*w)->current_file();
  ASSERT_TRUE((*w)->Close().ok());

  std::vector<std::string> lines = Lines(ReadAll(index));
  ASSERT_EQ(lines.size(), 2u);
  auto r = ParseCdxjLine(lines[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->surt, "test,example)/a");
  EXPECT_EQ(r->timestamp, "20240102030405");
  EXPECT_EQ(r->url, "http://www.example.test/a/");
  EXPECT_EQ(r->mime, "text/html");  // from the head, lower-cased
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ("sha1:" + r->digest, a->payload_digest);
  EXPECT_EQ(r->offset, a->response.offset);
  EXPECT_EQ(r->length, a->response.length);
  EXPECT_EQ(r->filename, a->response.file);
  EXPECT_FALSE(r->revisit);
  EXPECT_FALSE(r->flags.noindex);
  Record rec = RecordAt(warc, r->offset, r->length);
  EXPECT_EQ(rec.type(), "response");
  EXPECT_EQ(rec.Header("WARC-Target-URI"), r->url);

  auto v = ParseCdxjLine(lines[1]);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->surt, "test,example)/b?a=2&z=1");
  EXPECT_EQ(v->timestamp, "20240103024640");
  EXPECT_EQ(v->mime, "warc/revisit");
  EXPECT_TRUE(v->revisit);
  EXPECT_TRUE(v->flags.noindex);
  EXPECT_EQ(v->offset, rv->offset);
  EXPECT_EQ(RecordAt(warc, v->offset, v->length).type(), "revisit");

  // The conversion record: text/plain, pointing at its response.
  ASSERT_TRUE(conv->has_value());
  Record c = RecordAt(warc, (*conv)->offset, (*conv)->length);
  EXPECT_EQ(c.type(), "conversion");
  EXPECT_EQ(c.Header("WARC-Refers-To"), a->response.record_id);
  EXPECT_EQ(c.Header("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(c.block, "hello");
  Record m = RecordAt(warc, meta->offset, meta->length);
  EXPECT_EQ(m.type(), "metadata");
  EXPECT_EQ(m.Header("WARC-Concurrent-To"), a->response.record_id);
  EXPECT_EQ(m.block, outlinks);
  auto report = VerifyFile(warc);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok());
}

TEST(Cdxj, CallerMimeStatusAndNearDuplicateWin) {
  TempDir dir;
  auto w = WarcWriter::Open(IndexOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  FetchRecord f = Fetch(&body, "http://example.test/x");
  f.mime = "application/xhtml+xml";
  f.status = 203;
  f.flags.near_duplicate_of = "http://example.test/y";
  ASSERT_TRUE((*w)->WriteExchange(f).ok());
  // A head that is not HTTP is refused since issue 19 (it used to be
  // indexed as mime "unk", status 0, no digest): no record, no line.
  FetchRecord plain = Fetch(&body, "http://example.test/z");
  plain.response_head = "not http at all\r\n\r\n";
  EXPECT_EQ((*w)->WriteExchange(plain).status().code(),
            Status::Code::kInvalidArgument);
  // A head without Content-Type is indexed as "unk".
  FetchRecord bare = Fetch(&body, "http://example.test/z");
  bare.response_head = "HTTP/1.1 200 OK\r\n\r\n";
  ASSERT_TRUE((*w)->WriteExchange(bare).ok());
  std::vector<std::string> lines = Lines(ReadAll((*w)->current_index_path()));
  ASSERT_EQ(lines.size(), 2u);
  auto e = ParseCdxjLine(lines[0]);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->mime, "application/xhtml+xml");
  EXPECT_EQ(e->status, 203);
  EXPECT_EQ(e->flags.near_duplicate_of, "http://example.test/y");
  auto p = ParseCdxjLine(lines[1]);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->mime, "unk");
  EXPECT_EQ(p->status, 200);
  EXPECT_EQ(p->digest, Sha1Digest("hello").substr(5));
}

TEST(Cdxj, OldCallsStillWorkWithoutAnIndex) {
  TempDir dir;
  Options o = IndexOptions(dir);
  o.index_dir.clear();
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  ASSERT_TRUE((*w)->WriteExchange(Fetch(&body, "http://example.test/")).ok());
  EXPECT_EQ((*w)->current_index_path(), "");
  auto conv = (*w)->WriteConversion("http://example.test/", "<urn:x>", 0, "t");
  ASSERT_TRUE(conv.ok());
  EXPECT_FALSE(conv->has_value());  // conversion_records is off
  EXPECT_FALSE(fs::exists(dir.path() + "/index"));
}

TEST(Cdxj, EachRotatedWarcHasItsOwnIndex) {
  TempDir dir;
  Options o = IndexOptions(dir);
  o.rotate_bytes = 1;  // a new file before every write
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  std::set<std::string> files;
  for (int i = 0; i < 4; ++i) {
    auto ex = (*w)->WriteExchange(
        Fetch(&body, "http://example.test/" + std::to_string(i)));
    ASSERT_TRUE(ex.ok());
    files.insert(ex->response.file);
  }
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(files.size(), 4u);
  for (const std::string& f : files) {
    std::vector<std::string> lines =
        Lines(ReadAll(dir.path() + "/index/" + f + ".cdxj"));
    ASSERT_EQ(lines.size(), 1u) << f;
    auto e = ParseCdxjLine(lines[0]);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->filename, f);
  }
}

TEST(Cdxj, SortedCopyAndLookup) {
  TempDir dir;
  auto w = WarcWriter::Open(IndexOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  for (const char* u : {"http://b.test/2", "http://a.test/", "http://b.test/1",
                        "http://www.a.test/x/"}) {
    ASSERT_TRUE((*w)->WriteExchange(Fetch(&body, u)).ok());
  }
  const std::string index = (*w)->current_index_path();
  ASSERT_TRUE((*w)->Close().ok());
  AppendRaw(index, "test,torn)/ 2024");  // a crash mid-line
  const std::string sorted = dir.path() + "/sorted.cdxj";
  auto n = SortCdxj(index, sorted);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4u);
  std::vector<std::string> keys;
  for (const std::string& l : Lines(ReadAll(sorted)))
    keys.push_back(l.substr(0, l.find(' ')));
  EXPECT_EQ(keys, (std::vector<std::string>{"test,a)/", "test,a)/x",
                                            "test,b)/1", "test,b)/2"}));
  // In place works too (and drops the torn line).
  ASSERT_TRUE(SortCdxj(index, index).ok());
  EXPECT_EQ(ReadAll(index), ReadAll(sorted));

  auto hits = LookupCdxj(sorted, "http://A.test/x");  // www. and '/' differ
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].url, "http://www.a.test/x/");
  auto none = LookupCdxj(sorted, "http://c.test/");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(
      LookupCdxj(dir.path() + "/missing", "http://a.test/").status().code(),
      Status::Code::kIOError);
}

// --- The feed ---

FeedEntry Entry(int i) {
  FeedEntry e;
  e.url = "http://example.test/" + std::to_string(i) + "?q=\"x\"";
  e.warc_file = "crawld-20240102030405-00000-00000.warc.gz";
  e.offset = 1000 + static_cast<uint64_t>(i) * 100;
  e.length = 99;
  e.digest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
  e.status = 200;
  e.mime = "text/html";
  e.fetch_time_us = 1704164645000000 + i;
  e.flags.noindex = i % 3 == 0;
  e.revisit = i % 5 == 0;
  if (i % 7 == 0) e.flags.near_duplicate_of = "http://example.test/dup";
  return e;
}

FeedOptions FeedOpts(const TempDir& dir, int worker = 0) {
  FeedOptions o;
  o.dir = dir.path() + "/feed";
  o.worker_id = worker;
  o.segment_bytes = 4096;  // rotate every ~15 entries
  o.fsync = false;
  return o;
}

std::vector<FeedEntry> ReadAllFrom(FeedReader* r, std::string cursor,
                                   size_t page, std::string* end = nullptr) {
  std::vector<FeedEntry> out;
  for (int guard = 0; guard < 100000; ++guard) {
    auto p = r->Read(cursor, page);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) break;
    if (p->entries.empty()) {
      EXPECT_EQ(p->next_cursor, cursor);
      break;
    }
    EXPECT_EQ(p->entries.back().cursor, p->next_cursor);
    for (auto& e : p->entries) out.push_back(std::move(e));
    cursor = p->next_cursor;
  }
  if (end != nullptr) *end = cursor;
  return out;
}

TEST(Feed, PagesAndEveryCursorGiveEachEntryExactlyOnce) {
  TempDir dir;
  auto w = FeedWriter::Open(FeedOpts(dir));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  constexpr int kEntries = 120;
  for (int i = 0; i < kEntries; ++i) ASSERT_TRUE((*w)->Append(Entry(i)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  size_t segments = 0;
  for (const auto& f : fs::directory_iterator(dir.path() + "/feed"))
    segments += f.path().extension() == ".jsonl";
  EXPECT_GT(segments, 3u);  // rotation happened

  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  for (size_t page : {1u, 7u, 1000u}) {
    std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", page);
    ASSERT_EQ(all.size(), static_cast<size_t>(kEntries)) << page;
    for (int i = 0; i < kEntries; ++i) {
      const FeedEntry want = Entry(i);
      EXPECT_EQ(all[i].url, want.url);
      EXPECT_EQ(all[i].warc_file, want.warc_file);
      EXPECT_EQ(all[i].offset, want.offset);
      EXPECT_EQ(all[i].length, want.length);
      EXPECT_EQ(all[i].digest, want.digest);
      EXPECT_EQ(all[i].status, want.status);
      EXPECT_EQ(all[i].mime, want.mime);
      EXPECT_EQ(all[i].fetch_time_us, want.fetch_time_us);
      EXPECT_EQ(all[i].flags.noindex, want.flags.noindex);
      EXPECT_EQ(all[i].revisit, want.revisit);
      EXPECT_EQ(all[i].flags.near_duplicate_of, want.flags.near_duplicate_of);
    }
  }
  // Resuming from the cursor of entry i gives exactly entries i+1...
  std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", 1000);
  for (int i = 0; i < kEntries; ++i) {
    std::vector<FeedEntry> rest = ReadAllFrom(r->get(), all[i].cursor, 13);
    ASSERT_EQ(rest.size(), static_cast<size_t>(kEntries - i - 1)) << i;
    if (!rest.empty()) {
      EXPECT_EQ(rest.front().url, Entry(i + 1).url);
    }
  }
  auto zero = (*r)->Read(all[5].cursor, 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->entries.empty());
  EXPECT_EQ(zero->next_cursor, all[5].cursor);
}

TEST(Feed, TornTailIsNeverReadAndIsCutOnReopen) {
  TempDir dir;
  std::string segment;
  {
    auto w = FeedWriter::Open(FeedOpts(dir));
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*w)->Append(Entry(i)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  for (const auto& f : fs::directory_iterator(dir.path() + "/feed")) {
    if (f.path().extension() == ".jsonl") segment = f.path();
  }
  const uint64_t good = fs::file_size(segment);
  AppendRaw(segment, "{\"url\":\"http://example.test/half");  // kill -9

  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::string cursor;
  EXPECT_EQ(ReadAllFrom(r->get(), "", 10, &cursor).size(), 3u);

  auto w = FeedWriter::Open(FeedOpts(dir));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(fs::file_size(segment), good);
  ASSERT_TRUE((*w)->Append(Entry(3)).ok());
  std::vector<FeedEntry> rest = ReadAllFrom(r->get(), cursor, 10);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].url, Entry(3).url);
}

TEST(Feed, ConsumerSeesEveryEntryOnceAcrossWriterRestarts) {
  TempDir dir;
  auto r = FeedReader::Open(dir.path());  // the parent exists already
  ASSERT_TRUE(r.ok());
  std::string cursor;
  std::vector<std::string> seen;
  int next = 0;
  for (int run = 0; run < 4; ++run) {
    auto w = FeedWriter::Open(FeedOpts(dir));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int i = 0; i < 25; ++i) ASSERT_TRUE((*w)->Append(Entry(next++)).ok());
    // The consumer reads part of it while the writer is live.
    auto reader = FeedReader::Open(dir.path() + "/feed");
    ASSERT_TRUE(reader.ok());
    auto p = (*reader)->Read(cursor, 10);
    ASSERT_TRUE(p.ok());
    for (const auto& e : p->entries) seen.push_back(e.url);
    cursor = p->next_cursor;
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto reader = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(reader.ok());
  for (const auto& e : ReadAllFrom(reader->get(), cursor, 9))
    seen.push_back(e.url);
  ASSERT_EQ(seen.size(), static_cast<size_t>(next));
  for (int i = 0; i < next; ++i) EXPECT_EQ(seen[i], Entry(i).url);
}

TEST(Feed, SecondWriterForTheSameWorkerIsRefused) {
  TempDir dir;
  auto w1 = FeedWriter::Open(FeedOpts(dir, 4));
  ASSERT_TRUE(w1.ok());
  auto w2 = FeedWriter::Open(FeedOpts(dir, 4));
  ASSERT_FALSE(w2.ok());
  EXPECT_EQ(w2.status().code(), Status::Code::kFailedPrecondition);
  auto other = FeedWriter::Open(FeedOpts(dir, 5));
  EXPECT_TRUE(other.ok());
  ASSERT_TRUE((*w1)->Close().ok());
  EXPECT_TRUE(FeedWriter::Open(FeedOpts(dir, 4)).ok());
}

// Issue 14: the entries of all workers come in one stream in ID order (time
// to the millisecond first, then node, worker and sequence), under one
// cursor.
TEST(Feed, WorkersAreMergedByIdUnderOneCursor) {
  TempDir dir;
  auto w0 = FeedWriter::Open(FeedOpts(dir, 0));
  auto w1 = FeedWriter::Open(FeedOpts(dir, 1));
  ASSERT_TRUE(w0.ok() && w1.ok());
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE((i % 2 == 0 ? *w0 : *w1)->Append(Entry(i)).ok());
  }
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::string cursor;
  std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", 7, &cursor);
  ASSERT_EQ(all.size(), 60u);
  std::set<std::string> urls;
  for (size_t i = 0; i < all.size(); ++i) {
    urls.insert(all[i].url);
    EXPECT_EQ(all[i].cursor, std::to_string(all[i].id));
    if (i > 0) {
      EXPECT_GT(all[i].id, all[i - 1].id);
    }
  }
  EXPECT_EQ(urls.size(), 60u);
  // Each worker's own entries keep their order.
  std::vector<std::string> mine;
  for (const FeedEntry& e : all) {
    if (SplitFeedId(e.id).worker == 0) mine.push_back(e.url);
  }
  ASSERT_EQ(mine.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(mine[i], Entry(2 * i).url);
  // New entries on both after the consumer's cursor.
  ASSERT_TRUE((*w1)->Append(Entry(61)).ok());
  ASSERT_TRUE((*w0)->Append(Entry(60)).ok());
  std::vector<FeedEntry> more = ReadAllFrom(r->get(), cursor, 7);
  ASSERT_EQ(more.size(), 2u);
  EXPECT_LT(more[0].id, more[1].id);
  EXPECT_EQ(std::set<std::string>({more[0].url, more[1].url}),
            std::set<std::string>({Entry(60).url, Entry(61).url}));
}

TEST(Feed, BadCursorsAndCorruptLinesAreClearErrors) {
  TempDir dir;
  auto w = FeedWriter::Open(FeedOpts(dir));
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*w)->Append(Entry(i)).ok());
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  for (const char* bad :
       {"garbage", "0:0", "0:0:3", "0:9:0", "1:0:0", "-1:0:0", "0:0:0,0:0:0",
        "0:0:0,", ":0:0", "0::0", "0:0:99999999", "0:0:1x"}) {
    auto p = (*r)->Read(bad, 10);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument) << bad;
  }
  std::string cursor;
  ASSERT_EQ(ReadAllFrom(r->get(), "", 10, &cursor).size(), 3u);
  std::string segment;
  for (const auto& f : fs::directory_iterator(dir.path() + "/feed")) {
    if (f.path().extension() == ".jsonl") segment = f.path();
  }
  AppendRaw(segment, "{\"url\": 12}\n");
  auto p = (*r)->Read(cursor, 10);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kCorruption);
  EXPECT_NE(p.status().message().find("offset"), std::string::npos);
  EXPECT_EQ(FeedReader::Open(dir.path() + "/nope").status().code(),
            Status::Code::kIOError);
}

// One big segment read in many chunks: lines across chunk boundaries.
TEST(Feed, LargeSegmentIsReadWhole) {
  TempDir dir;
  FeedOptions o = FeedOpts(dir);
  o.segment_bytes = 64 << 20;
  auto w = FeedWriter::Open(o);
  ASSERT_TRUE(w.ok());
  constexpr int kEntries = 3000;  // about 0.9 MB, several read chunks
  for (int i = 0; i < kEntries; ++i) ASSERT_TRUE((*w)->Append(Entry(i)).ok());
  auto r = FeedReader::Open(dir.path() + "/feed");
  ASSERT_TRUE(r.ok());
  std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", 1000);
  ASSERT_EQ(all.size(), static_cast<size_t>(kEntries));
  for (int i = 0; i < kEntries; ++i) ASSERT_EQ(all[i].url, Entry(i).url);
}

// Random damage inside a segment: a clear error or entries, never a crash.
TEST(Feed, HostileSegmentBytesNeverCrashTheReader) {
  TempDir dir;
  const std::string feed = dir.path() + "/feed";
  {
    // A writer made the mark file and segment 0 once, so the reader goes
    // on to the segment's bytes.
    auto w = FeedWriter::Open(FeedOpts(dir));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(Entry(0)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  std::mt19937 rng(13);
  for (int round = 0; round < 300; ++round) {
    std::string line = round % 2 == 0 ? "{\"url\":\"u\""
                                      : "{\"id\":\"" + std::to_string(rng()) +
                                            "\",\"url\":\"u\"";
    const int n = static_cast<int>(rng() % 200);
    for (int k = 0; k < n; ++k) {
      const char c = static_cast<char>(rng());
      line.push_back(c == '\n' ? ' ' : c);
    }
    {
      std::ofstream f(feed + "/feed-00000-00000000.jsonl",
                      std::ios::binary | std::ios::trunc);
      f << line << "\n";
    }
    auto r = FeedReader::Open(feed);
    ASSERT_TRUE(r.ok());
    auto p = (*r)->Read("", 10);
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), Status::Code::kCorruption);
    }
  }
}

// Every feed entry the WarcWriter makes points at the complete record.
TEST(Feed, WarcWriterEntriesPointAtTheirRecords) {
  TempDir dir;
  Options o = IndexOptions(dir);
  o.rotate_bytes = 3000;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  std::vector<WrittenExchange> written;
  for (int i = 0; i < 20; ++i) {
    auto ex = (*w)->WriteExchange(
        Fetch(&body, "http://example.test/" + std::to_string(i)));
    ASSERT_TRUE(ex.ok());
    written.push_back(*ex);
  }
  ASSERT_TRUE((*w)->Flush().ok());
  auto r = FeedReader::Open(dir.path() + "/index/feed");
  ASSERT_TRUE(r.ok());
  std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", 6);
  ASSERT_EQ(all.size(), written.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].warc_file, written[i].response.file);
    EXPECT_EQ(all[i].offset, written[i].response.offset);
    EXPECT_EQ(all[i].length, written[i].response.length);
    EXPECT_EQ(all[i].digest, written[i].payload_digest);
    EXPECT_EQ(all[i].mime, "text/html");
    EXPECT_EQ(all[i].status, 200);
    Record rec = RecordAt(dir.path() + "/warc/" + all[i].warc_file,
                          all[i].offset, all[i].length);
    EXPECT_EQ(rec.Header("WARC-Target-URI"), all[i].url);
    EXPECT_EQ(rec.Header("WARC-Payload-Digest"), all[i].digest);
  }
}

// ReadRecordAt takes exactly one record: a range holding two, part of
// one, or bytes past the end of the file is an error, never a guess.
TEST(ReadRecordAt, RefusesRangesThatAreNotOneRecord) {
  TempDir dir;
  auto w = WarcWriter::Open(IndexOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  auto ex = (*w)->WriteExchange(Fetch(&body, "http://example.test/a"));
  ASSERT_TRUE(ex.ok());
  const std::string warc = dir.path() + "/warc/" + ex->response.file;
  const RecordRef& r = ex->response;
  Record ok = RecordAt(warc, r.offset, r.length);
  EXPECT_EQ(ok.type(), "response");
  EXPECT_EQ(ok.Header("WARC-Record-ID"), r.record_id);
  // Response and request together: two records.
  EXPECT_EQ(ReadRecordAt(warc, r.offset, r.length + ex->request.length)
                .status()
                .code(),
            Status::Code::kCorruption);
  EXPECT_EQ(ReadRecordAt(warc, r.offset, r.length - 1).status().code(),
            Status::Code::kCorruption);
  EXPECT_EQ(ReadRecordAt(warc, r.offset + 1, r.length).status().code(),
            Status::Code::kCorruption);
  EXPECT_EQ(ReadRecordAt(warc, fs::file_size(warc), 10).status().code(),
            Status::Code::kIOError);
  EXPECT_EQ(ReadRecordAt(dir.path() + "/none.warc.gz", 0, 10).status().code(),
            Status::Code::kIOError);
}

// A feed write failing (EFBIG via RLIMIT_FSIZE, as for a full disk) takes
// the WARC records and the CDXJ line back with it: nothing half-indexed.
TEST(Feed, FeedWriteFailureRollsBackWarcAndIndex) {
  TempDir dir;
  {
    // A feed already larger than the WARC will be, so only it hits the
    // limit.
    FeedOptions fo = FeedOpts(dir);
    fo.dir = dir.path() + "/index/feed";
    fo.worker_id = 2;
    fo.segment_bytes = 1 << 20;
    auto fw = FeedWriter::Open(fo);
    ASSERT_TRUE(fw.ok());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*fw)->Append(Entry(i)).ok());
    ASSERT_TRUE((*fw)->Close().ok());
  }
  Options o = IndexOptions(dir);
  o.feed_segment_bytes = 1 << 20;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string warc = dir.path() + "/warc/" + (*w)->current_file();
  const std::string index = (*w)->current_index_path();
  const uint64_t warc_size = fs::file_size(warc);
  const uint64_t feed_size =
      fs::file_size(dir.path() + "/index/feed/feed-00002-00000000.jsonl");
  ASSERT_GT(feed_size, 20000u);
  DocBuffer body = Body("hello");

  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ign {
  }, old_action{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ign, &old_action), 0);
  struct rlimit lim = old_limit;
  lim.rlim_cur = 10000;  // above the WARC and CDXJ, below the feed
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  auto failed = (*w)->WriteExchange(Fetch(&body, "http://example.test/f"));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  sigaction(SIGXFSZ, &old_action, nullptr);

  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kIOError);
  EXPECT_EQ(fs::file_size(warc), warc_size);
  EXPECT_EQ(fs::file_size(index), 0u);
  EXPECT_EQ(fs::file_size(dir.path() + "/index/feed/feed-00002-00000000.jsonl"),
            feed_size);
  // And the writer carries on.
  auto ok = (*w)->WriteExchange(Fetch(&body, "http://example.test/g"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Lines(ReadAll(index)).size(), 1u);
}

// kill -9 of a writing process: after the usual recovery (WARC tail cut,
// writer reopened) every feed entry names a complete record, none twice,
// and the feed goes on.
TEST(Feed, KillDashNineThenRestartKeepsFeedConsistent) {
  TempDir dir;
  const Options o = IndexOptions(dir);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: write until killed, but never more than 60 s or 20000
    // exchanges.
    auto w = WarcWriter::Open(o);
    if (!w.ok()) ::_exit(2);
    std::string text(30000, 'x');
    DocBuffer body;
    if (!body.Append(text).ok()) ::_exit(3);
    const time_t stop = ::time(nullptr) + 60;
    for (int i = 0; i < 20000 && ::time(nullptr) < stop; ++i) {
      if (!(*w)->WriteExchange(
                   Fetch(&body, "http://example.test/k" + std::to_string(i)))
               .ok())
        ::_exit(4);
    }
    ::_exit(0);
  }
  // Parent: wait (bounded) for some feed entries, then SIGKILL the child.
  const std::string feed_dir = dir.path() + "/index/feed";
  size_t entries = 0;
  for (int tries = 0; tries < 3000 && entries < 10; ++tries) {
    ::usleep(10000);
    auto r = FeedReader::Open(feed_dir);
    if (!r.ok()) continue;
    auto p = (*r)->Read("", 1000);
    if (p.ok()) entries = p->entries.size();
  }
  ::kill(pid, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_GE(entries, 10u) << "child wrote too little in 30 s";

  std::string newest;
  for (const auto& f : fs::directory_iterator(dir.path() + "/warc"))
    newest = std::max(newest, f.path().string());
  ASSERT_TRUE(TruncateToLastCompleteRecord(newest).ok());
  auto w = WarcWriter::Open(o);  // reopens the feed, cutting a torn line
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  DocBuffer body = Body("after restart");
  ASSERT_TRUE(
      (*w)->WriteExchange(Fetch(&body, "http://example.test/after")).ok());
  ASSERT_TRUE((*w)->Close().ok());

  auto r = FeedReader::Open(feed_dir);
  ASSERT_TRUE(r.ok());
  std::vector<FeedEntry> all = ReadAllFrom(r->get(), "", 50);
  ASSERT_GE(all.size(), 11u);
  std::set<std::string> urls;
  for (const FeedEntry& e : all) {
    EXPECT_TRUE(urls.insert(e.url).second) << "twice: " << e.url;
    Record rec =
        RecordAt(dir.path() + "/warc/" + e.warc_file, e.offset, e.length);
    EXPECT_EQ(rec.Header("WARC-Target-URI"), e.url);
    EXPECT_EQ(rec.Header("WARC-Payload-Digest"), e.digest);
  }
  EXPECT_EQ(all.back().url, "http://example.test/after");
}

}  // namespace
}  // namespace crawld::store
