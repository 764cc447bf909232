// url/url.cc: the WHATWG basic URL parser (no state override), writing the
// serialization directly into Url::href_ while it parses, as ada's
// url_aggregator does: the standard's components come out in serialization
// order, so the only buffering needed is for the userinfo (found by a
// look-ahead for the last '@') and the host (parsed, then appended).
//
// Section names in comments refer to https://url.spec.whatwg.org/.
#include "url/url.h"

#include <idn2.h>
#include <utf8.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "base/ascii.h"

namespace crawld::url {
namespace {

constexpr size_t kMaxParseInput = 1 << 20;

// Percent-encode sets (section 1.3) as bits of one table.
constexpr uint8_t kC0Set = 1;
constexpr uint8_t kFragmentSet = 2;
constexpr uint8_t kQuerySet = 4;
constexpr uint8_t kSpecialQuerySet = 8;
constexpr uint8_t kPathSet = 16;
constexpr uint8_t kUserinfoSet = 32;

constexpr std::array<uint8_t, 256> MakeEncodeTable() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    uint8_t bits = 0;
    if (c < 0x20 || c > 0x7e) bits = 0x3f;  // in every set
    auto add = [&](uint8_t set, const char* chars) {
      for (const char* p = chars; *p != '\0'; ++p) {
        if (static_cast<unsigned char>(*p) == c) bits |= set;
      }
    };
    // Each set includes the ones it is built on (fragment and query are both
    // built on C0; path on query; userinfo on path).
    add(kFragmentSet, " \"<>`");
    add(kQuerySet | kSpecialQuerySet | kPathSet | kUserinfoSet, " \"#<>");
    add(kSpecialQuerySet, "'");
    add(kPathSet | kUserinfoSet, "?`{}");
    add(kUserinfoSet, "/:;=@[\\]^|");
    t[c] = bits;
  }
  return t;
}
constexpr std::array<uint8_t, 256> kEncode = MakeEncodeTable();

constexpr char kHexUpper[] = "0123456789ABCDEF";

using ascii::HexValue;
using ascii::ToLower;
constexpr bool IsAsciiAlpha(char c) { return ascii::IsAlpha(c); }
constexpr bool IsAsciiDigit(char c) { return ascii::IsDigit(c); }
constexpr bool IsAsciiHex(char c) { return ascii::IsHexDigit(c); }

// Forbidden host code points (section 3.2); domains also forbid C0
// controls, '%' and DEL.
constexpr std::array<bool, 256> MakeForbiddenHostTable() {
  std::array<bool, 256> t{};
  for (const unsigned char c : std::string_view("\0\t\n\r #/:<>?@[\\]^|", 17)) {
    t[c] = true;
  }
  return t;
}
constexpr std::array<bool, 256> kForbiddenHost = MakeForbiddenHostTable();
constexpr std::array<bool, 256> MakeForbiddenDomainTable() {
  std::array<bool, 256> t = kForbiddenHost;
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['%'] = true;
  t[0x7f] = true;
  return t;
}
constexpr std::array<bool, 256> kForbiddenDomain = MakeForbiddenDomainTable();

bool IsForbiddenHost(unsigned char c) { return kForbiddenHost[c]; }
bool IsForbiddenDomain(unsigned char c) { return kForbiddenDomain[c]; }

// The bytes the WHATWG Encoding UTF-8 decoder consumes for one U+FFFD at an
// invalid sequence starting at s[i]: its maximal subpart (the longest
// prefix that could still begin a valid sequence), at least 1. This is
// what a browser shows for bad bytes in a URL; utfcpp's replace_invalid
// instead swallows every continuation byte after a bad lead, which would
// give different URLs (e.g. E0 80 80 is three U+FFFD, not one).
size_t InvalidSubpartLength(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t need;
  unsigned char lo = 0x80, hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    need = 1;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    need = 2;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    need = 3;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 1;
  }
  size_t k = 1;
  for (; k <= need && i + k < s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) break;
    lo = 0x80;
    hi = 0xbf;
  }
  return k;
}

void AppendPercent(std::string& out, unsigned char c) {
  const char buf[3] = {'%', kHexUpper[c >> 4], kHexUpper[c & 15]};
  out.append(buf, 3);
}

// Appends s[begin, end) percent-encoded with `set`. Bytes >= 0x80 are
// UTF-8: a valid sequence (checked by utfcpp) is encoded byte by byte, an
// invalid one becomes the encoding of U+FFFD.
void AppendEncoded(std::string& out, std::string_view s, size_t begin,
                   size_t end, uint8_t set) {
  size_t i = begin;
  while (i < end) {
    size_t run = i;
    while (run < end &&
           (kEncode[static_cast<unsigned char>(s[run])] & set) == 0) {
      ++run;
    }
    out.append(s.data() + i, run - i);
    i = run;
    if (i >= end) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      AppendPercent(out, c);
      ++i;
      continue;
    }
    // The one sequence the lead byte announces (RFC 3629 section 4); utfcpp
    // refuses overlongs, surrogates, values past U+10FFFF and bad leads.
    const size_t len = std::min(end - i, size_t{c < 0xe0   ? 2u
                                                : c < 0xf0 ? 3u
                                                           : 4u});
    const char* seq = s.data() + i;
    if (utf8::find_invalid(seq, seq + len) == seq + len) {
      for (size_t k = 0; k < len; ++k) {
        AppendPercent(out, static_cast<unsigned char>(seq[k]));
      }
      i += len;
    } else {
      out.append("%EF%BF%BD");
      i += InvalidSubpartLength(s.substr(0, end), i);
    }
  }
}

enum class SchemeType : uint8_t {
  kOther,
  kHttp,
  kHttps,
  kWs,
  kWss,
  kFtp,
  kFile
};

SchemeType SchemeTypeOf(std::string_view lower) {
  switch (lower.size()) {
    case 2:
      if (lower == "ws") return SchemeType::kWs;
      break;
    case 3:
      if (lower == "wss") return SchemeType::kWss;
      if (lower == "ftp") return SchemeType::kFtp;
      break;
    case 4:
      if (lower == "http") return SchemeType::kHttp;
      if (lower == "file") return SchemeType::kFile;
      break;
    case 5:
      if (lower == "https") return SchemeType::kHttps;
      break;
    default:
      break;
  }
  return SchemeType::kOther;
}

int DefaultPort(SchemeType t) {
  switch (t) {
    case SchemeType::kHttp:
    case SchemeType::kWs:
      return 80;
    case SchemeType::kHttps:
    case SchemeType::kWss:
      return 443;
    case SchemeType::kFtp:
      return 21;
    default:
      return -1;
  }
}

// "Windows drive letter": an ASCII alpha then ':' or '|' (normalized: ':').
bool IsWindowsDriveLetter(std::string_view s, bool normalized_only) {
  return s.size() == 2 && IsAsciiAlpha(s[0]) &&
         (s[1] == ':' || (!normalized_only && s[1] == '|'));
}
// "starts with a Windows drive letter".
bool StartsWithWindowsDriveLetter(std::string_view s) {
  if (s.size() < 2 || !IsWindowsDriveLetter(s.substr(0, 2), false)) {
    return false;
  }
  if (s.size() == 2) return true;
  const char c = s[2];
  return c == '/' || c == '\\' || c == '?' || c == '#';
}

bool IsSingleDot(std::string_view s) {
  return s == "." ||
         (s.size() == 3 && s[0] == '%' && s[1] == '2' && (s[2] | 0x20) == 'e');
}
bool IsDoubleDot(std::string_view s) {
  switch (s.size()) {
    case 2:
      return s == "..";
    case 4:
      return (s[0] == '.' && IsSingleDot(s.substr(1))) ||
             (s[3] == '.' && IsSingleDot(s.substr(0, 3)));
    case 6:
      return IsSingleDot(s.substr(0, 3)) && IsSingleDot(s.substr(3));
    default:
      return false;
  }
}

// --- Hosts (section 3.5) ---

// IPv4 number parser. Returns false on failure; *out saturates above 2^32.
bool ParseIpv4Number(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int radix = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x') {
    s.remove_prefix(2);
    radix = 16;
  } else if (s.size() >= 2 && s[0] == '0') {
    s.remove_prefix(1);
    radix = 8;
  }
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (radix == 16) {
      if (!IsAsciiHex(c)) return false;
      d = HexValue(c);
    } else {
      if (!IsAsciiDigit(c)) return false;
      d = c - '0';
      if (d >= radix) return false;
    }
    v = v * static_cast<uint64_t>(radix) + static_cast<uint64_t>(d);
    if (v > (uint64_t{1} << 32))
      v = uint64_t{1} << 33;  // saturate: fails later
  }
  *out = v;
  return true;
}

// "ends in a number" (section 3.5).
bool EndsInANumber(std::string_view s) {
  if (!s.empty() && s.back() == '.') {
    if (s.size() == 1) return false;
    s.remove_suffix(1);
  }
  const size_t dot = s.rfind('.');
  const std::string_view last =
      dot == std::string_view::npos ? s : s.substr(dot + 1);
  if (last.empty()) return false;
  if (std::all_of(last.begin(), last.end(), IsAsciiDigit)) return true;
  if (last.size() >= 2 && last[0] == '0' && (last[1] | 0x20) == 'x') {
    return std::all_of(last.begin() + 2, last.end(), IsAsciiHex);
  }
  return false;
}

// IPv4 parser; appends dotted decimal on success.
bool ParseIpv4(std::string_view s, std::string& out) {
  std::array<uint64_t, 4> numbers{};
  size_t n = 0;
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);  // "1.2.3.4."
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view part =
        s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (n == 4) return false;
    if (!ParseIpv4Number(part, &numbers[n])) return false;
    ++n;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    if (numbers[i] > 255) return false;
  }
  if (numbers[n - 1] >= (uint64_t{1} << (8 * (5 - n)))) return false;
  uint32_t ipv4 = static_cast<uint32_t>(numbers[n - 1]);
  for (size_t i = 0; i + 1 < n; ++i) {
    ipv4 += static_cast<uint32_t>(numbers[i] << (8 * (3 - i)));
  }
  char buf[16];
  int len = std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", ipv4 >> 24,
                          (ipv4 >> 16) & 255, (ipv4 >> 8) & 255, ipv4 & 255);
  out.append(buf, static_cast<size_t>(len));
  return true;
}

// IPv6 parser and serializer; `s` is the text inside the brackets.
bool ParseIpv6(std::string_view s, std::string& out) {
  std::array<uint16_t, 8> address{};
  int piece = 0;
  int compress = -1;
  size_t p = 0;
  auto at = [&](size_t i) -> int {
    return i < s.size() ? static_cast<unsigned char>(s[i]) : -1;
  };
  if (at(p) == ':') {
    if (at(p + 1) != ':') return false;
    p += 2;
    ++piece;
    compress = piece;
  }
  while (at(p) != -1) {
    if (piece == 8) return false;
    if (at(p) == ':') {
      if (compress != -1) return false;
      ++p;
      ++piece;
      compress = piece;
      continue;
    }
    unsigned value = 0;
    int length = 0;
    while (length < 4 && at(p) != -1 && IsAsciiHex(static_cast<char>(at(p)))) {
      value = value * 16 +
              static_cast<unsigned>(HexValue(static_cast<char>(at(p))));
      ++p;
      ++length;
    }
    if (at(p) == '.') {
      if (length == 0) return false;
      p -= static_cast<size_t>(length);
      if (piece > 6) return false;
      int numbers_seen = 0;
      while (at(p) != -1) {
        int ipv4_piece = -1;
        if (numbers_seen > 0) {
          if (at(p) == '.' && numbers_seen < 4) {
            ++p;
          } else {
            return false;
          }
        }
        if (at(p) == -1 || !IsAsciiDigit(static_cast<char>(at(p))))
          return false;
        while (at(p) != -1 && IsAsciiDigit(static_cast<char>(at(p)))) {
          const int number = at(p) - '0';
          if (ipv4_piece == -1) {
            ipv4_piece = number;
          } else if (ipv4_piece == 0) {
            return false;
          } else {
            ipv4_piece = ipv4_piece * 10 + number;
          }
          if (ipv4_piece > 255) return false;
          ++p;
        }
        address[piece] =
            static_cast<uint16_t>(address[piece] * 0x100 + ipv4_piece);
        ++numbers_seen;
        if (numbers_seen == 2 || numbers_seen == 4) ++piece;
      }
      if (numbers_seen != 4) return false;
      break;
    } else if (at(p) == ':') {
      ++p;
      if (at(p) == -1) return false;
    } else if (at(p) != -1) {
      return false;
    }
    address[piece] = static_cast<uint16_t>(value);
    ++piece;
  }
  if (compress != -1) {
    int swaps = piece - compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      std::swap(address[piece], address[compress + swaps - 1]);
      --piece;
      --swaps;
    }
  } else if (piece != 8) {
    return false;
  }
  // Serializer: compress the first longest run of two or more zero pieces.
  int best = -1, best_len = 1;
  for (int i = 0; i < 8;) {
    if (address[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && address[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  out.push_back('[');
  bool ignore0 = false;
  for (int i = 0; i < 8; ++i) {
    if (ignore0 && address[i] == 0) continue;
    ignore0 = false;
    if (best == i) {
      out.append(i == 0 ? "::" : ":");
      ignore0 = true;
      continue;
    }
    char buf[8];
    int len = std::snprintf(buf, sizeof buf, "%x", address[i]);
    out.append(buf, static_cast<size_t>(len));
    if (i != 7) out.push_back(':');
  }
  out.push_back(']');
  return true;
}

// One label through libidn2 (see the file comment of url.h for why the
// fallback to transitional processing). Labels go one at a time so that an
// ASCII label libidn2 would refuse ("ab--cd", "-a") never reaches it.
bool LabelToAscii(const std::string& label, std::string& out) {
  char* ace = nullptr;
  int rc = idn2_to_ascii_8z(label.c_str(), &ace,
                            IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
  if (rc == IDN2_DISALLOWED || rc == IDN2_BIDI) {
    // IDNA2008 disallows symbols and emoji and is stricter on bidi than
    // UTS #46 as browsers apply it; the transitional table accepts them.
    rc = idn2_to_ascii_8z(label.c_str(), &ace,
                          IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
  }
  if (rc != IDN2_OK) return false;
  out.append(ace);
  idn2_free(ace);
  return true;
}

bool IsLabelSeparatorAt(std::string_view s, size_t i, size_t* len) {
  if (s[i] == '.') {
    *len = 1;
    return true;
  }
  // U+3002 IDEOGRAPHIC FULL STOP, U+FF0E FULLWIDTH FULL STOP, U+FF61
  // HALFWIDTH IDEOGRAPHIC FULL STOP: UTS #46 maps all three to '.'.
  if (i + 2 < s.size()) {
    const std::string_view t = s.substr(i, 3);
    if (t == "\xe3\x80\x82" || t == "\xef\xbc\x8e" || t == "\xef\xbd\xa1") {
      *len = 3;
      return true;
    }
  }
  return false;
}

// Domain to ASCII (section 3.5) for a percent-decoded domain that is not
// plain lowercase-able ASCII. Labels that are ASCII and not "xn--" are only
// lowercased (UTS #46 with CheckHyphens=false and VerifyDnsLength=false, as
// browsers do, leaves them alone); the others go through libidn2.
bool DomainToAsciiSlow(std::string_view domain, std::string& out) {
  std::string label;
  size_t i = 0;
  while (true) {
    label.clear();
    size_t sep_len = 0;
    bool at_end = true;
    while (i < domain.size()) {
      if (IsLabelSeparatorAt(domain, i, &sep_len)) {
        at_end = false;
        break;
      }
      label.push_back(domain[i]);
      ++i;
    }
    bool ascii = true;
    for (char c : label) ascii &= static_cast<unsigned char>(c) < 0x80;
    const bool xn = label.size() >= 4 && (label[0] | 0x20) == 'x' &&
                    (label[1] | 0x20) == 'n' && label[2] == '-' &&
                    label[3] == '-';
    if (ascii && !xn) {
      for (char c : label) out.push_back(ToLower(c));
    } else if (!LabelToAscii(label, out)) {
      return false;
    }
    if (at_end) break;
    out.push_back('.');
    i += sep_len;
  }
  return true;
}

}  // namespace

// The parser. Appends to url.href_ and fills the offsets as it goes.
class UrlBuilder {
 public:
  UrlBuilder(std::string_view input, const Url* base, Url& url)
      : in_(input), base_(base), url_(url), out_(url.href_) {
    out_.reserve(input.size() + (base != nullptr ? base->href_.size() : 0) + 8);
  }

  // Returns nullptr on success, else the failure reason.
  const char* Run();

  // Empties `url` (fields as a default Url) but keeps its href's capacity.
  static void Reset(Url& url) {
    std::string href = std::move(url.href_);
    href.clear();
    url = Url();
    url.href_ = std::move(href);
  }

 private:
  int At(size_t i) const {
    return i < in_.size() ? static_cast<unsigned char>(in_[i]) : -1;
  }
  bool IsSlash(int c) const { return c == '/' || (special_ && c == '\\'); }
  bool IsFileBase() const {
    return base_ != nullptr && base_->scheme() == "file";
  }

  void SetScheme(std::string_view lower) {
    out_.append(lower);
    url_.scheme_end_ = static_cast<uint32_t>(out_.size());
    out_.push_back(':');
    type_ = SchemeTypeOf(lower);
    special_ = type_ != SchemeType::kOther;
    url_.special_ = special_;
  }
  // Copies the base's scheme, userinfo, host and port (the bytes before its
  // path). Offsets carry over because the scheme is the same.
  void CopyBaseAuthority() {
    if (base_->has_host()) {
      out_.append(base_->href_.data() + base_->scheme_end_ + 1,
                  base_->path_start_ - base_->scheme_end_ - 1);
      url_.username_end_ = base_->username_end_;
      url_.host_start_ = base_->host_start_;
      url_.host_end_ = base_->host_end_;
      url_.port_ = base_->port_;
    }
    url_.path_start_ = static_cast<uint32_t>(out_.size());
  }
  void CopyBasePath() { out_.append(base_->path()); }
  void CopyBaseQuery() {
    if (base_->has_query()) {
      url_.query_start_ = static_cast<uint32_t>(out_.size());
      out_.push_back('?');
      out_.append(base_->query());
    }
  }
  void ShortenPath();
  void FinishPath();

  const char* Authority();
  const char* Host(size_t begin, size_t end);
  const char* PathStart();
  const char* Path();
  const char* OpaquePath();
  void Query();
  void Fragment();
  const char* Relative();
  const char* File();
  const char* FileHost();

  std::string_view in_;
  const Url* base_;
  Url& url_;
  std::string& out_;
  size_t p_ = 0;
  SchemeType type_ = SchemeType::kOther;
  bool special_ = false;
};

const char* UrlBuilder::Run() {
  // Scheme start and scheme states.
  size_t i = 0;
  if (!in_.empty() && IsAsciiAlpha(in_[0])) {
    i = 1;
    while (i < in_.size() &&
           (IsAsciiAlpha(in_[i]) || IsAsciiDigit(in_[i]) || in_[i] == '+' ||
            in_[i] == '-' || in_[i] == '.')) {
      ++i;
    }
  }
  if (i > 0 && i < in_.size() && in_[i] == ':') {
    char buf[32];
    std::string lower;
    std::string_view scheme;
    if (i <= sizeof buf) {
      for (size_t k = 0; k < i; ++k) buf[k] = ToLower(in_[k]);
      scheme = std::string_view(buf, i);
    } else {
      lower.reserve(i);
      for (size_t k = 0; k < i; ++k) lower.push_back(ToLower(in_[k]));
      scheme = lower;
    }
    SetScheme(scheme);
    p_ = i + 1;
    if (type_ == SchemeType::kFile) return File();
    if (special_) {
      if (base_ != nullptr && base_->scheme() == scheme) {
        // Special relative or authority state.
        if (At(p_) == '/' && At(p_ + 1) == '/') {
          p_ += 2;
          while (At(p_) == '/' || At(p_) == '\\') ++p_;
          return Authority();
        }
        return Relative();
      }
      // Special authority slashes, then ignore slashes.
      while (At(p_) == '/' || At(p_) == '\\') ++p_;
      return Authority();
    }
    if (At(p_) == '/') {
      ++p_;
      if (At(p_) == '/') {
        ++p_;
        return Authority();
      }
      url_.path_start_ = static_cast<uint32_t>(out_.size());
      return Path();
    }
    return OpaquePath();
  }

  // No scheme state.
  p_ = 0;
  if (base_ == nullptr) return "missing scheme";
  if (base_->has_opaque_path()) {
    if (At(0) != '#') return "missing scheme";
    out_.append(base_->href_.data(), base_->has_fragment()
                                         ? base_->fragment_start_
                                         : base_->href_.size());
    url_.scheme_end_ = base_->scheme_end_;
    url_.path_start_ = base_->path_start_;
    url_.query_start_ = base_->query_start_;
    url_.special_ = base_->special_;
    url_.opaque_path_ = true;
    ++p_;
    Fragment();
    return nullptr;
  }
  SetScheme(base_->scheme());
  if (type_ == SchemeType::kFile) return File();
  return Relative();
}

// Relative state and relative slash state.
const char* UrlBuilder::Relative() {
  const int c = At(p_);
  if (IsSlash(c)) {
    ++p_;
    if (special_ && IsSlash(At(p_))) {
      while (At(p_) == '/' || At(p_) == '\\') ++p_;
      return Authority();
    }
    if (At(p_) == '/') {
      ++p_;
      return Authority();
    }
    CopyBaseAuthority();
    return Path();
  }
  CopyBaseAuthority();
  if (c == -1) {
    CopyBasePath();
    FinishPath();
    CopyBaseQuery();
    return nullptr;
  }
  CopyBasePath();
  if (c == '?') {
    FinishPath();
    ++p_;
    Query();
    return nullptr;
  }
  if (c == '#') {
    FinishPath();
    CopyBaseQuery();
    ++p_;
    Fragment();
    return nullptr;
  }
  ShortenPath();
  return Path();
}

// Authority state (userinfo), then host and port states. The standard
// buffers code points and, at each '@', turns the buffer into userinfo; at
// the end of the authority it rewinds to parse the host. Finding the last '@'
// before the end first gives the same split without the rewind, and lets us
// write userinfo, host and port straight into the output in order.
const char* UrlBuilder::Authority() {
  size_t end = p_;
  size_t at = std::string_view::npos;
  while (end < in_.size()) {
    const char c = in_[end];
    if (c == '/' || c == '?' || c == '#' || (special_ && c == '\\')) break;
    if (c == '@') at = end;
    ++end;
  }
  out_.append("//");
  size_t host_begin = p_;
  if (at != std::string_view::npos) {
    if (at + 1 == end) return "missing host";
    const std::string_view userinfo = in_.substr(p_, at - p_);
    const size_t colon = userinfo.find(':');
    const size_t user_start = out_.size();
    const size_t user_len =
        colon == std::string_view::npos ? userinfo.size() : colon;
    AppendEncoded(out_, in_, p_, p_ + user_len, kUserinfoSet);
    const size_t user_end = out_.size();
    if (colon != std::string_view::npos) {
      out_.push_back(':');
      AppendEncoded(out_, in_, p_ + colon + 1, at, kUserinfoSet);
      if (out_.size() == user_end + 1) out_.pop_back();  // empty password
    }
    if (out_.size() > user_start) {
      url_.username_end_ = static_cast<uint32_t>(user_end);
      out_.push_back('@');
    }
    host_begin = at + 1;
  }
  // Host state: the host ends at a ':' outside brackets.
  size_t host_end = host_begin;
  bool in_brackets = false;
  while (host_end < end) {
    const char c = in_[host_end];
    if (c == ':' && !in_brackets) break;
    if (c == '[') in_brackets = true;
    if (c == ']') in_brackets = false;
    ++host_end;
  }
  if (host_end == host_begin && (host_end < end || special_)) {
    return "missing host";
  }
  if (const char* err = Host(host_begin, host_end)) return err;
  // Port state.
  if (host_end < end) {
    size_t q = host_end + 1;
    uint32_t port = 0;
    bool any = false;
    // Failing as soon as the value passes 65535 keeps a long digit string
    // from overflowing; leading zeros ("0080") are fine.
    for (; q < end; ++q) {
      if (!IsAsciiDigit(in_[q])) return "invalid port";
      port = port * 10 + static_cast<uint32_t>(in_[q] - '0');
      if (port > 65535) return "invalid port";
      any = true;
    }
    if (any && static_cast<int>(port) != DefaultPort(type_)) {
      url_.port_ = static_cast<int32_t>(port);
      out_.push_back(':');
      out_.append(std::to_string(port));
    }
  }
  p_ = end;
  url_.path_start_ = static_cast<uint32_t>(out_.size());
  return PathStart();
}

// Host parser (section 3.5): appends the serialized host.
const char* UrlBuilder::Host(size_t begin, size_t end) {
  url_.host_start_ = static_cast<uint32_t>(out_.size());
  const std::string_view input = in_.substr(begin, end - begin);
  const char* err = nullptr;
  if (!input.empty() && input[0] == '[') {
    if (input.back() != ']' || input.size() < 2 ||
        !ParseIpv6(input.substr(1, input.size() - 2), out_)) {
      err = "invalid IPv6";
    }
  } else if (!special_) {
    // Opaque host.
    for (char c : input) {
      if (IsForbiddenHost(static_cast<unsigned char>(c))) {
        err = "invalid host";
        break;
      }
    }
    if (err == nullptr) AppendEncoded(out_, input, 0, input.size(), kC0Set);
  } else {
    // Domain: percent-decode, then domain to ASCII.
    const size_t start = out_.size();
    bool simple = true;
    bool escaped = false;
    for (const char c : input) {
      if (c == '%' || static_cast<unsigned char>(c) >= 0x80) {
        escaped = true;
        break;
      }
    }
    if (!escaped) {
      // The common case: ASCII without escapes, lowercased in one pass.
      out_.resize(start + input.size());
      char* dst = out_.data() + start;
      for (size_t k = 0; k < input.size(); ++k) dst[k] = ToLower(input[k]);
    } else {
      for (size_t k = 0; k < input.size(); ++k) {
        char c = input[k];
        if (c == '%' && k + 2 < input.size() && IsAsciiHex(input[k + 1]) &&
            IsAsciiHex(input[k + 2])) {
          c = static_cast<char>(HexValue(input[k + 1]) * 16 +
                                HexValue(input[k + 2]));
          k += 2;
        }
        if (static_cast<unsigned char>(c) >= 0x80) simple = false;
        out_.push_back(ToLower(c));
      }
    }
    // "xn--" labels need validation by the IDNA code.
    std::string_view decoded(out_.data() + start, out_.size() - start);
    for (size_t k = decoded.find("xn--"); simple && k != decoded.npos;
         k = decoded.find("xn--", k + 1)) {
      if (k == 0 || decoded[k - 1] == '.') simple = false;
    }
    if (!simple) {
      std::string domain(decoded);
      out_.resize(start);
      if (!DomainToAsciiSlow(domain, out_)) err = "invalid host";
      decoded = std::string_view(out_.data() + start, out_.size() - start);
    }
    if (err == nullptr) {
      if (decoded.empty()) err = "invalid host";
      for (char c : decoded) {
        if (IsForbiddenDomain(static_cast<unsigned char>(c))) {
          err = "invalid host";
          break;
        }
      }
    }
    if (err == nullptr && EndsInANumber(decoded)) {
      std::string copy(decoded);
      out_.resize(start);
      if (!ParseIpv4(copy, out_)) err = "invalid IPv4";
    }
  }
  url_.host_end_ = static_cast<uint32_t>(out_.size());
  return err;
}

// Path start state.
const char* UrlBuilder::PathStart() {
  const int c = At(p_);
  url_.path_start_ = static_cast<uint32_t>(out_.size());
  if (special_) {
    if (IsSlash(c)) ++p_;
    return Path();
  }
  if (c == '?') {
    ++p_;
    Query();
    return nullptr;
  }
  if (c == '#') {
    ++p_;
    Fragment();
    return nullptr;
  }
  if (c != -1) {
    if (c == '/') ++p_;
    return Path();
  }
  return nullptr;
}

void UrlBuilder::ShortenPath() {
  const std::string_view path(out_.data() + url_.path_start_,
                              out_.size() - url_.path_start_);
  if (type_ == SchemeType::kFile && path.size() == 3 &&
      IsWindowsDriveLetter(path.substr(1), true)) {
    return;
  }
  const size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) out_.resize(url_.path_start_ + slash);
}

// A path that starts with "//" on a URL without host would read back as a
// host: the serializer puts "/." before it.
void UrlBuilder::FinishPath() {
  if (url_.host_start_ == Url::kNone && out_.size() >= url_.path_start_ + 2 &&
      out_[url_.path_start_] == '/' && out_[url_.path_start_ + 1] == '/') {
    out_.insert(url_.path_start_, "/.");
    url_.path_start_ += 2;
  }
}

// Path state: one list item per segment, each serialized as "/" + segment.
// The path is kept serialized at the end of the output: "shorten" cuts at
// the last '/', which equals removing the list's last item. Dot segments are
// recognized on the encoded segment: '.' is never encoded and "%2e" passes
// through unchanged, so the bytes equal the standard's buffer.
const char* UrlBuilder::Path() {
  int c;
  while (true) {
    const size_t seg_start = out_.size();
    out_.push_back('/');
    size_t q = p_;
    while (q < in_.size()) {
      const char ch = in_[q];
      if (ch == '/' || ch == '?' || ch == '#' || (special_ && ch == '\\'))
        break;
      ++q;
    }
    AppendEncoded(out_, in_, p_, q, kPathSet);
    p_ = q;
    c = At(p_);
    const bool slash = IsSlash(c);
    const std::string_view seg(out_.data() + seg_start + 1,
                               out_.size() - seg_start - 1);
    if (IsDoubleDot(seg)) {
      out_.resize(seg_start);
      ShortenPath();
      if (!slash) out_.push_back('/');
    } else if (IsSingleDot(seg)) {
      out_.resize(seg_start);
      if (!slash) out_.push_back('/');
    } else if (type_ == SchemeType::kFile && seg_start == url_.path_start_ &&
               IsWindowsDriveLetter(seg, false)) {
      out_[seg_start + 2] = ':';
    }
    if (!slash) break;
    ++p_;
  }
  FinishPath();
  if (c == '?') {
    ++p_;
    Query();
  } else if (c == '#') {
    ++p_;
    Fragment();
  }
  return nullptr;
}

// Opaque path state ("mailto:x", "javascript:x", "data:x").
const char* UrlBuilder::OpaquePath() {
  url_.opaque_path_ = true;
  url_.path_start_ = static_cast<uint32_t>(out_.size());
  size_t q = p_;
  while (q < in_.size() && in_[q] != '?' && in_[q] != '#') ++q;
  AppendEncoded(out_, in_, p_, q, kC0Set);
  p_ = q;
  if (At(p_) == '?') {
    ++p_;
    Query();
  } else if (At(p_) == '#') {
    ++p_;
    Fragment();
  }
  return nullptr;
}

void UrlBuilder::Query() {
  url_.query_start_ = static_cast<uint32_t>(out_.size());
  out_.push_back('?');
  size_t q = p_;
  while (q < in_.size() && in_[q] != '#') ++q;
  AppendEncoded(out_, in_, p_, q, special_ ? kSpecialQuerySet : kQuerySet);
  p_ = q;
  if (At(p_) == '#') {
    ++p_;
    Fragment();
  }
}

void UrlBuilder::Fragment() {
  url_.fragment_start_ = static_cast<uint32_t>(out_.size());
  out_.push_back('#');
  AppendEncoded(out_, in_, p_, in_.size(), kFragmentSet);
  p_ = in_.size();
}

// File state and file slash state.
const char* UrlBuilder::File() {
  int c = At(p_);
  if (c == '/' || c == '\\') {
    ++p_;
    c = At(p_);
    if (c == '/' || c == '\\') {
      ++p_;
      return FileHost();
    }
    out_.append("//");
    url_.host_start_ = url_.host_end_ = static_cast<uint32_t>(out_.size());
    if (IsFileBase()) {
      out_.append(base_->host());
      url_.host_end_ = static_cast<uint32_t>(out_.size());
    }
    url_.path_start_ = static_cast<uint32_t>(out_.size());
    if (IsFileBase() && !StartsWithWindowsDriveLetter(in_.substr(p_))) {
      const std::string_view bp = base_->path();
      if (bp.size() >= 3 && IsWindowsDriveLetter(bp.substr(1, 2), true) &&
          (bp.size() == 3 || bp[3] == '/')) {
        out_.append(bp.substr(0, 3));
      }
    }
    return Path();
  }
  out_.append("//");
  url_.host_start_ = url_.host_end_ = static_cast<uint32_t>(out_.size());
  if (IsFileBase()) {
    out_.append(base_->host());
    url_.host_end_ = static_cast<uint32_t>(out_.size());
    url_.path_start_ = static_cast<uint32_t>(out_.size());
    CopyBasePath();
    if (c == '?') {
      ++p_;
      Query();
      return nullptr;
    }
    if (c == '#') {
      CopyBaseQuery();
      ++p_;
      Fragment();
      return nullptr;
    }
    if (c == -1) {
      CopyBaseQuery();
      return nullptr;
    }
    if (!StartsWithWindowsDriveLetter(in_.substr(p_))) {
      ShortenPath();
    } else {
      out_.resize(url_.path_start_);
    }
    return Path();
  }
  url_.path_start_ = static_cast<uint32_t>(out_.size());
  return Path();
}

// File host state.
const char* UrlBuilder::FileHost() {
  size_t end = p_;
  while (end < in_.size() && in_[end] != '/' && in_[end] != '\\' &&
         in_[end] != '?' && in_[end] != '#') {
    ++end;
  }
  const std::string_view buffer = in_.substr(p_, end - p_);
  out_.append("//");
  url_.host_start_ = url_.host_end_ = static_cast<uint32_t>(out_.size());
  if (IsWindowsDriveLetter(buffer, false)) {
    // The drive letter quirk: the buffer is parsed again as the path.
    url_.path_start_ = static_cast<uint32_t>(out_.size());
    return Path();
  }
  if (!buffer.empty()) {
    if (const char* err = Host(p_, end)) return err;
    if (url_.host() == "localhost") {
      out_.resize(url_.host_start_);
      url_.host_end_ = url_.host_start_;
    }
  }
  p_ = end;
  return PathStart();
}

// --- Url accessors ---

std::string_view Url::scheme() const {
  return std::string_view(href_).substr(0, scheme_end_);
}
std::string_view Url::username() const {
  if (username_end_ == kNone) return {};
  return std::string_view(href_).substr(scheme_end_ + 3,
                                        username_end_ - scheme_end_ - 3);
}
std::string_view Url::password() const {
  if (username_end_ == kNone || href_[username_end_] != ':') return {};
  return std::string_view(href_).substr(username_end_ + 1,
                                        host_start_ - username_end_ - 2);
}
std::string_view Url::host() const {
  if (host_start_ == kNone) return {};
  return std::string_view(href_).substr(host_start_, host_end_ - host_start_);
}
uint16_t Url::port() const {
  if (port_ >= 0) return static_cast<uint16_t>(port_);
  const int d = DefaultPort(SchemeTypeOf(scheme()));
  return d < 0 ? 0 : static_cast<uint16_t>(d);
}
std::string_view Url::path() const {
  const uint32_t end = query_start_ != kNone ? query_start_
                       : fragment_start_ != kNone
                           ? fragment_start_
                           : static_cast<uint32_t>(href_.size());
  return std::string_view(href_).substr(path_start_, end - path_start_);
}
std::string_view Url::query() const {
  if (query_start_ == kNone) return {};
  const uint32_t end = fragment_start_ != kNone
                           ? fragment_start_
                           : static_cast<uint32_t>(href_.size());
  return std::string_view(href_).substr(query_start_ + 1,
                                        end - query_start_ - 1);
}
std::string_view Url::fragment() const {
  if (fragment_start_ == kNone) return {};
  return std::string_view(href_).substr(fragment_start_ + 1);
}
std::string_view Url::path_and_query() const {
  const uint32_t end = fragment_start_ != kNone
                           ? fragment_start_
                           : static_cast<uint32_t>(href_.size());
  return std::string_view(href_).substr(path_start_, end - path_start_);
}
std::string Url::origin_key() const {
  std::string key(scheme());
  key.push_back(':');
  if (host_start_ == kNone) return key;
  key.append("//");
  key.append(host());
  const uint16_t p = port();
  if (p != 0) {
    key.push_back(':');
    key.append(std::to_string(p));
  }
  return key;
}
bool Url::is_http() const {
  const std::string_view s = scheme();
  return s == "http" || s == "https";
}

Status ParseInto(std::string_view input, const Url* base, Url* out) {
  // Strip leading and trailing C0 control or space. Bytes >= 0x80 are never
  // stripped: U+00A0 and friends are not C0.
  size_t b = 0, e = input.size();
  while (b < e && static_cast<unsigned char>(input[b]) <= 0x20) ++b;
  while (e > b && static_cast<unsigned char>(input[e - 1]) <= 0x20) --e;
  input = input.substr(b, e - b);
  if (input.size() > kMaxParseInput) {
    UrlBuilder::Reset(*out);
    return Status::InvalidArgument("too long");
  }
  // Remove all ASCII tab or newline (rare: copy only when present).
  std::string cleaned;
  // (Not find_first_of: libstdc++ runs one memchr per input byte for it.)
  bool has_tab_or_newline = false;
  for (const char c : input) {
    has_tab_or_newline |= (c == '\t' || c == '\n' || c == '\r');
  }
  if (has_tab_or_newline) {
    cleaned.reserve(input.size());
    for (char c : input) {
      if (c != '\t' && c != '\n' && c != '\r') cleaned.push_back(c);
    }
    input = cleaned;
  }
  if (base != nullptr && base->href().empty()) base = nullptr;
  UrlBuilder::Reset(*out);
  UrlBuilder builder(input, base, *out);
  if (const char* err = builder.Run()) {
    UrlBuilder::Reset(*out);
    return Status::InvalidArgument(err);
  }
  return Status::Ok();
}

Result<Url> Parse(std::string_view input, const Url* base) {
  Url url;
  if (Status s = ParseInto(input, base, &url); !s.ok()) return s;
  return url;
}

// --- Canonicalization ---

namespace {

bool IsUnreserved(unsigned char c) {
  return IsAsciiAlpha(static_cast<char>(c)) ||
         IsAsciiDigit(static_cast<char>(c)) || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// Appends s with %xx escapes normalized (uppercase hex, unreserved decoded).
void AppendNormalizedEscapes(std::string& out, std::string_view s, bool on) {
  if (!on) {
    out.append(s);
    return;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && IsAsciiHex(s[i + 1]) &&
        IsAsciiHex(s[i + 2])) {
      const auto v = static_cast<unsigned char>(HexValue(s[i + 1]) * 16 +
                                                HexValue(s[i + 2]));
      // A decoded hex digit after a stray "%" or "%H" would form a new
      // escape that the next pass decodes (not idempotent): keep it encoded.
      const size_t n = out.size();
      const bool completes_escape =
          IsAsciiHex(static_cast<char>(v)) && n > 0 &&
          (out[n - 1] == '%' ||
           (n > 1 && out[n - 2] == '%' && IsAsciiHex(out[n - 1])));
      if (IsUnreserved(v) && !completes_escape) {
        out.push_back(static_cast<char>(v));
      } else {
        AppendPercent(out, v);
      }
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
}

}  // namespace

Canonicalizer::Canonicalizer(const Options& options) : options_(options) {
  options_.max_length =
      std::clamp<size_t>(options_.max_length, 16, kMaxParseInput);
  for (std::string& p : options_.strip_params) {
    for (char& c : p) c = ToLower(c);
  }
}

namespace {
bool MatchesStripList(const std::vector<std::string>& list,
                      std::string_view key) {
  for (const std::string& entry : list) {
    const bool prefix = !entry.empty() && entry.back() == '*';
    const size_t n = prefix ? entry.size() - 1 : entry.size();
    if (prefix ? key.size() < n : key.size() != n) continue;
    bool eq = true;
    for (size_t i = 0; i < n && eq; ++i) eq = ToLower(key[i]) == entry[i];
    if (eq) return true;
  }
  return false;
}
}  // namespace

Result<Url> Canonicalizer::Canonicalize(std::string_view input,
                                        const Url* base) const {
  if (input.size() > options_.max_length) {
    return Status::InvalidArgument("too long");
  }
  Result<Url> parsed = Parse(input, base);
  if (!parsed.ok()) return parsed;
  return Canonicalize(parsed.value());
}

Result<Url> Canonicalizer::Canonicalize(const Url& url) const {
  const Options& o = options_;
  // The canonical Url is built with its offsets as the string grows; only a
  // rule that can change how the result parses (stripping a path parameter
  // can leave a "." segment) makes us parse the result instead.
  Url r;
  r.scheme_end_ = url.scheme_end_;
  r.special_ = url.special_;
  r.opaque_path_ = url.opaque_path_;
  bool reparse = false;
  std::string& out = r.href_;
  out.reserve(url.href().size());
  if (url.has_opaque_path()) {
    // mailto:, javascript:, data: are never fetched; only the fragment rule
    // applies.
    const std::string_view h = url.href();
    const bool drop = o.drop_fragment && url.has_fragment();
    out.append(drop ? h.substr(0, url.fragment_start_) : h);
    // As the standard's "strip trailing spaces from an opaque path" when a
    // fragment is removed: "m: #f" -> "m:", since "m: " would re-parse as
    // "m:". (Only the opaque path can end in a raw space; a query encodes it.)
    while (drop && out.size() > url.path_start_ && out.back() == ' ') {
      out.pop_back();
    }
    r.path_start_ = url.path_start_;
    r.query_start_ = url.query_start_;
    r.fragment_start_ = drop ? Url::kNone : url.fragment_start_;
  } else {
    // Scheme, userinfo, host and port: everything before the host end is
    // already canonical after parsing, except a trailing dot on the host.
    const std::string_view h = url.href();
    const std::string_view host = url.host();
    if (url.has_host()) {
      const size_t host_start = static_cast<size_t>(host.data() - h.data());
      out.append(h.substr(0, host_start));
      std::string_view hh = host;
      if (o.drop_trailing_host_dot) {
        size_t n = hh.size();
        while (n > 0 && hh[n - 1] == '.') --n;
        // "008.." is a domain but "008" would be read as an IPv4 number,
        // and "file://localhost./" names a host where "file://localhost/"
        // names none.
        const std::string_view bare = hh.substr(0, n);
        const bool file_localhost =
            url.scheme() == "file" && bare == "localhost";
        if (n > 0 && !EndsInANumber(bare) && !file_localhost) hh = bare;
      }
      out.append(hh);
      r.username_end_ = url.username_end_;
      r.host_start_ = url.host_start_;
      r.host_end_ = static_cast<uint32_t>(out.size());
      r.port_ = url.port_;
      const size_t path_start =
          static_cast<size_t>(url.path().data() - h.data());
      const size_t host_end = host_start + host.size();
      out.append(h.substr(host_end, path_start - host_end));
    } else {
      // Scheme only: a "/." prefix is re-added below if still needed.
      out.append(h.substr(0, url.scheme().size() + 1));
    }
    const size_t path_out = out.size();
    // Path, segment by segment: escapes, then ";name=value" parameters.
    const std::string_view path = url.path();
    if (!o.strip_session_params || path.find(';') == std::string_view::npos) {
      AppendNormalizedEscapes(out, path, o.normalize_percent_encoding);
    } else {
      size_t i = 0;
      while (i < path.size()) {
        size_t semi = path.find_first_of(";/", i);
        if (semi == std::string_view::npos) semi = path.size();
        if (i > 0 && path[i - 1] == ';') {
          // A parameter runs to the next ';' or '/'.
          const std::string_view param = path.substr(i, semi - i);
          const std::string_view key = param.substr(0, param.find('='));
          std::string norm_key;
          AppendNormalizedEscapes(norm_key, key, true);
          if (MatchesStripList(o.strip_params, norm_key)) {
            out.pop_back();  // the ';' before it
            reparse = true;
          } else {
            AppendNormalizedEscapes(out, param, o.normalize_percent_encoding);
          }
        } else {
          AppendNormalizedEscapes(out, path.substr(i, semi - i),
                                  o.normalize_percent_encoding);
        }
        if (semi < path.size()) out.push_back(path[semi]);
        i = semi + 1;
      }
    }
    // Without a host, a path starting with "//" (original, or left by a
    // stripped parameter) would read back as a host.
    if (!url.has_host() && out.size() >= path_out + 2 && out[path_out] == '/' &&
        out[path_out + 1] == '/') {
      out.insert(path_out, "/.");
      r.path_start_ = static_cast<uint32_t>(path_out + 2);
    } else {
      r.path_start_ = static_cast<uint32_t>(path_out);
    }
    // Query.
    if (url.has_query()) {
      const std::string_view q = url.query();
      const size_t mark = out.size();
      out.push_back('?');
      struct Param {
        size_t begin, end, key_end;  // offsets into `out`
      };
      std::vector<Param> params;
      size_t i = 0;
      size_t kept = 0;
      while (i <= q.size()) {
        size_t amp = q.find('&', i);
        if (amp == std::string_view::npos) amp = q.size();
        const std::string_view raw = q.substr(i, amp - i);
        const size_t begin = out.size();
        if (kept > 0) out.push_back('&');
        const size_t pbegin = out.size();
        AppendNormalizedEscapes(out, raw, o.normalize_percent_encoding);
        const std::string_view param(out.data() + pbegin, out.size() - pbegin);
        const size_t eq = param.find('=');
        const size_t key_len = eq == std::string_view::npos ? param.size() : eq;
        if (o.strip_session_params && !raw.empty() &&
            MatchesStripList(o.strip_params, param.substr(0, key_len))) {
          out.resize(begin);
        } else {
          ++kept;
          if (o.sort_query_params) {
            params.push_back({pbegin, out.size(), pbegin + key_len});
          }
        }
        i = amp + 1;
      }
      if (o.sort_query_params && params.size() > 1) {
        const std::string src = out.substr(mark + 1);
        const size_t base_off = mark + 1;
        std::stable_sort(params.begin(), params.end(),
                         [&](const Param& a, const Param& b) {
                           return std::string_view(src).substr(
                                      a.begin - base_off, a.key_end - a.begin) <
                                  std::string_view(src).substr(
                                      b.begin - base_off, b.key_end - b.begin);
                         });
        out.resize(base_off);
        for (size_t k = 0; k < params.size(); ++k) {
          if (k > 0) out.push_back('&');
          out.append(src, params[k].begin - base_off,
                     params[k].end - params[k].begin);
        }
      }
      if (o.drop_empty_query && out.size() == mark + 1) {
        out.resize(mark);
      } else {
        r.query_start_ = static_cast<uint32_t>(mark);
      }
    }
    if (url.has_fragment() && !o.drop_fragment) {
      r.fragment_start_ = static_cast<uint32_t>(out.size());
      out.push_back('#');
      AppendNormalizedEscapes(out, url.fragment(),
                              o.normalize_percent_encoding);
    }
  }
  if (out.size() > o.max_length) return Status::InvalidArgument("too long");
  if (!reparse) return r;
  Result<Url> result = Parse(out);
  if (!result.ok()) return Status::Internal("canonical form does not parse");
  if (result->href().size() > o.max_length) {
    return Status::InvalidArgument("too long");
  }
  return result;
}

std::string HostOf(std::string_view url) {
  Result<Url> u = Parse(url);
  return u.ok() ? std::string(u->host()) : std::string();
}

uint64_t Fingerprint(std::string_view canonical_href) {
  return XXH3_64bits(canonical_href.data(), canonical_href.size());
}

}  // namespace crawld::url
