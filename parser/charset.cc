// Encoding sniffing and conversion to UTF-8; see charset.h.
#include "parser/charset.h"

#include <errno.h>
#include <iconv.h>

#include <cstdint>
#include <cstring>
#include <iterator>

#include "base/ascii.h"
#include "utf8.h"

namespace crawld::parser::internal {
namespace {

constexpr std::string_view kUtf8 = "utf-8";
constexpr std::string_view kWindows1252 = "windows-1252";

struct Label {
  std::string_view label;
  std::string_view encoding;
};

// The Encoding Standard's label table for the encodings a crawler meets in
// practice (https://encoding.spec.whatwg.org/#names-and-labels). Labels are
// lower case; lookups lower-case their input.
constexpr Label kLabels[] = {
    {"unicode-1-1-utf-8", "utf-8"},
    {"unicode11utf8", "utf-8"},
    {"unicode20utf8", "utf-8"},
    {"utf-8", "utf-8"},
    {"utf8", "utf-8"},
    {"x-unicode20utf8", "utf-8"},
    {"866", "ibm866"},
    {"cp866", "ibm866"},
    {"csibm866", "ibm866"},
    {"ibm866", "ibm866"},
    {"csisolatin2", "iso-8859-2"},
    {"iso-8859-2", "iso-8859-2"},
    {"iso-ir-101", "iso-8859-2"},
    {"iso8859-2", "iso-8859-2"},
    {"iso88592", "iso-8859-2"},
    {"iso_8859-2", "iso-8859-2"},
    {"iso_8859-2:1987", "iso-8859-2"},
    {"l2", "iso-8859-2"},
    {"latin2", "iso-8859-2"},
    {"csisolatin3", "iso-8859-3"},
    {"iso-8859-3", "iso-8859-3"},
    {"iso8859-3", "iso-8859-3"},
    {"iso88593", "iso-8859-3"},
    {"iso_8859-3", "iso-8859-3"},
    {"l3", "iso-8859-3"},
    {"latin3", "iso-8859-3"},
    {"csisolatin4", "iso-8859-4"},
    {"iso-8859-4", "iso-8859-4"},
    {"iso8859-4", "iso-8859-4"},
    {"iso88594", "iso-8859-4"},
    {"iso_8859-4", "iso-8859-4"},
    {"l4", "iso-8859-4"},
    {"latin4", "iso-8859-4"},
    {"csisolatincyrillic", "iso-8859-5"},
    {"cyrillic", "iso-8859-5"},
    {"iso-8859-5", "iso-8859-5"},
    {"iso8859-5", "iso-8859-5"},
    {"iso88595", "iso-8859-5"},
    {"iso_8859-5", "iso-8859-5"},
    {"arabic", "iso-8859-6"},
    {"iso-8859-6", "iso-8859-6"},
    {"iso8859-6", "iso-8859-6"},
    {"iso88596", "iso-8859-6"},
    {"iso_8859-6", "iso-8859-6"},
    {"greek", "iso-8859-7"},
    {"greek8", "iso-8859-7"},
    {"iso-8859-7", "iso-8859-7"},
    {"iso8859-7", "iso-8859-7"},
    {"iso88597", "iso-8859-7"},
    {"iso_8859-7", "iso-8859-7"},
    {"hebrew", "iso-8859-8"},
    {"iso-8859-8", "iso-8859-8"},
    {"iso8859-8", "iso-8859-8"},
    {"iso88598", "iso-8859-8"},
    {"iso_8859-8", "iso-8859-8"},
    {"visual", "iso-8859-8"},
    {"iso-8859-8-i", "iso-8859-8-i"},
    {"logical", "iso-8859-8-i"},
    {"iso-8859-10", "iso-8859-10"},
    {"latin6", "iso-8859-10"},
    {"iso-8859-13", "iso-8859-13"},
    {"iso-8859-14", "iso-8859-14"},
    {"iso-8859-15", "iso-8859-15"},
    {"iso8859-15", "iso-8859-15"},
    {"iso885915", "iso-8859-15"},
    {"iso_8859-15", "iso-8859-15"},
    {"l9", "iso-8859-15"},
    {"csisolatin9", "iso-8859-15"},
    {"iso-8859-16", "iso-8859-16"},
    {"koi", "koi8-r"},
    {"koi8", "koi8-r"},
    {"koi8-r", "koi8-r"},
    {"koi8_r", "koi8-r"},
    {"cskoi8r", "koi8-r"},
    {"koi8-u", "koi8-u"},
    {"koi8-ru", "koi8-u"},
    {"csmacintosh", "macintosh"},
    {"mac", "macintosh"},
    {"macintosh", "macintosh"},
    {"x-mac-roman", "macintosh"},
    {"dos-874", "windows-874"},
    {"iso-8859-11", "windows-874"},
    {"iso8859-11", "windows-874"},
    {"iso885911", "windows-874"},
    {"tis-620", "windows-874"},
    {"windows-874", "windows-874"},
    {"cp1250", "windows-1250"},
    {"windows-1250", "windows-1250"},
    {"x-cp1250", "windows-1250"},
    {"cp1251", "windows-1251"},
    {"windows-1251", "windows-1251"},
    {"x-cp1251", "windows-1251"},
    {"ansi_x3.4-1968", "windows-1252"},
    {"ascii", "windows-1252"},
    {"cp1252", "windows-1252"},
    {"cp819", "windows-1252"},
    {"csisolatin1", "windows-1252"},
    {"ibm819", "windows-1252"},
    {"iso-8859-1", "windows-1252"},
    {"iso-ir-100", "windows-1252"},
    {"iso8859-1", "windows-1252"},
    {"iso88591", "windows-1252"},
    {"iso_8859-1", "windows-1252"},
    {"iso_8859-1:1987", "windows-1252"},
    {"l1", "windows-1252"},
    {"latin1", "windows-1252"},
    {"us-ascii", "windows-1252"},
    {"windows-1252", "windows-1252"},
    {"x-cp1252", "windows-1252"},
    {"cp1253", "windows-1253"},
    {"windows-1253", "windows-1253"},
    {"cp1254", "windows-1254"},
    {"windows-1254", "windows-1254"},
    {"iso-8859-9", "windows-1254"},
    {"iso8859-9", "windows-1254"},
    {"latin5", "windows-1254"},
    {"l5", "windows-1254"},
    {"cp1255", "windows-1255"},
    {"windows-1255", "windows-1255"},
    {"cp1256", "windows-1256"},
    {"windows-1256", "windows-1256"},
    {"cp1257", "windows-1257"},
    {"windows-1257", "windows-1257"},
    {"cp1258", "windows-1258"},
    {"windows-1258", "windows-1258"},
    {"x-mac-cyrillic", "x-mac-cyrillic"},
    {"x-mac-ukrainian", "x-mac-cyrillic"},
    {"chinese", "gbk"},
    {"csgb2312", "gbk"},
    {"csiso58gb231280", "gbk"},
    {"gb2312", "gbk"},
    {"gb_2312", "gbk"},
    {"gb_2312-80", "gbk"},
    {"gbk", "gbk"},
    {"iso-ir-58", "gbk"},
    {"x-gbk", "gbk"},
    {"gb18030", "gb18030"},
    {"big5", "big5"},
    {"big5-hkscs", "big5"},
    {"cn-big5", "big5"},
    {"csbig5", "big5"},
    {"x-x-big5", "big5"},
    {"cseucpkdfmtjapanese", "euc-jp"},
    {"euc-jp", "euc-jp"},
    {"x-euc-jp", "euc-jp"},
    {"csiso2022jp", "iso-2022-jp"},
    {"iso-2022-jp", "iso-2022-jp"},
    {"csshiftjis", "shift_jis"},
    {"ms932", "shift_jis"},
    {"ms_kanji", "shift_jis"},
    {"shift-jis", "shift_jis"},
    {"shift_jis", "shift_jis"},
    {"sjis", "shift_jis"},
    {"windows-31j", "shift_jis"},
    {"x-sjis", "shift_jis"},
    {"cseuckr", "euc-kr"},
    {"csksc56011987", "euc-kr"},
    {"euc-kr", "euc-kr"},
    {"iso-ir-149", "euc-kr"},
    {"korean", "euc-kr"},
    {"ks_c_5601-1987", "euc-kr"},
    {"ks_c_5601-1989", "euc-kr"},
    {"ksc5601", "euc-kr"},
    {"ksc_5601", "euc-kr"},
    {"windows-949", "euc-kr"},
    {"csiso2022kr", "replacement"},
    {"hz-gb-2312", "replacement"},
    {"iso-2022-cn", "replacement"},
    {"iso-2022-cn-ext", "replacement"},
    {"iso-2022-kr", "replacement"},
    {"unicodefffe", "utf-16be"},
    {"utf-16be", "utf-16be"},
    {"csunicode", "utf-16le"},
    {"iso-10646-ucs-2", "utf-16le"},
    {"ucs-2", "utf-16le"},
    {"unicode", "utf-16le"},
    {"unicodefeff", "utf-16le"},
    {"utf-16", "utf-16le"},
    {"utf-16le", "utf-16le"},
    {"x-user-defined", "x-user-defined"},
};

// glibc iconv names for the encodings we hand to iconv. The Encoding
// Standard's shift_jis/euc-kr/gbk are Microsoft's supersets, hence CP932,
// CP949 and GB18030 (a superset of GBK, as the standard's gbk decoder is).
struct IconvName {
  std::string_view encoding;
  const char* iconv;
};
constexpr IconvName kIconvNames[] = {
    {"ibm866", "CP866"},
    {"iso-8859-2", "ISO-8859-2"},
    {"iso-8859-3", "ISO-8859-3"},
    {"iso-8859-4", "ISO-8859-4"},
    {"iso-8859-5", "ISO-8859-5"},
    {"iso-8859-6", "ISO-8859-6"},
    {"iso-8859-7", "ISO-8859-7"},
    {"iso-8859-8", "ISO-8859-8"},
    {"iso-8859-8-i", "ISO-8859-8"},
    {"iso-8859-10", "ISO-8859-10"},
    {"iso-8859-13", "ISO-8859-13"},
    {"iso-8859-14", "ISO-8859-14"},
    {"iso-8859-15", "ISO-8859-15"},
    {"iso-8859-16", "ISO-8859-16"},
    {"koi8-r", "KOI8-R"},
    {"koi8-u", "KOI8-RU"},
    {"macintosh", "MACINTOSH"},
    {"windows-874", "CP874"},
    {"windows-1250", "CP1250"},
    {"windows-1251", "CP1251"},
    {"windows-1253", "CP1253"},
    {"windows-1254", "CP1254"},
    {"windows-1255", "CP1255"},
    {"windows-1256", "CP1256"},
    {"windows-1257", "CP1257"},
    {"windows-1258", "CP1258"},
    {"x-mac-cyrillic", "MAC-CYRILLIC"},
    {"gbk", "GB18030"},
    {"gb18030", "GB18030"},
    {"big5", "BIG5-HKSCS"},
    {"euc-jp", "EUC-JP"},
    {"iso-2022-jp", "ISO-2022-JP"},
    {"shift_jis", "CP932"},
    {"euc-kr", "CP949"},
    {"utf-16le", "UTF-16LE"},
    {"utf-16be", "UTF-16BE"},
};

// index-windows-1252 for 0x80..0x9F; the rest of the byte range maps to the
// same code point (https://encoding.spec.whatwg.org/index-windows-1252.txt).
constexpr uint16_t kWindows1252High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

constexpr char kReplacement[] = "\xEF\xBF\xBD";

constexpr auto IsAsciiSpace = ascii::IsWhatwgSpace;
using ascii::ToLower;

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// `lit` (lower case) at s[pos], ASCII case-insensitively.
bool StartsWithNoCase(std::string_view s, size_t pos, std::string_view lit) {
  return pos <= s.size() && ascii::StartsWithIgnoreCase(s.substr(pos), lit);
}

const char* IconvNameFor(std::string_view encoding) {
  for (const IconvName& n : kIconvNames) {
    if (n.encoding == encoding) return n.iconv;
  }
  return nullptr;
}

void AppendCodePoint(uint32_t cp, std::string* out) {
  utf8::append(static_cast<char32_t>(cp), std::back_inserter(*out));
}

// Decodes windows-1252 (every byte maps to a code point) until the output
// would pass max_bytes. Returns true if all input was consumed.
bool DecodeWindows1252(std::string_view in, size_t max_bytes,
                       std::string* out) {
  out->reserve(std::min(max_bytes, in.size() + in.size() / 8));
  for (size_t i = 0; i < in.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(in[i]);
    const uint32_t cp =
        (b >= 0x80 && b < 0xA0) ? kWindows1252High[b - 0x80] : b;
    const size_t need = cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
    if (out->size() + need > max_bytes) return false;
    AppendCodePoint(cp, out);
  }
  return true;
}

// Converts with iconv, replacing undecodable bytes with U+FFFD, until the
// output reaches max_bytes. Returns true if all input was consumed.
// REQUIRES: cd is a valid conversion descriptor to UTF-8.
bool DecodeWithIconv(iconv_t cd, std::string_view in, size_t max_bytes,
                     std::string* out) {
  char* src = const_cast<char*>(in.data());
  size_t src_left = in.size();
  // Room for the whole conversion when it fits, plus a little so that the
  // last sequence before max_bytes can land and be cut later.
  const size_t cap = max_bytes + 8;
  out->resize(std::min(cap, std::max<size_t>(64, in.size() * 2)));
  size_t used = 0;
  while (true) {
    char* dst = out->data() + used;
    size_t dst_left = out->size() - used;
    size_t r =
        iconv(cd, src_left > 0 ? &src : nullptr, &src_left, &dst, &dst_left);
    used = out->size() - dst_left;
    if (r != static_cast<size_t>(-1)) {
      if (src_left == 0) {
        // Flush a stateful decoder (ISO-2022-JP) once all input is in.
        char* fd = out->data() + used;
        size_t fl = out->size() - used;
        if (iconv(cd, nullptr, nullptr, &fd, &fl) != static_cast<size_t>(-1)) {
          used = out->size() - fl;
        }
        break;
      }
      continue;
    }
    if (errno == E2BIG) {
      if (out->size() >= cap) {
        out->resize(used);
        return false;
      }
      out->resize(std::min(cap, out->size() * 2));
      continue;
    }
    // EILSEQ (an invalid sequence) or EINVAL (an incomplete one at the end):
    // one U+FFFD per bad byte keeps going without losing sync for long.
    if (out->size() - used < 3) {
      if (out->size() >= cap) {
        out->resize(used);
        return false;
      }
      out->resize(std::min(cap, out->size() * 2 + 3));
      if (out->size() - used < 3) {
        out->resize(used);
        return false;
      }
    }
    std::memcpy(out->data() + used, kReplacement, 3);
    used += 3;
    ++src;
    --src_left;
    iconv(cd, nullptr, nullptr, nullptr, nullptr);  // reset shift state
    if (src_left == 0) break;
  }
  out->resize(used);
  return true;
}

// Length of the UTF-8 sequence starting at s[i] if well-formed (1..4), or 0.
// With `cut`, set to true when the input ends inside a so-far valid sequence.
size_t ValidSequenceLength(std::string_view s, size_t i, bool* cut) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  uint8_t b = p[i];
  if (b < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n) {
      *cut = true;
      return 0;
    }
    uint8_t c = p[i + k];
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
  }
  return len;
}

}  // namespace

std::string_view EncodingForLabel(std::string_view label) {
  label = TrimSpace(label);
  if (label.empty() || label.size() > 32) return {};
  char lower[32];
  for (size_t i = 0; i < label.size(); ++i) lower[i] = ToLower(label[i]);
  std::string_view key(lower, label.size());
  for (const Label& l : kLabels) {
    if (l.label == key) return l.encoding;
  }
  return {};
}

std::string_view CharsetParam(std::string_view ct) {
  size_t pos = ct.find(';');
  while (pos != std::string_view::npos) {
    ++pos;
    while (pos < ct.size() && IsAsciiSpace(ct[pos])) ++pos;
    size_t eq = pos;
    while (eq < ct.size() && ct[eq] != '=' && ct[eq] != ';') ++eq;
    if (eq >= ct.size()) return {};
    if (ct[eq] == ';') {
      pos = eq;
      continue;
    }
    std::string_view name = TrimSpace(ct.substr(pos, eq - pos));
    size_t vstart = eq + 1;
    std::string_view value;
    size_t next;
    if (vstart < ct.size() && ct[vstart] == '"') {
      size_t close = ct.find('"', vstart + 1);
      value = ct.substr(vstart + 1, close == std::string_view::npos
                                        ? std::string_view::npos
                                        : close - vstart - 1);
      next = close == std::string_view::npos ? std::string_view::npos
                                             : ct.find(';', close);
    } else {
      next = ct.find(';', vstart);
      value = TrimSpace(ct.substr(vstart, next == std::string_view::npos
                                              ? std::string_view::npos
                                              : next - vstart));
    }
    if (name.size() == 7 && StartsWithNoCase(name, 0, "charset")) return value;
    pos = next;
  }
  return {};
}

namespace {

// The prescan's "get an attribute" step. Returns false when there is no
// further attribute (at '>' or the end of input); names and values come out
// lower-cased, as the spec asks.
bool GetAttribute(std::string_view s, size_t* pos, std::string* name,
                  std::string* value) {
  name->clear();
  value->clear();
  size_t i = *pos;
  const size_t n = s.size();
  while (i < n && (IsAsciiSpace(s[i]) || s[i] == '/')) ++i;
  if (i >= n || s[i] == '>') {
    *pos = i;
    return false;
  }
  // Name.
  bool have_value_part = false;
  while (true) {
    if (i >= n) return *pos = i, false;
    char c = s[i];
    if (c == '=' && !name->empty()) {
      ++i;
      have_value_part = true;
      break;
    }
    if (IsAsciiSpace(c)) {
      while (i < n && IsAsciiSpace(s[i])) ++i;
      if (i >= n) return *pos = i, false;
      if (s[i] != '=') {
        *pos = i;
        return true;
      }
      ++i;
      have_value_part = true;
      break;
    }
    if (c == '/' || c == '>') {
      *pos = i;
      return true;
    }
    name->push_back(ToLower(c));
    ++i;
  }
  if (have_value_part) {
    while (i < n && IsAsciiSpace(s[i])) ++i;
    if (i >= n) return *pos = i, false;
    char c = s[i];
    if (c == '"' || c == '\'') {
      const char quote = c;
      ++i;
      while (true) {
        if (i >= n) return *pos = i, false;
        if (s[i] == quote) {
          *pos = i + 1;
          return true;
        }
        value->push_back(ToLower(s[i]));
        ++i;
      }
    }
    if (c == '>') {
      *pos = i;
      return true;
    }
    while (i < n && !IsAsciiSpace(s[i]) && s[i] != '>') {
      value->push_back(ToLower(s[i]));
      ++i;
    }
    if (i >= n) return *pos = i, false;
  }
  *pos = i;
  return true;
}

// "Extracting a character encoding from a meta element" (HTML spec).
std::string_view CharsetFromMetaContent(std::string_view s) {
  size_t pos = 0;
  while (true) {
    size_t found = std::string_view::npos;
    for (size_t i = pos; i + 7 <= s.size(); ++i) {
      if (StartsWithNoCase(s, i, "charset")) {
        found = i;
        break;
      }
    }
    if (found == std::string_view::npos) return {};
    pos = found + 7;
    while (pos < s.size() && IsAsciiSpace(s[pos])) ++pos;
    if (pos >= s.size() || s[pos] != '=') continue;
    ++pos;
    while (pos < s.size() && IsAsciiSpace(s[pos])) ++pos;
    if (pos >= s.size()) return {};
    if (s[pos] == '"' || s[pos] == '\'') {
      size_t close = s.find(s[pos], pos + 1);
      if (close == std::string_view::npos) return {};
      return s.substr(pos + 1, close - pos - 1);
    }
    size_t end = pos;
    while (end < s.size() && !IsAsciiSpace(s[end]) && s[end] != ';') ++end;
    return s.substr(pos, end - pos);
  }
}

constexpr auto IsAsciiAlpha = ascii::IsAlpha;

}  // namespace

std::string_view PrescanMetaCharset(std::string_view bytes) {
  const std::string_view s = bytes.substr(0, 1024);
  const size_t n = s.size();
  std::string name, value;
  size_t pos = 0;
  while (pos < n) {
    if (s.compare(pos, 4, "<!--") == 0) {
      size_t end = s.find("-->", pos + 2);
      if (end == std::string_view::npos) return {};
      pos = end + 3;
      continue;
    }
    if (StartsWithNoCase(s, pos, "<meta") && pos + 5 < n &&
        (IsAsciiSpace(s[pos + 5]) || s[pos + 5] == '/')) {
      pos += 6;
      bool got_pragma = false;
      int need_pragma = -1;  // -1 null, 0 false, 1 true
      std::string charset;
      bool have_charset = false;
      bool seen_http_equiv = false, seen_content = false, seen_charset = false;
      while (GetAttribute(s, &pos, &name, &value)) {
        if (name == "http-equiv") {
          if (seen_http_equiv) continue;
          seen_http_equiv = true;
          if (value == "content-type") got_pragma = true;
        } else if (name == "content") {
          if (seen_content) continue;
          seen_content = true;
          std::string_view cs = CharsetFromMetaContent(value);
          if (!cs.empty() && !have_charset) {
            charset.assign(cs);
            have_charset = true;
            need_pragma = 1;
          }
        } else if (name == "charset") {
          if (seen_charset) continue;
          seen_charset = true;
          charset = value;
          have_charset = true;
          need_pragma = 0;
        }
      }
      if (pos >= n) return {};
      if (need_pragma == -1 || (need_pragma == 1 && !got_pragma) ||
          !have_charset) {
        ++pos;
        continue;
      }
      std::string_view enc = EncodingForLabel(charset);
      if (enc.empty()) {
        ++pos;
        continue;
      }
      if (enc == "utf-16le" || enc == "utf-16be") return kUtf8;
      if (enc == "x-user-defined") return kWindows1252;
      return enc;
    }
    if (s[pos] == '<' && pos + 1 < n &&
        (IsAsciiAlpha(s[pos + 1]) ||
         (s[pos + 1] == '/' && pos + 2 < n && IsAsciiAlpha(s[pos + 2])))) {
      pos += s[pos + 1] == '/' ? 2 : 1;
      while (pos < n && !IsAsciiSpace(s[pos]) && s[pos] != '>') ++pos;
      while (GetAttribute(s, &pos, &name, &value)) {
      }
      if (pos >= n) return {};
      ++pos;
      continue;
    }
    if (s[pos] == '<' && pos + 1 < n &&
        (s[pos + 1] == '!' || s[pos + 1] == '/' || s[pos + 1] == '?')) {
      size_t end = s.find('>', pos + 2);
      if (end == std::string_view::npos) return {};
      pos = end + 1;
      continue;
    }
    ++pos;
  }
  return {};
}

bool IsValidUtf8(std::string_view s, bool allow_cut_tail) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    bool cut = false;
    size_t len = ValidSequenceLength(s, i, &cut);
    if (len == 0) return cut && allow_cut_tail;
    i += len;
  }
  return true;
}

size_t Utf8Boundary(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  // s[n] is the first byte left out; back up while it is a continuation
  // byte, at most 3 steps (a longer run means ill-formed input: cut anywhere).
  size_t k = n;
  for (int steps = 0; steps < 3 && k > 0; ++steps) {
    if ((static_cast<uint8_t>(s[k]) & 0xC0) != 0x80) break;
    --k;
  }
  if ((static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) return n;
  return k;
}

void AppendSanitizedUtf8(std::string_view s, std::string* out) {
  out->reserve(out->size() + s.size());
  size_t i = 0;
  size_t run = 0;  // start of the pending run of valid bytes
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    bool cut = false;
    size_t len = ValidSequenceLength(s, i, &cut);
    if (len > 0) {
      i += len;
      continue;
    }
    out->append(s.substr(run, i - run));
    out->append(kReplacement, 3);
    // Skip the maximal subpart: the lead byte plus the continuation bytes
    // that were valid for it.
    size_t j = i + 1;
    uint8_t b = static_cast<uint8_t>(s[i]);
    size_t want = b >= 0xF0 && b <= 0xF4   ? 4
                  : b >= 0xE0 && b <= 0xEF ? 3
                  : b >= 0xC2 && b <= 0xDF ? 2
                                           : 1;
    uint8_t lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
    uint8_t hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    for (size_t k = 1; k < want && j < s.size(); ++k, ++j) {
      uint8_t c = static_cast<uint8_t>(s[j]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
    }
    i = j;
    run = i;
  }
  out->append(s.substr(run));
}

Decoded DecodeToUtf8(std::string_view body, std::string_view content_type,
                     size_t max_bytes, std::string* storage) {
  storage->clear();
  Decoded d;
  std::string_view encoding;

  // 1. BOM (wins over everything, as in the Encoding Standard's decode).
  if (body.size() >= 3 && body.compare(0, 3, "\xEF\xBB\xBF") == 0) {
    encoding = kUtf8;
    body.remove_prefix(3);
  } else if (body.size() >= 2 && body.compare(0, 2, "\xFE\xFF") == 0) {
    encoding = "utf-16be";
    body.remove_prefix(2);
  } else if (body.size() >= 2 && body.compare(0, 2, "\xFF\xFE") == 0) {
    encoding = "utf-16le";
    body.remove_prefix(2);
  }
  // 2. Transport layer.
  const std::string_view header_label = CharsetParam(content_type);
  if (encoding.empty()) encoding = EncodingForLabel(header_label);
  // A label we cannot map: the server meant some encoding, so a guess from
  // the bytes is no better than UTF-8 with replacement.
  const bool unknown_header_label = !TrimSpace(header_label).empty() &&
                                    EncodingForLabel(header_label).empty();
  if (encoding == "x-user-defined") encoding = kWindows1252;
  // 3. <meta> prescan.
  if (encoding.empty()) encoding = PrescanMetaCharset(body);
  // 4. Neither: UTF-8 if the bytes say so, else the web's legacy default.
  if (encoding.empty() && unknown_header_label) encoding = kUtf8;
  if (encoding.empty()) {
    std::string_view head = body.substr(0, max_bytes);
    encoding =
        IsValidUtf8(head, head.size() < body.size()) ? kUtf8 : kWindows1252;
  }

  if (encoding == "replacement") {
    // The standard decodes these (ISO-2022-KR, HZ, ...) to a single U+FFFD:
    // they can smuggle markup past filters.
    d.charset = "replacement";
    storage->assign(body.empty() ? "" : kReplacement);
    d.html = *storage;
    return d;
  }

  if (encoding == kWindows1252) {
    d.charset = kWindows1252;
    d.truncated = !DecodeWindows1252(body, max_bytes, storage);
    d.html = *storage;
    return d;
  }

  if (encoding != kUtf8) {
    const char* name = IconvNameFor(encoding);
    iconv_t cd = name != nullptr ? iconv_open("UTF-8", name)
                                 : reinterpret_cast<iconv_t>(-1);
    if (cd != reinterpret_cast<iconv_t>(-1)) {
      d.charset = encoding;
      bool complete = DecodeWithIconv(cd, body, max_bytes, storage);
      iconv_close(cd);
      // iconv output is valid UTF-8; cut it on a boundary.
      size_t keep =
          Utf8Boundary(*storage, std::min(max_bytes, storage->size()));
      d.truncated = !complete || keep < storage->size();
      storage->resize(keep);
      d.html = *storage;
      return d;
    }
    // No converter: fall through to UTF-8 with replacement.
  }

  d.charset = kUtf8;
  std::string_view cut = body;
  if (cut.size() > max_bytes) {
    cut = cut.substr(0, Utf8Boundary(body, max_bytes));
    d.truncated = true;
  }
  if (IsValidUtf8(cut, false)) {
    d.html = cut;  // the common case: no copy
    return d;
  }
  AppendSanitizedUtf8(cut, storage);
  if (storage->size() > max_bytes) {
    storage->resize(Utf8Boundary(*storage, max_bytes));
    d.truncated = true;
  }
  d.html = *storage;
  return d;
}

}  // namespace crawld::parser::internal
