// store/warc_internal.h: helpers shared by the writer, reader and verifier.
// Private to store/; nothing outside this folder includes it.
#ifndef CRAWLD_STORE_WARC_INTERNAL_H_
#define CRAWLD_STORE_WARC_INTERNAL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/status.h"

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace crawld::store::internal {

// Incremental SHA-1 over OpenSSL EVP. Reusable after Finish().
class Sha1 {
 public:
  Sha1();
  ~Sha1();
  Sha1(const Sha1&) = delete;
  Sha1& operator=(const Sha1&) = delete;

  void Update(std::string_view data);
  // "sha1:<BASE32>" of everything since the last Finish(); resets.
  std::string Finish();

 private:
  EVP_MD_CTX* ctx_;
};

// RFC 4648 section 6 base32, with padding (never needed for 20 bytes).
std::string Base32(std::string_view bytes);

// Compares a WARC digest value ("sha1:" + base32 or hex, label
// case-insensitive) with our "sha1:<BASE32>". nullopt when the algorithm is
// not sha1 or the value is unreadable (we cannot judge it).
std::optional<bool> DigestMatches(std::string_view declared,
                                  std::string_view computed);

// "YYYY-MM-DDThh:mm:ss.ffffffZ" (UTC) for epoch microseconds: base/time.h
// Iso8601Micros, kept under this name for the JSON code that calls it.
std::string FormatWarcDate(int64_t time_us);

// True when `value` is a WARC-Date: YYYY-MM-DDThh:mm:ssZ with an optional
// fraction of 1..9 digits (WARC 1.1 section 5.4; W3C-ISO8601).
bool IsWarcDate(std::string_view value);

// Length of the HTTP header block at the start of `block` (through the
// blank line, CRLF CRLF or LF LF), when `block` starts with a parseable
// status line ("HTTP/x.y NNN") or request line ("METHOD target HTTP/x.y").
// nullopt when it does not.
std::optional<size_t> HttpHeadLength(std::string_view block, bool response);

// The status code of a response head ("HTTP/1.1 200 OK"), or -1.
int HttpStatus(std::string_view head);

// What a response head says about the length of its body (RFC 9112 6.3).
struct HeadFraming {
  int status = -1;        // -1: no status line
  bool bodyless = false;  // 1xx, 204, 304: no body whatever the fields say
  // A Transfer-Encoding other than identity: the length is not in the head.
  bool transfer_coded = false;
  // The Content-Length, when the head gives one (and it is valid).
  std::optional<uint64_t> content_length;
  // Invalid framing, why: Content-Length values that are not 1*DIGIT or
  // that differ, without a Transfer-Encoding (which overrides them, RFC
  // 9112 6.3 item 3). "" when valid. Never set for bodyless statuses.
  std::string error;
};
HeadFraming ParseHeadFraming(std::string_view head);

// The MIME type of a response head's Content-Type, lower-cased, without
// parameters; "" when there is none.
std::string HttpMimeType(std::string_view head);

// Parses one JSON object of the kind our own JSON lines are (CDXJ blocks,
// feed lines): members whose values are strings, integers of at most 18
// digits, booleans or arrays of strings (surrounding blanks allowed), with
// json::Parse's rules (strict UTF-8, no duplicate keys). nullopt for
// anything else, including nested objects and floats: a line we did not
// write is not guessed at.
std::optional<Json> ParseFlatJsonObject(std::string_view text);

// Epoch microseconds -> 14-digit UTC "YYYYMMDDhhmmss".
std::string Timestamp14(int64_t time_us);

// "<what>: <strerror(errno)>", with what to do about the usual causes (a
// full disk, a directory that is not writable): the text an operator sees
// when the WARC, index or feed writer fails. Read errno right after the
// failed call.
std::string Errno(const std::string& what);

}  // namespace crawld::store::internal

#endif  // CRAWLD_STORE_WARC_INTERNAL_H_
