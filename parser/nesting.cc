// Nesting-depth pre-scan; see nesting.h.
#include "parser/nesting.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace crawld::parser::internal {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}
bool IsAlpha(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

enum class TagClass { kCounted, kUncounted, kRawText, kPlaintext, kForeign };

bool NameIs(std::string_view name,
            std::initializer_list<std::string_view> set) {
  for (std::string_view s : set) {
    if (name == s) return true;
  }
  return false;
}

TagClass Classify(std::string_view name) {
  // Contents are text up to the matching end tag (Gumbo parses <noscript>
  // as markup, scripting being off).
  if (NameIs(name, {"script", "style", "xmp", "iframe", "noembed", "noframes",
                    "textarea", "title"})) {
    return TagClass::kRawText;
  }
  if (name == "plaintext") return TagClass::kPlaintext;
  if (name == "svg" || name == "math") return TagClass::kForeign;
  // Void elements, elements closed implicitly by their next sibling,
  // elements that cannot nest in themselves, and the document skeleton.
  if (NameIs(name, {"area",     "base",    "br",       "col",    "embed",
                    "hr",       "img",     "input",    "link",   "meta",
                    "param",    "source",  "track",    "wbr",    "keygen",
                    "basefont", "bgsound", "frame",    "image",  "p",
                    "li",       "dd",      "dt",       "option", "optgroup",
                    "tr",       "td",      "th",       "tbody",  "thead",
                    "tfoot",    "caption", "colgroup", "rb",     "rp",
                    "rt",       "rtc",     "h1",       "h2",     "h3",
                    "h4",       "h5",      "h6",       "a",      "html",
                    "head",     "body",    "form",     "select"})) {
    return TagClass::kUncounted;
  }
  return TagClass::kCounted;
}

// Start tags that end foreign content (HTML spec, "parsing tokens in
// foreign content").
bool BreaksOutOfForeign(std::string_view name) {
  return NameIs(
      name,
      {"b",      "big",    "blockquote", "body",    "br",    "center", "code",
       "dd",     "div",    "dl",         "dt",      "em",    "embed",  "h1",
       "h2",     "h3",     "h4",         "h5",      "h6",    "head",   "hr",
       "i",      "img",    "li",         "listing", "menu",  "meta",   "nobr",
       "ol",     "p",      "pre",        "ruby",    "s",     "small",  "span",
       "strong", "strike", "sub",        "sup",     "table", "tt",     "u",
       "ul",     "var",    "font"});
}

uint32_t NameId(std::string_view name) {
  uint32_t h = 2166136261u;  // FNV-1a; collisions only blur the estimate
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// Finds "</name" (ASCII case-insensitive) at or after `from`.
size_t FindEndTag(std::string_view s, size_t from, std::string_view name) {
  while (true) {
    size_t lt = s.find("</", from);
    if (lt == std::string_view::npos) return lt;
    size_t k = 0;
    while (k < name.size() && lt + 2 + k < s.size() &&
           static_cast<char>(s[lt + 2 + k] | 0x20) == name[k]) {
      ++k;
    }
    if (k == name.size()) return lt;
    from = lt + 2;
  }
}

}  // namespace

size_t NestingCutOffset(std::string_view s, size_t max_depth) {
  constexpr size_t kNpos = std::string_view::npos;
  const size_t n = s.size();
  std::vector<uint32_t> open;  // ids of counted open elements
  size_t foreign = 0;          // open <svg>/<math> elements
  char name_buf[16];
  size_t i = 0;
  while (i < n) {
    const void* lt = std::memchr(s.data() + i, '<', n - i);
    if (lt == nullptr) return kNpos;
    i = static_cast<size_t>(static_cast<const char*>(lt) - s.data());
    if (i + 1 >= n) return kNpos;
    const char c = s[i + 1];
    if (c == '!' || c == '?') {
      size_t end = s.compare(i, 4, "<!--") == 0 ? s.find("-->", i + 2)
                                                : s.find('>', i + 2);
      if (end == kNpos) return kNpos;
      i = end + (s[end] == '>' ? 1 : 3);
      continue;
    }
    const bool end_tag = c == '/';
    size_t p = i + (end_tag ? 2 : 1);
    if (p >= n || !IsAlpha(s[p])) {
      ++i;
      continue;
    }
    const size_t tag_start = i;
    size_t len = 0;
    bool long_name = false;
    while (p < n && !IsSpace(s[p]) && s[p] != '/' && s[p] != '>') {
      if (len < sizeof(name_buf)) {
        name_buf[len++] =
            static_cast<char>((s[p] >= 'A' && s[p] <= 'Z') ? s[p] + 32 : s[p]);
      } else {
        long_name = true;
      }
      ++p;
    }
    // Names are compared by their first 16 bytes: custom elements with long
    // names are counted like any unknown element.
    std::string_view name(name_buf, len);
    // To the end of the tag; quotes matter only right after '='.
    bool self_closing = false;
    char prev = 0;
    while (p < n && s[p] != '>') {
      if ((s[p] == '"' || s[p] == '\'') && prev == '=') {
        size_t close = s.find(s[p], p + 1);
        if (close == kNpos) return kNpos;
        p = close + 1;
        prev = 0;
        continue;
      }
      if (!IsSpace(s[p])) prev = s[p];
      ++p;
    }
    if (p >= n) return kNpos;
    self_closing = prev == '/';
    i = p + 1;

    // An end tag pops up to the nearest open element of its name, as the
    // tree builder's "any other end tag" does; an unmatched one pops nothing,
    // so "<div></span>" repeated still counts as nesting.
    const TagClass cls = long_name ? TagClass::kCounted : Classify(name);
    if (end_tag) {
      if (cls == TagClass::kForeign && foreign > 0) --foreign;
      if (cls != TagClass::kCounted && cls != TagClass::kForeign) continue;
      const uint32_t id = NameId(name);
      for (size_t k = open.size(); k > 0; --k) {
        if (open[k - 1] == id) {
          open.resize(k - 1);
          break;
        }
      }
      continue;
    }
    if (foreign > 0 && BreaksOutOfForeign(name)) foreign = 0;
    switch (cls) {
      case TagClass::kRawText: {
        if (foreign > 0 && self_closing) break;
        size_t end = FindEndTag(s, i, name);
        if (end == kNpos) return kNpos;
        i = end;
        break;
      }
      case TagClass::kPlaintext:
        return kNpos;
      case TagClass::kUncounted:
        break;
      case TagClass::kForeign:
      case TagClass::kCounted:
        if (self_closing && (foreign > 0 || cls == TagClass::kForeign)) break;
        if (cls == TagClass::kForeign) ++foreign;
        open.push_back(NameId(long_name ? std::string_view() : name));
        if (open.size() > max_depth) return tag_start;
        break;
    }
  }
  return kNpos;
}

}  // namespace crawld::parser::internal
