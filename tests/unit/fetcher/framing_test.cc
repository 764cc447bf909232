// Tests of the response framing rules and the chunked decoder
// (fetcher/framing.h), RFC 9112 sections 6.3 and 7.1.
#include "fetcher/framing.h"

#include <gtest/gtest.h>

#include <random>

namespace crawld::fetcher::internal {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;
using Kind = BodyFraming::Kind;

Result<BodyFraming> Of(int status, const Fields& fields,
                       std::string_view version = "HTTP/1.1") {
  return FramingOf(status, version, fields);
}

// RFC 9112 6.3 item 1: 1xx, 204 and 304 never have a body; their framing
// fields describe nothing, so they are not judged.
TEST(Rfc9112, Sec6_3_Item1_BodylessStatuses) {
  for (int status : {100, 103, 204, 304}) {
    auto f = Of(status, {{"Content-Length", "12"},
                         {"Content-Length", "13"},
                         {"Transfer-Encoding", "chunked"}});
    ASSERT_TRUE(f.ok()) << status;
    EXPECT_EQ(f->kind, Kind::kNone) << status;
  }
}

// RFC 9112 6.3 item 4: chunked as the (only) transfer coding.
TEST(Rfc9112, Sec6_3_Item4_Chunked) {
  for (const char* v :
       {"chunked", "Chunked", " chunked ", "identity, chunked"}) {
    auto f = Of(200, {{"transfer-encoding", v}});
    ASSERT_TRUE(f.ok()) << v << f.status().ToString();
    EXPECT_EQ(f->kind, Kind::kChunked) << v;
  }
}

// RFC 9112 6.1: TE in HTTP/1.0 is faulty, and any coding but chunked is
// one we did not ask for (no TE header sent).
TEST(Rfc9112, Sec6_1_TransferEncodingErrors) {
  EXPECT_FALSE(Of(200, {{"Transfer-Encoding", "chunked"}}, "HTTP/1.0").ok());
  for (const char* v :
       {"gzip", "gzip, chunked", "chunked, chunked", "chunked, gzip", "x"}) {
    auto f = Of(200, {{"Transfer-Encoding", v}});
    ASSERT_FALSE(f.ok()) << v;
    EXPECT_EQ(f.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(f.status().message().find("RFC 9112"), std::string::npos)
        << f.status().message();
  }
  EXPECT_NE(Of(200, {{"Transfer-Encoding", "gzip"}})
                .status()
                .message()
                .find("not supported"),
            std::string::npos);
  // 6.3 item 3: Transfer-Encoding overrides Content-Length, noted.
  auto both =
      Of(200, {{"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->kind, Kind::kChunked);
  EXPECT_NE(both->note.find("RFC 9112 section 6.3"), std::string::npos);
  EXPECT_EQ(Of(200, {{"Transfer-Encoding", "chunked"}})->note, "");
  // "identity" alone is no transfer coding at all.
  auto id =
      Of(200, {{"Transfer-Encoding", "identity"}, {"Content-Length", "3"}});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->kind, Kind::kLength);
}

// RFC 9112 6.3 item 6 and RFC 9110 8.6.
TEST(Rfc9112, Sec6_3_Item6_ContentLength) {
  auto f = Of(200, {{"Content-Length", "42"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, Kind::kLength);
  EXPECT_EQ(f->length, 42u);
  auto zero = Of(200, {{"Content-Length", "0"}});
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->length, 0u);
  auto same = Of(200, {{"Content-Length", "7, 7"}, {"content-length", "7"}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->length, 7u);
  auto differ = Of(200, {{"Content-Length", "266"}, {"Content-Length", "7"}});
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.status().message().find("266 and 7 differ"),
            std::string::npos)
      << differ.status().message();
  for (const char* v : {"", "abc", "-1", "+1", "1.0", "0x1", "1 2", "7,",
                        "1000000000000000000", ","}) {
    EXPECT_FALSE(Of(200, {{"Content-Length", v}}).ok()) << "'" << v << "'";
  }
}

// RFC 9112 6.3 item 8: neither field: the body runs to the close.
TEST(Rfc9112, Sec6_3_Item8_CloseDelimited) {
  auto f = Of(200, {{"Content-Type", "text/html"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, Kind::kClose);
  auto v10 = Of(200, {}, "HTTP/1.0");
  ASSERT_TRUE(v10.ok());
  EXPECT_EQ(v10->kind, Kind::kClose);
}

Status Decode(ChunkedDecoder* d, std::string_view in, std::string* out) {
  return d->Feed(in, [out](std::string_view chunk) {
    out->append(chunk);
    return Status::Ok();
  });
}

// RFC 9112 7.1: the grammar, byte by byte and in one piece.
TEST(Rfc9112, Sec7_1_ChunkedBodyDecodes) {
  const std::string wire =
      "5\r\nhello\r\n6;ext=1;q=\"x\"\r\n world\r\nA \r\n0123456789\r\n"
      "0\r\nTrailer: x\r\n\r\n";
  std::string whole;
  ChunkedDecoder d;
  ASSERT_TRUE(Decode(&d, wire, &whole).ok());
  EXPECT_TRUE(d.done());
  EXPECT_EQ(whole, "hello world0123456789");
  std::string bytewise;
  ChunkedDecoder b;
  for (char c : wire) {
    ASSERT_FALSE(b.done());
    ASSERT_TRUE(Decode(&b, std::string_view(&c, 1), &bytewise).ok());
  }
  EXPECT_TRUE(b.done());
  EXPECT_EQ(bytewise, whole);
}

// RFC 9112 2.2: a bare LF may end a line; bytes after the end are ignored.
TEST(Rfc9112, Sec2_2_BareLfAndTrailingBytes) {
  std::string out;
  ChunkedDecoder d;
  ASSERT_TRUE(Decode(&d, "3\nabc\n0\n\nHTTP/1.1 200 OK\r\n", &out).ok());
  EXPECT_TRUE(d.done());
  EXPECT_EQ(out, "abc");
}

TEST(Rfc9112, Sec7_1_MalformedChunkedBodies) {
  for (const std::string& wire : std::vector<std::string>{
           "zz\r\n", "\r\n", ";ext\r\n", "5\r\nhelloX", "5\r\nhello\rX",
           "5 5\r\n", "5\rX", "1234567890abcdef0\r\n", "0\r\nT: x\rX", "-1\r\n",
           "+5\r\nhello\r\n"}) {
    std::string out;
    ChunkedDecoder d;
    Status s = Decode(&d, wire, &out);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << wire;
    // A failed decoder stays failed.
    EXPECT_FALSE(Decode(&d, "0\r\n\r\n", &out).ok()) << wire;
    EXPECT_FALSE(d.done());
  }
  // Size lines and trailers are bounded.
  std::string out;
  ChunkedDecoder ext;
  EXPECT_FALSE(
      Decode(&ext, "5;" + std::string(ChunkedDecoder::kMaxLineBytes, 'e'), &out)
          .ok());
  ChunkedDecoder trailer;
  EXPECT_FALSE(
      Decode(&trailer,
             "0\r\n" + std::string(ChunkedDecoder::kMaxTrailerBytes + 1, 't'),
             &out)
          .ok());
}

// The sink's error stops decoding and is returned as it is.
TEST(ChunkedDecoder, Crawld_SinkErrorStops) {
  ChunkedDecoder d;
  int calls = 0;
  Status s = d.Feed("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", [&](std::string_view) {
    ++calls;
    return Status::ResourceExhausted("cap");
  });
  EXPECT_EQ(s.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(calls, 1);
}

// Randomized against a model: any chunking of any payload, with extensions,
// CRLF or LF and trailers, fed in any split, decodes to the payload.
TEST(ChunkedDecoder, Crawld_RandomizedAgainstModel) {
  std::mt19937_64 rng(19);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string payload(rng() % 3000, '\0');
    for (char& c : payload) c = static_cast<char>(rng());
    auto eol = [&] { return rng() % 4 == 0 ? "\n" : "\r\n"; };
    std::string wire;
    for (size_t at = 0; at < payload.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 700, payload.size() - at);
      char hex[32];
      std::snprintf(hex, sizeof(hex), rng() % 2 ? "%zx" : "%zX", n);
      wire += hex;
      if (rng() % 5 == 0) wire += " ;a=b";
      wire += eol();
      wire += payload.substr(at, n);
      wire += eol();
      at += n;
    }
    wire += std::string(rng() % 3, '0') + "0";
    wire += eol();
    if (rng() % 3 == 0) wire += std::string("X-T: 1") + eol();
    wire += eol();
    ChunkedDecoder d;
    std::string out;
    for (size_t at = 0; at < wire.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 300, wire.size() - at);
      ASSERT_TRUE(Decode(&d, std::string_view(wire).substr(at, n), &out).ok())
          << iter;
      at += n;
    }
    ASSERT_TRUE(d.done()) << iter;
    ASSERT_TRUE(out == payload) << iter;
  }
}

}  // namespace
}  // namespace crawld::fetcher::internal
