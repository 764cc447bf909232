#include "store/warc_internal.h"

#include <openssl/evp.h>
#include <time.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/ascii.h"
#include "base/time.h"
#include "store/store.h"

namespace crawld::store {

namespace internal {

Sha1::Sha1() : ctx_(EVP_MD_CTX_new()) {
  // Allocation failure of a ~200-byte context means the process is out of
  // memory; there is no sensible recovery for a digest helper.
  if (ctx_ == nullptr) std::abort();
  EVP_DigestInit_ex(ctx_, EVP_sha1(), nullptr);
}

Sha1::~Sha1() { EVP_MD_CTX_free(ctx_); }

void Sha1::Update(std::string_view data) {
  if (!data.empty()) EVP_DigestUpdate(ctx_, data.data(), data.size());
}

std::string Sha1::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_, md, &len);
  EVP_DigestInit_ex(ctx_, EVP_sha1(), nullptr);
  return "sha1:" +
         Base32(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string Base32(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  out.reserve((bytes.size() + 4) / 5 * 8);
  uint64_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  while (out.size() % 8 != 0) out.push_back('=');
  return out;
}

namespace {

std::optional<std::string> HexToBase32(std::string_view hex) {
  if (hex.size() != 40) return std::nullopt;
  std::string bytes;
  for (size_t i = 0; i < 40; i += 2) {
    const int hi = ascii::HexValue(hex[i]), lo = ascii::HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  return Base32(bytes);
}

}  // namespace

std::optional<bool> DigestMatches(std::string_view declared,
                                  std::string_view computed) {
  while (!declared.empty() &&
         (declared.back() == ' ' || declared.back() == '\t'))
    declared.remove_suffix(1);
  size_t colon = declared.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  if (!ascii::EqualsIgnoreCase(declared.substr(0, colon), "sha1"))
    return std::nullopt;
  std::string_view value = declared.substr(colon + 1);
  std::string_view ours = computed.substr(5);  // after "sha1:"
  if (value.size() == 32) {
    // Base32 is case-insensitive in practice (some tools write lower case).
    return ascii::EqualsIgnoreCase(value, ours);
  }
  if (auto b32 = HexToBase32(value)) return *b32 == ours;
  return std::nullopt;
}

std::string FormatWarcDate(int64_t time_us) { return Iso8601Micros(time_us); }

bool IsWarcDate(std::string_view v) {
  // YYYY-MM-DDThh:mm:ss
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  if (v.size() < kShape.size() + 1) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == 'd' ? !ascii::IsDigit(v[i]) : v[i] != kShape[i])
      return false;
  }
  std::string_view rest = v.substr(kShape.size());
  if (rest.front() == '.') {
    size_t n = 1;
    while (n < rest.size() && ascii::IsDigit(rest[n])) ++n;
    if (n == 1 || n > 10) return false;
    rest.remove_prefix(n);
  }
  return rest == "Z";
}

namespace {

bool IsHttpVersion(std::string_view v) {
  return v.size() >= 6 && v.substr(0, 5) == "HTTP/" && ascii::IsDigit(v[5]);
}

bool IsToken(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (c <= 32 || c >= 127) return false;
  }
  return true;
}

}  // namespace

std::optional<size_t> HttpHeadLength(std::string_view block, bool response) {
  size_t eol = block.find('\n');
  if (eol == std::string_view::npos) return std::nullopt;
  std::string_view line = block.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (response) {
    // HTTP/x.y SP 3DIGIT [SP reason]
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || !IsHttpVersion(line.substr(0, sp)))
      return std::nullopt;
    std::string_view code = line.substr(sp + 1, 3);
    if (code.size() != 3) return std::nullopt;
    for (char c : code) {
      if (!ascii::IsDigit(c)) return std::nullopt;
    }
    if (line.size() > sp + 4 && line[sp + 4] != ' ') return std::nullopt;
  } else {
    size_t sp1 = line.find(' ');
    size_t sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp1 == sp2) return std::nullopt;
    if (!IsToken(line.substr(0, sp1)) || !IsHttpVersion(line.substr(sp2 + 1)))
      return std::nullopt;
  }
  // The header block ends at the first empty line (CRLF CRLF, or bare LF
  // from sloppy servers).
  size_t pos = eol + 1;
  while (pos <= block.size()) {
    size_t next = block.find('\n', pos);
    if (next == std::string_view::npos) return std::nullopt;
    std::string_view l = block.substr(pos, next - pos);
    if (l.empty() || l == "\r") return next + 1;
    pos = next + 1;
  }
  return std::nullopt;
}

int HttpStatus(std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || !IsHttpVersion(line.substr(0, sp)) ||
      line.size() < sp + 4)
    return -1;
  int code = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (!ascii::IsDigit(line[i])) return -1;
    code = code * 10 + (line[i] - '0');
  }
  return code;
}

HeadFraming ParseHeadFraming(std::string_view head) {
  HeadFraming f;
  f.status = HttpStatus(head);
  f.bodyless =
      f.status >= 100 && (f.status < 200 || f.status == 204 || f.status == 304);
  bool lengths_bad = false;
  std::string bad;
  size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    const size_t start = pos + 1;
    const size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : end - start);
    pos = end;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || ascii::IsHttpSpace(line[0]))
      continue;  // not a field line (obs-fold continuations carry no length)
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    const bool is_length = ascii::EqualsIgnoreCase(name, "Content-Length");
    const bool is_coding = ascii::EqualsIgnoreCase(name, "Transfer-Encoding");
    if (!is_length && !is_coding) continue;
    // RFC 9110 5.6.1: comma-separated list elements.
    while (true) {
      const size_t comma = value.find(',');
      const std::string_view item =
          ascii::TrimHttpSpace(value.substr(0, comma));
      if (is_coding) {
        if (!item.empty() && !ascii::EqualsIgnoreCase(item, "identity"))
          f.transfer_coded = true;
      } else {
        uint64_t n = 0;
        bool digits = !item.empty() && item.size() <= 18;
        for (char c : item) {
          digits = digits && ascii::IsDigit(c);
          if (digits) n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (!digits) {
          lengths_bad = true;
          bad = "invalid Content-Length '" + std::string(item.substr(0, 40)) +
                "'";
        } else if (f.content_length && *f.content_length != n) {
          lengths_bad = true;
          bad = "Content-Length values " + std::to_string(*f.content_length) +
                " and " + std::to_string(n) + " differ";
        } else if (!lengths_bad) {
          f.content_length = n;
        }
      }
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  if (lengths_bad) f.content_length.reset();
  if (f.bodyless) return f;
  // With Transfer-Encoding, the Content-Length is overridden (RFC 9112 6.3
  // item 3): it neither frames nor invalidates the body.
  if (lengths_bad && !f.transfer_coded)
    f.error = bad + " (RFC 9112 section 6.3)";
  return f;
}

}  // namespace internal

bool FieldNameLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const char ca = ascii::ToLower(a[i]), cb = ascii::ToLower(b[i]);
    if (ca != cb)
      return static_cast<unsigned char>(ca) < static_cast<unsigned char>(cb);
  }
  return a.size() < b.size();
}

std::string Record::Header(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string Record::type() const { return Header("WARC-Type"); }

std::string Sha1Digest(std::string_view data) {
  internal::Sha1 sha;
  sha.Update(data);
  return sha.Finish();
}

}  // namespace crawld::store

namespace crawld::store::internal {

std::string HttpMimeType(std::string_view head) {
  size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    size_t start = pos + 1;
    size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon != std::string_view::npos &&
        ascii::EqualsIgnoreCase(line.substr(0, colon), "content-type")) {
      std::string_view v = line.substr(colon + 1);
      return ascii::ToLower(ascii::TrimHttpSpace(v.substr(0, v.find(';'))));
    }
    pos = end;
  }
  return "";
}

std::optional<Json> ParseFlatJsonObject(std::string_view text) {
  json::Limits limits;
  limits.max_bytes = text.size();  // one line; its own length bounds it
  limits.max_depth = 2;            // an object of arrays
  Result<Json> j = json::Parse(text, limits);
  if (!j.ok() || !j->is_object()) return std::nullopt;
  constexpr int64_t kMax = 999'999'999'999'999'999;  // 18 digits
  for (const auto& [key, value] : j->items()) {
    if (value.is_string() || value.is_boolean()) continue;
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(kMax)) {
        return std::nullopt;
      }
      continue;
    }
    if (value.is_number_integer()) {
      if (value.get<int64_t>() < -kMax) return std::nullopt;
      continue;
    }
    if (!value.is_array()) return std::nullopt;  // floats, null, objects
    for (const Json& item : value) {
      if (!item.is_string()) return std::nullopt;
    }
  }
  return std::move(j).value();
}

std::string Errno(const std::string& what) {
  const int e = errno;
  std::string msg = what + ": " + strerror(e);
  if (e == ENOSPC || e == EDQUOT) {
    msg += " (disk full: free space, then resume the crawl)";
  } else if (e == EROFS || e == EACCES || e == EPERM) {
    msg += " (the directory is not writable)";
  }
  return msg;
}

std::string Timestamp14(int64_t time_us) {
  int64_t secs = time_us / 1000000;
  if (time_us % 1000000 < 0) secs -= 1;
  time_t t = static_cast<time_t>(secs);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return std::string(buf, 14);
}

}  // namespace crawld::store::internal
