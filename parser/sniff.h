// parser/sniff.h: the MIME type to process a fetched body as (WHATWG MIME
// Sniffing Standard, https://mimesniff.spec.whatwg.org/). Part of the
// parser's public surface: included by parser/parser.h.
//
// A crawler meets bodies whose Content-Type is missing, generic or wrong.
// SniffMime keeps a declared type unless the body is plainly something else:
//  - no usable declaration (absent, "unknown/unknown", "application/unknown",
//    "*/*", not type/subtype): the standard's "rules for identifying an
//    unknown MIME type" with the sniff-scriptable flag set (section 7.1):
//    HTML, XML and PDF signatures after leading whitespace, then the
//    PostScript, BOM, image, audio/video, font and archive signatures, then
//    text/plain if the first bytes hold no binary data byte, else
//    application/octet-stream;
//  - a declared text type (text/*, application/xhtml+xml) whose body starts
//    with a binary signature (image, audio/video, font, archive, PDF,
//    PostScript: sections 6.1-6.4 and 7.1; the signatures that are plain
//    words ("BM", "ID3", "OTTO", ...) also need a binary data byte in the
//    header): the sniffed type. A binary file served as text/html is not
//    parsed as HTML.
//  - anything else: the declared essence, lower-cased.
// Deliberate deviations: the MP3-without-ID3 and embedded-OpenType patterns
// (which need frame and table parsing) are not checked; a text body with
// NUL or other control bytes but no binary signature stays text (a browser
// parses such an HTML page, NUL as U+FFFD: issue 19).
#ifndef CRAWLD_PARSER_SNIFF_H_
#define CRAWLD_PARSER_SNIFF_H_

#include <string>
#include <string_view>

namespace crawld::parser {

// The MIME type essence ("text/html") to process `body` as.
// content_type: the Content-Type header value (may be empty).
// body: the decoded body (after Content-Encoding); only its first 1445
//   bytes (the standard's resource header) are looked at.
// Pure function; safe on any thread.
[[nodiscard]] std::string SniffMime(std::string_view content_type,
                                    std::string_view body);

}  // namespace crawld::parser

#endif  // CRAWLD_PARSER_SNIFF_H_
