// Tests of fetcher::DecodeBody (RFC 9110 8.4.1 content codings).
#include <gtest/gtest.h>
#include <zlib.h>

#include "fetcher/fetcher.h"

namespace crawld::fetcher {
namespace {

std::string Compress(const std::string& in, int window_bits) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}
std::string Gzip(const std::string& s) { return Compress(s, 15 + 16); }
std::string Zlib(const std::string& s) { return Compress(s, 15); }
std::string RawDeflate(const std::string& s) { return Compress(s, -15); }

std::string Text(size_t n) {
  std::string s;
  while (s.size() < n) s += "The quick brown fox jumps over the lazy dog. ";
  s.resize(n);
  return s;
}

Response Make(const std::string& encoding, const std::string& body,
              size_t memory_limit = 1 << 20) {
  DocBuffer::Options bo;
  bo.memory_limit = memory_limit;
  Response r;
  r.body = DocBuffer(bo);
  EXPECT_TRUE(r.body.Append(body).ok());
  if (!encoding.empty()) r.headers.emplace_back("Content-Encoding", encoding);
  return r;
}

// RFC 9110 8.4.1.3: gzip and its alias x-gzip.
TEST(Rfc9110, Sec8_4_1_3_GzipAndXGzip) {
  const std::string t = Text(10000);
  for (const char* enc : {"gzip", "x-gzip", "GZIP"}) {
    auto d = DecodeBody(Make(enc, Gzip(t)), 1 << 20);
    ASSERT_TRUE(d.ok()) << enc << d.status().ToString();
    EXPECT_EQ(*d, t);
  }
}

// RFC 9110 8.4.1.2: "deflate" is zlib-wrapped; raw DEFLATE is what some
// servers send anyway, so both decode.
TEST(Rfc9110, Sec8_4_1_2_DeflateZlibWrapped) {
  const std::string t = Text(5000);
  auto d = DecodeBody(Make("deflate", Zlib(t)), 1 << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, t);
}
TEST(Rfc9110, CrawldOnly_DeflateRawIsAccepted) {
  const std::string t = Text(5000);
  auto d = DecodeBody(Make("deflate", RawDeflate(t)), 1 << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, t);
}

TEST(Rfc9110, Sec8_4_IdentityAndAbsentAreCopied) {
  for (const char* enc : {"", "identity"}) {
    auto d = DecodeBody(Make(enc, "plain body"), 1 << 20);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, "plain body");
  }
  bool capped = false;
  auto d = DecodeBody(Make("", "plain body"), 5, &capped);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "plain");
  EXPECT_TRUE(capped);
}

// RFC 9110 8.4: codings are listed in the order applied.
TEST(Rfc9110, Sec8_4_CodingListIsUndoneRightToLeft) {
  const std::string t = Text(3000);
  auto d = DecodeBody(Make("deflate, gzip", Gzip(Zlib(t))), 1 << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, t);
}

TEST(Rfc9110, Sec8_4_UnsupportedCodingIsInvalidArgument) {
  auto d = DecodeBody(Make("br", "xxxx"), 1 << 20);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument);
}

// RFC 1952 2.2: a gzip file may hold several members.
TEST(Rfc1952, Sec2_2_ConcatenatedMembers) {
  auto d = DecodeBody(Make("gzip", Gzip("first ") + Gzip("second")), 100);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, "first second");
}

TEST(DecodeBody, Crawld_CorruptStreamIsCorruption) {
  std::string gz = Gzip(Text(10000));
  gz[gz.size() / 2] ^= 0x55;
  gz[gz.size() / 2 + 1] ^= 0x55;
  auto d = DecodeBody(Make("gzip", gz), 1 << 20);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  auto junk = DecodeBody(Make("gzip", "this is not gzip at all"), 1 << 20);
  EXPECT_EQ(junk.status().code(), Status::Code::kCorruption);
}

TEST(DecodeBody, Crawld_IncompleteStreamIsCorruptionUnlessTruncated) {
  const std::string t = Text(100000);
  std::string gz = Gzip(t);
  Response r = Make("gzip", gz.substr(0, gz.size() / 2));
  auto d = DecodeBody(r, 1 << 20);
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  r.truncated = true;  // the fetcher cut it: the prefix is what we have
  auto p = DecodeBody(r, 1 << 20);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GT(p->size(), 0u);
  EXPECT_EQ(*p, t.substr(0, p->size()));
}

TEST(DecodeBody, Crawld_OutputExactlyAtCapIsNotCapped) {
  const std::string t = Text(4096);
  bool capped = true;
  auto d = DecodeBody(Make("gzip", Gzip(t)), 4096, &capped);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, t);
  EXPECT_FALSE(capped);
  d = DecodeBody(Make("gzip", Gzip(t)), 4095, &capped);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, t.substr(0, 4095));
  EXPECT_TRUE(capped);
}

TEST(DecodeBody, Crawld_SpilledBodyDecodes) {
  std::string t;
  uint32_t x = 7;
  for (int i = 0; i < 400000; ++i) {
    x = x * 1103515245 + 12345;
    t += static_cast<char>('a' + (x >> 16) % 26);
  }
  std::string gz = Gzip(t);
  Response r = Make("gzip", gz, /*memory_limit=*/4096);
  ASSERT_TRUE(r.body.spilled());
  auto d = DecodeBody(r, 1 << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(*d == t);
}

TEST(DecodeBody, Crawld_EmptyBodyWithCodingIsEmpty) {
  auto d = DecodeBody(Make("gzip", ""), 100);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "");
}

TEST(DecodeBody, Crawld_TooManyCodingsRejected) {
  auto d = DecodeBody(Make("gzip, gzip, gzip, gzip, gzip", "x"), 100);
  EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument);
}

// Seeded mutation test: whatever the bytes, the output never exceeds the cap,
// and an intact stream decodes to a prefix of its input with *capped telling
// whether it was cut.
TEST(DecodeBody, Crawld_RandomizedAgainstModel) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const char* kEncodings[] = {"gzip", "deflate", "x-gzip", "", "identity"};
  for (int iter = 0; iter < 600; ++iter) {
    std::string text(next() % 20000, '\0');
    for (char& c : text) c = static_cast<char>('a' + next() % 4);
    int kind = static_cast<int>(next() % 5);
    std::string body;
    switch (kind) {
      case 0:
      case 2:
        body = Gzip(text);
        break;
      case 1:
        body = next() % 2 ? Zlib(text) : RawDeflate(text);
        break;
      default:
        body = text;
    }
    bool mutate = next() % 3 == 0;
    if (mutate && !body.empty()) {
      for (int m = 0, n = static_cast<int>(1 + next() % 4); m < n; ++m) {
        switch (next() % 3) {
          case 0:
            body[next() % body.size()] = static_cast<char>(next());
            break;
          case 1:
            body.resize(next() % body.size());
            break;
          default:
            body += std::string(next() % 8, static_cast<char>(next()));
        }
        if (body.empty()) break;
      }
    }
    size_t cap = next() % 25000;
    bool capped = false;
    Response r = Make(kEncodings[kind], body, 1 + next() % 8192);
    r.truncated = mutate && next() % 2;
    auto d = DecodeBody(r, cap, &capped);
    if (d.ok()) {
      ASSERT_LE(d->size(), cap) << iter;
      if (capped) {
        ASSERT_EQ(d->size(), cap) << iter;
      }
    }
    if (!mutate) {
      ASSERT_TRUE(d.ok()) << iter << " " << d.status().ToString();
      ASSERT_EQ(*d, text.substr(0, cap)) << iter;
      ASSERT_EQ(capped, text.size() > cap) << iter;
    }
  }
}

// --- Retry-After (RFC 9110 section 10.2.3) ----------------------------------

TEST(Rfc9110, Sec10_2_3_RetryAfterDelaySeconds) {
  EXPECT_EQ(ParseRetryAfter("120", 0), 120 * 1000000ll);
  EXPECT_EQ(ParseRetryAfter(" 0 ", 0), 0);
  // Absurd values are capped at one day rather than overflowing.
  EXPECT_EQ(ParseRetryAfter("99999999999999", 0), 86400ll * 1000000);
  EXPECT_EQ(ParseRetryAfter("172800", 0), 86400ll * 1000000);
}

TEST(Rfc9110, Sec10_2_3_RetryAfterHttpDate) {
  // Fri, 31 Dec 1999 23:59:59 GMT = 946684799 (the RFC's example date).
  const int64_t when = 946684799;
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 1999 23:59:59 GMT", when - 30),
            30 * 1000000ll);
  // A date in the past means "now".
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 1999 23:59:59 GMT", when + 30), 0);
}

TEST(Rfc9110, Sec10_2_3_RetryAfterUnreadableIsMinusOne) {
  EXPECT_EQ(ParseRetryAfter("", 0), -1);
  EXPECT_EQ(ParseRetryAfter("-5", 0), -1);
  EXPECT_EQ(ParseRetryAfter("1.5", 0), -1);
  EXPECT_EQ(ParseRetryAfter("soon", 0), -1);
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 1999 23:59:59 GMT junk", 0), -1);
}

}  // namespace
}  // namespace crawld::fetcher
