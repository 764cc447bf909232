// parser/charset.h (private to parser/): encoding sniffing and conversion of
// HTML bodies to UTF-8 before Gumbo, which only reads UTF-8.
//
// Specs: WHATWG Encoding Standard (https://encoding.spec.whatwg.org/, label
// table and windows-1252 index) and the HTML Standard's encoding sniffing
// algorithm with its "prescan a byte stream to determine its encoding"
// (https://html.spec.whatwg.org/multipage/parsing.html#prescan-a-byte-stream-to-determine-its-encoding).
// See parser.h for the deviations.
#ifndef CRAWLD_PARSER_CHARSET_H_
#define CRAWLD_PARSER_CHARSET_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace crawld::parser::internal {

// The WHATWG encoding name for a label ("latin1" -> "windows-1252"), ASCII
// case-insensitive, surrounding ASCII whitespace ignored. Empty if the label
// is unknown. The view points to static storage.
std::string_view EncodingForLabel(std::string_view label);

// The charset parameter of a Content-Type value, quotes removed; empty if
// none. The view points into `content_type`.
std::string_view CharsetParam(std::string_view content_type);

// The HTML spec's prescan of (at most) the first 1024 bytes for
// <meta charset> or <meta http-equiv=content-type content="...charset=...">.
// Returns the WHATWG encoding name (utf-16 variants become "utf-8",
// x-user-defined "windows-1252") or empty if nothing usable was found.
std::string_view PrescanMetaCharset(std::string_view bytes);

// True if `s` is well-formed UTF-8. With allow_cut_tail, an incomplete but
// so-far valid sequence at the very end is accepted (the input was cut).
bool IsValidUtf8(std::string_view s, bool allow_cut_tail);

// The largest n' <= n such that s[0, n') ends on a UTF-8 sequence boundary
// (never cuts inside a sequence of well-formed UTF-8).
// REQUIRES: n <= s.size().
size_t Utf8Boundary(std::string_view s, size_t n);

// Appends `s` to *out with every ill-formed sequence replaced by U+FFFD
// (one per maximal subpart, as the Encoding Standard's UTF-8 decoder does).
void AppendSanitizedUtf8(std::string_view s, std::string* out);

struct Decoded {
  // UTF-8 HTML to parse: a view into the body (when it was already valid
  // UTF-8 and needed no copy) or into *storage.
  std::string_view html;
  // WHATWG name of the encoding used; static storage.
  std::string_view charset;
  // The body was cut to max_bytes of UTF-8 output.
  bool truncated = false;
};

// Sniffs the encoding (BOM, Content-Type charset, meta prescan, UTF-8
// validity, else windows-1252), converts to UTF-8 with U+FFFD for
// undecodable bytes, strips the BOM, and cuts the result to at most
// `max_bytes` on a UTF-8 boundary. Never fails; unknown labels fall back to
// UTF-8 with replacement. `storage` is reused (cleared, capacity kept).
// REQUIRES: storage != nullptr.
Decoded DecodeToUtf8(std::string_view body, std::string_view content_type,
                     size_t max_bytes, std::string* storage);

}  // namespace crawld::parser::internal

#endif  // CRAWLD_PARSER_CHARSET_H_
