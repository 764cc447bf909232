// base/json.h: JSON for the whole tree: nlohmann::json, plus the few rules
// crawld adds to it for untrusted text, written once.
//
// JSON per RFC 8259 (https://www.rfc-editor.org/rfc/rfc8259). The value type
// is nlohmann::ordered_json (https://json.nlohmann.me/): objects keep their
// members in insertion order, because the order is visible in what crawld
// writes (the admin API's status, summary.json, feed lines). Build values
// with nlohmann's own API (Json::object(), j["key"] = v, push_back); parse
// and print only through the functions here, which never throw:
//  - json::Parse: strict RFC 8259 with limits on size and nesting, duplicate
//    object keys refused (RFC 8259 section 4 leaves them undefined; crawld
//    will not guess which one a client meant), a leading byte order mark
//    refused (section 8.1), numbers out of double range refused, strings
//    must be valid UTF-8 (invalid bytes and lone surrogates are errors).
//  - json::Dump: compact text; invalid UTF-8 in a string is written as
//    U+FFFD and non-finite numbers as null, so the output always parses.
//
// Reading a parsed value: nlohmann's typed getters throw on a type mismatch
// (get<std::string>() of a number), and operator[] on a const object with a
// missing key is undefined. Check the type first (is_string(), is_number())
// or use json::Find, which returns nullptr instead.
#ifndef CRAWLD_BASE_JSON_H_
#define CRAWLD_BASE_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace crawld {

// A JSON value (null, bool, integer, unsigned, double, string, array,
// object). A plain value type; copies are deep.
using Json = nlohmann::ordered_json;

namespace json {

// Limits json::Parse applies to untrusted text.
struct Limits {
  // Longest accepted input, in bytes.
  size_t max_bytes = 1 << 20;
  // Deepest nesting of arrays and objects; 1 is a flat array or object.
  // Bounds the work and memory of one parse whatever the input.
  int max_depth = 64;
};

// Parses one JSON text (any value at the top; surrounding whitespace
// allowed). Fails with InvalidArgument ("JSON: ... at byte N" where the
// parser knows the place) on a syntax error, invalid UTF-8 or a lone
// surrogate, a duplicate object key, a number out of double range, a byte
// order mark or trailing bytes; with ResourceExhausted past the limits.
// Never throws, never crashes on any input.
[[nodiscard]] Result<Json> Parse(std::string_view text,
                                 const Limits& limits = {});

// Compact JSON text of value (no spaces, members in order). Strings are
// written as UTF-8 (not \u-escaped) with invalid bytes as U+FFFD; control
// characters, '"' and '\' are escaped; NaN and infinities become null.
// Never throws.
[[nodiscard]] std::string Dump(const Json& value);

// Appends s to out as a JSON string literal, quotes included, with the
// escaping of Dump. For formats that lay out their own JSON around values
// (CDXJ lines use Python's ", " and ": " separators).
void AppendQuoted(std::string* out, std::string_view s);

// The member named key of object, or nullptr when object is not an object
// or has no such member. The pointer is valid until object is modified.
[[nodiscard]] const Json* Find(const Json& object, std::string_view key);

}  // namespace json
}  // namespace crawld

#endif  // CRAWLD_BASE_JSON_H_
