// Tests of the parser's private helpers: encoding labels, Content-Type
// charset, the <meta> prescan and the UTF-8 utilities.
#include "parser/charset.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::parser::internal {
namespace {

// https://encoding.spec.whatwg.org/#names-and-labels
TEST(Encoding, LabelsAreCaseInsensitiveAndTrimmed) {
  EXPECT_EQ(EncodingForLabel("UTF-8"), "utf-8");
  EXPECT_EQ(EncodingForLabel(" utf8\t"), "utf-8");
  EXPECT_EQ(EncodingForLabel("latin1"), "windows-1252");
  EXPECT_EQ(EncodingForLabel("ISO-8859-1"), "windows-1252");
  EXPECT_EQ(EncodingForLabel("us-ascii"), "windows-1252");
  EXPECT_EQ(EncodingForLabel("iso-8859-9"), "windows-1254");
  EXPECT_EQ(EncodingForLabel("Shift-JIS"), "shift_jis");
  EXPECT_EQ(EncodingForLabel("windows-31j"), "shift_jis");
  EXPECT_EQ(EncodingForLabel("ks_c_5601-1987"), "euc-kr");
  EXPECT_EQ(EncodingForLabel("gb2312"), "gbk");
  EXPECT_EQ(EncodingForLabel("iso-2022-kr"), "replacement");
  EXPECT_EQ(EncodingForLabel("utf-16"), "utf-16le");
  EXPECT_EQ(EncodingForLabel("klingon"), "");
  EXPECT_EQ(EncodingForLabel(""), "");
  EXPECT_EQ(EncodingForLabel(std::string(100, 'a')), "");
}

TEST(Crawld, ContentTypeCharsetParameter) {
  EXPECT_EQ(CharsetParam("text/html; charset=UTF-8"), "UTF-8");
  EXPECT_EQ(CharsetParam("text/html;charset=\"iso-8859-1\"; x=y"),
            "iso-8859-1");
  EXPECT_EQ(CharsetParam("text/html; foo=bar; CharSet = sjis ;"), "sjis");
  EXPECT_EQ(CharsetParam("text/html"), "");
  EXPECT_EQ(CharsetParam(""), "");
  EXPECT_EQ(CharsetParam("text/html; charset"), "");
  EXPECT_EQ(CharsetParam("text/html; charset=\"unterminated"), "unterminated");
}

// https://html.spec.whatwg.org/multipage/parsing.html#prescan-a-byte-stream-to-determine-its-encoding
TEST(HtmlSpec, PrescanMetaCharset) {
  EXPECT_EQ(PrescanMetaCharset("<meta charset=utf-8>"), "utf-8");
  EXPECT_EQ(PrescanMetaCharset("<META CHARSET='Shift_JIS'>"), "shift_jis");
  EXPECT_EQ(PrescanMetaCharset(
                "<meta http-equiv=\"Content-Type\" content=\"text/html; "
                "charset=euc-kr\">"),
            "euc-kr");
  // content= without the pragma does not count.
  EXPECT_EQ(PrescanMetaCharset("<meta content='text/html; charset=sjis'>"), "");
  // Comments and other tags' attributes are skipped.
  EXPECT_EQ(
      PrescanMetaCharset("<!-- <meta charset=sjis> --><meta charset=koi8-r>"),
      "koi8-r");
  EXPECT_EQ(PrescanMetaCharset("<div title='<meta charset=sjis>'><meta "
                               "charset=latin2>"),
            "iso-8859-2");
  // UTF-16 in a meta is impossible (the bytes are ASCII): UTF-8.
  EXPECT_EQ(PrescanMetaCharset("<meta charset=utf-16le>"), "utf-8");
  EXPECT_EQ(PrescanMetaCharset("<meta charset=x-user-defined>"),
            "windows-1252");
  // Unknown label: keep looking.
  EXPECT_EQ(PrescanMetaCharset("<meta charset=nope><meta charset=big5>"),
            "big5");
  // Only the first 1024 bytes.
  EXPECT_EQ(PrescanMetaCharset(std::string(1100, ' ') + "<meta charset=sjis>"),
            "");
  EXPECT_EQ(PrescanMetaCharset("<meta charset=sj"), "");
}

TEST(Encoding, Utf8Validity) {
  EXPECT_TRUE(
      IsValidUtf8("plain ascii text, long enough for the fast path", false));
  EXPECT_TRUE(IsValidUtf8("\xE6\x97\xA5\xF0\x9F\x98\x80", false));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF", false));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80", false));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80", false));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("ab\xE6\x97", false));
  EXPECT_TRUE(IsValidUtf8("ab\xE6\x97", true));  // cut tail allowed
  EXPECT_FALSE(IsValidUtf8("ab\xE6\x41", true));
}

TEST(Encoding, Utf8BoundaryNeverSplitsASequence) {
  std::string s =
      "a\xE6\x97\xA5"
      "b";
  EXPECT_EQ(Utf8Boundary(s, 0), 0u);
  EXPECT_EQ(Utf8Boundary(s, 1), 1u);
  EXPECT_EQ(Utf8Boundary(s, 2), 1u);
  EXPECT_EQ(Utf8Boundary(s, 3), 1u);
  EXPECT_EQ(Utf8Boundary(s, 4), 4u);
  EXPECT_EQ(Utf8Boundary(s, 99), s.size());
}

// https://encoding.spec.whatwg.org/#utf-8-decoder: one U+FFFD per maximal
// subpart of an ill-formed sequence.
TEST(Encoding, SanitizeMaximalSubparts) {
  std::string out;
  AppendSanitizedUtf8(
      "a\xF0\x9F\x98"
      "b\xFF"
      "c\xE0\x80",
      &out);
  EXPECT_EQ(out,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Crawld, DecodeKeepsValidUtf8WithoutCopy) {
  std::string storage;
  std::string body = "<p>h\xC3\xA9llo</p>";
  Decoded d = DecodeToUtf8(body, "", 1 << 20, &storage);
  EXPECT_EQ(d.charset, "utf-8");
  EXPECT_EQ(d.html.data(), body.data());
  EXPECT_FALSE(d.truncated);
}

}  // namespace
}  // namespace crawld::parser::internal
