// Extractor tests, named after the requirement they check: HtmlSpec_* for
// the HTML Living Standard (https://html.spec.whatwg.org/multipage/),
// Encoding_* for the WHATWG Encoding Standard, MetaRobots_* for Google's
// robots meta tag rules, Crawld_* for our own choices and limits.
#include "parser/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "url/url.h"

namespace crawld::parser {
namespace {

constexpr char kDoc[] = "http://example.com/dir/page.html";

url::Url DocUrl(std::string_view s = kDoc) {
  Result<url::Url> u = url::Parse(s);
  EXPECT_TRUE(u.ok()) << s;
  return u.ok() ? std::move(u).value() : url::Url();
}

Page ExtractHtml(std::string_view html, std::string_view content_type = "",
                 const Options& options = Options(),
                 std::string_view doc = kDoc,
                 std::string_view token = "crawld") {
  Extractor ex(options);
  return ex.Extract(html, content_type, DocUrl(doc), token);
}

std::vector<std::string> Urls(const Page& p) {
  std::vector<std::string> v;
  for (const Link& l : p.links) v.push_back(l.url);
  return v;
}

std::vector<std::string> OtherUrls(const Page& p) {
  std::vector<std::string> v;
  for (const Link& l : p.other_links) v.push_back(l.url);
  return v;
}

using V = std::vector<std::string>;

// --- Links and resolution -------------------------------------------------

TEST(HtmlSpec, AnchorsAndAreasResolvedInDocumentOrder) {
  Page p = ExtractHtml(
      "<a href=a.html>1</a><map><area href='/b'></map>"
      "<a href='https://other.org/x?y#z'>2</a><a>no href</a>");
  EXPECT_EQ(Urls(p), (V{"http://example.com/dir/a.html", "http://example.com/b",
                        "https://other.org/x?y#z"}));
  ASSERT_EQ(p.links.size(), 3u);
  EXPECT_EQ(p.links[0].kind, LinkKind::kAnchor);
  EXPECT_EQ(p.links[1].kind, LinkKind::kArea);
  EXPECT_EQ(p.base_url, kDoc);
  EXPECT_EQ(p.charset, "utf-8");
  EXPECT_FALSE(p.truncated);
}

// https://html.spec.whatwg.org/multipage/urls-and-fetching.html#parse-a-url:
// an empty href resolves to the document URL itself; whitespace is stripped.
TEST(HtmlSpec, EmptyHrefIsTheDocumentAndWhitespaceIsStripped) {
  Page p = ExtractHtml("<a href=''>self</a><a href='  \n/x \t'>x</a>");
  EXPECT_EQ(Urls(p), (V{kDoc, "http://example.com/x"}));
}

TEST(Crawld, NonHttpSchemesDroppedNotCounted) {
  Page p = ExtractHtml(
      "<a href='mailto:a@b.c'>m</a><a href='javascript:void(0)'>j</a>"
      "<a href='data:text/html,hi'>d</a><a href='tel:+1555'>t</a>"
      "<a href='ftp://example.com/f'>f</a><a href='/ok'>ok</a>");
  EXPECT_EQ(Urls(p), (V{"http://example.com/ok"}));
  EXPECT_EQ(p.invalid_links, 0u);
}

TEST(Crawld, UnresolvableHrefsCounted) {
  Page p = ExtractHtml(
      "<a href='http://[::1'>v6</a><a href='https://exa mple.com/'>sp</a>"
      "<a href='http://example.com:99999/'>port</a><a href='/good'>g</a>");
  EXPECT_EQ(Urls(p), (V{"http://example.com/good"}));
  EXPECT_EQ(p.invalid_links, 3u);
}

// --- Malformed markup (the HTML parser's error recovery) -------------------

TEST(HtmlSpec, UnclosedTagsAndUnquotedAttributes) {
  Page p = ExtractHtml(
      "<html><body><div><p>text <a href=/one>one<div><a href=two.html "
      "class=x>two</a><td><a href = \"/three\" >three");
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/one", "http://example.com/dir/two.html",
               "http://example.com/three"}));
}

TEST(HtmlSpec, StrayLessThanSignsAreText) {
  Page p = ExtractHtml("<p>1 < 2 <3 <> </ > <a href='/after'>after</a> a<b");
  EXPECT_EQ(Urls(p), (V{"http://example.com/after"}));
  EXPECT_NE(p.text.find("1 < 2 <3 <>"), std::string::npos) << p.text;
}

// Nested <a>: the parser closes the first anchor before opening the second
// (adoption agency algorithm); both links exist.
TEST(HtmlSpec, NestedAnchorsBothExtracted) {
  Page p =
      ExtractHtml("<a href='/outer'>outer <a href='/inner'>inner</a> tail</a>");
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/outer", "http://example.com/inner"}));
}

// --- Character references in attributes -----------------------------------
// https://html.spec.whatwg.org/multipage/parsing.html#named-character-reference-state

TEST(HtmlSpec, EntitiesInAttributesDecoded) {
  Page p = ExtractHtml(
      "<a href='/q?a=1&amp;b=2'>1</a><a href='&#x2F;slash&#47;x'>2</a>"
      "<a href='/e?x=&quot;'>3</a>");
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/q?a=1&b=2", "http://example.com/slash/x",
               "http://example.com/e?x=%22"}));
}

TEST(HtmlSpec, LegacyNamedEntityWithoutSemicolon) {
  // "&amp" without ';' is decoded (it is in the legacy list) when not
  // followed by '=' or an alphanumeric; "&copy=" inside an attribute is left
  // alone for historical reasons (query strings).
  Page p = ExtractHtml(
      "<a href='/x?a=1&amp/b'>1</a><a href='/y?q=1&copy=2'>2</a>"
      "<a href='/z?a&ltb'>3</a>");
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/x?a=1&/b", "http://example.com/y?q=1&copy=2",
               "http://example.com/z?a&ltb"}));
}

// --- <base> ------------------------------------------------------------------
// https://html.spec.whatwg.org/multipage/semantics.html#the-base-element

TEST(HtmlSpec, RelativeBaseResolvedAgainstDocument) {
  Page p =
      ExtractHtml("<head><base href='../other/'></head><a href='x.html'>x</a>");
  EXPECT_EQ(p.base_url, "http://example.com/other/");
  EXPECT_EQ(Urls(p), (V{"http://example.com/other/x.html"}));
}

TEST(HtmlSpec, OnlyFirstBaseWithHrefCounts) {
  Page p = ExtractHtml(
      "<base target=_blank><base href='http://a.example/1/'>"
      "<base href='http://b.example/2/'><a href='x'>x</a>");
  EXPECT_EQ(p.base_url, "http://a.example/1/");
  EXPECT_EQ(Urls(p), (V{"http://a.example/1/x"}));
}

TEST(HtmlSpec, BaseWithoutHrefIgnored) {
  Page p = ExtractHtml("<base target=_top><a href='x'>x</a>");
  EXPECT_EQ(p.base_url, kDoc);
  EXPECT_EQ(Urls(p), (V{"http://example.com/dir/x"}));
}

// The frozen base URL applies to the whole document, also to links that come
// before a <base> placed (invalidly) in the body.
TEST(HtmlSpec, BaseInBodyAppliesToAllLinks) {
  Page p = ExtractHtml(
      "<body><a href='before'>b</a><base href='https://cdn.example/root/'>"
      "<a href='after'>a</a>");
  EXPECT_EQ(p.base_url, "https://cdn.example/root/");
  EXPECT_EQ(Urls(p), (V{"https://cdn.example/root/before",
                        "https://cdn.example/root/after"}));
}

TEST(HtmlSpec, UnparseableBaseFallsBackToDocumentUrl) {
  Page p = ExtractHtml("<base href='http://[broken'><a href='x'>x</a>");
  EXPECT_EQ(p.base_url, kDoc);
  EXPECT_EQ(Urls(p), (V{"http://example.com/dir/x"}));
}

// --- <link>, meta refresh, frames -------------------------------------------

TEST(HtmlSpec, LinkRelIsCaseInsensitiveTokenSet) {
  Page p = ExtractHtml(
      "<head><link rel='stylesheet' href='/s.css'>"
      "<link rel=' Canonical ' href='/canon'>"
      "<link rel='alternate' hreflang=de href='/de/'>"
      "<link rel='alternate stylesheet' href='/alt.css'>"
      "<link rel='NEXT nofollow' href='?page=2'>"
      "<link rel='icon' href='/favicon.ico'></head>");
  ASSERT_EQ(p.other_links.size(), 3u);
  EXPECT_EQ(p.other_links[0].url, "http://example.com/canon");
  EXPECT_EQ(p.other_links[0].kind, LinkKind::kCanonical);
  EXPECT_EQ(p.other_links[1].url, "http://example.com/de/");
  EXPECT_EQ(p.other_links[1].kind, LinkKind::kAlternate);
  EXPECT_EQ(p.other_links[2].url, "http://example.com/dir/page.html?page=2");
  EXPECT_EQ(p.other_links[2].kind, LinkKind::kNext);
  EXPECT_TRUE(p.other_links[2].nofollow);
  EXPECT_EQ(p.canonical, "http://example.com/canon");
  EXPECT_TRUE(p.links.empty());  // not hyperlinks (issue 15)
}

TEST(Crawld, CanonicalIsFirstResolvedAgainstBase) {
  Page p = ExtractHtml(
      "<base href='https://b.example/x/'><link rel=canonical href='c1'>"
      "<link rel=canonical href='/c2'>");
  EXPECT_EQ(p.canonical, "https://b.example/x/c1");
  Page none = ExtractHtml("<link rel=canonical href='mailto:x@y'><p>hi");
  EXPECT_EQ(none.canonical, "");
}

// https://html.spec.whatwg.org/multipage/semantics.html#shared-declarative-refresh-steps
TEST(HtmlSpec, MetaRefreshLenientParsing) {
  Page p = ExtractHtml(
      "<meta http-equiv='Refresh' content='5; url=/r1'>"
      "<meta http-equiv=refresh content=\"0;URL='/r2'\">"
      "<meta http-equiv=refresh content='1, /r3'>"
      "<meta http-equiv=refresh content='2.5  ;  Url = \"/r4\" trailing'>"
      "<meta http-equiv=refresh content='3'>"
      "<meta http-equiv=refresh content='soon; url=/bad'>"
      "<meta http-equiv=refresh content='7;/r5'>");
  EXPECT_EQ(OtherUrls(p), (V{"http://example.com/r1", "http://example.com/r2",
                             "http://example.com/r3", "http://example.com/r4",
                             "http://example.com/r5"}));
  for (const Link& l : p.other_links) EXPECT_EQ(l.kind, LinkKind::kRefresh);
  EXPECT_TRUE(p.links.empty());  // not hyperlinks (issue 15)
}

TEST(Crawld, FramesToggle) {
  const char* html = "<frameset><frame src='/f1'><frame src='f2'></frameset>";
  Page on = ExtractHtml(html);
  EXPECT_EQ(OtherUrls(on),
            (V{"http://example.com/f1", "http://example.com/dir/f2"}));
  EXPECT_EQ(on.other_links[0].kind, LinkKind::kFrame);
  Page iframe = ExtractHtml("<p>x<iframe src='/if'>fallback text</iframe>");
  ASSERT_EQ(iframe.other_links.size(), 1u);
  EXPECT_EQ(iframe.other_links[0].kind, LinkKind::kIframe);
  EXPECT_EQ(iframe.text, "x");
  Options off;
  off.extract_frames = false;
  EXPECT_TRUE(ExtractHtml(html, "", off).other_links.empty());
  EXPECT_TRUE(
      ExtractHtml("<iframe src='/if'></iframe>", "", off).other_links.empty());
}

TEST(HtmlSpec, RelNofollowPerLink) {
  Page p = ExtractHtml(
      "<a href=/1 rel='NoFollow noopener'>1</a><a href=/2 rel=noopener>2</a>"
      "<a href=/3 rel=nofollowing>3</a><area href=/4 rel=nofollow>");
  ASSERT_EQ(p.links.size(), 4u);
  EXPECT_TRUE(p.links[0].nofollow);
  EXPECT_FALSE(p.links[1].nofollow);
  EXPECT_FALSE(p.links[2].nofollow);
  EXPECT_TRUE(p.links[3].nofollow);
  EXPECT_FALSE(p.meta_nofollow);
}

// --- meta robots
// ---------------------------------------------------------------

TEST(MetaRobots, GenericNoindexNofollow) {
  Page p = ExtractHtml("<meta name=robots content='NOINDEX, follow'>");
  EXPECT_TRUE(p.meta_noindex);
  EXPECT_FALSE(p.meta_nofollow);
  Page q = ExtractHtml("<meta name='Robots' content='nofollow'>");
  EXPECT_FALSE(q.meta_noindex);
  EXPECT_TRUE(q.meta_nofollow);
}

TEST(MetaRobots, NoneMeansBothAllMeansNeither) {
  Page p = ExtractHtml("<meta name=robots content=none>");
  EXPECT_TRUE(p.meta_noindex);
  EXPECT_TRUE(p.meta_nofollow);
  Page q = ExtractHtml("<meta name=robots content=all>");
  EXPECT_FALSE(q.meta_noindex);
  EXPECT_FALSE(q.meta_nofollow);
}

TEST(MetaRobots, AgentSpecificTokenOnlyForUs) {
  Page ours = ExtractHtml("<meta name='CrawlD' content='noindex,nofollow'>");
  EXPECT_TRUE(ours.meta_noindex);
  EXPECT_TRUE(ours.meta_nofollow);
  Page other = ExtractHtml("<meta name=googlebot content=noindex>");
  EXPECT_FALSE(other.meta_noindex);
  Page custom = ExtractHtml("<meta name=mybot content=nofollow>", "", Options(),
                            kDoc, "MyBot");
  EXPECT_TRUE(custom.meta_nofollow);
  EXPECT_FALSE(custom.meta_noindex);
}

// --- title, lang, text -------------------------------------------------------

TEST(HtmlSpec, TitleStrippedAndCollapsed) {
  Page p = ExtractHtml(
      "<html lang=' de-CH '><head><title>\n  Hello &amp;\t World  </title>"
      "<title>second</title></head><svg><title>svg</title></svg>");
  EXPECT_EQ(p.title, "Hello & World");
  EXPECT_EQ(p.lang, "de-CH");
  EXPECT_EQ(p.text.find("second"), std::string::npos);
}

TEST(Crawld, TextExcludesScriptStyleTemplateNoscript) {
  Page p = ExtractHtml(
      "<head><title>T</title><style>p{color:red}</style>"
      "<script>var x='<a href=/s>';</script></head><body>"
      "<h1>Head  line</h1><p>First\n\n paragraph.</p><p>Second</p>"
      "<script>alert(1)</script><noscript><a href='/ns'>no js</a></noscript>"
      "<template><a href='/tpl'>tpl</a></template>tail<br>end</body>");
  EXPECT_EQ(p.text, "Head line First paragraph. Second tail end");
  // Links in <template> (inert) and <script> are not links; nor, in a
  // browser with scripting on (the default), those in <noscript>: issue 15.
  EXPECT_EQ(Urls(p), V{});
}

// https://html.spec.whatwg.org/multipage/parsing.html#parsing-main-inbody
// ("A start tag whose tag name is "noscript", if the scripting flag is
// enabled": the generic raw text element parsing algorithm).
TEST(HtmlSpec, Issue15_NoscriptIsRawTextWithScripting) {
  const char* html =
      "<head><noscript><link rel=stylesheet href=/ns.css><base href=/nb/>"
      "</noscript></head><body><p><noscript><a href=/ns1>1</a>"
      "<textarea></noscript><a href=/after>after</a></textarea>";
  Page on = ExtractHtml(html);
  EXPECT_EQ(Urls(on), (V{"http://example.com/after"}));
  EXPECT_EQ(on.base_url, kDoc);
  // Scripting off: <noscript> is markup, as Gumbo builds it.
  Options off;
  off.scripting = false;
  Page p = ExtractHtml("<p><noscript><a href=/ns1>1</a></noscript>", "", off);
  EXPECT_EQ(Urls(p), (V{"http://example.com/ns1"}));
  // A <noscript> inside <select> is ignored by the tree builder: its
  // content is markup (the pre-pass guesses, Gumbo's tree settles it).
  Page sel = ExtractHtml(
      "<select><noscript><option><a href=/x></select>"
      "<noscript><a href=/y></noscript><a href=/z>");
  EXPECT_EQ(Urls(sel), (V{"http://example.com/z"}));
}

// https://html.spec.whatwg.org/multipage/semantics.html#set-the-frozen-base-url
TEST(HtmlSpec, Issue15_BaseWithDataOrJavascriptUrlIsIgnored) {
  for (const char* base :
       {"javascript:void(0)", " JavaScript:x", "data:,x", "http://[::1"}) {
    Page p = ExtractHtml(std::string("<base href='") + base +
                         "'><base href=/second/><a href=rel>r</a>");
    EXPECT_EQ(Urls(p), (V{"http://example.com/dir/rel"})) << base;
    EXPECT_EQ(p.base_url, kDoc) << base;
  }
}

// Only HTML a/area are in document.links: an SVG <a> is another outlink.
TEST(HtmlSpec, Issue15_SvgAnchorsAreNotHyperlinks) {
  Page p = ExtractHtml(
      "<svg><a xlink:href=/xl>x</a><a href=/sv>s</a>"
      "<foreignObject><a href=/fo>f</a></foreignObject></svg>");
  EXPECT_EQ(Urls(p), (V{"http://example.com/fo"}));
  ASSERT_EQ(p.other_links.size(), 2u);
  EXPECT_EQ(p.other_links[0].kind, LinkKind::kSvgAnchor);
  EXPECT_EQ(p.other_links[0].url, "http://example.com/xl");
}

// The URL parser percent-encodes control characters (WHATWG URL, "C0
// control percent-encode set"); Gumbo would have made them U+FFFD.
TEST(HtmlSpec, Issue15_ControlCharactersInHrefsArePercentEncoded) {
  Page p = ExtractHtml(
      "<a href='/a\x01"
      "b\x1f"
      "c'>1</a><a href='/c\x7f"
      "d'>2</a>"
      "<a href='/d\xC2\x85"
      "e'>3</a><a href='/e&#1;f'>4</a>"
      "<a href='\x02/g\x03'>5</a>");
  // Leading and trailing C0 controls are stripped by the URL parser.
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/a%01b%1Fc", "http://example.com/c%7Fd",
               "http://example.com/d%C2%85e", "http://example.com/e%01f",
               "http://example.com/g"}));
}

TEST(Crawld, TextDisabledAndCapped) {
  Options off;
  off.extract_text = false;
  EXPECT_EQ(ExtractHtml("<p>hello</p>", "", off).text, "");
  Options small;
  small.max_text_bytes = 8;
  Page p = ExtractHtml("<p>h\xC3\xA9llo w\xC3\xB6rld</p>", "", small);
  EXPECT_EQ(p.text, "h\xC3\xA9llo w");
  // Never half a character, never a dangling space.
  Page q = ExtractHtml("<p>h\xC3\xA9llo \xC3\xB6\xC3\xB6</p>", "", small);
  EXPECT_EQ(q.text, "h\xC3\xA9llo");
}

TEST(Crawld, TextAndTitleAreUtf8EvenWhenGumboIsNot) {
  // Gumbo turns an overflowing numeric character reference into stray
  // bytes; the spec (and the indexer) want U+FFFD. Found by links_fuzz.
  const std::string ref = "&#x2F" + std::string(120, 'a') + ";";
  Page p = ExtractHtml("<title>t" + ref + "</title><p>a" + ref + "b</p>");
  EXPECT_EQ(p.text,
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(p.title, "t\xEF\xBF\xBD");
}

// --- encodings --------------------------------------------------------------

TEST(Encoding, Windows1252ViaHeader) {
  Page p = ExtractHtml(
      "<title>caf\xE9 \x80 \x93q\x94</title><a href='/caf\xE9'>x</a>",
      "text/html; charset=windows-1252");
  EXPECT_EQ(p.charset, "windows-1252");
  EXPECT_EQ(p.title, "caf\xC3\xA9 \xE2\x82\xAC \xE2\x80\x9Cq\xE2\x80\x9D");
  EXPECT_EQ(Urls(p), (V{"http://example.com/caf%C3%A9"}));
}

// The Encoding Standard maps the label iso-8859-1 to windows-1252.
TEST(Encoding, Iso88591LabelIsWindows1252) {
  Page p =
      ExtractHtml("<p>\xE9t\xE9 \x80</p>", "text/html;charset=\"ISO-8859-1\"");
  EXPECT_EQ(p.charset, "windows-1252");
  EXPECT_EQ(p.text, "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC");
}

TEST(Encoding, ShiftJisViaMetaCharset) {
  // "日本" in Shift_JIS.
  Page p = ExtractHtml(
      "<html><head><meta charset=\"Shift_JIS\"><title>\x93\xFA\x96\x7B</title>"
      "</head><a href='/\x93\xFA'>x</a>");
  EXPECT_EQ(p.charset, "shift_jis");
  EXPECT_EQ(p.title, "\xE6\x97\xA5\xE6\x9C\xAC");
  EXPECT_EQ(Urls(p), (V{"http://example.com/%E6%97%A5"}));
}

TEST(Encoding, EucKrViaMetaHttpEquiv) {
  // "한국" in EUC-KR.
  Page p = ExtractHtml(
      "<meta http-equiv='Content-Type' content='text/html; charset=euc-kr'>"
      "<p>\xC7\xD1\xB1\xB9</p>");
  EXPECT_EQ(p.charset, "euc-kr");
  EXPECT_EQ(p.text, "\xED\x95\x9C\xEA\xB5\xAD");
}

TEST(Encoding, HeaderBeatsMeta) {
  Page p = ExtractHtml("<meta charset=shift_jis><p>caf\xE9</p>",
                       "text/html; charset=latin1");
  EXPECT_EQ(p.charset, "windows-1252");
  EXPECT_EQ(p.text, "caf\xC3\xA9");
}

TEST(Encoding, BomBeatsHeader) {
  Page p = ExtractHtml("\xEF\xBB\xBF<p>caf\xC3\xA9</p>",
                       "text/html; charset=latin1");
  EXPECT_EQ(p.charset, "utf-8");
  EXPECT_EQ(p.text, "caf\xC3\xA9");
}

TEST(Encoding, Utf16LeBom) {
  std::string html("\xFF\xFE", 2);
  for (char c : std::string("<a href='/u16'>x</a>")) {
    html.push_back(c);
    html.push_back('\0');
  }
  Page p = ExtractHtml(html);
  EXPECT_EQ(p.charset, "utf-16le");
  EXPECT_EQ(Urls(p), (V{"http://example.com/u16"}));
}

TEST(Encoding, NoLabelInvalidUtf8DefaultsToWindows1252) {
  Page p = ExtractHtml("<p>na\xEFve</p>");
  EXPECT_EQ(p.charset, "windows-1252");
  EXPECT_EQ(p.text, "na\xC3\xAFve");
  Page q = ExtractHtml("<p>na\xC3\xAFve</p>");
  EXPECT_EQ(q.charset, "utf-8");
  EXPECT_EQ(q.text, "na\xC3\xAFve");
}

TEST(Encoding, BrokenBytesBecomeReplacementCharacters) {
  // Declared UTF-8 but with a stray continuation byte, a truncated sequence
  // and an overlong encoding.
  Page p = ExtractHtml(
      "<p>a\x80"
      "b\xE6\x97"
      "c\xC0\xAF"
      "d</p><a href='/ok'>x</a>",
      "text/html; charset=utf-8");
  EXPECT_EQ(p.charset, "utf-8");
  EXPECT_EQ(p.text,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD"
            "d x");
  EXPECT_EQ(Urls(p), (V{"http://example.com/ok"}));
  // Shift_JIS with an invalid lead byte pair.
  Page s = ExtractHtml("<p>\x93\xFA\xFF\xFFz</p>", "text/html; charset=sjis");
  EXPECT_EQ(s.charset, "shift_jis");
  EXPECT_EQ(s.text.substr(0, 3), "\xE6\x97\xA5");
  EXPECT_NE(s.text.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(s.text.back(), 'z');
}

TEST(Encoding, UnknownLabelFallsBackToUtf8) {
  Page p =
      ExtractHtml("<p>caf\xC3\xA9 \xFF</p>", "text/html; charset=klingon-8");
  EXPECT_EQ(p.charset, "utf-8");
  EXPECT_EQ(p.text, "caf\xC3\xA9 \xEF\xBF\xBD");
}

// --- limits
// ---------------------------------------------------------------------

TEST(Crawld, OneMegabytePageWithThousandsOfLinksAllInOrder) {
  std::string html = "<html><head><title>big</title></head><body><ul>\n";
  constexpr int kLinks = 15000;
  for (int i = 0; i < kLinks; ++i) {
    html += "<li class=item><a href=\"/p/" + std::to_string(i) +
            "?ref=list\">Item number " + std::to_string(i) + "</a> lorem\n";
  }
  html += "</ul><p>";
  while (html.size() < (1 << 20)) html += "filler text to reach one megabyte. ";
  html += "</p></body></html>";
  ASSERT_GE(html.size(), 1u << 20);
  Page p = ExtractHtml(html);
  EXPECT_FALSE(p.truncated);
  ASSERT_EQ(p.links.size(), static_cast<size_t>(kLinks));
  for (int i = 0; i < kLinks; ++i) {
    ASSERT_EQ(p.links[i].url,
              "http://example.com/p/" + std::to_string(i) + "?ref=list");
  }
}

TEST(Crawld, MaxLinksCapsButCanonicalStillFound) {
  Options o;
  o.max_links = 2;
  Page p = ExtractHtml(
      "<a href=/1>1</a><a href=/2>2</a><a href=/3>3</a>"
      "<link rel=canonical href=/c>",
      "", o);
  EXPECT_EQ(Urls(p), (V{"http://example.com/1", "http://example.com/2"}));
  EXPECT_EQ(p.canonical, "http://example.com/c");
}

TEST(Crawld, LongPageCutAtMaxParseBytes) {
  Options o;
  o.max_parse_bytes = 4096;
  std::string html = "<p>";
  while (html.size() < 4000) html += "\xC3\xA9";  // 2-byte sequences
  html += "<a href='/early'>e</a>";
  while (html.size() < 10000) html += "x";
  html += "<a href='/late'>l</a>";
  Page p = ExtractHtml(html, "", o);
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(Urls(p), (V{"http://example.com/early"}));
  // Cut on a sequence boundary, never half a character.
  Options o2;
  o2.max_parse_bytes = 1024;
  std::string accents = "<p>";
  while (accents.size() < 3000) accents += "\xC3\xA9";
  Page q = ExtractHtml(accents, "", o2);
  EXPECT_TRUE(q.truncated);
  EXPECT_EQ(q.text.find("\xEF\xBF\xBD"), std::string::npos);
  // Also when converting from a legacy encoding.
  std::string latin(3000, '\xE9');
  Page r = ExtractHtml(latin, "text/html; charset=latin1", o2);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.text.size(), 1024u);
  EXPECT_EQ(r.text.find("\xEF\xBF\xBD"), std::string::npos);
}

// Issue 15: no depth at which links are lost. Past max_nesting_depth the
// grouping elements are flattened (bounded time), their content kept.
TEST(Crawld, Issue15_DeepNestingKeepsEveryLink) {
  std::string html = "<a href='/top'>t</a>";
  for (int i = 0; i < 100000; ++i) {
    html += "<div>";
    if (i % 20000 == 0) html += "<a href='/d" + std::to_string(i) + "'>d</a>";
  }
  html += "<a href='/deep'>d</a>";
  Page p = ExtractHtml(html);
  EXPECT_FALSE(p.truncated);
  EXPECT_GT(p.cuts.elements_flattened, 90000u);
  EXPECT_EQ(Urls(p),
            (V{"http://example.com/top", "http://example.com/d0",
               "http://example.com/d20000", "http://example.com/d40000",
               "http://example.com/d60000", "http://example.com/d80000",
               "http://example.com/deep"}));
  // Within the limit nothing is flattened.
  std::string ok;
  for (int i = 0; i < 400; ++i) ok += "<div><span>";
  ok += "<a href='/deep'>d</a>";
  Options o;
  o.max_nesting_depth = 1000;
  Page q = ExtractHtml(ok, "", o);
  EXPECT_EQ(q.cuts.elements_flattened, 0u);
  EXPECT_EQ(Urls(q), (V{"http://example.com/deep"}));
}

TEST(Crawld, SloppyButFlatMarkupIsNotCut) {
  // Thousands of unclosed <p>, <li>, <td>, <option> and balanced divs never
  // build depth.
  std::string html = "<table>";
  for (int i = 0; i < 3000; ++i) {
    html += "<tr><td><p>x<li>y<div><span>z</div><option>o";
  }
  html += "<a href='/end'>e</a>";
  Page p = ExtractHtml(html);
  EXPECT_FALSE(p.truncated);
  EXPECT_EQ(p.cuts.elements_flattened, 0u);
  EXPECT_EQ(Urls(p), (V{"http://example.com/end"}));
}

TEST(Crawld, ExtractIntoReusesPage) {
  Extractor ex{Options()};
  Page page;
  url::Url doc = DocUrl();
  ex.ExtractInto(
      "<title>one</title><a href=/1>1</a><meta name=robots "
      "content=noindex>",
      "", doc, "crawld", &page);
  EXPECT_EQ(page.title, "one");
  EXPECT_TRUE(page.meta_noindex);
  ex.ExtractInto("<a href=/2>2</a>", "", doc, "crawld", &page);
  EXPECT_EQ(page.title, "");
  EXPECT_FALSE(page.meta_noindex);
  EXPECT_EQ(Urls(page), (V{"http://example.com/2"}));
}

TEST(Crawld, BinaryGarbageNeverFails) {
  std::string junk;
  for (int i = 0; i < 5000; ++i)
    junk.push_back(static_cast<char>(i * 131 % 256));
  Page p = ExtractHtml(junk);
  EXPECT_FALSE(p.charset.empty());
  Page empty = ExtractHtml("");
  EXPECT_TRUE(empty.links.empty());
  EXPECT_EQ(empty.base_url, kDoc);
}

TEST(Crawld, OptionsAreClamped) {
  Options o;
  o.max_parse_bytes = 1;
  o.max_links = 0;
  o.max_nesting_depth = 0;
  o.max_text_bytes = size_t{1} << 40;
  Extractor ex(o);
  EXPECT_EQ(ex.options().max_parse_bytes, 1024u);
  EXPECT_EQ(ex.options().max_links, 1u);
  EXPECT_EQ(ex.options().max_nesting_depth, 16u);
  EXPECT_EQ(ex.options().max_text_bytes, 1024u);
}

// --- X-Robots-Tag (Google's documentation of the header) -------------------

RobotsDirectives Xrt(std::vector<std::string_view> v) {
  return ParseXRobotsTag(v, "crawld");
}

TEST(XRobotsTag, PlainDirectivesApplyToEveryAgent) {
  EXPECT_TRUE(Xrt({"noindex"}).noindex);
  EXPECT_FALSE(Xrt({"noindex"}).nofollow);
  EXPECT_TRUE(Xrt({"NoIndex, NOFOLLOW"}).nofollow);
  RobotsDirectives none = Xrt({"none"});
  EXPECT_TRUE(none.noindex && none.nofollow);
  RobotsDirectives all = Xrt({"all", "noarchive"});
  EXPECT_FALSE(all.noindex || all.nofollow);
}

TEST(XRobotsTag, AgentPrefixLimitsTheDirectives) {
  EXPECT_TRUE(Xrt({"crawld: nofollow"}).nofollow);
  EXPECT_TRUE(Xrt({"CRAWLD:noindex"}).noindex);
  RobotsDirectives other = Xrt({"googlebot: noindex, nofollow"});
  EXPECT_FALSE(other.noindex || other.nofollow);
  // Several header lines: each counts on its own.
  RobotsDirectives mixed = Xrt({"googlebot: nofollow", "crawld: noindex"});
  EXPECT_TRUE(mixed.noindex);
  EXPECT_FALSE(mixed.nofollow);
}

TEST(XRobotsTag, ValuedDirectivesAreNotAgents) {
  RobotsDirectives d =
      Xrt({"unavailable_after: 25 Jun 2030 15:00:00 PST, nofollow"});
  EXPECT_TRUE(d.nofollow);
  EXPECT_TRUE(Xrt({"max-snippet: 20, noindex"}).noindex);
}

}  // namespace
}  // namespace crawld::parser
