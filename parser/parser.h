// parser/parser.h: link, metadata and visible-text extraction from fetched
// HTML documents, on top of Gumbo (an HTML5 parser: the WHATWG tree
// construction rules, so malformed markup yields the tree a browser builds).
//
// Specs:
//  - HTML Living Standard, https://html.spec.whatwg.org/multipage/
//    "Determining the character encoding" (parsing.html#encoding-sniffing-
//    algorithm) and its "prescan a byte stream" step; "frozen base URL"
//    (urls-and-fetching.html#frozen-base-url); "shared declarative refresh
//    steps" (meta refresh, semantics.html#shared-declarative-refresh-steps);
//    link types (links.html#linkTypes, rel is an ASCII case-insensitive,
//    space-separated token set).
//  - WHATWG Encoding Standard, https://encoding.spec.whatwg.org/ (labels and
//    their encodings, windows-1252 decoding, U+FFFD replacement).
//  - Links are resolved with crawld::url::Parse (WHATWG URL Standard).
//  - Meta robots after Google's documentation of the robots meta tag
//    (comma-separated, case-insensitive directives; "none" = both).
//
// Links: Page::links is what a browser's document.links lists, resolved:
// every a and area element of the HTML namespace with an href, in tree
// order (duplicates kept, including the copies of an <a> that the tree
// builder's "reconstruct the active formatting elements" makes), outside
// template contents, resolved against the frozen base URL. The tree is the
// one a browser with scripting enabled builds: <noscript> content is raw
// text (Options::scripting). Other sources (link rel, meta refresh, frames,
// SVG anchors) are Page::other_links, labelled by kind. The differential
// corpus in tests/data/links (parse5 + WHATWG URL, tools/links_oracle)
// checks this document by document; docs/LINKS.md says more.
//
// Bounds (Options, each cut counted in Page::cuts): Gumbo's tree building
// costs O(depth) per tag and O(n^2) for n attributes on one element. A
// linear pre-pass (prescan.h) therefore keeps at most
// max_attributes_per_element attributes per element (the ones the parser
// reads are always kept) and flattens grouping elements (div, span, b, ...)
// nested deeper than max_nesting_depth: their content stays, one level up,
// so no link is lost to depth. Bytes past max_parse_bytes, and elements
// past max_elements, are not parsed.
//
// Deliberate deviations (tests carry the Crawld prefix):
//  - Encoding sniffing order: BOM (it wins over the HTTP header, as in the
//    Encoding Standard's "decode"), then the HTTP charset, then the <meta>
//    prescan of the first 1024 bytes, then "utf-8 if the bytes are valid
//    UTF-8, else windows-1252" (browsers use locale-dependent guessing). An
//    HTTP charset we do not know (and no BOM or usable <meta>) means UTF-8
//    with U+FFFD replacement rather than a guess.
//  - Query strings of resolved links are percent-encoded as UTF-8, not in the
//    document's encoding as the HTML spec's "encoding-parse a URL" asks.
//  - Legacy encodings other than windows-1252 are decoded with glibc iconv
//    (e.g. shift_jis as CP932, euc-kr as CP949, gbk as GB18030), whose tables
//    differ from the Encoding Standard's on a few code points.
//  - Past max_nesting_depth, grouping elements are left out of the tree
//    (their content is kept): the tree differs from a browser's there, the
//    links do not on any page we know of. Chromium caps its DOM depth at
//    512 too, by attaching deeper elements to their ancestor.
//  - Links inside <template> are ignored (template content is inert, as
//    in a browser).
#ifndef CRAWLD_PARSER_PARSER_H_
#define CRAWLD_PARSER_PARSER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parser/sniff.h"  // IWYU pragma: export
#include "url/url.h"

namespace crawld::parser {

struct Options {
  // --- Behaviour ---

  // frame/iframe src become links (LinkKind kFrame / kIframe).
  bool extract_frames = true;
  // Collect Page::text (visible text for indexers).
  bool extract_text = true;
  // Parse as a browser with scripting enabled (the common case): <noscript>
  // content is raw text, so links inside it are not links. false parses it
  // as markup, as a browser with JavaScript off does.
  bool scripting = true;

  // --- Limits (hostile input) ---

  // Bytes of HTML (after conversion to UTF-8) handed to Gumbo; longer pages
  // are cut on a UTF-8 boundary, not refused. Clamped to [1 KiB, 256 MiB].
  size_t max_parse_bytes = 4 << 20;
  // Bytes of Page::text kept; cut on a UTF-8 boundary. Clamped to
  // [0, max_parse_bytes].
  size_t max_text_bytes = 1 << 20;
  // Links kept per page in each of Page::links and Page::other_links; the
  // rest are counted in ParseCuts::links_dropped. Clamped to
  // [1, 10'000'000].
  size_t max_links = 20000;
  // Estimated depth of open elements past which grouping elements are
  // flattened (see the file comment). Clamped to [16, 100'000].
  size_t max_nesting_depth = 512;
  // Start tags and comments parsed: the document is cut before the next
  // one (Gumbo costs microseconds per node; a real page has a few
  // thousand).
  // Clamped to [1'000, 10'000'000].
  size_t max_elements = 100000;
  // Attributes kept on one element (Gumbo's duplicate check is quadratic);
  // past it only the first of each attribute the parser reads (href, rel,
  // src, name, content, ...) stays. Gumbo's cost is elements x this
  // squared: 256 made a 4 MiB page of such elements cost 3 s. Clamped to
  // [16, 100'000].
  size_t max_attributes_per_element = 32;
};

enum class LinkKind {
  kAnchor,     // <a href>
  kArea,       // <area href>
  kCanonical,  // <link rel=canonical href>
  kAlternate,  // <link rel=alternate href> (not "alternate stylesheet")
  kNext,       // <link rel=next href>
  kRefresh,    // <meta http-equiv=refresh content="N; url=...">
  kFrame,      // <frame src>
  kIframe,     // <iframe src>
  kSvgAnchor,  // <a href> / <a xlink:href> in SVG (not in document.links)
  kSitemap,    // a sitemap index's <sitemap><loc> (never from HTML: the
               // daemon's sitemap reading, docs/SITEMAPS.md)
};

// Stable lower-case name of a kind ("anchor", "area", ...), for logs and
// crawlctl output.
std::string_view LinkKindName(LinkKind kind);

struct Link {
  // Absolute, WHATWG-serialized http(s) URL, resolved against the document
  // base. Not canonicalized beyond what the URL parser does (the fragment is
  // kept); url::Canonicalizer does the rest.
  std::string url;
  LinkKind kind = LinkKind::kAnchor;
  // rel="nofollow" on this element. Page::meta_nofollow is separate: callers
  // combine the two.
  bool nofollow = false;
  // What a sitemap says about the linked page (docs/SITEMAPS.md, "What
  // the schedule takes from it"); the defaults for every other link:
  // <changefreq> as sitemap::ChangeFreq's integer (0: none), <priority>
  // in percent (the protocol's default 0.5 is 50), <lastmod> in Unix
  // seconds (0: none).
  uint8_t changefreq = 0;
  uint8_t priority_pct = 50;
  uint32_t lastmod_s = 0;
};

// What the bounds (Options) cut from one page; all zero on normal pages.
struct ParseCuts {
  // Bytes past max_parse_bytes were not parsed.
  bool bytes_cut = false;
  // The document was cut at max_elements start tags.
  bool elements_cut = false;
  // Attributes dropped past max_attributes_per_element (and the attributes
  // of end tags, which the tree builder ignores anyway).
  size_t attributes_dropped = 0;
  // Start tags flattened past max_nesting_depth.
  size_t elements_flattened = 0;
  // Links past max_links (both lists).
  size_t links_dropped = 0;
  // Extra parses to settle which <noscript> tags a browser sees (see
  // prescan.h); noscript_unsettled if the last parse still disagreed.
  size_t noscript_reparses = 0;
  bool noscript_unsettled = false;

  bool any() const {
    return bytes_cut || elements_cut || attributes_dropped > 0 ||
           elements_flattened > 0 || links_dropped > 0 || noscript_unsettled;
  }
};

struct Page {
  // The effective base: the first <base href> in tree order (wherever it is),
  // resolved against the document URL; else the document URL.
  std::string base_url;
  // The first HTML <title>, whitespace stripped and collapsed.
  std::string title;
  // <html lang>, as written (trimmed).
  std::string lang;
  // The first <link rel=canonical> resolved; empty if none (or unresolvable
  // or not http(s)).
  std::string canonical;
  // <meta name=robots|<agent> content=noindex|none>.
  bool meta_noindex = false;
  // <meta name=robots|<agent> content=nofollow|none>.
  bool meta_nofollow = false;
  // Hyperlinks: the http(s) URLs of HTML a/area hrefs in document order,
  // as a browser lists them (see the file comment), at most
  // Options::max_links. Duplicates are kept (the frontier dedupes). These
  // are the links a crawler follows.
  std::vector<Link> links;
  // Other outlinks, labelled by kind, in document order: <link rel=
  // canonical|alternate|next>, meta refresh, frame/iframe src (with
  // Options::extract_frames), SVG anchors. Not hyperlinks: a crawler
  // decides whether to follow them.
  std::vector<Link> other_links;
  // Visible text, ASCII whitespace collapsed to single spaces, block
  // boundaries as spaces; no script/style/template/noscript/title content.
  // Valid UTF-8. Empty unless Options::extract_text.
  std::string text;
  // WHATWG name of the encoding used to decode, e.g. "utf-8",
  // "windows-1252", "shift_jis".
  std::string charset;
  // The document was cut: longer than max_parse_bytes or max_elements
  // (cuts.bytes_cut, cuts.elements_cut).
  bool truncated = false;
  // What the bounds changed (counted by the worker).
  ParseCuts cuts;
  // hrefs that did not resolve to a URL (counted, not fatal). Resolvable
  // hrefs with other schemes (mailto:, javascript:, data:, tel:) are dropped
  // without being counted.
  size_t invalid_links = 0;
};

// Page-level robots directives from HTTP X-Robots-Tag headers (Google's
// documentation of the header): each value is a comma-separated list of
// directives ("noindex, nofollow", "none"), optionally prefixed by a user
// agent ("crawld: noindex") that limits it to that agent. Values for other
// agents are ignored; unknown directives too. `values` are the header's
// values in order (the header may repeat).
struct RobotsDirectives {
  bool noindex = false;
  bool nofollow = false;
};
RobotsDirectives ParseXRobotsTag(const std::vector<std::string_view>& values,
                                 std::string_view robots_token);

namespace internal {
class GumboArena;
}

// Extracts a Page from an HTML body.
//
// Thread contract: one Extractor per thread. A parse uses the Extractor's
// scratch memory (Gumbo's arena), so Extract/ExtractInto must not run on
// the same Extractor from two threads at once; different Extractors share
// nothing mutable (Gumbo keeps no global state, nor does this component)
// and may parse at the same time on any threads, e.g. one per thread of a
// libuv pool. An Extractor may move between threads between calls. Not tied
// to any event loop: a parse is CPU-bound, and bounded by Options (see the
// file comment), so a loop should hand it to a thread, not run it inline.
class Extractor {
 public:
  // Clamps the options (see each field).
  explicit Extractor(const Options& options);
  ~Extractor();

  Extractor(const Extractor&) = delete;
  Extractor& operator=(const Extractor&) = delete;

  // The options after clamping.
  const Options& options() const { return options_; }

  // Decodes `body` (see the file comment for the sniffing order), parses it
  // and returns what could be read. Never fails: hostile or binary input
  // yields a Page with whatever links and text could be read.
  //
  // content_type: the HTTP Content-Type header value (may be empty); only
  //   its charset parameter is used.
  // document_url: the URL the body was fetched from (after redirects); the
  //   fallback base.
  // robots_token: the product token matched by <meta name=TOKEN>, ASCII
  //   case-insensitively, in addition to name=robots.
  // The result owns its strings; `body` may die right after the call.
  [[nodiscard]] Page Extract(std::string_view body,
                             std::string_view content_type,
                             const url::Url& document_url,
                             std::string_view robots_token = "crawld") const;

  // As Extract(), but fills `*page`, reusing the capacity of its strings and
  // link vector (a worker keeps one Page per loop and calls this per body).
  // REQUIRES: page != nullptr.
  void ExtractInto(std::string_view body, std::string_view content_type,
                   const url::Url& document_url, std::string_view robots_token,
                   Page* page) const;

 private:
  Options options_;
  // Gumbo's memory for the parse in progress, reused by the next one.
  std::unique_ptr<internal::GumboArena> arena_;
};

}  // namespace crawld::parser

#endif  // CRAWLD_PARSER_PARSER_H_
