#include "store/warc_internal.h"

#include <openssl/evp.h>
#include <time.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>

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

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  std::optional<JsonObject> Object() {
    JsonObject obj;
    Blank();
    if (!Eat('{')) return std::nullopt;
    Blank();
    if (Eat('}')) return End(std::move(obj));
    for (;;) {
      Blank();
      std::string key;
      if (!String(&key)) return std::nullopt;
      Blank();
      if (!Eat(':')) return std::nullopt;
      Blank();
      auto value = Value();
      if (!value) return std::nullopt;
      obj.insert_or_assign(std::move(key), std::move(*value));
      Blank();
      if (Eat('}')) return End(std::move(obj));
      if (!Eat(',')) return std::nullopt;
    }
  }

 private:
  std::optional<JsonObject> End(JsonObject obj) {
    Blank();
    if (i_ != s_.size()) return std::nullopt;
    return obj;
  }

  std::optional<JsonValue> Value() {
    if (i_ >= s_.size()) return std::nullopt;
    char c = s_[i_];
    if (c == '"') {
      std::string v;
      if (!String(&v)) return std::nullopt;
      return JsonValue(std::move(v));
    }
    if (c == '[') {
      ++i_;
      std::vector<std::string> arr;
      Blank();
      if (Eat(']')) return JsonValue(std::move(arr));
      for (;;) {
        Blank();
        std::string v;
        if (!String(&v)) return std::nullopt;
        arr.push_back(std::move(v));
        Blank();
        if (Eat(']')) return JsonValue(std::move(arr));
        if (!Eat(',')) return std::nullopt;
      }
    }
    if (s_.substr(i_, 4) == "true") {
      i_ += 4;
      return JsonValue(true);
    }
    if (s_.substr(i_, 5) == "false") {
      i_ += 5;
      return JsonValue(false);
    }
    bool neg = Eat('-');
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
      return std::nullopt;
    uint64_t v = 0;
    size_t digits = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      // 18 digits always fit in int64_t; longer numbers are refused.
      if (++digits > 18) return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(s_[i_++] - '0');
    }
    int64_t sv = static_cast<int64_t>(v);
    return JsonValue(neg ? -sv : sv);
  }

  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          auto cp = Hex4();
          if (!cp) return false;
          uint32_t v = *cp;
          if (v >= 0xD800 && v <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") return false;
            i_ += 2;
            auto lo = Hex4();
            if (!lo || *lo < 0xDC00 || *lo > 0xDFFF) return false;
            v = 0x10000 + ((v - 0xD800) << 10) + (*lo - 0xDC00);
          } else if (v >= 0xDC00 && v <= 0xDFFF) {
            return false;
          }
          AppendUtf8(out, v);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }

  std::optional<uint32_t> Hex4() {
    if (i_ + 4 > s_.size()) return std::nullopt;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  void Blank() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' ||
                              s_[i_] == '\r' || s_[i_] == '\n'))
      ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      out->append(s.substr(i, n));
      i += n;
    } else {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
      ++i;
    }
  }
  out->push_back('"');
}

std::optional<JsonObject> ParseFlatJsonObject(std::string_view text) {
  return JsonParser(text).Object();
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
