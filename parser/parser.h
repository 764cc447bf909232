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
//  - Gumbo's tree building costs O(depth) per tag, so deeply nested hostile
//    markup is quadratic. A linear pre-scan estimates the element depth and
//    cuts the document where it would pass Options::max_nesting_depth
//    (Page::truncated is set). Chromium caps its DOM depth similarly (512).
//  - Links inside <template> are ignored (template content is inert);
//    links inside <noscript> are kept, its text is not.
#ifndef CRAWLD_PARSER_PARSER_H_
#define CRAWLD_PARSER_PARSER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "url/url.h"

namespace crawld::parser {

struct Options {
  // --- Behaviour ---

  // frame/iframe src become links (LinkKind kFrame / kIframe).
  bool extract_frames = true;
  // Collect Page::text (visible text for indexers).
  bool extract_text = true;

  // --- Limits (hostile input) ---

  // Bytes of HTML (after conversion to UTF-8) handed to Gumbo; longer pages
  // are cut on a UTF-8 boundary, not refused. Clamped to [1 KiB, 256 MiB].
  size_t max_parse_bytes = 4 << 20;
  // Bytes of Page::text kept; cut on a UTF-8 boundary. Clamped to
  // [0, max_parse_bytes].
  size_t max_text_bytes = 1 << 20;
  // Links kept per page (Page::links); the rest are dropped silently.
  // Clamped to [1, 10'000'000].
  size_t max_links = 20000;
  // Elements: estimated nesting depth beyond which the document is cut
  // (see the file comment). Clamped to [16, 100'000].
  size_t max_nesting_depth = 512;
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
  // http(s) links in document order, at most Options::max_links. Duplicates
  // are kept (the frontier dedupes).
  std::vector<Link> links;
  // Visible text, ASCII whitespace collapsed to single spaces, block
  // boundaries as spaces; no script/style/template/noscript/title content.
  // Valid UTF-8. Empty unless Options::extract_text.
  std::string text;
  // WHATWG name of the encoding used to decode, e.g. "utf-8",
  // "windows-1252", "shift_jis".
  std::string charset;
  // The document was cut: longer than max_parse_bytes, or nested deeper than
  // max_nesting_depth.
  bool truncated = false;
  // hrefs that did not resolve to a URL (counted, not fatal). Resolvable
  // hrefs with other schemes (mailto:, javascript:, data:, tel:) are dropped
  // without being counted.
  size_t invalid_links = 0;
};

// Extracts a Page from an HTML body.
//
// Immutable after construction; thread-compatible: Extract() may run
// concurrently on any number of threads, as it keeps all per-call state on
// the stack and in the result. Not tied to any event loop (it is CPU-bound:
// callers with a loop should keep bodies within Options limits).
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

// Not thread-safe: a parse uses the Extractor's scratch memory, so each
// thread keeps its own Extractor (a worker has one per loop).
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
