// Issue 19 item 8, the store side: the writer never writes a response
// record whose block is not an HTTP message, or whose framing is invalid,
// and never writes a cut body without WARC-Truncated; VerifyFile (and so
// `crawlctl warc verify`) rejects such records wherever they come from.
// Spec: WARC 1.1 section 6.3.2 ('response' for http and https), RFC 9112
// section 6.3 (message body length).
#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/unit/store/test_util.h"

namespace crawld::store {
namespace {

using testing::Has;
using testing::Joined;
using testing::RawRecord;
using testing::RawWarcinfo;
using testing::TempDir;

Options TestOptions(const TempDir& dir) {
  Options o;
  o.dir = dir.path() + "/warc";
  o.index_dir = dir.path() + "/index";
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  return o;
}

FetchRecord Fetch(const std::string& head, const DocBuffer* body) {
  FetchRecord r;
  r.target_uri = "http://example.test/page";
  r.ip = "127.0.0.1";
  r.fetch_time_us = 1704164645123456;
  r.request_head = "GET /page HTTP/1.1\r\nHost: example.test\r\n\r\n";
  r.response_head = head;
  r.body = body;
  return r;
}

DocBuffer Body(std::string_view text) {
  DocBuffer b;
  EXPECT_TRUE(b.Append(text).ok());
  return b;
}

Record ResponseOf(const std::string& warc_dir, const RecordRef& ref) {
  auto rec = ReadRecordAt(warc_dir + "/" + ref.file, ref.offset, ref.length);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return rec.ok() ? *rec : Record();
}

// Issue 19 item 8: "two different Content-Length headers (266, then 7)
// store a 7-byte body as a complete 200". The head's framing is invalid
// (RFC 9112 6.3): the writer refuses it, as it does a Content-Length that
// is not a number.
TEST(Rfc9112, Issue19_Sec6_3_HeadWithInvalidFramingIsRefused) {
  TempDir dir;
  auto w = WarcWriter::Open(TestOptions(dir));
  ASSERT_TRUE(w.ok());
  const uint64_t before = (*w)->current_offset();
  DocBuffer body = Body("7 bytes");
  for (const std::string& fields : std::vector<std::string>{
           "Content-Length: 266\r\nContent-Length: 7\r\n",
           "Content-Length: 7, 266\r\n", "Content-Length: seven\r\n",
           "Content-Length: -7\r\n"}) {
    auto ex = (*w)->WriteExchange(
        Fetch("HTTP/1.1 200 OK\r\n" + fields + "\r\n", &body));
    ASSERT_FALSE(ex.ok()) << fields;
    EXPECT_EQ(ex.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(ex.status().message().find("invalid framing"), std::string::npos)
        << ex.status().message();
  }
  EXPECT_EQ((*w)->current_offset(), before);
  EXPECT_EQ(testing::ReadAll((*w)->current_index_path()), "");
  // Identical values are one value (RFC 9110 8.6); Transfer-Encoding
  // overrides Content-Length (RFC 9112 6.3 item 3); a 304's fields are not
  // judged (it has no body).
  ASSERT_TRUE((*w)->WriteExchange(Fetch("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
                                        "chunked\r\nContent-Length: 3\r\n\r\n",
                                        &body))
                  .ok());
  ASSERT_TRUE(
      (*w)->WriteExchange(
              Fetch("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n", &body))
          .ok());
  ASSERT_TRUE(
      (*w)->WriteExchange(Fetch("HTTP/1.1 304 Not Modified\r\nContent-Length: "
                                "1\r\nContent-Length: 2\r\n\r\n",
                                nullptr))
          .ok());
}

// WARC 1.1 6.3.2: "When a 'response' is known to have been truncated, this
// shall be noted using the WARC-Truncated field." A body shorter than its
// Content-Length is cut whatever the caller says.
TEST(Warc11, Issue19_Sec6_3_2_CutBodyIsAlwaysMarkedTruncated) {
  TempDir dir;
  Options o = TestOptions(dir);
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer cut = Body("0123456789");
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  FetchRecord silent = Fetch(head, &cut);
  auto a = (*w)->WriteExchange(silent);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(ResponseOf(o.dir, a->response).Header("WARC-Truncated"),
            "unspecified");
  FetchRecord told = Fetch(head, &cut);
  told.truncated = "disconnect";
  auto b = (*w)->WriteExchange(told);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(ResponseOf(o.dir, b->response).Header("WARC-Truncated"),
            "disconnect");
  // Not one byte of the body: still cut.
  auto empty = (*w)->WriteExchange(Fetch(head, nullptr));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(ResponseOf(o.dir, empty->response).Header("WARC-Truncated"),
            "unspecified");
  // Complete, bodyless, chunked or close-delimited bodies are not marked.
  DocBuffer ten = Body("0123456789");
  for (const std::string& h : std::vector<std::string>{
           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
           "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"}) {
    const bool bodyless = h.find("304") != std::string::npos;
    auto ex = (*w)->WriteExchange(Fetch(h, bodyless ? nullptr : &ten));
    ASSERT_TRUE(ex.ok()) << h << ex.status().ToString();
    EXPECT_EQ(ResponseOf(o.dir, ex->response).Header("WARC-Truncated"), "")
        << h;
  }
  ASSERT_TRUE((*w)->Close().ok());
  auto report = VerifyFile(o.dir + "/" + a->response.file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
}

// --- VerifyFile on records other tools (or older crawld) wrote ------------

VerifyReport VerifyRecord(const std::string& type,
                          const std::vector<std::string>& fields,
                          const std::string& block) {
  return VerifyBytes(
      RawWarcinfo() + RawRecord(type,
                                "<urn:uuid:11111111-1111-4111-8111-"
                                "111111111111>",
                                fields, block),
      "test.warc");
}

const std::vector<std::string> kResponseFields = {
    "WARC-Target-URI: http://example.test/",
    "Content-Type: application/http;msgtype=response"};

// Issue 19 item 8: "a 1 MB header line leaves a response record with an
// empty block (not an HTTP message)", accepted by verify until now.
TEST(Warc11, Issue19_Sec6_3_2_VerifyRejectsResponseThatIsNotHttp) {
  for (const std::string& block :
       {std::string(), std::string("garbage\r\n\r\nbody"),
        std::string("HTTP/1.1 200 OK\r\nX: y\r\n")}) {
    VerifyReport r = VerifyRecord("response", kResponseFields, block);
    EXPECT_FALSE(r.ok()) << "'" << block << "'";
    EXPECT_TRUE(Has(r.defects, "not an HTTP response")) << Joined(r.defects);
  }
  // Another scheme's response is not judged as HTTP.
  VerifyReport dns = VerifyRecord(
      "response",
      {"WARC-Target-URI: dns:example.test", "Content-Type: text/dns"},
      "20240102030405\nexample.test. 300 IN A 127.0.0.1\n");
  EXPECT_TRUE(dns.ok()) << Joined(dns.defects);
}

TEST(Warc11, Issue19_Sec6_3_2_VerifyRejectsCutBodyWithoutTruncated) {
  const std::string cut =
      "HTTP/1.1 200 OK\r\nContent-Length: 266\r\n\r\n0123456";
  VerifyReport r = VerifyRecord("response", kResponseFields, cut);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.defects, "shorter than its Content-Length 266"))
      << Joined(r.defects);
  std::vector<std::string> truncated = kResponseFields;
  truncated.push_back("WARC-Truncated: disconnect");
  VerifyReport ok = VerifyRecord("response", truncated, cut);
  EXPECT_TRUE(ok.ok()) << Joined(ok.defects);
}

TEST(Rfc9112, Issue19_Sec6_3_VerifyRejectsRecordedInvalidFraming) {
  VerifyReport r = VerifyRecord(
      "response", kResponseFields,
      "HTTP/1.1 200 OK\r\nContent-Length: 266\r\nContent-Length: 7\r\n\r\n"
      "0123456");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.defects, "invalid framing")) << Joined(r.defects);
  // Transfer-Encoding overrides the Content-Length (RFC 9112 6.3 item 3).
  VerifyReport te = VerifyRecord(
      "response", kResponseFields,
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n"
      "\r\nhello");
  EXPECT_TRUE(te.ok()) << Joined(te.defects);
}

// What the writer produces passes: complete, cut and marked, bodyless.
TEST(Warc11, Issue19_WriterOutputPassesTheNewChecks) {
  TempDir dir;
  Options o = TestOptions(dir);
  auto w = WarcWriter::Open(o);
  ASSERT_TRUE(w.ok());
  DocBuffer body = Body("hello");
  FetchRecord cut =
      Fetch("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", &body);
  cut.truncated = "time";
  ASSERT_TRUE((*w)->WriteExchange(cut).ok());
  ASSERT_TRUE(
      (*w)->WriteExchange(
              Fetch("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", &body))
          .ok());
  ASSERT_TRUE(
      (*w)->WriteExchange(Fetch("HTTP/1.1 204 No Content\r\n\r\n", nullptr))
          .ok());
  const std::string file = (*w)->current_file();
  ASSERT_TRUE((*w)->Close().ok());
  auto report = VerifyFile(o.dir + "/" + file);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << Joined(report->defects);
  EXPECT_TRUE(report->warnings.empty()) << Joined(report->warnings);
  EXPECT_EQ(report->records, 7u);
}

}  // namespace
}  // namespace crawld::store
