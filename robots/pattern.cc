#include "robots/pattern.h"

#include <string.h>  // memmem (a GNU extension; linear time in glibc)

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "base/ascii.h"

namespace crawld::robots::internal {
namespace {

// How one octet is treated on its way to normal form.
enum class Kind : uint8_t {
  kKeep,     // unreserved, or reserved and compared as is
  kEncode,   // outside both sets: percent-encoded
  kPercent,  // "%": decoded, upper-cased or escaped
  kStar,     // wildcard in a pattern, %2A in a path
  kDollar,   // anchor at the end of a pattern, %24 elsewhere
  kHash,     // fragment in a path; cannot survive comment removal otherwise
};

constexpr bool IsUnreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

constexpr std::array<Kind, 256> MakeKinds() {
  std::array<Kind, 256> kinds{};
  for (int c = 0; c < 256; ++c) {
    kinds[c] = IsUnreserved(static_cast<unsigned char>(c)) ? Kind::kKeep
                                                           : Kind::kEncode;
  }
  // RFC 3986 reserved characters, less the three handled on their own.
  for (unsigned char c : std::string_view(":/?[]@!&'()+,;=")) {
    kinds[c] = Kind::kKeep;
  }
  kinds['%'] = Kind::kPercent;
  kinds['*'] = Kind::kStar;
  kinds['$'] = Kind::kDollar;
  kinds['#'] = Kind::kHash;
  return kinds;
}

constexpr std::array<Kind, 256> kKinds = MakeKinds();

using ascii::HexValue;

void AppendEncoded(unsigned char c, std::string* out) {
  out->push_back('%');
  out->push_back(ascii::HexDigitUpper(c >> 4));
  out->push_back(ascii::HexDigitUpper(c));
}

// The one normal form shared by patterns and paths; only the three special
// characters differ between them.
void Normalize(std::string_view in, bool is_pattern, std::string* out) {
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    switch (kKinds[c]) {
      case Kind::kKeep:
        out->push_back(static_cast<char>(c));
        break;
      case Kind::kEncode:
        AppendEncoded(c, out);
        break;
      case Kind::kPercent: {
        const int hi = i + 2 < n ? HexValue(in[i + 1]) : -1;
        const int lo = hi >= 0 ? HexValue(in[i + 2]) : -1;
        if (lo < 0) {
          // A lone "%" means itself, which is what %25 says.
          out->append("%25");
          break;
        }
        const auto v = static_cast<unsigned char>(hi * 16 + lo);
        if (IsUnreserved(v)) {
          out->push_back(static_cast<char>(v));
        } else {
          AppendEncoded(v, out);
        }
        i += 2;
        break;
      }
      case Kind::kStar:
        if (is_pattern) {
          out->push_back('*');
        } else {
          out->append("%2A");
        }
        break;
      case Kind::kDollar:
        if (is_pattern && i + 1 == n) {
          out->push_back('$');
        } else {
          out->append("%24");
        }
        break;
      case Kind::kHash:
        if (!is_pattern) return;  // the fragment is not part of the path
        out->append("%23");
        break;
    }
  }
}

bool AlreadyNormalPath(std::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  for (char c : path) {
    if (kKinds[static_cast<unsigned char>(c)] != Kind::kKeep) return false;
  }
  return true;
}

// Leftmost occurrence of `needle` (not empty) in `hay` at or after `from`,
// or npos. memchr first: most paths lack the segment's first byte (often
// "?" or "&"), and it is far cheaper than setting up memmem's two-way search.
size_t Find(std::string_view hay, size_t from, std::string_view needle) {
  const void* first =
      std::memchr(hay.data() + from, needle[0], hay.size() - from);
  if (first == nullptr) return std::string_view::npos;
  from = static_cast<size_t>(static_cast<const char*>(first) - hay.data());
  const void* hit = memmem(hay.data() + from, hay.size() - from, needle.data(),
                           needle.size());
  if (hit == nullptr) return std::string_view::npos;
  return static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
}

// Sets the fields that follow from `p->text`.
void Index(Pattern* p) {
  p->anchored = !p->text.empty() && p->text.back() == '$';
  std::string_view body(p->text);
  if (p->anchored) body.remove_suffix(1);
  const size_t star = body.find('*');
  p->has_wildcard = star != std::string_view::npos;
  p->prefix_len = p->has_wildcard ? star : body.size();
  p->literal_len = body.size();
  for (char c : body) {
    if (c == '*') --p->literal_len;
  }
}

}  // namespace

std::string EscapePattern(std::string_view raw) {
  // Most patterns have nothing to escape (Google's fast path too).
  const bool plain = std::none_of(raw.begin(), raw.end(), [](char c) {
    return c == '%' || static_cast<unsigned char>(c) >= 0x80;
  });
  if (plain) return std::string(raw);
  std::string out;
  out.reserve(raw.size() + 8);
  const size_t n = raw.size();
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c == '%' && i + 2 < n && ascii::IsHexDigit(raw[i + 1]) &&
        ascii::IsHexDigit(raw[i + 2])) {
      out.push_back('%');
      out.push_back(ascii::ToUpper(raw[i + 1]));
      out.push_back(ascii::ToUpper(raw[i + 2]));
      i += 2;
    } else if (c >= 0x80) {
      AppendEncoded(c, &out);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

Pattern Pattern::Compile(std::string_view raw) {
  Pattern p;
  p.text = EscapePattern(raw);
  Index(&p);
  return p;
}

Pattern Pattern::CompileRfc(std::string_view raw) {
  Pattern p;
  p.text.reserve(raw.size() + 8);
  Normalize(raw, /*is_pattern=*/true, &p.text);
  Index(&p);
  return p;
}

bool Pattern::Matches(std::string_view path) const {
  if (path.size() < literal_len) return false;
  std::string_view body(text);
  if (anchored) body.remove_suffix(1);
  if (!has_wildcard) {
    if (anchored) return path == body;
    return std::memcmp(path.data(), body.data(), body.size()) == 0;
  }
  if (std::memcmp(path.data(), body.data(), prefix_len) != 0) return false;
  size_t pos = prefix_len;
  std::string_view rest = body.substr(prefix_len + 1);
  if (anchored) {
    // Cheap early reject: the anchored tail must end the path ("*.pdf$").
    const size_t last_star = rest.rfind('*');
    const std::string_view tail =
        last_star == std::string_view::npos ? rest : rest.substr(last_star + 1);
    if (std::memcmp(path.data() + path.size() - tail.size(), tail.data(),
                    tail.size()) != 0) {
      return false;
    }
  }
  for (;;) {
    const size_t star = rest.find('*');
    if (star == std::string_view::npos) break;
    const std::string_view segment = rest.substr(0, star);
    rest.remove_prefix(star + 1);
    if (segment.empty()) continue;
    const size_t at = Find(path, pos, segment);
    if (at == std::string_view::npos) return false;
    pos = at + segment.size();
  }
  // `rest` is the segment after the last "*".
  if (anchored) {
    return path.size() - pos >= rest.size() &&
           std::memcmp(path.data() + path.size() - rest.size(), rest.data(),
                       rest.size()) == 0;
  }
  return rest.empty() || Find(path, pos, rest) != std::string_view::npos;
}

std::string_view NormalizePath(std::string_view path, std::string* scratch) {
  if (AlreadyNormalPath(path)) return path;
  scratch->clear();
  scratch->reserve(path.size() + 16);
  if (path.empty() || path[0] != '/') scratch->push_back('/');
  Normalize(path, /*is_pattern=*/false, scratch);
  return *scratch;
}

}  // namespace crawld::robots::internal
