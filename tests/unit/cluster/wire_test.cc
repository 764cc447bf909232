// Tests of the batch encoding (cluster/wire.h): what one worker writes, the
// other reads back exactly, and hostile bytes are rejected, never crash.
#include "cluster/wire.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace crawld::cluster::wire {
namespace {

std::vector<UrlMessage> Sample() {
  std::vector<UrlMessage> v = {{"http://a.example/", 0, 1.0},
                               {"https://b.example/x?y=1", 7, 0.125},
                               {std::string(5000, 'u'), 65535, 0.0},
                               {"https://c.example/sitemap.xml", 0, 0.5},
                               {"https://c.example/s2.xml", 0, 0.0, "c"},
                               {"https://c.example/news/1", 1, 0.25, "c"},
                               {"https://c.example/old", 1, 0.0}};
  v[3].sitemap_kind = 1;
  v[3].sitemap_of = "a.example";
  v[4].sitemap_kind = 2;  // a child, named by no robots.txt
  // Sitemap hints: both, with a sitemap kind too, and a lastmod alone.
  v[5].changefreq = 2;  // hourly
  v[5].lastmod_s = 1700000000;
  v[4].changefreq = 7;
  v[6].lastmod_s = 0xffffffffu;
  return v;
}

TEST(Wire, BatchRoundTrips) {
  std::string enc;
  EncodeBatch({3, 0xdeadbeefcafef00dULL, 42}, Sample(), &enc);
  BatchHeader h;
  std::vector<UrlMessage> out;
  ASSERT_TRUE(DecodeBatch(enc, &h, &out, 8192).ok());
  EXPECT_EQ(h.from, 3u);
  EXPECT_EQ(h.incarnation, 0xdeadbeefcafef00dULL);
  EXPECT_EQ(h.id, 42u);
  const auto in = Sample();
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].url, in[i].url);
    EXPECT_EQ(out[i].depth, in[i].depth);
    EXPECT_EQ(out[i].credit, in[i].credit);
    EXPECT_EQ(out[i].seed_host, in[i].seed_host);
    EXPECT_EQ(out[i].sitemap_kind, in[i].sitemap_kind);
    EXPECT_EQ(out[i].sitemap_of, in[i].sitemap_of);
    EXPECT_EQ(out[i].changefreq, in[i].changefreq);
    EXPECT_EQ(out[i].lastmod_s, in[i].lastmod_s);
  }
}

// A batch as a worker from before the sitemap hints wrote it (version 2,
// flags 0..7, no hint bytes), built by hand: it still decodes, with no
// hints; and a batch without hints is still written byte for byte so.
TEST(Wire, BatchesWithoutHintsKeepTheOlderLayout) {
  std::string old;
  old += 'B';
  old += '\x02';
  PutU32(5, &old);
  PutU64(6, &old);
  PutU64(7, &old);
  PutU32(2, &old);
  const std::string url = "http://a.example/x";
  // A page.
  old += '\x00';
  old += '\x03';
  old += '\x00';
  PutU64(std::bit_cast<uint64_t>(0.5), &old);
  PutU32(static_cast<uint32_t>(url.size()), &old);
  old += '\x01';
  old += '\x00';
  old += url;
  old += 'a';
  // A sitemap named by a.example's robots.txt.
  old += '\x02';
  old += '\x00';
  old += '\x00';
  PutU64(std::bit_cast<uint64_t>(0.0), &old);
  PutU32(static_cast<uint32_t>(url.size()), &old);
  old += '\x00';
  old += '\x00';
  old += url;
  old += '\x09';
  old += "a.example";
  BatchHeader h;
  std::vector<UrlMessage> out;
  ASSERT_TRUE(DecodeBatch(old, &h, &out, 8192).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].depth, 3);
  EXPECT_EQ(out[0].seed_host, "a");
  EXPECT_EQ(out[1].sitemap_kind, 1);
  EXPECT_EQ(out[1].sitemap_of, "a.example");
  for (const UrlMessage& m : out) {
    EXPECT_EQ(m.changefreq, 0);
    EXPECT_EQ(m.lastmod_s, 0u);
  }
  std::string again;
  EncodeBatch(h, out, &again);
  EXPECT_EQ(again, old);
}

TEST(Wire, HintsCostFiveBytesAndABadChangefreqIsRefused) {
  UrlMessage m{"http://a.example/", 0, 1.0};
  std::string plain, hinted;
  EncodeBatch({1, 2, 3}, {m}, &plain);
  m.lastmod_s = 1;
  EncodeBatch({1, 2, 3}, {m}, &hinted);
  EXPECT_EQ(hinted.size(), plain.size() + 5);
  // changefreq is the byte after the URL (no seed host here).
  const size_t at = hinted.size() - 5;
  hinted[at] = 8;
  BatchHeader h;
  std::vector<UrlMessage> out;
  EXPECT_EQ(DecodeBatch(hinted, &h, &out, 8192).code(),
            Status::Code::kCorruption);
  m.changefreq = 8;
  EXPECT_FALSE(ValidateMessage(m, ExchangeOptions{}).ok());
  m.changefreq = 7;
  EXPECT_TRUE(ValidateMessage(m, ExchangeOptions{}).ok());
}

TEST(Wire, EveryTruncationAndTrailingByteIsCorruption) {
  std::string enc;
  EncodeBatch({1, 2, 3}, Sample(), &enc);
  BatchHeader h;
  std::vector<UrlMessage> out;
  for (size_t n = 0; n < enc.size(); ++n) {
    // An exact-size copy, so ASan sees any overread.
    std::vector<char> buf(enc.begin(), enc.begin() + static_cast<long>(n));
    Status s = DecodeBatch(std::string_view(buf.data(), n), &h, &out, 8192);
    ASSERT_EQ(s.code(), Status::Code::kCorruption) << "prefix " << n;
  }
  EXPECT_EQ(DecodeBatch(enc + "x", &h, &out, 8192).code(),
            Status::Code::kCorruption);
}

TEST(Wire, HostileFieldsAreRejected) {
  BatchHeader h;
  std::vector<UrlMessage> out;
  // A count of 4 billion URLs in a 26-byte batch.
  std::string enc;
  EncodeBatch({1, 2, 3}, {}, &enc);
  enc[22] = enc[23] = enc[24] = enc[25] = '\xff';
  EXPECT_EQ(DecodeBatch(enc, &h, &out, 8192).code(), Status::Code::kCorruption);
  // A URL over the limit, and a NaN credit.
  enc.clear();
  EncodeBatch({1, 2, 3}, {{std::string(100, 'x'), 0, 1}}, &enc);
  EXPECT_EQ(DecodeBatch(enc, &h, &out, 99).code(), Status::Code::kCorruption);
  enc.clear();
  EncodeBatch({1, 2, 3},
              {{"http://x/", 0, std::numeric_limits<double>::quiet_NaN()}},
              &enc);
  EXPECT_EQ(DecodeBatch(enc, &h, &out, 8192).code(), Status::Code::kCorruption);
  // Wrong magic or version.
  enc.clear();
  EncodeBatch({1, 2, 3}, Sample(), &enc);
  std::string bad = enc;
  bad[0] = 'X';
  EXPECT_FALSE(DecodeBatch(bad, &h, &out, 8192).ok());
  bad = enc;
  bad[1] = 9;
  EXPECT_FALSE(DecodeBatch(bad, &h, &out, 8192).ok());
}

TEST(Wire, SeededMutationsNeverCrash) {
  std::string enc;
  EncodeBatch({1, 2, 3}, Sample(), &enc);
  std::mt19937 rng(12345);
  BatchHeader h;
  std::vector<UrlMessage> out;
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string m = enc;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      m[rng() % m.size()] = static_cast<char>(rng());
    }
    if (rng() % 4 == 0) m.resize(rng() % m.size());
    std::vector<char> buf(m.begin(), m.end());
    if (DecodeBatch(std::string_view(buf.data(), buf.size()), &h, &out, 8192)
            .ok()) {
      ++accepted;
      for (const auto& u : out) {
        ASSERT_FALSE(u.url.empty());
        ASSERT_TRUE(std::isfinite(u.credit));
      }
    }
  }
  // Mutating only URL bytes keeps a batch valid, so some are accepted.
  EXPECT_GT(accepted, 0);
}

// --- Recrawl hand-off: a capture rides along (UrlMessage::capture) ---

std::vector<UrlMessage> WithCaptures() {
  std::vector<UrlMessage> v = Sample();
  v[0].capture = std::string("\x01\x00binary\xff capture", 17);
  v[3].capture = "after a sitemap's fields";
  v.push_back({"http://d.example/p/1.html", 2, 0.0, "d.example"});
  v.back().capture = std::string(MaxCaptureBytes(8192), 'c');  // the limit
  return v;
}

TEST(Wire, CapturesRoundTripBesideMessagesWithout) {
  std::string enc;
  EncodeBatch({3, 4, 5}, WithCaptures(), &enc);
  BatchHeader h;
  std::vector<UrlMessage> out;
  ASSERT_TRUE(DecodeBatch(enc, &h, &out, 8192).ok());
  const auto in = WithCaptures();
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].url, in[i].url) << i;
    EXPECT_EQ(out[i].seed_host, in[i].seed_host) << i;
    EXPECT_EQ(out[i].sitemap_kind, in[i].sitemap_kind) << i;
    EXPECT_EQ(out[i].sitemap_of, in[i].sitemap_of) << i;
    EXPECT_EQ(out[i].capture, in[i].capture) << i;
  }
  EXPECT_TRUE(out[1].capture.empty());
  // Every cut of it is still Corruption, never an overread.
  for (size_t n = 0; n < enc.size(); n += (n < 400 ? 1 : 997)) {
    std::vector<char> buf(enc.begin(), enc.begin() + static_cast<long>(n));
    ASSERT_EQ(
        DecodeBatch(std::string_view(buf.data(), n), &h, &out, 8192).code(),
        Status::Code::kCorruption)
        << "prefix " << n;
  }
}

// A batch as version 2 wrote it before captures existed, byte by byte (not
// made by EncodeBatch): it still decodes, and a batch without captures is
// still written exactly so.
TEST(Wire, ABatchOfTheEarlierLayoutStillDecodes) {
  const std::string url = "http://a.example/";
  std::string old = {'B', 2};
  PutU32(7, &old);      // from
  PutU64(8, &old);      // incarnation
  PutU64(9, &old);      // id
  PutU32(1, &old);      // count
  old.push_back('\1');  // flags: a seen-mark
  old.push_back('\3');  // depth 3
  old.push_back('\0');
  PutU64(0x3ff0000000000000ULL, &old);  // credit 1.0
  PutU32(static_cast<uint32_t>(url.size()), &old);
  old.push_back('\1');  // seed host length 1
  old.push_back('\0');
  old += url + "s";
  BatchHeader h;
  std::vector<UrlMessage> out;
  ASSERT_TRUE(DecodeBatch(old, &h, &out, 8192).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(h.from, 7u);
  EXPECT_EQ(out[0].url, url);
  EXPECT_EQ(out[0].depth, 3);
  EXPECT_EQ(out[0].credit, 1.0);
  EXPECT_EQ(out[0].seed_host, "s");
  EXPECT_TRUE(out[0].seen_mark);
  EXPECT_TRUE(out[0].capture.empty());
  std::string again;
  EncodeBatch(h, out, &again);
  EXPECT_EQ(again, old);
}

TEST(Wire, HostileCapturesAreRejected) {
  BatchHeader h;
  std::vector<UrlMessage> out;
  std::vector<UrlMessage> one = {{"http://x/", 0, 1}};
  one[0].capture = "cc";
  std::string enc;
  EncodeBatch({1, 2, 3}, one, &enc);
  ASSERT_TRUE(DecodeBatch(enc, &h, &out, 8192).ok());
  const size_t len_at = enc.size() - 2 - 4;
  // A length past the end, a length over the limit, a flag with length 0.
  std::string bad = enc;
  bad[len_at] = 3;
  EXPECT_EQ(DecodeBatch(bad, &h, &out, 8192).code(), Status::Code::kCorruption);
  bad = enc;
  PutU32(static_cast<uint32_t>(MaxCaptureBytes(16) + 1), &bad);
  bad.replace(len_at, 4, bad.substr(bad.size() - 4));
  bad.resize(enc.size());
  EXPECT_EQ(DecodeBatch(bad, &h, &out, 16).code(), Status::Code::kCorruption);
  bad = enc.substr(0, len_at);
  PutU32(0, &bad);
  EXPECT_EQ(DecodeBatch(bad, &h, &out, 8192).code(), Status::Code::kCorruption);
  // An unknown flag bit beyond the capture's is still refused.
  bad = enc;
  bad[26] = static_cast<char>(bad[26] | 0x10);
  EXPECT_EQ(DecodeBatch(bad, &h, &out, 8192).code(), Status::Code::kCorruption);
  // The sender refuses what the receiver would.
  ExchangeOptions o;
  o.max_url_bytes = 16;
  UrlMessage big{"http://x/", 0, 1};
  big.capture = std::string(MaxCaptureBytes(16) + 1, 'c');
  EXPECT_EQ(ValidateMessage(big, o).code(), Status::Code::kInvalidArgument);
  big.capture.pop_back();
  EXPECT_TRUE(ValidateMessage(big, o).ok());
}

}  // namespace
}  // namespace crawld::cluster::wire
