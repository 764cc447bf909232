// url/url.h: URL parsing and resolution after the WHATWG URL Standard, the
// crawler's canonical form of a URL, and the 64-bit URL fingerprint.
//
// Spec: https://url.spec.whatwg.org/ ("basic URL parser", "URL serializer",
// "host parser", "IPv4 parser", "IPv6 parser"). Parse(input, base) returns
// what `new URL(input, base).href` gives in a browser (checked against Node's
// URL class over a vendored corpus, tests/unit/url/data/resolve_corpus.json).
//
// The reference is Node 20's URL class (ada 2.9.2), which predates two
// 2024-25 changes to the standard: '^' in the path percent-encode set, and
// "%20" for a space that ends an opaque path before '?' or '#'. We follow
// Node there.
//
// Deliberate deviations from the standard:
//  - Domain to ASCII, label by label. ASCII labels other than "xn--" are
//    only lowercased: that is what UTS #46 gives with the flags browsers use
//    (CheckHyphens=false, VerifyDnsLength=false), and it keeps the common
//    case free of libidn2. Other labels go through libidn2,
//    idn2_to_ascii_8z(IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT) (IDNA2008 with
//    the UTS #46 non-transitional mapping, what browsers use). When libidn2
//    refuses a label with IDN2_DISALLOWED or IDN2_BIDI, we retry with
//    IDN2_TRANSITIONAL, as curl does: IDNA2008 disallows symbols and emoji
//    ("☃.net") and checks bidi more strictly than browsers, which accept
//    both. Other libidn2 errors fail the host. Residual differences: a
//    non-ASCII label with "--" at positions 3-4, a leading or trailing '-',
//    ASCII punctuation ("ü$"), or over 63 bytes once encoded is refused
//    where browsers accept it; a label that needed the transitional retry
//    also maps ß to "ss".
//  - Input is bytes, not code points: an invalid UTF-8 sequence in a path,
//    query, fragment or userinfo is encoded as U+FFFD ("%EF%BF%BD"), which is
//    what a browser sees after decoding the document.
//  - Parse() refuses input over 1 MiB ("too long") so that hostile markup
//    cannot make us allocate without bound; the Canonicalizer's limit is
//    Options::max_length.
//  - Validation errors (the standard's non-fatal ones) are not reported.
// Known disagreements with Node on the corpus are listed, with reasons, in
// tests/unit/url/url_corpus_test.cc.
#ifndef CRAWLD_URL_URL_H_
#define CRAWLD_URL_URL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::url {

// A parsed, valid, absolute URL, held in its WHATWG serialization with
// component offsets (like ada::url_aggregator). Cheap to copy/move (one
// string plus a few integers).
//
// Thread-compatible: a const Url may be read from any number of threads.
//
// Every string_view returned by an accessor points into the Url's own
// serialization: it stays valid while the Url lives and is not assigned to
// or moved from.
class Url {
 public:
  // An empty, invalid Url ("" href). Only Parse() and Canonicalizer produce
  // valid ones.
  Url() = default;

  // The full serialization, e.g. "https://example.com/a?b#c".
  std::string_view href() const { return href_; }
  // Lowercase scheme without ':', e.g. "http", "https", "mailto".
  std::string_view scheme() const;
  // Percent-encoded userinfo parts; empty when absent.
  std::string_view username() const;
  std::string_view password() const;
  // The serialized host: lowercase ASCII (punycode for IDN), IPv4 dotted
  // decimal, IPv6 in [brackets]; empty if the URL has no host (mailto:,
  // data:) or an empty host (file:///).
  std::string_view host() const;
  // True if the URL has a host component ("//" after the scheme), even an
  // empty one.
  bool has_host() const { return host_start_ != kNone; }
  // The effective port: the explicit port if given, otherwise the scheme's
  // default port (80 http, 443 https, 21 ftp, 80 ws, 443 wss); 0 if none.
  uint16_t port() const;
  // True if the serialization carries a port, i.e. a port that is not the
  // scheme's default (the standard drops default ports).
  bool has_explicit_port() const { return port_ >= 0; }
  // The path. For special schemes (http, https, ftp, ws, wss, file) it starts
  // with '/'; for opaque-path URLs (mailto:x@y) it is the opaque string.
  std::string_view path() const;
  // The query without '?'; empty if none or empty ("?" alone).
  std::string_view query() const;
  bool has_query() const { return query_start_ != kNone; }
  // The fragment without '#'; empty if none or empty.
  std::string_view fragment() const;
  bool has_fragment() const { return fragment_start_ != kNone; }
  // The HTTP request target: path + ("?" + query if has_query()).
  std::string_view path_and_query() const;
  // "scheme://host:port" with the effective port, e.g.
  // "https://example.com:443": the politeness (per-origin) key. For a URL
  // without a host this is "scheme:" alone. Allocates the result.
  std::string origin_key() const;
  // True if the scheme is http or https: the only URLs the crawler fetches.
  bool is_http() const;
  // True for the standard's special schemes (http, https, ftp, ws, wss,
  // file), whose paths are hierarchical and whose hosts are domains/IPs.
  bool is_special() const { return special_; }
  // True for URLs such as "mailto:a@b" or "javascript:x" whose path is an
  // opaque string; such a URL cannot serve as a base for relative hrefs.
  bool has_opaque_path() const { return opaque_path_; }

  friend bool operator==(const Url& a, const Url& b) {
    return a.href_ == b.href_;
  }

 private:
  friend class UrlBuilder;     // url.cc: the parser fills the fields.
  friend class Canonicalizer;  // builds canonical Urls without re-parsing
  static constexpr uint32_t kNone = UINT32_MAX;

  std::string href_;
  // Offsets into href_. scheme_end_ is the index of ':'. username/password
  // live in [scheme_end_+3, host_start_) when has_host().
  uint32_t scheme_end_ = 0;
  uint32_t username_end_ = kNone;    // end of username, kNone if no userinfo
  uint32_t host_start_ = kNone;      // first host byte, kNone if no host
  uint32_t host_end_ = kNone;        // one past the host
  uint32_t path_start_ = 0;          // first path byte
  uint32_t query_start_ = kNone;     // index of '?', kNone if none
  uint32_t fragment_start_ = kNone;  // index of '#', kNone if none
  int32_t port_ = -1;                // explicit port, -1 if none
  bool special_ = false;
  bool opaque_path_ = false;
};

// WHATWG "basic URL parser" with an optional base (what
// `new URL(input, base)` does).
//
// On success returns the parsed absolute URL. On failure returns
// InvalidArgument with a short reason, e.g. "missing scheme" (relative input
// without a usable base), "invalid host", "invalid port", "invalid IPv4",
// "invalid IPv6", "too long".
// The result owns its storage; `input` and `base` may die right after.
// A null or default-constructed `base` means no base.
[[nodiscard]] Result<Url> Parse(std::string_view input,
                                const Url* base = nullptr);

// Parse() into `*out`, reusing its storage: a caller that parses many URLs
// one after the other (a page's links) allocates once, not once per URL.
// On failure returns the error Parse() would and leaves *out empty (an
// empty href, no host).
// REQUIRES: out != nullptr, out != base, and `input` does not view
// out->href().
[[nodiscard]] Status ParseInto(std::string_view input, const Url* base,
                               Url* out);

// The serialized host of `url` (see Url::host()): lowercase ASCII, punycode
// for IDN, IPv4 dotted decimal, IPv6 in [brackets]. Empty when `url` does
// not parse as an absolute URL or has no host. Takes a URL or an origin key
// ("https://example.com:443") alike. The worker's routing (the ring's owner
// of a URL), its host records and its recrawl hand-offs all key hosts by
// this one string. Allocates the result.
std::string HostOf(std::string_view url);

// Canonicalization knobs. Every rule runs after WHATWG parsing (which already
// lowercases the scheme and host, converts IDN to punycode, removes the
// default port and dot segments).
struct Options {
  // --- behaviour ---

  // Drop "#fragment" (never sent to a server). Default on. For an opaque
  // path ("mailto:a #f") trailing spaces go too, as the standard does when a
  // fragment is removed.
  bool drop_fragment = true;
  // "example.com." -> "example.com" (same site, but a different string).
  // Default on.
  bool drop_trailing_host_dot = true;
  // Uppercase the hex digits of %xx escapes in path, query (and a kept
  // fragment), and decode escapes of unreserved characters (A-Z a-z 0-9 - .
  // _ ~, RFC 3986 2.3), except a hex digit that would turn a stray '%'
  // before it into a new escape. Malformed escapes ("%zz") stay as they are,
  // as browsers send them. Default on.
  bool normalize_percent_encoding = true;
  // "http://a/b?" -> "http://a/b". Default on.
  bool drop_empty_query = true;
  // Remove the query parameters named in strip_params, and ";name=value"
  // path parameters (e.g. ";jsessionid=...") with those names from every
  // path segment. Default on.
  bool strip_session_params = true;
  // Parameter names compared ASCII case-insensitively; a trailing '*' makes
  // the entry a prefix ("utm_*" matches "utm_source"). Bytes.
  std::vector<std::string> strip_params = {"jsessionid", "phpsessid", "sid",
                                           "sessionid",  "utm_*",     "gclid",
                                           "fbclid"};
  // Stable-sort query parameters by key (bytewise), so that "?b=1&a=2" and
  // "?a=2&b=1" have one fingerprint. Off by default: some servers care.
  bool sort_query_params = false;

  // --- limits ---

  // Longest accepted input and canonical href, in bytes; longer ones fail
  // with InvalidArgument "too long". Clamped to [16, 1 MiB].
  size_t max_length = 2048;
};

// Turns any href into the crawler's canonical form (see Options).
//
// Immutable after construction; thread-compatible (const methods may be
// called concurrently). Canonicalize is idempotent:
// Canonicalize(Canonicalize(x)->href()) == Canonicalize(x).
class Canonicalizer {
 public:
  // Copies `options` after sanitizing them (clamping max_length,
  // lowercasing strip_params).
  explicit Canonicalizer(const Options& options);

  // Parses `input` (relative to `base` if given) and canonicalizes it.
  // Fails with InvalidArgument: the Parse() reasons, or "too long" when the
  // input or the result exceeds max_length.
  [[nodiscard]] Result<Url> Canonicalize(std::string_view input,
                                         const Url* base = nullptr) const;
  // Canonicalizes an already parsed URL. Fails only with "too long".
  // REQUIRES: `url` came from Parse() or Canonicalize() (not a
  // default-constructed Url).
  [[nodiscard]] Result<Url> Canonicalize(const Url& url) const;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

// xxh3-64 (XXH3_64bits, seed 0) of the canonical serialization: the URL
// fingerprint used by dedupe. Stable across runs, builds and machines.
// REQUIRES: canonical_href is a Canonicalizer result's href() (any bytes
// hash, but only canonical hrefs make equal URLs collide on purpose).
uint64_t Fingerprint(std::string_view canonical_href);

}  // namespace crawld::url

#endif  // CRAWLD_URL_URL_H_
