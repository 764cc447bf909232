// Tests of base/json.h: the rules crawld adds to nlohmann::json for
// untrusted text (RFC 8259), moved here from the admin server's tests with
// the same cases.
#include "base/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace crawld {
namespace {

TEST(Rfc8259, ParsesEveryValueType) {
  Result<Json> v = json::Parse(
      R"( {"n": -1.5e2, "i": 0, "t": true, "f": false, "z": null,
           "s": "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "a": [1, [], {}]} )");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(json::Find(*v, "n")->get<double>(), -150);
  EXPECT_EQ(json::Find(*v, "i")->get<double>(), 0);
  EXPECT_TRUE(json::Find(*v, "t")->get<bool>());
  EXPECT_FALSE(json::Find(*v, "f")->get<bool>());
  EXPECT_TRUE(json::Find(*v, "z")->is_null());
  EXPECT_EQ(json::Find(*v, "s")->get<std::string>(),
            "a\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(json::Find(*v, "a")->size(), 3u);
  EXPECT_EQ(json::Find(*v, "missing"), nullptr);
  EXPECT_EQ(json::Find(Json(3), "n"), nullptr);  // not an object
}

TEST(Rfc8259, RejectsWhatTheGrammarDoesNotAllow) {
  for (const char* bad : {"",
                          " ",
                          "{",
                          "[1,]",
                          "{\"a\":1,}",
                          "01",
                          "1.",
                          ".5",
                          "+1",
                          "1e",
                          "-",
                          "NaN",
                          "Infinity",
                          "'a'",
                          "\"\\x\"",
                          "\"a",
                          "[1 2]",
                          "{1:2}",
                          "{\"a\" 1}",
                          "tru",
                          "nul",
                          "1 2",
                          "\"\x01\"",
                          "1e400",
                          "[\"\\u12\"]",
                          "/* comment */ 1"}) {
    Result<Json> r = json::Parse(bad);
    EXPECT_FALSE(r.ok()) << "accepted: " << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    }
  }
}

TEST(Rfc8259, ErrorsSayWhereAndNotTheWholeInput) {
  Result<Json> r = json::Parse("[1, tru" + std::string(10000, 'e') + "]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at byte"), std::string::npos)
      << r.status().message();
  EXPECT_LT(r.status().message().size(), 200u);
}

TEST(Rfc8259, CrawldOnly_RejectsDuplicateKeysAndBadUnicode) {
  EXPECT_FALSE(json::Parse(R"({"a":1,"a":2})").ok());
  EXPECT_FALSE(json::Parse(R"({"x":{"a":1,"a":2}})").ok());  // nested
  EXPECT_TRUE(json::Parse(R"({"a":{"a":1},"b":{"a":2}})").ok());
  EXPECT_FALSE(json::Parse(R"("\ud800")").ok());           // lone high
  EXPECT_FALSE(json::Parse(R"("\udc00")").ok());           // lone low
  EXPECT_FALSE(json::Parse("\"\xC0\xAF\"").ok());          // overlong
  EXPECT_FALSE(json::Parse("\"\xED\xA0\x80\"").ok());      // encoded surrogate
  EXPECT_FALSE(json::Parse("\"\xF4\x90\x80\x80\"").ok());  // > U+10FFFF
  EXPECT_FALSE(json::Parse("\"\xE2\x82\"").ok());          // truncated
  EXPECT_FALSE(json::Parse("\xEF\xBB\xBF{}").ok());        // BOM
}

TEST(Rfc8259, CrawldOnly_DuplicateKeyAfterManyIsFound) {
  std::string text = "{";
  for (int i = 0; i < 20000; ++i) {
    text += "\"k" + std::to_string(i) + "\":1,";
  }
  text += "\"k0\":2}";
  Result<Json> r = json::Parse(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate key \"k0\""),
            std::string::npos)
      << r.status().message();
}

TEST(Rfc8259, CrawldOnly_DepthAndSizeLimits) {
  json::Limits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(json::Parse("[[[1]]]", limits).ok());
  EXPECT_TRUE(json::Parse(R"({"a":{"b":[1]}})", limits).ok());
  Result<Json> deep = json::Parse("[[[[1]]]]", limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), Status::Code::kResourceExhausted);
  // Far deeper than the stack could take by recursion: refused, no crash.
  EXPECT_FALSE(json::Parse(std::string(1'000'000, '[')).ok());
  limits.max_bytes = 4;
  Result<Json> big = json::Parse("12345", limits);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Status::Code::kResourceExhausted);
}

TEST(Rfc8259, DumpRoundTripsAndEscapes) {
  Json obj = Json::object();
  obj["b"] = true;
  obj["n"] = 0.1;
  obj["big"] = int64_t{1} << 50;
  obj["s"] = std::string("q\"\\\n\x01\x7f", 6);
  obj["a"] = Json::array({1, nullptr});
  obj["b"] = false;  // replaces in place
  const std::string text = json::Dump(obj);
  // DEL (0x7f) needs no escape in JSON (RFC 8259 section 7) and is written
  // as itself.
  EXPECT_EQ(text, R"({"b":false,"n":0.1,"big":1125899906842624,)"
                  "\"s\":\"q\\\"\\\\\\n\\u0001\x7f\",\"a\":[1,null]}");
  Result<Json> back = json::Parse(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, obj);
}

TEST(Rfc8259, CrawldOnly_DumpAlwaysProducesValidJson) {
  Json s(std::string("bad \xFF utf8 \xC3"));
  EXPECT_EQ(json::Dump(s), "\"bad \xEF\xBF\xBD utf8 \xEF\xBF\xBD\"");
  EXPECT_EQ(json::Dump(Json(INFINITY)), "null");
  EXPECT_EQ(json::Dump(Json(NAN)), "null");
  // Each maximal invalid subpart is one U+FFFD (WHATWG Encoding), as a
  // browser would show it.
  EXPECT_EQ(json::Dump(Json("\xE0\x80x")), "\"\xEF\xBF\xBD\xEF\xBF\xBDx\"");
}

TEST(Rfc8259, AppendQuotedEscapesControlAndQuotes) {
  std::string out = "x=";
  json::AppendQuoted(&out, "a\"b\\c\nd\x01");
  EXPECT_EQ(out, "x=\"a\\\"b\\\\c\\nd\\u0001\"");
}

}  // namespace
}  // namespace crawld
