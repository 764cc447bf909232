// WHATWG URL Standard parsing and resolution, one test per rule. Section
// anchors refer to https://url.spec.whatwg.org/. Expected values are what
// `new URL(input, base).href` gives in Node 20 (and browsers).
#include <gtest/gtest.h>

#include <string>

#include "url/url.h"

namespace crawld::url {
namespace {

// The serialization, or "invalid: <reason>".
std::string P(std::string_view input, std::string_view base = {}) {
  Result<Url> b = Status::InvalidArgument("none");
  if (!base.empty()) {
    b = Parse(base);
    if (!b.ok()) return "bad base";
  }
  Result<Url> r = Parse(input, b.ok() ? &b.value() : nullptr);
  if (!r.ok()) return "invalid: " + r.status().message();
  return std::string(r->href());
}

constexpr std::string_view kBase = "https://example.com/dir/page.html?x=1#top";

// https://url.spec.whatwg.org/#concept-basic-url-parser (steps 1-3)
TEST(WhatwgUrl, BasicParser_TrimsLeadingTrailingC0ControlAndSpace) {
  EXPECT_EQ(P(std::string("\x01 \x1f http://example.com/a \x00\x1f ", 29)),
            "http://example.com/a");
  EXPECT_EQ(P("  a  ", kBase), "https://example.com/dir/a");
}

TEST(WhatwgUrl, BasicParser_RemovesTabAndNewlineAnywhere) {
  EXPECT_EQ(P("ht\ttp://exa\nmple.com/p\ra\tth?q\n=1#f\tr"),
            "http://example.com/path?q=1#fr");
}

// https://url.spec.whatwg.org/#scheme-state
TEST(WhatwgUrl, SchemeState_LowercasesScheme) {
  EXPECT_EQ(P("HtTpS://example.com"), "https://example.com/");
  Result<Url> u = Parse("HTTP://x/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme(), "http");
}

TEST(WhatwgUrl, SchemeState_RelativeWithoutBaseFails) {
  Result<Url> r = Parse("/a/b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "missing scheme");
  EXPECT_FALSE(Parse("").ok());
  EXPECT_FALSE(Parse("1http://x/").ok());
}

// https://url.spec.whatwg.org/#special-authority-ignore-slashes-state
TEST(WhatwgUrl, SpecialSchemes_BackslashIsSlash) {
  EXPECT_EQ(P("http:\\\\example.com\\a\\b"), "http://example.com/a/b");
  EXPECT_EQ(P("\\\\other.example\\x", kBase), "https://other.example/x");
  EXPECT_EQ(P("a\\b", kBase), "https://example.com/dir/a/b");
  EXPECT_EQ(P("http:////example.com///a"), "http://example.com///a");
}

TEST(WhatwgUrl, NonSpecialSchemes_BackslashIsData) {
  EXPECT_EQ(P("foo://h/a\\b"), "foo://h/a\\b");
}

// https://url.spec.whatwg.org/#path-percent-encode-set
TEST(WhatwgUrl, PercentEncode_PathSet) {
  EXPECT_EQ(P("http://h/a b\"<>`{}|^'~!$&()*+,;=:@[]"),
            "http://h/a%20b%22%3C%3E%60%7B%7D|^'~!$&()*+,;=:@[]");
}

// https://url.spec.whatwg.org/#special-query-percent-encode-set
TEST(WhatwgUrl, PercentEncode_SpecialQuerySetEncodesApostrophe) {
  EXPECT_EQ(P("http://h/?a b\"<>'`{}"), "http://h/?a%20b%22%3C%3E%27`{}");
  EXPECT_EQ(P("foo://h/?a b'"), "foo://h/?a%20b'");
}

// https://url.spec.whatwg.org/#fragment-percent-encode-set
TEST(WhatwgUrl, PercentEncode_FragmentSet) {
  EXPECT_EQ(P("http://h/#a b\"<>`'{}#"), "http://h/#a%20b%22%3C%3E%60'{}#");
}

// https://url.spec.whatwg.org/#userinfo-percent-encode-set
TEST(WhatwgUrl, PercentEncode_UserinfoSet) {
  EXPECT_EQ(P("http://u;s=e[r]:p:w@h/"), "http://u%3Bs%3De%5Br%5D:p%3Aw@h/");
  EXPECT_EQ(P("http://a@b@h/"), "http://a%40b@h/");
}

TEST(WhatwgUrl, PercentEncode_Utf8AndExistingEscapesKept) {
  EXPECT_EQ(P("http://h/café?q=ü#ß"), "http://h/caf%C3%A9?q=%C3%BC#%C3%9F");
  EXPECT_EQ(P("http://h/%7e%zz%"), "http://h/%7e%zz%");
}

TEST(WhatwgUrl, PercentEncode_InvalidUtf8BecomesReplacementCharacter) {
  // A browser decodes the document first: each bad sequence is U+FFFD.
  EXPECT_EQ(P("http://h/a\xff"
              "b\xc3"),
            "http://h/a%EF%BF%BDb%EF%BF%BD");
  EXPECT_EQ(P("http://h/\xe2\x82x"), "http://h/%EF%BF%BDx");
}

// https://encoding.spec.whatwg.org/#utf-8-decoder: one U+FFFD per maximal
// subpart, not per bad sequence with its trailing bytes (utfcpp's
// replace_invalid would give one for each of the first three).
TEST(WhatwgUrl, PercentEncode_EachMaximalSubpartIsOneReplacement) {
  const std::string r = "%EF%BF%BD";
  EXPECT_EQ(P("http://h/\xe0\x80\x80"), "http://h/" + r + r + r);  // overlong
  EXPECT_EQ(P("http://h/\xed\xa0\x80"), "http://h/" + r + r + r);  // surrogate
  EXPECT_EQ(P("http://h/\xf4\x90\x80\x80"), "http://h/" + r + r + r + r);
  EXPECT_EQ(P("http://h/\xf0\x9f\x98x\xf0\x9f\x98\x80"),
            "http://h/" + r + "x%F0%9F%98%80");
  EXPECT_EQ(P("http://h/\x80\xbf?\xc3\xa9\xc3"),
            "http://h/" + r + r + "?%C3%A9" + r);
}

// https://url.spec.whatwg.org/#concept-host-parser
TEST(WhatwgUrl, Host_LowercasedAndPercentDecoded) {
  EXPECT_EQ(P("http://EXAMPLE.Com/"), "http://example.com/");
  EXPECT_EQ(P("http://ex%41mple.com/"), "http://example.com/");
  EXPECT_EQ(P("http://%E4%BE%8B.jp/"), "http://xn--fsq.jp/");
}

TEST(WhatwgUrl, Host_IdnToPunycode) {
  EXPECT_EQ(P("http://Bücher.de/"), "http://xn--bcher-kva.de/");
  EXPECT_EQ(P("http://faß.de/"), "http://xn--fa-hia.de/");  // nontransitional
  EXPECT_EQ(P("http://münchen。de/"), "http://xn--mnchen-3ya.de/");
  EXPECT_EQ(P("http://ＥＸＡＭＰＬＥ.com/"), "http://example.com/");
  EXPECT_EQ(P("http://XN--BCHER-KVA.de/"), "http://xn--bcher-kva.de/");
}

TEST(WhatwgUrl, Host_SymbolsAcceptedAsBrowsersDo) {
  // IDNA2008 disallows U+2603; UTS #46 (browsers) accepts it.
  EXPECT_EQ(P("http://☃.net/"), "http://xn--n3h.net/");
  EXPECT_EQ(P("http://xn--n3h.net/"), "http://xn--n3h.net/");
}

TEST(WhatwgUrl, Host_AsciiLabelsNotHyphenChecked) {
  EXPECT_EQ(P("http://-foo-.example/"), "http://-foo-.example/");
  EXPECT_EQ(P("http://ab--cd.example/"), "http://ab--cd.example/");
  EXPECT_EQ(P("http://a_b.example/"), "http://a_b.example/");
}

TEST(WhatwgUrl, Host_InvalidPunycodeFails) {
  EXPECT_EQ(P("http://xn--abc.com/"), "invalid: invalid host");
}

// https://url.spec.whatwg.org/#forbidden-host-code-point
TEST(WhatwgUrl, Host_ForbiddenCodePointsFail) {
  for (const char* in :
       {"http://exa mple.com/", "http://exa<mple.com/", "http://foo^bar/",
        "http://foo|bar/", "http://ex%zzample.com/", "http://ex%25ample.com/",
        "http://a%2Fb/", "http://exa%00mple/"}) {
    EXPECT_EQ(P(in), "invalid: invalid host") << in;
  }
  EXPECT_EQ(P("foo://ho st/"), "invalid: invalid host");
  EXPECT_EQ(P("foo://ho%20st/"), "foo://ho%20st/");  // opaque host
}

TEST(WhatwgUrl, Host_MissingFails) {
  EXPECT_EQ(P("http://"), "invalid: missing host");
  EXPECT_EQ(P("http://@/"), "invalid: missing host");
  EXPECT_EQ(P("http://user@:80/"), "invalid: missing host");
  EXPECT_EQ(P("foo://"), "foo://");  // non-special: empty host
}

// https://url.spec.whatwg.org/#concept-ipv4-parser
TEST(WhatwgUrl, Ipv4_NumberForms) {
  EXPECT_EQ(P("http://0x7f.1/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://0177.0.0.1/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://2130706433/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://127.1/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://1.2.65535/"), "http://1.2.255.255/");
  EXPECT_EQ(P("http://0x7F.0X0.00.01/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://0x/"), "http://0.0.0.0/");
  EXPECT_EQ(P("http://1.2.3.4./"), "http://1.2.3.4/");
  EXPECT_EQ(P("http://%31%32%37.0.0.1/"), "http://127.0.0.1/");
  EXPECT_EQ(P("http://0xffffffff/"), "http://255.255.255.255/");
}

TEST(WhatwgUrl, Ipv4_OverflowAndBadFormsFail) {
  for (const char* in :
       {"http://4294967296/", "http://0x100000000/", "http://256.0.0.1/",
        "http://1.2.3.256/", "http://1.2.65536/", "http://1.2.3.4.5/",
        "http://1.2.3.09/", "http://foo.1/", "http://1..2/",
        "http://999999999999999999999.1/", "http://09.1/"}) {
    EXPECT_EQ(P(in), "invalid: invalid IPv4") << in;
  }
  // Not ending in a number: a domain.
  EXPECT_EQ(P("http://1.2.3.0x1g/"), "http://1.2.3.0x1g/");
}

// https://url.spec.whatwg.org/#concept-ipv6-parser
TEST(WhatwgUrl, Ipv6_CompressionAndSerialization) {
  EXPECT_EQ(P("http://[::1]/"), "http://[::1]/");
  EXPECT_EQ(P("http://[::]/"), "http://[::]/");
  EXPECT_EQ(P("http://[2001:DB8:0:0:0:0:0:1]/"), "http://[2001:db8::1]/");
  EXPECT_EQ(P("http://[2001:db8:0:0:1:0:0:1]/"), "http://[2001:db8::1:0:0:1]/");
  // Two runs of two zeros: the first one is compressed.
  EXPECT_EQ(P("http://[1:0:0:2::3:0]/"), "http://[1::2:0:0:3:0]/");
  EXPECT_EQ(P("http://[1:2:3:4:5:6:7:8]/"), "http://[1:2:3:4:5:6:7:8]/");
  EXPECT_EQ(P("http://[00001::]/"), "invalid: invalid IPv6");
}

TEST(WhatwgUrl, Ipv6_EmbeddedIpv4) {
  EXPECT_EQ(P("http://[::ffff:192.168.0.1]/"), "http://[::ffff:c0a8:1]/");
  EXPECT_EQ(P("http://[0:0:0:0:0:0:13.1.68.3]/"), "http://[::d01:4403]/");
  EXPECT_EQ(P("http://[::1.2.3]/"), "invalid: invalid IPv6");
  EXPECT_EQ(P("http://[::1.2.3.04]/"), "invalid: invalid IPv6");
}

TEST(WhatwgUrl, Ipv6_InvalidFormsFail) {
  for (const char* in :
       {"http://[::1/", "http://[:1]/", "http://[1::2::3]/",
        "http://[1:2:3:4:5:6:7:8:9]/", "http://[fe80::1%25eth0]/",
        "http://[::1]x/", "http://[::1.2.3.4x]/"}) {
    EXPECT_EQ(P(in), "invalid: invalid IPv6") << in;
  }
}

// https://url.spec.whatwg.org/#port-state
TEST(WhatwgUrl, Port_DefaultRemovedOthersKept) {
  EXPECT_EQ(P("http://h:80/"), "http://h/");
  EXPECT_EQ(P("https://h:0443/"), "https://h/");
  EXPECT_EQ(P("http://h:443/"), "http://h:443/");
  EXPECT_EQ(P("http://h:0/"), "http://h:0/");
  EXPECT_EQ(P("http://h:65535/"), "http://h:65535/");
  EXPECT_EQ(P("http://h:/"), "http://h/");
  EXPECT_EQ(P("ftp://h:21/"), "ftp://h/");
}

TEST(WhatwgUrl, Port_OutOfRangeOrNonDigitFails) {
  for (const char* in :
       {"http://h:65536/", "http://h:8a/", "http://h:+80/", "http://h:80:80/",
        "http://h:99999999999999999999/", "http://h: 80/"}) {
    EXPECT_EQ(P(in), "invalid: invalid port") << in;
  }
}

TEST(WhatwgUrl, Port_Accessors) {
  Result<Url> a = Parse("https://h/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port(), 443);
  EXPECT_FALSE(a->has_explicit_port());
  Result<Url> b = Parse("http://h:8080/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port(), 8080);
  EXPECT_TRUE(b->has_explicit_port());
  Result<Url> c = Parse("mailto:x@y");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port(), 0);
}

// https://url.spec.whatwg.org/#single-dot-path-segment and #double-dot...
TEST(WhatwgUrl, Path_DotSegmentsRemoved) {
  EXPECT_EQ(P("http://h/a/b/../../../../c"), "http://h/c");
  EXPECT_EQ(P("http://h/./a/./b/."), "http://h/a/b/");
  EXPECT_EQ(P("http://h/a/b/.."), "http://h/a/");
  EXPECT_EQ(P("http://h/a/b/c/./../../g"), "http://h/a/g");
  EXPECT_EQ(P("http://h/a/..."), "http://h/a/...");
  EXPECT_EQ(P("http://h/a/..;b"), "http://h/a/..;b");
}

TEST(WhatwgUrl, Path_PercentEncodedDotSegmentsRemoved) {
  EXPECT_EQ(P("http://h/%2e%2E/x"), "http://h/x");
  EXPECT_EQ(P("http://h/a/%2e/b"), "http://h/a/b");
  EXPECT_EQ(P("http://h/a/.%2e/b"), "http://h/b");
  EXPECT_EQ(P("http://h/a/%2E./b"), "http://h/b");
  EXPECT_EQ(P("http://h/a/%2e"), "http://h/a/");
  EXPECT_EQ(P("http://h/a%2Fb"), "http://h/a%2Fb");
}

TEST(WhatwgUrl, Path_EmptyBecomesSlashForSpecial) {
  EXPECT_EQ(P("http://example.com"), "http://example.com/");
  EXPECT_EQ(P("http://example.com?q"), "http://example.com/?q");
  EXPECT_EQ(P("foo://h"), "foo://h");
}

// https://url.spec.whatwg.org/#relative-state and friends
TEST(WhatwgUrl, Relative_SchemeRelative) {
  EXPECT_EQ(P("//other.example/x", kBase), "https://other.example/x");
  EXPECT_EQ(P("//other.example", kBase), "https://other.example/");
  EXPECT_EQ(P("///x", kBase), "https://x/");
  EXPECT_EQ(P("//", kBase), "invalid: missing host");
}

TEST(WhatwgUrl, Relative_PathAbsoluteAndPathRelative) {
  EXPECT_EQ(P("/a", kBase), "https://example.com/a");
  EXPECT_EQ(P("a/b", kBase), "https://example.com/dir/a/b");
  EXPECT_EQ(P("../a", kBase), "https://example.com/a");
  EXPECT_EQ(P("../../../a", kBase), "https://example.com/a");
  EXPECT_EQ(P(".", kBase), "https://example.com/dir/");
  EXPECT_EQ(P("a:b", kBase), "a:b");  // a scheme, not a path
  EXPECT_EQ(P("./a:b", kBase), "https://example.com/dir/a:b");
}

TEST(WhatwgUrl, Relative_QueryFragmentAndEmpty) {
  EXPECT_EQ(P("?q=1", kBase), "https://example.com/dir/page.html?q=1");
  EXPECT_EQ(P("?", kBase), "https://example.com/dir/page.html?");
  EXPECT_EQ(P("#f", kBase), "https://example.com/dir/page.html?x=1#f");
  EXPECT_EQ(P("#", kBase), "https://example.com/dir/page.html?x=1#");
  EXPECT_EQ(P("", kBase), "https://example.com/dir/page.html?x=1");
}

TEST(WhatwgUrl, Relative_KeepsBaseUserinfoAndPort) {
  EXPECT_EQ(P("x?y", "http://u:p@h:8080/a/b"), "http://u:p@h:8080/a/x?y");
}

TEST(WhatwgUrl, Relative_SameSchemeWithoutSlashesIsRelative) {
  EXPECT_EQ(P("https:x", kBase), "https://example.com/dir/x");
  EXPECT_EQ(P("http:x", kBase), "http://x/");
  EXPECT_EQ(P("https:/x", kBase), "https://example.com/x");
}

// https://url.spec.whatwg.org/#cannot-have-a-username-password-port
TEST(WhatwgUrl, OpaquePath_SchemesParseButAreNotHttp) {
  for (const char* in :
       {"javascript:void(0)", "mailto:a@b.c?subject=Hi there",
        "data:text/plain,hello world", "tel:+1-555-0100", "about:blank"}) {
    Result<Url> u = Parse(in);
    ASSERT_TRUE(u.ok()) << in;
    EXPECT_FALSE(u->is_http()) << in;
    EXPECT_TRUE(u->has_opaque_path()) << in;
    EXPECT_TRUE(u->host().empty()) << in;
  }
  EXPECT_EQ(P("JavaScript:void(0);"), "javascript:void(0);");
  EXPECT_EQ(P("mailto:a@b.c?subject=Hi there"),
            "mailto:a@b.c?subject=Hi%20there");
  EXPECT_EQ(P("data:text/plain,hello world"), "data:text/plain,hello world");
}

TEST(WhatwgUrl, OpaquePath_BaseOnlyTakesFragments) {
  EXPECT_EQ(P("#f", "mailto:x@y"), "mailto:x@y#f");
  EXPECT_EQ(P("x", "mailto:x@y"), "invalid: missing scheme");
  EXPECT_EQ(P("", "mailto:x@y"), "invalid: missing scheme");
}

TEST(WhatwgUrl, OtherSpecialSchemes) {
  Result<Url> ftp = Parse("FTP://user@ftp.example.com:2121/x");
  ASSERT_TRUE(ftp.ok());
  EXPECT_FALSE(ftp->is_http());
  EXPECT_TRUE(ftp->is_special());
  EXPECT_EQ(ftp->href(), "ftp://user@ftp.example.com:2121/x");
  EXPECT_EQ(P("file:///C|/x"), "file:///C:/x");
  EXPECT_EQ(P("file://localhost/etc/hosts"), "file:///etc/hosts");
  EXPECT_EQ(P("file:c:\\foo\\bar"), "file:///c:/foo/bar");
  EXPECT_EQ(P("..", "file:///C:/dir/file.txt"), "file:///C:/");
  EXPECT_EQ(P("ws://h:80/chat"), "ws://h/chat");
}

TEST(WhatwgUrl, NonSpecial_PathThatLooksLikeHostGetsDotPrefix) {
  Result<Url> u = Parse("web+demo:/.//not-a-host/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->href(), "web+demo:/.//not-a-host/");
  EXPECT_EQ(u->path(), "//not-a-host/");
  EXPECT_EQ(P("..//x", "foo:/a"), "foo:/.//x");
  EXPECT_EQ(P(".//x", "foo:/a/b"), "foo:/a//x");
}

TEST(WhatwgUrl, Userinfo_Serialization) {
  EXPECT_EQ(P("http://:@h/"), "http://h/");
  EXPECT_EQ(P("http://user:@h/"), "http://user@h/");
  EXPECT_EQ(P("http://:pass@h/"), "http://:pass@h/");
  Result<Url> u = Parse("http://us%20er:p%40ss@h/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->username(), "us%20er");
  EXPECT_EQ(u->password(), "p%40ss");
  EXPECT_EQ(u->host(), "h");
}

TEST(WhatwgUrl, Accessors) {
  Result<Url> u =
      Parse("HTTPS://User:Pw@WWW.Example.COM:8443/a/b.html?q=1&r#frag");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->href(),
            "https://User:Pw@www.example.com:8443/a/b.html?q=1&r#frag");
  EXPECT_EQ(u->scheme(), "https");
  EXPECT_EQ(u->username(), "User");
  EXPECT_EQ(u->password(), "Pw");
  EXPECT_EQ(u->host(), "www.example.com");
  EXPECT_EQ(u->port(), 8443);
  EXPECT_EQ(u->path(), "/a/b.html");
  EXPECT_TRUE(u->has_query());
  EXPECT_EQ(u->query(), "q=1&r");
  EXPECT_TRUE(u->has_fragment());
  EXPECT_EQ(u->fragment(), "frag");
  EXPECT_EQ(u->path_and_query(), "/a/b.html?q=1&r");
  EXPECT_EQ(u->origin_key(), "https://www.example.com:8443");
  EXPECT_TRUE(u->is_http());

  Result<Url> v = Parse("http://[::1]/");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->host(), "[::1]");
  EXPECT_EQ(v->origin_key(), "http://[::1]:80");
  EXPECT_FALSE(v->has_query());
  EXPECT_EQ(v->path_and_query(), "/");

  Result<Url> w = Parse("http://h/p?");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->has_query());
  EXPECT_EQ(w->query(), "");
  EXPECT_EQ(w->path_and_query(), "/p?");
}

TEST(WhatwgUrl, UrlIsAValueType) {
  Result<Url> u = Parse("http://h/a?b#c");
  ASSERT_TRUE(u.ok());
  Url copy = u.value();
  Url moved = std::move(u.value());
  EXPECT_EQ(copy.href(), "http://h/a?b#c");
  EXPECT_EQ(copy.path(), "/a");
  EXPECT_EQ(moved.query(), "b");
  EXPECT_EQ(copy, moved);
  // Resolving against a Url that has since been destroyed is not possible;
  // the result owns its storage.
  Result<Url> r = Status::InvalidArgument("x");
  {
    Result<Url> base = Parse("http://h/dir/");
    ASSERT_TRUE(base.ok());
    r = Parse("x", &base.value());
  }
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->href(), "http://h/dir/x");
}

TEST(WhatwgUrl, ReparsingTheSerializationIsStable) {
  for (const char* in :
       {"http://h/a b?c d#e f", "HTTP://EX%41MPLE.com:80/./%2e/x",
        "http://[::ffff:1.2.3.4]/", "http://Bücher.de/ü?ü#ü", "mailto:a@b?x y",
        "web+demo:/.//not-a-host/", "file:///C|/x/../y", "http://h/\xff"}) {
    Result<Url> a = Parse(in);
    ASSERT_TRUE(a.ok()) << in;
    Result<Url> b = Parse(a->href());
    ASSERT_TRUE(b.ok()) << in;
    EXPECT_EQ(a->href(), b->href()) << in;
  }
}

TEST(WhatwgUrl, CrawldHugeInputRefused) {
  std::string huge = "http://h/" + std::string(2u << 20, 'a');
  Result<Url> r = Parse(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "too long");
}

// Issue 16: ParseInto gives what Parse gives, reusing one Url for many
// inputs (a page's links); a failure leaves it empty.
TEST(ParseInto, Issue16_SameResultsAsParseIntoOneReusedUrl) {
  const Url base = Parse(kBase).value();
  const std::string_view inputs[] = {"other.html",
                                     "/abs?q=2",
                                     "//cdn.example.org:8080/x",
                                     "http://[::1]:8/",
                                     "HTTP://EXAMPLE.com",
                                     "#frag",
                                     "http://a b/",
                                     "https://ex.com/%7e/a/../b"};
  Url reused;
  for (std::string_view in : inputs) {
    Result<Url> want = Parse(in, &base);
    Status got = ParseInto(in, &base, &reused);
    ASSERT_EQ(got.ok(), want.ok()) << in;
    if (!want.ok()) {
      EXPECT_EQ(got.message(), want.status().message()) << in;
      EXPECT_TRUE(reused.href().empty()) << in;
      EXPECT_FALSE(reused.has_host()) << in;
      continue;
    }
    EXPECT_TRUE(reused == *want) << in;
    EXPECT_EQ(reused.host(), want->host()) << in;
    EXPECT_EQ(reused.port(), want->port()) << in;
    EXPECT_EQ(reused.path(), want->path()) << in;
    EXPECT_EQ(reused.query(), want->query()) << in;
    EXPECT_EQ(reused.has_query(), want->has_query()) << in;
    EXPECT_EQ(reused.fragment(), want->fragment()) << in;
    EXPECT_EQ(reused.has_fragment(), want->has_fragment()) << in;
    EXPECT_EQ(reused.origin_key(), want->origin_key()) << in;
  }
  // A query and fragment of an earlier URL do not leak into the next.
  ASSERT_TRUE(ParseInto("http://h/p?q#f", nullptr, &reused).ok());
  ASSERT_TRUE(ParseInto("http://h/p", nullptr, &reused).ok());
  EXPECT_FALSE(reused.has_query());
  EXPECT_FALSE(reused.has_fragment());
  EXPECT_FALSE(reused.has_explicit_port());
}

// crawld's own: the host a worker keys routing, host records and recrawl
// hand-offs by, from a URL or an origin key.
TEST(HostOf, SerializedHostOfAUrlOrAnOriginKey) {
  EXPECT_EQ(HostOf("https://Example.COM:8443/a?b#c"), "example.com");
  EXPECT_EQ(HostOf("https://example.com:443"), "example.com");
  EXPECT_EQ(HostOf("http://user:pw@h.example/"), "h.example");
  EXPECT_EQ(HostOf("http://Bücher.example/"), "xn--bcher-kva.example");
  EXPECT_EQ(HostOf("http://0x7f.1/"), "127.0.0.1");
  EXPECT_EQ(HostOf("http://[::1]:8080/"), "[::1]");
  // The host as Parse() gives it, so equal to what a Url says.
  Result<Url> u = Parse("https://www.example.org./x");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(HostOf(u->href()), u->host());
}

TEST(HostOf, EmptyWhenNoHostOrNoUrl) {
  EXPECT_EQ(HostOf("mailto:a@example.com"), "");
  EXPECT_EQ(HostOf("file:///etc/passwd"), "");
  EXPECT_EQ(HostOf("/relative/path"), "");
  EXPECT_EQ(HostOf("http://exa mple.com/"), "");
  EXPECT_EQ(HostOf(""), "");
}

}  // namespace
}  // namespace crawld::url
