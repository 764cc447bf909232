// sitemap/sitemap.h: the reader of sitemaps and feeds, the link sources
// beside HTML (issue 17, part 3; docs/SITEMAPS.md).
//
// Specs:
//  - Sitemaps XML format 0.9, https://www.sitemaps.org/protocol.html:
//    <urlset> (loc, lastmod, changefreq, priority) and <sitemapindex>
//    (sitemap: loc, lastmod); "Sitemap file location" (scope);
//    "Sitemaps & Cross Submits"; the limits (50,000 URLs, 50 MB
//    uncompressed per file); "Other Sitemap formats": RSS 2.0, Atom 1.0
//    and text files.
//  - W3C Datetime, https://www.w3.org/TR/NOTE-datetime (lastmod),
//    RFC 3339 (Atom <updated>), RFC 822/2822 section 3.3 (RSS <pubDate>).
//  - RSS 2.0, https://www.rssboard.org/rss-specification: rss/channel/item
//    with <link> and <pubDate>.
//  - Atom 1.0, RFC 4287: feed/entry with <link rel="alternate"> (or no
//    rel) and <updated>; hrefs resolved against xml:base (XML Base, RFC
//    3986 resolution) and the feed URL.
//  - URLs are parsed and resolved with crawld::url::Parse (WHATWG URL).
//
// What is read. The format is sniffed from the bytes, never from a name or
// a Content-Type: a gzip member (magic 1f 8b) is inflated first, streaming,
// with a hard cap on the inflated bytes (Options::max_uncompressed_bytes),
// so a gzip bomb costs at most the cap in parsing and one 64 KiB buffer in
// memory. Inflated bytes whose first non-blank byte is '<' are XML (read
// by expat, a SAX parser: no tree is built, memory stays bounded however
// long the file); anything else is a text sitemap, one URL per line. The
// XML root decides: urlset, sitemapindex, rss, or Atom's feed. Only
// elements in the root element's namespace are read, so extension elements
// (image:loc, video:*, xhtml:link, atom:link inside RSS) are ignored.
//
// What is admitted. Every entry (a url, a sitemap, an item, an entry, a
// text line) is counted once, either as admitted or under one drop reason
// (Counters). An entry is admitted when its loc is an absolute http(s) URL
// of at most Options::max_loc_bytes, among the first Options::max_urls
// entries of the file, and in scope: on the sitemap's scheme, host and
// port and under its directory ("Sitemap file location"), or on a host
// whose robots.txt named this sitemap (the caller lists those hosts, see
// Reader; "Sitemaps & Cross Submits").
//
// Security: expat never reads external entities or the external DTD
// subset (no handler is installed, parameter entity parsing is off), and
// any entity declaration in an internal DTD subset stops the reading with
// an error before a single entity is expanded (the billion laughs and
// quadratic blowup attacks need declarations). Sitemaps have no use for a
// DTD.
//
// Deliberate deviations (tests carry the CrawldOnly prefix):
//  - Blank bytes and a UTF-8 byte order mark before the XML declaration
//    are skipped (PHP-generated sitemaps often start with a newline, which
//    XML forbids). Error positions still count them.
//  - A lastmod with a time but no time zone ("2024-05-01T10:00:00") is
//    read as UTC rather than refused; RSS pubDate also accepts the W3C
//    forms, which many feeds write.
//  - Elements without a namespace are read as sitemap elements when the
//    root has none (the protocol asks for the 0.9 namespace; the old 0.84
//    and Google namespaces are read the same way).
//  - RSS <link> and text lines must be absolute URLs in a sitemap, but an
//    RSS <link> is resolved against the feed URL, as feed readers do.
//  - Reading stops at the first XML error (what came before is kept); no
//    attempt is made to recover, so nothing after an error is guessed.
//  - When the byte cap cuts the file, the entry (or text line) it cuts is
//    dropped rather than read half: half a URL is another URL.
#ifndef CRAWLD_SITEMAP_SITEMAP_H_
#define CRAWLD_SITEMAP_SITEMAP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "url/url.h"

namespace crawld::sitemap {

struct Options {
  // --- behaviour ---

  // Apply the protocol's scope rules (see the file comment). Off: every
  // absolute http(s) URL is admitted, e.g. for a feed found as a link,
  // which links anywhere as an HTML page does, or for `crawlctl sitemap`
  // without --url.
  bool enforce_scope = true;

  // --- resource bounds (hostile input) ---

  // Entries read per file; later ones are only counted (Counters::
  // over_limit). The protocol's limit is 50,000 URLs (and 50,000 sitemaps
  // in an index). Clamped to [1, 10'000'000].
  size_t max_urls = 50000;

  // Bytes of the file after gzip decompression that are read; the rest is
  // not inflated at all (Report::truncated). The protocol's limit is 50 MB
  // (52,428,800 bytes, as Google reads it). Clamped to [1 KiB, 1 GiB].
  size_t max_uncompressed_bytes = 50 * 1024 * 1024;

  // Bytes of one loc (after trimming blanks and decoding XML escapes);
  // longer ones are dropped (Counters::too_long). The protocol: "less than
  // 2,048 characters". Clamped to [16, 1 MiB].
  size_t max_loc_bytes = 2048;
};

// What the file turned out to be.
enum class Format {
  kUnknown,       // nothing read yet, or an XML root we do not read
  kUrlset,        // sitemaps.org <urlset>
  kSitemapIndex,  // sitemaps.org <sitemapindex>
  kRss,           // RSS 2.0 (also 0.91/0.92: the same elements)
  kAtom,          // Atom 1.0 <feed>
  kText,          // one URL per line
};

// <changefreq>: how often the page is likely to change (a hint).
enum class ChangeFreq {
  kUnset,  // absent, or a value not in the protocol (counted)
  kAlways,
  kHourly,
  kDaily,
  kWeekly,
  kMonthly,
  kYearly,
  kNever,
};

enum class EntryKind {
  kPage,     // a page to crawl: urlset/url, rss item, atom entry, text line
  kSitemap,  // a child sitemap of a sitemap index: read it as a sitemap
};

// Stable lower-case names ("urlset", "hourly", "page", ...), for logs,
// crawlctl and the daemon's metrics labels.
std::string_view FormatName(Format format);
std::string_view ChangeFreqName(ChangeFreq freq);
std::string_view EntryKindName(EntryKind kind);

// The priority a url has when it gives none (the protocol's default).
inline constexpr double kDefaultPriority = 0.5;

// One admitted entry.
struct Entry {
  // The absolute http(s) URL as url::Parse serializes it (WHATWG href,
  // fragment kept). Not canonicalized: the caller's url::Canonicalizer
  // does that, as for every URL that enters the crawl.
  std::string url;
  EntryKind kind = EntryKind::kPage;
  // <lastmod> (urlset, sitemapindex), <pubDate> (RSS), <updated> (else
  // <published>, Atom) in Unix seconds, UTC; unset when absent or
  // unreadable (counted in Counters::bad_lastmod).
  std::optional<int64_t> lastmod;
  // urlset only; kUnset elsewhere.
  ChangeFreq changefreq = ChangeFreq::kUnset;
  // urlset only: <priority> in [0.0, 1.0], out-of-range values clamped;
  // kDefaultPriority when absent or unreadable, and for other formats.
  double priority = kDefaultPriority;
};

// What was read. Every entry is counted in `entries` and in exactly one
// of admitted or the drop reasons after it:
//   entries == admitted + dropped().
struct Counters {
  uint64_t entries = 0;  // url, sitemap, item, entry elements; text lines
  uint64_t admitted = 0;
  // --- drop reasons ---
  uint64_t no_loc = 0;        // no (non-empty) loc / link / alternate href
  uint64_t over_limit = 0;    // past Options::max_urls
  uint64_t too_long = 0;      // loc over Options::max_loc_bytes
  uint64_t invalid_url = 0;   // not an absolute URL; invalid UTF-8 (text)
  uint64_t not_http = 0;      // a URL, but neither http nor https
  uint64_t other_origin = 0;  // scheme, host or port differ from the
                              // sitemap's, and not cross-submitted
  uint64_t outside_path = 0;  // same origin, not under the sitemap's
                              // directory, and not cross-submitted
  // --- fields read with a default instead (the entry is kept) ---
  uint64_t bad_lastmod = 0;       // not a W3C datetime / RFC 822 date
  uint64_t bad_changefreq = 0;    // not one of the seven values
  uint64_t bad_priority = 0;      // not a decimal number
  uint64_t clamped_priority = 0;  // a number outside [0.0, 1.0]
  // --- bytes ---
  uint64_t bytes_in = 0;   // given to Feed (compressed, if gzip)
  uint64_t bytes_out = 0;  // read after decompression (<= the cap)

  [[nodiscard]] uint64_t dropped() const {
    return no_loc + over_limit + too_long + invalid_url + not_http +
           other_origin + outside_path;
  }
};

// The state of one reading; final after Reader::Finish.
struct Report {
  Format format = Format::kUnknown;
  bool gzip = false;  // the bytes were a gzip member (or several)
  Counters counters;
  // The inflated bytes reached Options::max_uncompressed_bytes: the rest
  // was not read (error is then ResourceExhausted).
  bool truncated = false;
  // Why reading stopped early, or OK. Entries read before it are kept.
  //  - Corruption: malformed XML ("line 7, column 3: mismatched tag") or
  //    gzip ("gzip: invalid stored block lengths", "gzip: unexpected end
  //    of data");
  //  - InvalidArgument: XML whose root we do not read ("root element
  //    <html> is not urlset, sitemapindex, rss or feed"), or an entity
  //    declaration (refused, see the file comment);
  //  - ResourceExhausted: the byte cap (truncated).
  Status error;
  // 1-based position of an XML error in the inflated document (lines end
  // at LF; columns count bytes); 0 when error is OK or not an XML error.
  uint64_t error_line = 0;
  uint64_t error_column = 0;
};

// Reads one sitemap or feed, fed in pieces as they arrive (a transfer's
// write callback), or whole (Read below). Entries are handed out as their
// closing tag (or line end) is read, so a caller can drain them while the
// transfer goes on; at most Options::max_urls are ever produced, and held
// until taken.
//
// Not thread-safe; not tied to any loop, no I/O, no clock. The cost of a
// Feed is linear in its bytes (inflate, expat, one url::Parse per entry),
// bounded by the caps: a loop may call it inline for each received piece.
// A Reader reads one file; make a new one for the next.
class Reader {
 public:
  // `sitemap_url`: where the file was fetched from (after redirects); the
  // scope's origin and directory, and the base of feed links.
  // `cross_submitted_hosts`: the hosts whose robots.txt named this
  // sitemap's URL in a Sitemap: line (and, for a child of an index, the
  // hosts that named the index): their URLs are admitted whatever the
  // path ("Sitemaps & Cross Submits"). Hosts as written ("Example.COM",
  // "bücher.de", no port); compared after WHATWG host parsing. The
  // sitemap's own host belongs here when its own robots.txt named it:
  // that lifts the directory rule for it.
  // `options` is sanitized (see Options) first.
  // REQUIRES: sitemap_url is a valid Url (from url::Parse).
  Reader(const url::Url& sitemap_url,
         const std::vector<std::string>& cross_submitted_hosts,
         const Options& options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Reads the next piece of the file. Returns false once reading has
  // stopped (an error, or the cap): later bytes are counted in bytes_in
  // and ignored, so the caller may abort the transfer. `bytes` need not
  // outlive the call. REQUIRES: Finish() not called yet.
  bool Feed(std::string_view bytes);

  // The end of the file: reads what the last piece left pending (a last
  // line without a newline, the XML end) and reports a file cut short
  // (unclosed XML, a gzip member without its end) as an error. Idempotent.
  // The returned reference is valid while the Reader lives.
  const Report& Finish();

  // Moves the entries produced since the last call to the end of `*out`
  // (in file order) and returns how many were moved.
  // REQUIRES: out != nullptr.
  size_t TakeEntries(std::vector<Entry>* out);

  // The report so far (final after Finish()). Valid while the Reader
  // lives; changes with the next Feed/Finish.
  [[nodiscard]] const Report& report() const;

  // The options after sanitizing.
  [[nodiscard]] const Options& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A whole file at once: what Feed(bytes) then Finish() give.
struct Contents {
  std::vector<Entry> entries;
  Report report;
};
[[nodiscard]] Contents Read(
    std::string_view bytes, const url::Url& sitemap_url,
    const std::vector<std::string>& cross_submitted_hosts = {},
    const Options& options = {});

// The W3C Datetime forms of <lastmod> (YYYY, YYYY-MM, YYYY-MM-DD,
// YYYY-MM-DDThh:mmTZD, ...:ss TZD, ...:ss.s TZD; TZD "Z" or +hh:mm/-hh:mm;
// see the file comment for a missing TZD), which include RFC 3339's, as
// Unix seconds (fractions dropped); nullopt if `text` is none of them or
// not a real date. Years 0001..9999.
[[nodiscard]] std::optional<int64_t> ParseW3cDatetime(std::string_view text);

// An RFC 822/2822 date-time as RSS writes it ("Sat, 07 Sep 2002 00:00:01
// GMT", "7 Sep 02 00:00 +0200", "... EST"; the day name optional, seconds
// optional, two-digit years as RFC 2822 section 4.3 reads them, unknown
// zone names as UTC), as Unix seconds; nullopt if unreadable.
[[nodiscard]] std::optional<int64_t> ParseRfc822Date(std::string_view text);

}  // namespace crawld::sitemap

#endif  // CRAWLD_SITEMAP_SITEMAP_H_
