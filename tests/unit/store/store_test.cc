// Tests for store/: WARC/1.1 (ISO 28500:2017) writing, reading, verification
// and crash repair.
// Spec:
// https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/
// Clause tests are TEST(Warc11, ...); our own behaviour is TEST(Crawld, ...).
#include "store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace crawld::store {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (fs::temp_directory_path() / "store_test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
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

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

// Inflates exactly one gzip member from `data` with plain zlib; fails the
// test unless the member is complete and consumes all of `data`.
std::string InflateOneMember(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[16384];
  int ret;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    ret = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  } while (ret == Z_OK);
  EXPECT_EQ(ret, Z_STREAM_END);
  EXPECT_EQ(zs.avail_in, 0u) << "member shorter than RecordRef.length";
  inflateEnd(&zs);
  return out;
}

// Decompresses a whole multi-member .warc.gz into the plain .warc bytes.
std::string Gunzip(const std::string& data) {
  std::string out;
  size_t pos = 0;
  while (pos < data.size()) {
    z_stream zs{};
    inflateInit2(&zs, 15 + 16);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
    zs.avail_in = static_cast<uInt>(data.size() - pos);
    char buf[16384];
    int ret;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof(buf);
      ret = inflate(&zs, Z_NO_FLUSH);
      out.append(buf, sizeof(buf) - zs.avail_out);
    } while (ret == Z_OK);
    pos = data.size() - zs.avail_in;
    inflateEnd(&zs);
    if (ret != Z_STREAM_END) break;
  }
  return out;
}

std::vector<Record> ReadRecords(const std::string& path) {
  std::vector<Record> out;
  auto reader = WarcReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return out;
  Record rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(rec);
  }
  return out;
}

std::vector<std::string> WarcFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// True when `s` has the shape of `pattern`: '#' a digit, '%' a lower-case
// hex digit, '^' one of 8 9 a b (the RFC 4122 variant), anything else
// itself. (std::regex trips g++ 12 -Wmaybe-uninitialized under -Werror.)
bool Shaped(std::string_view s, std::string_view pattern) {
  if (s.size() != pattern.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i], p = pattern[i];
    bool ok = p == '#'   ? (c >= '0' && c <= '9')
              : p == '%' ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
              : p == '^' ? (c == '8' || c == '9' || c == 'a' || c == 'b')
                         : c == p;
    if (!ok) return false;
  }
  return true;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

const char kRequestHead[] =
    "GET /page HTTP/1.1\r\nHost: example.test\r\nUser-Agent: crawld-test\r\n"
    "\r\n";
const char kResponseHead[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\n";

Options TestOptions(const TempDir& dir) {
  Options o;
  o.dir = dir.path() + "/warc";
  o.worker_id = 3;
  o.user_agent = "crawld-test (+http://example.test/bot)";
  o.operator_contact = "ops@example.test";
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  return o;
}

FetchRecord Fetch(const DocBuffer* body,
                  std::string uri = "http://example.test/page") {
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

// --- Digests (WARC 1.1 section 5.8, 5.9; RFC 4648 section 6) ---

TEST(Warc11, Sec5_8_DigestIsSha1Base32) {
  EXPECT_EQ(Sha1Digest(""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
  EXPECT_EQ(Sha1Digest("abc"), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
  EXPECT_EQ(Sha1Digest("hello world"), "sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN");
}

TEST(Warc11, Sec5_8_Sec5_9_BlockAndPayloadDigestsOfWrittenResponse) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  DocBuffer body = Body("hello world");
  auto ex = (*w)->WriteExchange(Fetch(&body));
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->payload_digest, "sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN");
  ASSERT_TRUE((*w)->Close().ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  const Record& resp = recs[1];
  EXPECT_EQ(resp.type(), "response");
  EXPECT_EQ(resp.Header("WARC-Payload-Digest"),
            "sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN");
  EXPECT_EQ(resp.Header("WARC-Block-Digest"),
            Sha1Digest(std::string(kResponseHead) + "hello world"));
  const Record& req = recs[2];
  EXPECT_EQ(req.Header("WARC-Block-Digest"), Sha1Digest(kRequestHead));
}

TEST(Warc11, Sec5_9_EmptyBodyPayloadDigestIsSha1OfEmpty) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto ex = (*w)->WriteExchange(Fetch(nullptr));
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->payload_digest, "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

// Issue 19 item 8: a head that is not HTTP used to be written (without a
// payload digest), leaving a `response` record that is not an HTTP
// message; it is refused now, and nothing is written.
TEST(Warc11, Issue19_Sec6_3_2_ResponseHeadThatIsNotHttpIsRefused) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  const uint64_t before = (*w)->current_offset();
  const std::string path = dir.path() + "/warc/" + (*w)->current_file();
  DocBuffer body = Body("data");
  for (const std::string& head : std::vector<std::string>{
           "garbage that is not a status line\r\n\r\n", "",
           "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n",  // no blank line
           "HTTP/1.1 200 OK\r\n\r\nbody in the head", "HTTP/1.1 2OO OK\r\n\r\n",
           "GET / HTTP/1.1\r\n\r\n"}) {
    FetchRecord r = Fetch(&body);
    r.response_head = head;
    auto ex = (*w)->WriteExchange(r);
    ASSERT_FALSE(ex.ok()) << head;
    EXPECT_EQ(ex.status().code(), Status::Code::kInvalidArgument) << head;
    EXPECT_NE(ex.status().message().find("not an HTTP response head"),
              std::string::npos)
        << ex.status().message();
    auto rv = (*w)->WriteRevisit(r, "<urn:uuid:x>", "http://example.test/", 0,
                                 Sha1Digest("data"));
    EXPECT_EQ(rv.status().code(), Status::Code::kInvalidArgument) << head;
  }
  EXPECT_EQ((*w)->current_offset(), before);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(fs::file_size(path), before);
  EXPECT_EQ(ReadRecords(path).size(), 1u);  // the warcinfo alone
}

// --- Mandatory fields and record layout (section 4, 5.1-5.5) ---

TEST(Warc11, Sec4_MandatoryFieldsOnEveryRecord) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  auto ex = (*w)->WriteExchange(Fetch(&body));
  ASSERT_TRUE(ex.ok());
  ASSERT_TRUE((*w)->WriteMetadata("http://example.test/page",
                                  ex->response.record_id, 1704164645000000,
                                  "application/warc-fields", "outlinks: 0\r\n")
                  .ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 4u);
  const std::string_view uuid4 =
      "<urn:uuid:%%%%%%%%-%%%%-4%%%-^%%%-%%%%%%%%%%%%>";
  const std::string_view date = "####-##-##T##:##:##.######Z";
  for (const Record& r : recs) {
    EXPECT_EQ(r.version, "WARC/1.1");
    EXPECT_TRUE(Shaped(r.Header("WARC-Record-ID"), uuid4))
        << r.Header("WARC-Record-ID");
    EXPECT_TRUE(Shaped(r.Header("WARC-Date"), date)) << r.Header("WARC-Date");
    EXPECT_FALSE(r.type().empty());
    EXPECT_EQ(r.Header("Content-Length"), std::to_string(r.block.size()));
  }
  EXPECT_EQ(recs[3].type(), "metadata");
  EXPECT_EQ(recs[3].Header("WARC-Concurrent-To"), ex->response.record_id);
  EXPECT_EQ(recs[3].Header("Content-Type"), "application/warc-fields");
  EXPECT_EQ(recs[3].block, "outlinks: 0\r\n");
}

TEST(Warc11, Sec5_4_WarcDateIsUtcWithMicroseconds) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto ex = (*w)->WriteExchange(Fetch(nullptr));
  ASSERT_TRUE(ex.ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].Header("WARC-Date"), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(recs[2].Header("WARC-Date"), "2024-01-02T03:04:05.123456Z");
}

TEST(Warc11, Sec6_2_FirstRecordIsWarcinfoWithCrawlFields) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  std::string file = (*w)->current_file();
  ASSERT_TRUE((*w)->Close().ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + file);
  ASSERT_EQ(recs.size(), 1u);
  const Record& info = recs[0];
  EXPECT_EQ(info.type(), "warcinfo");
  EXPECT_EQ(info.Header("Content-Type"), "application/warc-fields");
  EXPECT_EQ(info.Header("WARC-Filename"), file);
  for (const char* line :
       {"software: crawld/0.1\r\n", "format: WARC File Format 1.1\r\n",
        "conformsTo: http://iipc.github.io/warc-specifications/specifications/"
        "warc-format/warc-1.1/\r\n",
        "isPartOf: crawld\r\n",
        "http-header-user-agent: crawld-test (+http://example.test/bot)\r\n",
        "operator: ops@example.test\r\n", "hostname: "}) {
    EXPECT_NE(info.block.find(line), std::string::npos) << line;
  }
}

TEST(Warc11, Sec6_3_Sec6_4_ResponseAndRequestFields) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  FetchRecord fr = Fetch(&body);
  fr.truncated = "length";
  auto ex = (*w)->WriteExchange(fr);
  ASSERT_TRUE(ex.ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  const Record& info = recs[0];
  const Record& resp = recs[1];
  const Record& req = recs[2];
  // Response first, then its request; each names the other.
  EXPECT_EQ(resp.type(), "response");
  EXPECT_EQ(req.type(), "request");
  EXPECT_EQ(resp.Header("WARC-Record-ID"), ex->response.record_id);
  EXPECT_EQ(req.Header("WARC-Record-ID"), ex->request.record_id);
  EXPECT_EQ(resp.Header("WARC-Concurrent-To"), ex->request.record_id);
  EXPECT_EQ(req.Header("WARC-Concurrent-To"), ex->response.record_id);
  EXPECT_EQ(resp.Header("WARC-Warcinfo-ID"), info.Header("WARC-Record-ID"));
  EXPECT_EQ(req.Header("WARC-Warcinfo-ID"), info.Header("WARC-Record-ID"));
  EXPECT_EQ(resp.Header("Content-Type"), "application/http;msgtype=response");
  EXPECT_EQ(req.Header("Content-Type"), "application/http;msgtype=request");
  EXPECT_EQ(resp.Header("WARC-Target-URI"), "http://example.test/page");
  EXPECT_EQ(req.Header("WARC-Target-URI"), "http://example.test/page");
  EXPECT_EQ(resp.Header("WARC-IP-Address"), "127.0.0.1");
  EXPECT_EQ(resp.Header("WARC-Truncated"), "length");
  EXPECT_EQ(req.Header("WARC-Truncated"), "");
  EXPECT_EQ(resp.block, std::string(kResponseHead) + "hello");
  EXPECT_EQ(req.block, kRequestHead);
  // Field lookup is case-insensitive (section 4).
  EXPECT_EQ(resp.Header("warc-target-uri"), "http://example.test/page");
}

TEST(Warc11, Sec5_10_IpAddressOmittedWhenUnknown) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  FetchRecord fr = Fetch(nullptr);
  fr.ip.clear();
  auto ex = (*w)->WriteExchange(fr);
  ASSERT_TRUE(ex.ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].headers.count("WARC-IP-Address"), 0u);
  EXPECT_EQ(recs[2].headers.count("WARC-IP-Address"), 0u);
}

// iipc warc-specifications, "WARC Extensions for HTTP/2" and the
// WARC-Protocol field proposal (issue 42): an h2 exchange, written as
// HTTP/1.1 messages, names its protocol on the response and its request.
TEST(WarcHttp2, Encoding_ProtocolFieldOnResponseAndRequest) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  FetchRecord fr = Fetch(&body, "https://example.test/page");
  fr.response_head =
      "HTTP/1.1 200 \r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\n";
  fr.request_head =
      "GET /page HTTP/1.1\r\nhost: example.test\r\naccept: */*\r\n\r\n";
  fr.protocol = "h2";
  auto ex = (*w)->WriteExchange(fr);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  const std::string path = dir.path() + "/warc/" + ex->response.file;
  auto recs = ReadRecords(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].Header("WARC-Protocol"), "h2");
  EXPECT_EQ(recs[2].Header("WARC-Protocol"), "h2");
  EXPECT_EQ(recs[1].block, fr.response_head + "hello");
  EXPECT_EQ(recs[1].Header("WARC-Block-Digest"), Sha1Digest(recs[1].block));
  EXPECT_EQ(recs[1].Header("WARC-Payload-Digest"), Sha1Digest("hello"));
  EXPECT_EQ(recs[2].block, fr.request_head);
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
}

// HTTP/1.x exchanges stay as they were: no WARC-Protocol field.
TEST(WarcHttp2, Crawld_NoProtocolFieldForHttp11) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto ex = (*w)->WriteExchange(Fetch(nullptr));
  ASSERT_TRUE(ex.ok());
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].headers.count("WARC-Protocol"), 0u);
  EXPECT_EQ(recs[2].headers.count("WARC-Protocol"), 0u);
}

TEST(WarcHttp2, Crawld_ProtocolThatIsNoTokenIsRefused) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  for (const char* bad : {"h2\r\nWARC-Type: evil", "h 2", "h2;x"}) {
    FetchRecord fr = Fetch(nullptr);
    fr.protocol = bad;
    EXPECT_EQ((*w)->WriteExchange(fr).status().code(),
              Status::Code::kInvalidArgument)
        << bad;
  }
}

TEST(Warc11, Sec5_3_ContentLengthIsExactBlockSize) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  // Bytes that look like record syntax inside the block must not confuse
  // readers: only Content-Length delimits it.
  std::string payload = "x\r\n\r\nWARC/1.1\r\nContent-Length: 3\r\n\r\n\0y";
  payload.push_back('\0');
  DocBuffer body = Body(payload);
  auto ex = (*w)->WriteExchange(Fetch(&body));
  ASSERT_TRUE(ex.ok());
  ASSERT_TRUE((*w)->Close().ok());
  std::string plain =
      Gunzip(ReadAll(dir.path() + "/warc/" + ex->response.file));
  std::string block = std::string(kResponseHead) + payload;
  std::string needle = "Content-Length: " + std::to_string(block.size()) +
                       "\r\n\r\n" + block + "\r\n\r\n";
  EXPECT_NE(plain.find(needle), std::string::npos);
  auto recs = ReadRecords(dir.path() + "/warc/" + ex->response.file);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].block, block);
}

// --- Record-at-a-time compression (annex D.2) ---

TEST(Warc11, AnnexD_EachRecordIsItsOwnGzipMember) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body(std::string(10000, 'a'));
  auto ex1 = (*w)->WriteExchange(Fetch(&body, "http://example.test/1"));
  auto ex2 = (*w)->WriteExchange(Fetch(&body, "http://example.test/2"));
  ASSERT_TRUE(ex1.ok() && ex2.ok());
  EXPECT_EQ((*w)->current_offset(), ex2->request.offset + ex2->request.length);
  ASSERT_TRUE((*w)->Close().ok());
  std::string file = ReadAll(dir.path() + "/warc/" + ex1->response.file);
  // Members are contiguous and cover the file after the warcinfo.
  EXPECT_EQ(ex1->request.offset, ex1->response.offset + ex1->response.length);
  EXPECT_EQ(ex2->response.offset, ex1->request.offset + ex1->request.length);
  EXPECT_EQ(file.size(), ex2->request.offset + ex2->request.length);
  for (const RecordRef* ref :
       {&ex1->response, &ex1->request, &ex2->response, &ex2->request}) {
    EXPECT_EQ(ref->file, ex1->response.file);
    std::string member = file.substr(ref->offset, ref->length);
    std::string rec = InflateOneMember(member);
    EXPECT_EQ(rec.rfind("WARC/1.1\r\n", 0), 0u);
    EXPECT_NE(rec.find("WARC-Record-ID: " + ref->record_id + "\r\n"),
              std::string::npos);
    EXPECT_EQ(rec.substr(rec.size() - 4), "\r\n\r\n");
  }
  // The reader reports the same member ranges.
  auto recs = ReadRecords(dir.path() + "/warc/" + ex1->response.file);
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[0].offset, 0u);
  EXPECT_EQ(recs[0].length, ex1->response.offset);
  EXPECT_EQ(recs[1].offset, ex1->response.offset);
  EXPECT_EQ(recs[1].length, ex1->response.length);
  EXPECT_EQ(recs[4].offset, ex2->request.offset);
  EXPECT_EQ(recs[4].length, ex2->request.length);
}

// --- Rotation and naming (annex C, our naming) ---

TEST(Crawld, RotationStartsEachFileWithWarcinfoAndEachVerifies) {
  TempDir dir;
  Options o = TestOptions(dir);
  o.rotate_bytes = 3000;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  std::mt19937 rng(7);
  std::set<std::string> files_seen;
  for (int i = 0; i < 30; ++i) {
    std::string text;
    for (int j = 0; j < 400; ++j)
      text.push_back(static_cast<char>('a' + rng() % 26));
    DocBuffer body = Body(text);
    auto ex = (*w)->WriteExchange(
        Fetch(&body, "http://example.test/" + std::to_string(i)));
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    // A pair never straddles files.
    EXPECT_EQ(ex->request.file, ex->response.file);
    files_seen.insert(ex->response.file);
  }
  ASSERT_TRUE((*w)->Close().ok());
  auto files = WarcFiles(o.dir);
  EXPECT_GE(files.size(), 3u);
  EXPECT_EQ(files.size(), files_seen.size());
  const std::string_view name = "crawld-##############-00003-#####.warc.gz";
  std::set<std::string> serials;
  uint64_t total_records = 0;
  for (const auto& f : files) {
    std::string base = fs::path(f).filename();
    EXPECT_TRUE(Shaped(base, name)) << base;
    serials.insert(base.substr(base.size() - 13, 5));
    auto recs = ReadRecords(f);
    ASSERT_FALSE(recs.empty());
    EXPECT_EQ(recs[0].type(), "warcinfo") << f;
    EXPECT_EQ(recs[0].Header("WARC-Filename"), base);
    for (size_t k = 1; k < recs.size(); ++k)
      EXPECT_EQ(recs[k].Header("WARC-Warcinfo-ID"),
                recs[0].Header("WARC-Record-ID"));
    auto report = VerifyFile(f);
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->ok()) << Joined(report->defects);
    EXPECT_TRUE(report->warnings.empty()) << Joined(report->warnings);
    total_records += report->records;
  }
  EXPECT_EQ(serials.size(), files.size());
  EXPECT_EQ(total_records, 60u + files.size());
}

TEST(Crawld, OpenCreatesDirectoryAndClampsOptions) {
  TempDir dir;
  Options o = TestOptions(dir);
  o.dir = dir.path() + "/a/b/c";
  o.gzip_level = 99;
  o.worker_id = 123456;
  o.rotate_bytes = 0;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(fs::is_directory(o.dir));
  EXPECT_EQ((*w)->options().gzip_level, 12);
  EXPECT_EQ((*w)->options().worker_id, 99999);
  EXPECT_EQ((*w)->options().rotate_bytes, 1u);
  o.gzip_level = -3;
  auto w2 = WarcWriter::Open(o);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ((*w2)->options().gzip_level, 1);
  // Two writers in the same second never share a file.
  EXPECT_NE((*w)->current_file(), (*w2)->current_file());

  Options bad = o;
  bad.dir.clear();
  EXPECT_EQ(WarcWriter::Open(bad).status().code(),
            Status::Code::kInvalidArgument);
  bad = o;
  bad.prefix = "a/b";
  EXPECT_EQ(WarcWriter::Open(bad).status().code(),
            Status::Code::kInvalidArgument);
}

// --- Bodies spilled to disk ---

TEST(Crawld, SpilledDocBufferBodyIsWrittenWhole) {
  TempDir dir;
  DocBuffer::Options bo;
  bo.memory_limit = 1024;
  bo.spill_dir = dir.path();
  DocBuffer body(bo);
  std::string expected;
  std::mt19937 rng(1);
  for (int i = 0; i < 300; ++i) {
    std::string chunk(1000, '\0');
    for (char& c : chunk) c = static_cast<char>(rng());
    ASSERT_TRUE(body.Append(chunk).ok());
    expected += chunk;
  }
  ASSERT_TRUE(body.spilled());
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto ex = (*w)->WriteExchange(Fetch(&body));
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->payload_digest, Sha1Digest(expected));
  ASSERT_TRUE((*w)->Close().ok());
  std::string path = dir.path() + "/warc/" + ex->response.file;
  auto recs = ReadRecords(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].block, std::string(kResponseHead) + expected);
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
}

TEST(Crawld, RecordLargerThanMaxRecordBytesIsRefused) {
  TempDir dir;
  Options o = TestOptions(dir);
  o.max_record_bytes = 1 << 20;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body(std::string(2 << 20, 'z'));
  uint64_t before = (*w)->current_offset();
  auto ex = (*w)->WriteExchange(Fetch(&body));
  EXPECT_EQ(ex.status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ((*w)->current_offset(), before);
}

TEST(Crawld, HeaderInjectionIsRefused) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto ex = (*w)->WriteExchange(
      Fetch(nullptr, "http://example.test/\r\nWARC-Type: evil"));
  EXPECT_EQ(ex.status().code(), Status::Code::kInvalidArgument);
}

// --- Revisit (section 6.7.2, identical payload digest profile) ---

TEST(Warc11, Sec6_7_2_RevisitIdenticalPayloadDigestFields) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  FetchRecord first = Fetch(&body, "http://example.test/a");
  auto ex = (*w)->WriteExchange(first);
  ASSERT_TRUE(ex.ok());
  FetchRecord again = Fetch(&body, "http://example.test/b");
  again.fetch_time_us = 1704164700000001;
  auto rv =
      (*w)->WriteRevisit(again, ex->response.record_id, "http://example.test/a",
                         first.fetch_time_us, ex->payload_digest);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  ASSERT_TRUE((*w)->Close().ok());
  std::string path = dir.path() + "/warc/" + rv->file;
  auto recs = ReadRecords(path);
  // warcinfo, response, request, revisit and (since issue 17) its request.
  ASSERT_EQ(recs.size(), 5u);
  const Record& r = recs[3];
  EXPECT_EQ(r.type(), "revisit");
  EXPECT_EQ(r.Header("WARC-Record-ID"), rv->record_id);
  EXPECT_EQ(r.Header("WARC-Profile"),
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest");
  EXPECT_EQ(r.Header("WARC-Refers-To"), ex->response.record_id);
  EXPECT_EQ(r.Header("WARC-Refers-To-Target-URI"), "http://example.test/a");
  EXPECT_EQ(r.Header("WARC-Refers-To-Date"), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(r.Header("WARC-Date"), "2024-01-02T03:05:00.000001Z");
  EXPECT_EQ(r.Header("WARC-Target-URI"), "http://example.test/b");
  EXPECT_EQ(r.Header("WARC-Payload-Digest"), ex->payload_digest);
  EXPECT_EQ(r.Header("Content-Type"), "application/http;msgtype=response");
  // The block is the HTTP head only; the payload is not stored again, and
  // 6.7.2 says so: "A WARC-Truncated header with reason 'length' shall be
  // used for any identical-digest truncation."
  EXPECT_EQ(r.block, kResponseHead);
  EXPECT_EQ(r.Header("WARC-Truncated"), "length");
  // The request that got it, as for a response (section 6.4).
  const Record& req = recs[4];
  EXPECT_EQ(req.type(), "request");
  EXPECT_EQ(req.block, kRequestHead);
  EXPECT_EQ(req.Header("WARC-Concurrent-To"), rv->record_id);
  EXPECT_EQ(r.Header("WARC-Concurrent-To"), req.Header("WARC-Record-ID"));
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
}

// --- Verification detects damage ---

class VerifyDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = WarcWriter::Open(TestOptions(dir_));
    ASSERT_TRUE(w.ok());
    DocBuffer body = Body("<html>payload of the first page</html>");
    auto ex = (*w)->WriteExchange(Fetch(&body, "http://example.test/1"));
    ASSERT_TRUE(ex.ok());
    DocBuffer body2 = Body("<html>second</html>");
    ex2_ = (*w)->WriteExchange(Fetch(&body2, "http://example.test/2")).value();
    ASSERT_TRUE((*w)->Close().ok());
    gz_path_ = dir_.path() + "/warc/" + ex->response.file;
    gz_ = ReadAll(gz_path_);
    plain_ = Gunzip(gz_);
    auto clean = VerifyFile(gz_path_);
    ASSERT_TRUE(clean.ok());
    ASSERT_TRUE(clean->ok()) << Joined(clean->defects);
    ASSERT_EQ(clean->records, 5u);
  }

  VerifyReport VerifyModified(const std::string& data, const std::string& ext) {
    std::string path = dir_.path() + "/modified" + ext;
    WriteAll(path, data);
    auto r = VerifyFile(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : VerifyReport();
  }

  static bool HasDefect(const VerifyReport& r, const std::string& needle) {
    for (const auto& d : r.defects)
      if (d.find(needle) != std::string::npos) return true;
    return false;
  }

  TempDir dir_;
  std::string gz_path_, gz_, plain_;
  WrittenExchange ex2_;
};

TEST_F(VerifyDamage, UncompressedCopyVerifies) {
  VerifyReport r = VerifyModified(plain_, ".warc");
  EXPECT_TRUE(r.ok()) << Joined(r.defects);
  EXPECT_EQ(r.records, 5u);
}

TEST_F(VerifyDamage, Sec5_8_FlippedByteInBlockIsDigestMismatch) {
  size_t pos = plain_.find("payload of the first page");
  ASSERT_NE(pos, std::string::npos);
  std::string bad = plain_;
  bad[pos] ^= 0x01;
  VerifyReport r = VerifyModified(bad, ".warc");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDefect(r, "WARC-Block-Digest mismatch")) << Joined(r.defects);
  EXPECT_TRUE(HasDefect(r, "WARC-Payload-Digest mismatch"))
      << Joined(r.defects);
  EXPECT_EQ(r.records, 5u);  // damage inside a block does not stop reading
}

TEST_F(VerifyDamage, FlippedByteInGzipDataIsDetected) {
  std::string bad = gz_;
  size_t pos = ex2_.response.offset + ex2_.response.length / 2;
  bad[pos] ^= 0x40;
  VerifyReport r = VerifyModified(bad, ".warc.gz");
  EXPECT_FALSE(r.ok());
}

TEST_F(VerifyDamage, TruncatedFileIsDetected) {
  VerifyReport r = VerifyModified(
      gz_.substr(0, ex2_.response.offset + ex2_.response.length / 2),
      ".warc.gz");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDefect(r, "truncated")) << Joined(r.defects);
  EXPECT_EQ(r.records, 3u);
  // Same for a plain file cut inside a block.
  VerifyReport p =
      VerifyModified(plain_.substr(0, plain_.size() - 10), ".warc");
  EXPECT_TRUE(HasDefect(p, "truncated")) << Joined(p.defects);
}

TEST_F(VerifyDamage, Sec5_3_WrongContentLengthIsDetected) {
  size_t pos = plain_.find("WARC-Type: request");
  pos = plain_.find("Content-Length: ", pos);
  ASSERT_NE(pos, std::string::npos);
  size_t eol = plain_.find("\r\n", pos);
  uint64_t len = std::stoull(plain_.substr(pos + 16, eol - pos - 16));
  std::string bad = plain_;
  bad.replace(pos + 16, eol - pos - 16, std::to_string(len - 1));
  VerifyReport r = VerifyModified(bad, ".warc");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDefect(r, "CRLF CRLF")) << Joined(r.defects);
}

TEST_F(VerifyDamage, GarbageAtEndIsDetected) {
  VerifyReport gz = VerifyModified(gz_ + "garbage\n", ".warc.gz");
  EXPECT_FALSE(gz.ok());
  EXPECT_TRUE(HasDefect(gz, "trailing")) << Joined(gz.defects);
  EXPECT_EQ(gz.records, 5u);
  VerifyReport plain = VerifyModified(plain_ + "garbage\n", ".warc");
  EXPECT_FALSE(plain.ok());
  EXPECT_EQ(plain.records, 5u);
}

TEST_F(VerifyDamage, DuplicateRecordIdIsDetected) {
  VerifyReport r = VerifyModified(gz_ + gz_, ".warc.gz");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDefect(r, "duplicate WARC-Record-ID")) << Joined(r.defects);
  EXPECT_EQ(r.records, 10u);
}

TEST_F(VerifyDamage, Sec4_MissingMandatoryFieldIsDetected) {
  size_t pos = plain_.find("WARC-Date: ", plain_.find("WARC-Type: response"));
  std::string bad = plain_;
  bad.replace(pos, 9, "X-WARC-Dt");  // same length keeps the record intact
  VerifyReport r = VerifyModified(bad, ".warc");
  EXPECT_TRUE(HasDefect(r, "missing mandatory field WARC-Date"))
      << Joined(r.defects);
}

TEST_F(VerifyDamage, FirstRecordNotWarcinfoIsDetected) {
  // Drop the warcinfo member.
  std::string bad = gz_.substr(ReadRecords(gz_path_)[0].length);
  VerifyReport r = VerifyModified(bad, ".warc.gz");
  EXPECT_TRUE(HasDefect(r, "not warcinfo")) << Joined(r.defects);
}

TEST_F(VerifyDamage, EmptyFileIsNotValid) {
  VerifyReport r = VerifyModified("", ".warc.gz");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.records, 0u);
}

TEST(Crawld, VerifyFileOnMissingFileIsIoError) {
  auto r = VerifyFile("/nonexistent/dir/x.warc.gz");
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
}

TEST(Crawld, ConcurrentToOutsideFileIsAWarningOnly) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  auto m = (*w)->WriteMetadata("http://example.test/", "<urn:uuid:elsewhere>",
                               0, "text/plain", "x");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto r = VerifyFile(dir.path() + "/warc/" + m->file);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << Joined(r->defects);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("<urn:uuid:elsewhere>"), std::string::npos);
}

// --- Reader ---

TEST(Crawld, ReaderCapsBlockSize) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body(std::string(100000, 'b'));
  auto ex = (*w)->WriteExchange(Fetch(&body));
  ASSERT_TRUE(ex.ok());
  ASSERT_TRUE((*w)->Close().ok());
  ReaderOptions ro;
  ro.max_block_bytes = 50000;
  auto reader = WarcReader::Open(dir.path() + "/warc/" + ex->response.file, ro);
  ASSERT_TRUE(reader.ok());
  Record rec;
  auto first = (*reader)->Next(&rec);
  ASSERT_TRUE(first.ok() && *first);  // warcinfo is small
  auto second = (*reader)->Next(&rec);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kResourceExhausted);
  EXPECT_NE(second.status().message().find("cap"), std::string::npos);
  // Errors are sticky.
  EXPECT_EQ((*reader)->Next(&rec).status().code(),
            Status::Code::kResourceExhausted);
}

TEST(Crawld, ReaderDecompressionBombIsBounded) {
  // A record claiming 2 GiB whose block is a long run of zeros: the reader
  // must fail on the declared length without inflating it.
  std::string rec =
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2147483648\r\n\r\n";
  auto reader = WarcReader::FromString(rec + std::string(1000, '\0'));
  Record out;
  auto r = reader->Next(&out);
  EXPECT_EQ(r.status().code(), Status::Code::kResourceExhausted);
}

TEST(Warc11, Sec4_ReaderHandlesFoldedFieldsAndRepeats) {
  std::string block = "abc";
  std::string rec =
      "WARC/1.0\r\nWARC-Type: resource\r\nwarc-record-id: <urn:x:1>\r\n"
      "WARC-Date: 2020-01-01T00:00:00Z\r\nX-Long: first\r\n  second\r\n"
      "WARC-Concurrent-To: <urn:x:2>\r\nWARC-Concurrent-To: <urn:x:3>\r\n"
      "WARC-Target-URI: http://example.test/\r\n"
      "Content-Length: 3\r\n\r\nabc\r\n\r\n";
  auto reader = WarcReader::FromString(rec);
  Record out;
  auto r = reader->Next(&out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(*r);
  EXPECT_EQ(out.version, "WARC/1.0");
  EXPECT_EQ(out.Header("WARC-Record-ID"), "<urn:x:1>");
  EXPECT_EQ(out.headers.begin()->first.empty(), false);
  EXPECT_EQ(out.Header("x-long"), "first second");
  EXPECT_EQ(out.Header("WARC-Concurrent-To"), "<urn:x:2>");
  int concurrent = 0;
  for (const auto& f : out.fields)
    concurrent += f.first == "WARC-Concurrent-To";
  EXPECT_EQ(concurrent, 2);
  EXPECT_EQ(out.block, "abc");
  EXPECT_EQ(out.offset, 0u);
  EXPECT_EQ(out.length, rec.size());
  auto end = reader->Next(&out);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  // VerifyBytes: WARC/1.0 accepted; not warcinfo first is a defect.
  VerifyReport v = VerifyBytes(rec, "mem");
  EXPECT_EQ(v.records, 1u);
  ASSERT_EQ(v.defects.size(), 1u) << Joined(v.defects);
  EXPECT_NE(v.defects[0].find("not warcinfo"), std::string::npos);
}

// A randomized round trip against a plain model: whatever is written comes
// back, in order, with the refs the writer returned.
TEST(Crawld, RandomizedRoundTripMatchesModel) {
  TempDir dir;
  Options o = TestOptions(dir);
  o.rotate_bytes = 20000;
  o.gzip_level = 1;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  std::mt19937_64 rng(42);
  struct Expect {
    RecordRef ref;
    std::string type, uri, block;
  };
  std::vector<Expect> model;
  for (int i = 0; i < 60; ++i) {
    std::string uri =
        "http://h" + std::to_string(rng() % 5) + ".test/" + std::to_string(i);
    int kind = static_cast<int>(rng() % 3);
    if (kind == 0) {
      std::string text(rng() % 5000, '\0');
      for (char& c : text) c = static_cast<char>(rng() % 7 == 0 ? rng() : 'q');
      DocBuffer body = Body(text);
      auto ex = (*w)->WriteExchange(Fetch(&body, uri));
      ASSERT_TRUE(ex.ok());
      model.push_back({ex->response, "response", uri, kResponseHead + text});
      model.push_back({ex->request, "request", uri, kRequestHead});
    } else if (kind == 1) {
      RevisitOf original;
      original.record_id = "<urn:uuid:x>";
      original.target_uri = uri;
      original.date = "2024-01-02T03:04:05Z";
      original.payload_digest = Sha1Digest("");
      auto rv = (*w)->WriteRevisit(Fetch(nullptr, uri), original);
      ASSERT_TRUE(rv.ok());
      model.push_back({rv->revisit, "revisit", uri, kResponseHead});
      model.push_back({rv->request, "request", uri, kRequestHead});
    } else {
      std::string block = "k: " + std::to_string(rng()) + "\r\n";
      auto m =
          (*w)->WriteMetadata(uri, "", 1, "application/warc-fields", block);
      ASSERT_TRUE(m.ok());
      model.push_back({*m, "metadata", uri, block});
    }
  }
  ASSERT_TRUE((*w)->Close().ok());
  std::vector<Record> got;
  for (const auto& f : WarcFiles(o.dir)) {
    for (Record& r : ReadRecords(f)) {
      if (r.type() == "warcinfo") continue;
      r.headers.emplace("X-File", fs::path(f).filename());
      got.push_back(std::move(r));
    }
  }
  ASSERT_EQ(got.size(), model.size());
  for (size_t i = 0; i < model.size(); ++i) {
    EXPECT_EQ(got[i].type(), model[i].type) << i;
    EXPECT_EQ(got[i].Header("WARC-Record-ID"), model[i].ref.record_id) << i;
    EXPECT_EQ(got[i].Header("WARC-Target-URI"), model[i].uri) << i;
    EXPECT_EQ(got[i].block, model[i].block) << i;
    EXPECT_EQ(got[i].Header("X-File"), model[i].ref.file) << i;
    EXPECT_EQ(got[i].offset, model[i].ref.offset) << i;
    EXPECT_EQ(got[i].length, model[i].ref.length) << i;
  }
}

// --- Crash safety ---

TEST(Crawld, TruncateToLastCompleteRecordRepairsFileCutMidRecord) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  std::vector<WrittenExchange> written;
  for (int i = 0; i < 4; ++i) {
    DocBuffer body = Body(std::string(3000 + i, 'p'));
    auto ex = (*w)->WriteExchange(
        Fetch(&body, "http://example.test/" + std::to_string(i)));
    ASSERT_TRUE(ex.ok());
    written.push_back(*ex);
  }
  ASSERT_TRUE((*w)->Close().ok());
  std::string path = dir.path() + "/warc/" + written[0].response.file;
  const std::string full = ReadAll(path);

  // Intact: nothing changes.
  auto same = TruncateToLastCompleteRecord(path);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, full.size());

  // Cut at every position inside the last response member, and inside its
  // gzip trailer: the file goes back to the end of the third exchange.
  const RecordRef& last = written[3].response;
  const uint64_t good_end =
      written[2].request.offset + written[2].request.length;
  for (uint64_t cut : {last.offset + 1, last.offset + last.length / 2,
                       last.offset + last.length - 1}) {
    WriteAll(path, full.substr(0, cut));
    auto fixed = TruncateToLastCompleteRecord(path);
    ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
    EXPECT_EQ(*fixed, good_end) << "cut at " << cut;
    EXPECT_EQ(fs::file_size(path), good_end);
    auto report = VerifyFile(path);
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->ok()) << Joined(report->defects);
    EXPECT_EQ(report->records, 7u);
  }
  // A file cut after a response but before its request keeps the response;
  // the dangling WARC-Concurrent-To is only a warning.
  WriteAll(path, full.substr(0, written[3].request.offset + 5));
  auto fixed = TruncateToLastCompleteRecord(path);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(*fixed, written[3].request.offset);
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_FALSE(report->warnings.empty());
  // Trailing garbage goes too.
  WriteAll(path, full + "\x1f\x8bjunk");
  fixed = TruncateToLastCompleteRecord(path);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(*fixed, full.size());
  EXPECT_EQ(ReadAll(path), full);
}

// Write failure: RLIMIT_FSIZE makes write() fail with EFBIG part-way through
// a member, a faithful stand-in for a full disk on any filesystem.
TEST(Crawld, WriteFailureLeavesFileEndingAtLastCompleteRecord) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  DocBuffer small = Body("small body");
  auto ok1 = (*w)->WriteExchange(Fetch(&small, "http://example.test/ok1"));
  ASSERT_TRUE(ok1.ok());
  const uint64_t good = (*w)->current_offset();
  const std::string path = dir.path() + "/warc/" + (*w)->current_file();

  // Incompressible body much larger than the limit.
  std::string noise(200000, '\0');
  std::mt19937 rng(3);
  for (char& c : noise) c = static_cast<char>(rng());
  DocBuffer big = Body(noise);

  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ign {
  }, old_action{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ign, &old_action), 0);
  struct rlimit lim = old_limit;
  lim.rlim_cur = good + 50000;  // the write gets part-way, then EFBIG
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  auto failed = (*w)->WriteExchange(Fetch(&big, "http://example.test/big"));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  sigaction(SIGXFSZ, &old_action, nullptr);

  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Status::Code::kIOError);
  EXPECT_EQ((*w)->current_offset(), good);
  EXPECT_EQ(fs::file_size(path), good);
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_EQ(report->records, 3u);

  // The writer carries on once space is back.
  auto ok2 = (*w)->WriteExchange(Fetch(&small, "http://example.test/ok2"));
  ASSERT_TRUE(ok2.ok()) << ok2.status().ToString();
  EXPECT_EQ(ok2->response.offset, good);
  ASSERT_TRUE((*w)->Close().ok());
  report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_EQ(report->records, 5u);
}

// The request member failing after its response was written: both go.
TEST(Crawld, WriteFailureOnSecondMemberRollsBackTheWholeExchange) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  const uint64_t good = (*w)->current_offset();
  const std::string path = dir.path() + "/warc/" + (*w)->current_file();
  std::string noise(4000, '\0');
  std::mt19937 rng(5);
  for (char& c : noise) c = static_cast<char>(rng());
  DocBuffer body = Body(noise);
  FetchRecord fr = Fetch(&body);
  // A request head of incompressible bytes that cannot fit after the
  // response.
  std::string req_noise(20000, '\0');
  for (char& c : req_noise) c = static_cast<char>('a' + rng() % 26);
  fr.request_head = "GET /" + req_noise + " HTTP/1.1\r\n\r\n";

  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ign {
  }, old_action{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ign, &old_action), 0);
  struct rlimit lim = old_limit;
  lim.rlim_cur = good + 6000;  // room for the response member only
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  auto failed = (*w)->WriteExchange(fr);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  sigaction(SIGXFSZ, &old_action, nullptr);

  EXPECT_EQ(failed.status().code(), Status::Code::kIOError);
  EXPECT_EQ(fs::file_size(path), good);
  auto report = VerifyFile(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_EQ(report->records, 1u);
}

TEST(Crawld, WritesAfterCloseFail) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_TRUE((*w)->Close().ok());  // idempotent
  EXPECT_EQ((*w)->WriteExchange(Fetch(nullptr)).status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ((*w)->WriteMetadata("http://x.test/", "", 0, "text/plain", "x")
                .status()
                .code(),
            Status::Code::kFailedPrecondition);
}

TEST(Crawld, FlushWithFsyncSucceeds) {
  TempDir dir;
  Options o = TestOptions(dir);
  o.fsync_on_flush = true;
  o.fsync_on_rotate = true;
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteExchange(Fetch(nullptr)).ok());
  EXPECT_TRUE((*w)->Flush().ok());
  // Flushed records are readable while the writer is still open.
  auto recs = ReadRecords(o.dir + "/" + (*w)->current_file());
  EXPECT_EQ(recs.size(), 3u);
  EXPECT_TRUE((*w)->Close().ok());
}

TEST(Crawld, RecordIdsAreUniqueAcrossWriters) {
  TempDir dir;
  std::set<std::string> ids;
  for (int k = 0; k < 3; ++k) {
    Options o = TestOptions(dir);
    o.worker_id = k;
    auto w = WarcWriter::Open(o);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 50; ++i) {
      auto ex = (*w)->WriteExchange(Fetch(nullptr));
      ASSERT_TRUE(ex.ok());
      EXPECT_TRUE(ids.insert(ex->response.record_id).second);
      EXPECT_TRUE(ids.insert(ex->request.record_id).second);
    }
  }
  EXPECT_EQ(ids.size(), 300u);
}

}  // namespace
}  // namespace crawld::store
