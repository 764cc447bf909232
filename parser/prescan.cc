// The pass before Gumbo; see prescan.h.
//
// Tokenizer states follow the HTML Standard, "Tokenization"
// (https://html.spec.whatwg.org/multipage/parsing.html#tokenization): tag
// names and attributes exactly (where a tag ends decides everything after
// it), comments with their abrupt endings, bogus comments, RAWTEXT/RCDATA
// up to the appropriate end tag. The stack of open elements is an estimate:
// it counts only elements that can nest without bound, as the tree builder's
// "any other end tag" and "has an element in scope" steps would pop them.
#include "parser/prescan.h"

#include <gumbo.h>

#include <algorithm>
#include <cstring>

#include "base/ascii.h"

namespace crawld::parser::internal {
namespace {

constexpr size_t kNpos = std::string_view::npos;

bool IsTagSpace(char c) {
  // CR included: the input stream turns it into LF before the tokenizer.
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

// How the tree builder treats a start tag, in HTML content.
enum class Kind : uint8_t {
  kGroup,      // only groups its content: may be flattened
  kKeep,       // changes how its content is parsed: never flattened
  kUncounted,  // closed implicitly, cannot nest in itself, or ignored
  kVoid,       // no content
  kRawText,    // RAWTEXT or RCDATA up to its end tag
  kPlaintext,  // the rest of the document is text
  kNoscript,
  kSvg,
  kMath,
  kAnchor,  // <a>: closes an open <a> (adoption agency), never flattened
};

struct Name {
  std::string_view name;
  Kind kind;
};

// How the tree builder treats each start tag name; names not listed are
// kGroup (custom elements and the many ordinary ones).
constexpr Name kKinds[] = {
    {"a", Kind::kAnchor},         {"applet", Kind::kKeep},
    {"area", Kind::kVoid},        {"base", Kind::kVoid},
    {"basefont", Kind::kVoid},    {"bgsound", Kind::kVoid},
    {"body", Kind::kUncounted},   {"br", Kind::kVoid},
    {"button", Kind::kKeep},      {"caption", Kind::kUncounted},
    {"col", Kind::kVoid},         {"colgroup", Kind::kUncounted},
    {"dd", Kind::kUncounted},     {"dt", Kind::kUncounted},
    {"embed", Kind::kVoid},       {"form", Kind::kUncounted},
    {"frame", Kind::kVoid},       {"frameset", Kind::kUncounted},
    {"h1", Kind::kUncounted},     {"h2", Kind::kUncounted},
    {"h3", Kind::kUncounted},     {"h4", Kind::kUncounted},
    {"h5", Kind::kUncounted},     {"h6", Kind::kUncounted},
    {"head", Kind::kUncounted},   {"hr", Kind::kVoid},
    {"html", Kind::kUncounted},   {"iframe", Kind::kRawText},
    {"image", Kind::kVoid},       {"img", Kind::kVoid},
    {"input", Kind::kVoid},       {"isindex", Kind::kVoid},
    {"keygen", Kind::kVoid},      {"li", Kind::kUncounted},
    {"link", Kind::kVoid},        {"marquee", Kind::kKeep},
    {"math", Kind::kMath},        {"menuitem", Kind::kGroup},
    {"meta", Kind::kVoid},        {"noembed", Kind::kRawText},
    {"noframes", Kind::kRawText}, {"noscript", Kind::kNoscript},
    {"object", Kind::kKeep},      {"optgroup", Kind::kUncounted},
    {"option", Kind::kUncounted}, {"p", Kind::kUncounted},
    {"param", Kind::kVoid},       {"plaintext", Kind::kPlaintext},
    {"script", Kind::kRawText},   {"select", Kind::kUncounted},
    {"source", Kind::kVoid},      {"style", Kind::kRawText},
    {"svg", Kind::kSvg},          {"table", Kind::kUncounted},
    {"tbody", Kind::kUncounted},  {"td", Kind::kUncounted},
    {"template", Kind::kKeep},    {"textarea", Kind::kRawText},
    {"tfoot", Kind::kUncounted},  {"th", Kind::kUncounted},
    {"thead", Kind::kUncounted},  {"title", Kind::kRawText},
    {"tr", Kind::kUncounted},     {"track", Kind::kVoid},
    {"wbr", Kind::kVoid},         {"xmp", Kind::kRawText},
};

// "Parsing tokens in foreign content": start tags that leave it.
constexpr std::string_view kBreaksOutOfForeign[] = {
    "b",      "big",    "blockquote", "body",    "br",    "center", "code",
    "dd",     "div",    "dl",         "dt",      "em",    "embed",  "h1",
    "h2",     "h3",     "h4",         "h5",      "h6",    "head",   "hr",
    "i",      "img",    "li",         "listing", "menu",  "meta",   "nobr",
    "ol",     "p",      "pre",        "ruby",    "s",     "small",  "span",
    "strong", "strike", "sub",        "sup",     "table", "tt",     "u",
    "ul",     "var"};

// Start or end tags that close a <select> inside a table.
constexpr std::string_view kTableParts[] = {
    "caption", "table", "tbody", "tfoot", "thead", "tr", "td", "th"};

constexpr std::string_view kFormatting[] = {
    "b", "big",   "code",   "em",     "font", "i", "nobr",
    "s", "small", "strike", "strong", "tt",   "u"};

// Elements in the "special" category whose end tags the in-body rules
// handle with a scope check; an "any other end tag" walk stops at them.
constexpr std::string_view kSpecial[] = {
    "address",  "applet",     "article", "aside",   "blockquote", "button",
    "center",   "details",    "dialog",  "dir",     "div",        "dl",
    "fieldset", "figcaption", "figure",  "footer",  "header",     "hgroup",
    "listing",  "main",       "marquee", "menu",    "nav",        "object",
    "ol",       "pre",        "search",  "section", "summary",    "template",
    "ul"};

constexpr std::string_view kScopeBoundaries[] = {"applet", "marquee", "object",
                                                 "template"};

// What the pass needs to know of a tag name.
struct TagInfo {
  Kind kind = Kind::kGroup;
  bool special = false;
  bool formatting = false;
  bool boundary = false;
  bool table_part = false;
  bool breaks_foreign = false;
  bool gumbo_unknown = false;  // Gumbo has no tag enum for the name
};

// The lists above, looked up with one call of Gumbo's perfect hash per
// tag (issue 16: comparing each tag name with every name of several lists
// one by one cost more than the rest of the pass). Names Gumbo does not
// know ("search") are kept in a short list compared only for unknown
// names. Immutable once built.
class TagTable {
 public:
  TagTable() {
    for (const Name& n : kKinds) Entry(n.name).kind = n.kind;
    for (std::string_view n : kSpecial) Entry(n).special = true;
    for (std::string_view n : kFormatting) Entry(n).formatting = true;
    for (std::string_view n : kScopeBoundaries) Entry(n).boundary = true;
    for (std::string_view n : kTableParts) Entry(n).table_part = true;
    for (std::string_view n : kBreaksOutOfForeign) {
      Entry(n).breaks_foreign = true;
    }
  }

  // REQUIRES: `name` is lower case (as Tokenize leaves it).
  const TagInfo& Lookup(std::string_view name) const {
    const GumboTag tag = GumboTagOf(name);
    if (tag != GUMBO_TAG_UNKNOWN) return known_[tag];
    for (const auto& [n, info] : unknown_) {
      if (n == name) return info;
    }
    return unknown_default_;
  }

 private:
  static GumboTag GumboTagOf(std::string_view name) {
    return gumbo_tagn_enum(name.data(), static_cast<unsigned>(name.size()));
  }

  TagInfo& Entry(std::string_view name) {
    const GumboTag tag = GumboTagOf(name);
    if (tag != GUMBO_TAG_UNKNOWN) return known_[tag];
    for (auto& [n, info] : unknown_) {
      if (n == name) return info;
    }
    unknown_.emplace_back(name, unknown_default_);
    return unknown_.back().second;
  }

  TagInfo known_[GUMBO_TAG_LAST + 1];
  std::vector<std::pair<std::string_view, TagInfo>> unknown_;
  const TagInfo unknown_default_ = [] {
    TagInfo t;
    t.gumbo_unknown = true;
    return t;
  }();
};

const TagInfo& InfoOf(std::string_view name) {
  static const TagTable* const table = new TagTable();  // never destroyed
  return table->Lookup(name);
}

bool BreaksOutOfForeign(std::string_view name) {
  return InfoOf(name).breaks_foreign;
}
bool IsTablePart(std::string_view name) { return InfoOf(name).table_part; }

// Attribute names that the extractor or the tree builder reads: past the
// per-element cap, the first of each is still kept.
int ReadAttributeIndex(std::string_view name) {
  static constexpr std::string_view kRead[] = {
      "href",       "rel",  "src",      "name",      "content",
      "http-equiv", "lang", "charset",  "type",      "color",
      "face",       "size", "encoding", "xlink:href"};
  for (size_t i = 0; i < std::size(kRead); ++i) {
    if (kRead[i] == name) return static_cast<int>(i);
  }
  return -1;
}

uint32_t NameId(std::string_view name) {
  uint32_t h = 2166136261u;  // FNV-1a; a collision only blurs the estimate
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

enum : uint8_t {
  kDropped = 1,      // flattened: not in Gumbo's tree
  kForeign = 2,      // SVG or MathML element
  kIntegration = 4,  // HTML or MathML text integration point
  kSpecialFlag = 8,
  kBoundary = 16,
  kSvg = 32,           // SVG namespace (else MathML, when kForeign)
  kGumboUnknown = 64,  // HTML element whose name Gumbo does not know
};

struct Entry {
  uint32_t id;
  uint8_t flags;
};

struct Attr {
  size_t start;  // name
  size_t name_end;
  size_t value_start;  // == value_end when there is no value
  size_t value_end;
  size_t end;  // after the closing quote, if any
};

// Input replaced piece by piece; nothing is copied until the first change.
class Writer {
 public:
  Writer(std::string_view in, std::string* out) : in_(in), out_(out) {
    out_->clear();
  }

  // Input [a, b) becomes `lit`. REQUIRES: from_ <= a <= b.
  void Replace(size_t a, size_t b, std::string_view lit,
               std::vector<std::pair<size_t, size_t>>* segs) {
    if (!active_) {
      active_ = true;
      segs->push_back({0, 0});
    }
    out_->append(in_.substr(from_, a - from_));
    if (lit.empty() && a == from_ && !segs->empty() &&
        segs->back().first == out_->size()) {
      // Two cuts in a row: one segment.
      segs->back().second = b;
      from_ = b;
      return;
    }
    segs->push_back({out_->size(), a});
    out_->append(lit);
    from_ = b;
    segs->push_back({out_->size(), b});
  }

  size_t out_size_at(size_t a) const {
    return active_ ? out_->size() + (a - from_) : a;
  }

  std::string_view Finish() {
    if (!active_) return in_;
    out_->append(in_.substr(from_));
    return *out_;
  }

 private:
  std::string_view in_;
  std::string* out_;
  size_t from_ = 0;
  bool active_ = false;
};

// Code points Gumbo replaces with U+FFFD in its input stream although the
// HTML standard keeps them: C0 controls but TAB LF FF CR (and NUL, which
// the standard replaces too), DEL, C1 controls, noncharacters. Returns the
// length of the UTF-8 sequence at s[i] if it is one, else 0, and its code
// point in *cp. REQUIRES: s is valid UTF-8.
size_t GumboReplaced(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = static_cast<uint8_t>(s[i]);
  if (b < 0x20) {
    if (b == 0 || b == '\t' || b == '\n' || b == '\f' || b == '\r') return 0;
    *cp = b;
    return 1;
  }
  if (b == 0x7F) {
    *cp = b;
    return 1;
  }
  if (b < 0x80) return 0;
  auto at = [&](size_t k) {
    return i + k < s.size() ? static_cast<uint8_t>(s[i + k]) : 0;
  };
  if (b == 0xC2 && at(1) >= 0x80 && at(1) <= 0x9F) {
    *cp = at(1);
    return 2;
  }
  if (b == 0xEF && at(1) == 0xB7 && at(2) >= 0x90 && at(2) <= 0xAF) {
    *cp = 0xFDD0 + (at(2) - 0x90u);
    return 3;
  }
  if (b == 0xEF && at(1) == 0xBF && (at(2) == 0xBE || at(2) == 0xBF)) {
    *cp = at(2) == 0xBE ? 0xFFFE : 0xFFFF;
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4 && (at(1) & 0x0F) == 0x0F && at(2) == 0xBF &&
      (at(3) == 0xBE || at(3) == 0xBF)) {
    const uint32_t plane = ((b & 0x07u) << 2) | ((at(1) >> 4) & 0x03u);
    *cp = (plane << 16) | (at(3) == 0xBE ? 0xFFFEu : 0xFFFFu);
    return 4;
  }
  return 0;
}

void AppendHexRef(uint32_t cp, std::string* out) {
  out->append("&#x");
  char buf[8];
  int n = 0;
  do {
    buf[n++] = ascii::HexDigitUpper(cp & 0xF);
    cp >>= 4;
  } while (cp != 0);
  while (n > 0) out->push_back(buf[--n]);
  out->push_back(';');
}

class Scanner {
 public:
  Scanner(std::string_view s, const PrescanLimits& limits,
          const NoscriptDecisions& decisions, std::string* storage,
          Prescan* out)
      : s_(s),
        limits_(limits),
        decisions_(decisions),
        out_(out),
        w_(s, storage) {}

  void Run() {
    const size_t n = s_.size();
    size_t i = 0;
    while (i < n) {
      const void* lt = std::memchr(s_.data() + i, '<', n - i);
      if (lt == nullptr) break;
      i = static_cast<size_t>(static_cast<const char*>(lt) - s_.data());
      if (i + 1 >= n) break;
      const char c = s_[i + 1];
      if (c == '!' || c == '?') {
        // Comments are nodes too: they count against max_elements.
        if (elements_ >= limits_.max_elements) {
          w_.Replace(i, n, "", &out_->segments);
          out_->elements_cut = true;
          break;
        }
        ++elements_;
        i = c == '!' ? SkipMarkupDeclaration(i) : SkipTo(i + 2, ">");
      } else if (c == '/') {
        if (i + 2 >= n) break;
        if (ascii::IsAlpha(s_[i + 2])) {
          i = EndTag(i);
        } else if (s_[i + 2] == '>') {
          i += 3;
        } else {
          i = SkipTo(i + 2, ">");
        }
      } else if (ascii::IsAlpha(c)) {
        if (elements_ >= limits_.max_elements) {
          w_.Replace(i, n, "", &out_->segments);
          out_->elements_cut = true;
          break;
        }
        i = StartTag(i);
      } else {
        ++i;
      }
    }
    out_->html = w_.Finish();
  }

 private:
  // Past the first `lit` at or after `from`, or the end.
  size_t SkipTo(size_t from, std::string_view lit) const {
    size_t p = s_.find(lit, from);
    return p == kNpos ? s_.size() : p + lit.size();
  }

  size_t SkipMarkupDeclaration(size_t i) {
    if (s_.compare(i, 4, "<!--") == 0) {
      // Abrupt endings "<!-->" and "<!--->", then the first "-->" or
      // "--!>" (one scan: searching for each separately is quadratic on a
      // page of comments).
      if (s_.compare(i + 4, 1, ">") == 0) return i + 5;
      if (s_.compare(i + 4, 2, "->") == 0) return i + 6;
      for (size_t d = s_.find("--", i + 4); d != kNpos;
           d = s_.find("--", d + 1)) {
        if (s_.compare(d + 2, 1, ">") == 0) return d + 3;
        if (s_.compare(d + 2, 2, "!>") == 0) return d + 4;
      }
      return s_.size();
    }
    if (s_.compare(i + 2, 7, "[CDATA[") == 0) {
      if (InForeign()) return SkipTo(i + 9, "]]>");
      const Entry* top = TopKept();
      if (top != nullptr && (top->flags & kForeign) != 0) {
        // At an integration point Gumbo reads a CDATA section, a browser
        // (parse5, the reference) a bogus comment: "<?" is one in both.
        w_.Replace(i, i + 2, "<?", &out_->segments);
      }
    }
    return SkipTo(i + 2, ">");  // DOCTYPE or bogus comment
  }

  // Tokenizes the tag at s_[i] ('<' then optional '/' then a letter).
  // Fills name_ and attrs_; returns the offset after '>', or npos when the
  // input ends inside the tag (the tokenizer then emits nothing).
  size_t Tokenize(size_t i, bool end_tag) {
    const size_t n = s_.size();
    size_t p = i + (end_tag ? 2 : 1);
    name_start_ = p;
    name_.clear();
    name_has_nul_ = false;
    while (p < n && !IsTagSpace(s_[p]) && s_[p] != '/' && s_[p] != '>') {
      if (s_[p] == '\0') {
        name_has_nul_ = true;
        if (name_.size() < 64) name_.append("\xEF\xBF\xBD");
      } else if (name_.size() < 64) {
        name_.push_back(ascii::ToLower(s_[p]));
      }
      ++p;
    }
    name_end_ = p;
    attrs_.clear();
    self_closing_ = false;
    while (true) {
      // Before attribute name.
      while (p < n && (IsTagSpace(s_[p]) || s_[p] == '/')) {
        if (s_[p] == '/') {
          if (p + 1 < n && s_[p + 1] == '>') {
            self_closing_ = true;
            return p + 2;
          }
        }
        ++p;
      }
      if (p >= n) return kNpos;
      if (s_[p] == '>') return p + 1;
      Attr a;
      a.start = p;
      ++p;  // the first character is part of the name, even '='
      while (p < n && !IsTagSpace(s_[p]) && s_[p] != '/' && s_[p] != '>' &&
             s_[p] != '=') {
        ++p;
      }
      a.name_end = p;
      a.value_start = a.value_end = a.end = p;
      // After attribute name.
      size_t q = p;
      while (q < n && IsTagSpace(s_[q])) ++q;
      if (q < n && s_[q] == '=') {
        ++q;
        while (q < n && IsTagSpace(s_[q])) ++q;
        if (q >= n) return kNpos;
        if (s_[q] == '"' || s_[q] == '\'') {
          const size_t close = s_.find(s_[q], q + 1);
          if (close == kNpos) return kNpos;
          a.value_start = q + 1;
          a.value_end = close;
          a.end = close + 1;
          p = close + 1;
          // After attribute value (quoted): anything but space, '/' or
          // '>' starts the next attribute right away.
        } else if (s_[q] == '>') {
          a.end = q;  // missing value
          p = q;
        } else {
          a.value_start = q;
          while (q < n && !IsTagSpace(s_[q]) && s_[q] != '>') ++q;
          a.value_end = a.end = q;
          p = q;
        }
      } else {
        p = a.name_end;
      }
      attrs_.push_back(a);
      if (p >= n) return kNpos;
    }
  }

  bool ForcedRaw(size_t i) const {
    return std::binary_search(decisions_.raw.begin(), decisions_.raw.end(), i);
  }

  const Entry* TopKept() const {
    return kept_.empty() ? nullptr : &stack_[kept_.back()];
  }

  bool InForeign() const {
    const Entry* top = TopKept();
    return top != nullptr && (top->flags & kForeign) != 0 &&
           (top->flags & kIntegration) == 0;
  }

  void Push(uint32_t id, uint8_t flags) {
    if ((flags & kDropped) == 0) kept_.push_back(stack_.size());
    stack_.push_back({id, flags});
  }

  // Pops entries down to (and including) index k.
  void PopTo(size_t k) {
    while (stack_.size() > k) {
      if (!kept_.empty() && kept_.back() == stack_.size() - 1) {
        kept_.pop_back();
      }
      stack_.pop_back();
    }
  }

  std::string_view AttrName(const Attr& a) {
    attr_name_.clear();
    for (size_t k = a.start; k < a.name_end && attr_name_.size() < 32; ++k) {
      attr_name_.push_back(ascii::ToLower(s_[k]));
    }
    return attr_name_;
  }

  std::string_view AttrValue(const Attr& a) const {
    return s_.substr(a.value_start, a.value_end - a.value_start);
  }

  // Rewrites the attributes of the start tag at `i` when some are past the
  // cap or hold characters Gumbo would replace.
  void FixAttributes() {
    if (name_fix_pending_) {
      w_.Replace(name_start_, name_end_, name_, &out_->segments);
      name_fix_pending_ = false;
    }
    const size_t cap = limits_.max_attributes;
    bool needed = attrs_.size() > cap;
    if (!needed) {
      for (const Attr& a : attrs_) {
        if (NeedsEscape(a)) {
          needed = true;
          break;
        }
      }
      if (!needed) return;
    }
    uint32_t seen = 0;  // read names met so far (bit per kRead index)
    for (size_t k = 0; k < attrs_.size(); ++k) {
      const Attr& a = attrs_[k];
      const int read = ReadAttributeIndex(AttrName(a));
      const bool first_of_read = read >= 0 && (seen & (1u << read)) == 0;
      if (read >= 0) seen |= 1u << read;
      if (k >= cap && !first_of_read) {
        const size_t to = k + 1 < attrs_.size() ? attrs_[k + 1].start : a.end;
        w_.Replace(a.start, to, "", &out_->segments);
        ++out_->attributes_dropped;
        continue;
      }
      if (NeedsEscape(a)) {
        escaped_.clear();
        std::string_view v = AttrValue(a);
        size_t run = 0;
        for (size_t j = 0; j < v.size();) {
          uint32_t cp;
          const size_t len = GumboReplaced(v, j, &cp);
          if (len == 0) {
            ++j;
            continue;
          }
          escaped_.append(v.substr(run, j - run));
          if (cp >= 0x80 && cp <= 0x9F && cp != 0x81 && cp != 0x8D &&
              cp != 0x8F && cp != 0x90 && cp != 0x9D) {
            // A reference would be remapped through windows-1252.
            escaped_.append("\xF4\x8F\xBE");
            escaped_.push_back(static_cast<char>(0x80 + (cp - 0x80)));
          } else {
            AppendHexRef(cp, &escaped_);
          }
          j += len;
          run = j;
        }
        escaped_.append(v.substr(run));
        w_.Replace(a.value_start, a.value_end, escaped_, &out_->segments);
      }
    }
  }

  bool NeedsEscape(const Attr& a) const {
    std::string_view v = AttrValue(a);
    for (size_t j = 0; j < v.size(); ++j) {
      const auto b = static_cast<uint8_t>(v[j]);
      if (b < 0x20 || b == 0x7F || b == 0xC2 || b == 0xEF || b >= 0xF0) {
        uint32_t cp;
        if (GumboReplaced(v, j, &cp) != 0) return true;
      }
    }
    return false;
  }

  // Gumbo predates a few changes to the HTML standard's tag lists: it does
  // not give <main> and <search> the rules the standard now has, and it still
  // expands <isindex> and treats <menuitem> as void, where the standard has
  // ordinary elements. Those names are rewritten to ones Gumbo parses as the
  // standard says; a NUL in a tag name becomes U+FFFD, as the tokenizer does
  // (Gumbo stops the name there). Sets name_ to the name the tree builder
  // should see; the output is changed by the next FixAttributes() or end tag
  // rewrite.
  void FixTagName(bool html) {
    name_fix_pending_ = false;
    std::string_view to;
    if (!html) {
      if (!name_has_nul_) return;
      to = name_;
    } else if (name_ == "main") {
      to = "div";
    } else if (name_ == "search") {
      // parse5 gives <search> the start tag rules of <div> but not its
      // special-element status: that is Gumbo's <main>.
      to = "main";
    } else if (name_ == "isindex") {
      to = "x-isindex";
    } else if (name_ == "menuitem") {
      to = "x-menuitem";
    } else if (!name_has_nul_) {
      return;
    } else {
      to = name_;
    }
    name_.assign(to);
    name_fix_pending_ = true;
  }

  // True if Gumbo has no tag enum for the (lower-case) name: Gumbo then
  // matches an end tag of any unknown name to any unknown element.
  static bool GumboUnknown(std::string_view name) {
    return InfoOf(name).gumbo_unknown;
  }

  size_t EndTag(size_t i) {
    const size_t end = Tokenize(i, true);
    if (end == kNpos) return EofInTag(i);
    if (InForeign() && (name_ == "br" || name_ == "p")) {
      // "Parsing tokens in foreign content": these end tags leave foreign
      // content first (a later change than Gumbo). A <br> start tag does
      // the same in Gumbo, and "</br>" is a <br> anyway.
      while (InForeign()) PopTo(kept_.back());
      w_.Replace(i, end, name_ == "br" ? "<br>" : "<br></p>", &out_->segments);
      return end;
    }
    if (name_ == "select") in_select_ = false;
    if (name_ == "table") {
      if (table_depth_ > 0) --table_depth_;
    }
    if (select_in_table_ && IsTablePart(name_)) in_select_ = false;
    FixTagName(!InForeign());
    // The tree builder ignores the attributes of end tags; Gumbo would
    // still check each pair.
    out_->attributes_dropped += attrs_.size();
    if (InForeign() && name_ == "template") {
      name_ = "x-template";  // see ForeignStartTag
      name_fix_pending_ = true;
    }
    if (GumboUnknown(name_)) {
      if (!InForeign()) return UnknownEndTag(i, end);
      // In foreign content Gumbo hands an unknown end tag to any unknown
      // HTML element below; a browser ignores one that matches nothing.
      if (!Matches(NameId(name_))) {
        w_.Replace(i, end, "", &out_->segments);
        return end;
      }
    }
    if (ModelEndTag()) {
      // Its start tag was flattened: so is the end tag.
      w_.Replace(i, end, "", &out_->segments);
    } else if (name_fix_pending_ || !attrs_.empty()) {
      repeated_.assign("</");
      repeated_.append(name_);
      repeated_.push_back('>');
      w_.Replace(i, end, repeated_, &out_->segments);
    }
    return end;
  }

  // True if an element of that name id is open (within the window).
  bool Matches(uint32_t id) const {
    constexpr size_t kWindow = 64;
    for (size_t k = stack_.size(), steps = 0; k > 0 && steps < kWindow;
         --k, ++steps) {
      if (stack_[k - 1].id == id) return true;
    }
    return stack_.size() > kWindow;  // too deep to tell: keep it
  }

  // "Any other end tag" for a name Gumbo does not know: the standard pops
  // up to the nearest element of that name unless a special element comes
  // first; Gumbo pops up to the nearest element of any unknown name. So the
  // end tag is dropped when the standard ignores it, and repeated once per
  // unknown element the standard pops.
  size_t UnknownEndTag(size_t i, size_t end) {
    const uint32_t id = NameId(name_);
    constexpr size_t kWindow = 64;
    size_t unknown = 0;
    size_t k = stack_.size();
    for (size_t steps = 0; k > 0; --k, ++steps) {
      if (steps == kWindow) return end;  // too deep to tell: leave it
      const Entry& e = stack_[k - 1];
      const bool kept = (e.flags & kDropped) == 0;
      if (kept && (e.flags & kGumboUnknown) != 0) ++unknown;
      if (e.id == id) {
        PopTo(k - 1);
        if (!kept) {
          w_.Replace(i, end, "", &out_->segments);
        } else if (unknown != 1 || !attrs_.empty() || name_fix_pending_) {
          repeated_.clear();
          for (size_t r = 0; r < unknown; ++r) {
            repeated_.append("</");
            repeated_.append(name_);
            repeated_.push_back('>');
          }
          w_.Replace(i, end, repeated_, &out_->segments);
        }
        return end;
      }
      if (kept && (e.flags & kSpecialFlag) != 0) break;
    }
    w_.Replace(i, end, "", &out_->segments);  // the standard ignores it
    return end;
  }

  // Applies the end tag in name_ to the estimated stack. Returns true if
  // it closes a flattened element (so it must go too).
  bool ModelEndTag() {
    const TagInfo& info = InfoOf(name_);
    const Kind kind = info.kind;
    if (kind != Kind::kGroup && kind != Kind::kKeep && kind != Kind::kSvg &&
        kind != Kind::kMath && kind != Kind::kAnchor) {
      return false;
    }
    const uint32_t id = NameId(name_);
    const bool formatting = info.formatting;
    const bool special = info.special;
    // A bounded walk from the top: an estimate, never a quadratic scan.
    constexpr size_t kWindow = 64;
    bool kept_above = false;
    bool special_above = false;
    for (size_t k = stack_.size(), steps = 0; k > 0 && steps < kWindow;
         --k, ++steps) {
      const Entry& e = stack_[k - 1];
      const bool kept = (e.flags & kDropped) == 0;
      if (e.id == id) {
        const bool dropped = !kept && !kept_above;
        // The adoption agency keeps the furthest block open.
        if (formatting && special_above && !dropped) return false;
        PopTo(k - 1);
        return dropped;
      }
      if (!kept) continue;
      kept_above = true;
      if ((e.flags & kSpecialFlag) != 0) {
        special_above = true;
        // "Any other end tag" stops at a special element.
        if (!formatting && !special) return false;
      }
      if ((e.flags & kBoundary) != 0) return false;  // not in scope
    }
    return false;
  }

  // A tag the input ends in is never emitted (HTML: "eof-in-tag"), but
  // Gumbo would still tokenize its attributes, quadratically: cut it.
  size_t EofInTag(size_t i) {
    w_.Replace(i, s_.size(), "", &out_->segments);
    return s_.size();
  }

  size_t StartTag(size_t i) {
    const size_t end = Tokenize(i, false);
    if (end == kNpos) return EofInTag(i);
    ++elements_;
    FixTagName(!InForeign());
    const uint32_t id = NameId(name_);
    const bool forced_noscript =
        decisions_.forced && name_ == "noscript" && ForcedRaw(i);
    if (InForeign() && !forced_noscript) {
      const bool font_breaks =
          name_ == "font" &&
          std::any_of(attrs_.begin(), attrs_.end(), [&](const Attr& a) {
            std::string_view an = AttrName(a);
            return an == "color" || an == "face" || an == "size";
          });
      if (BreaksOutOfForeign(name_) || font_breaks) {
        while (InForeign()) PopTo(kept_.back());
      } else {
        return ForeignStartTag(i, end, id);
      }
    }
    return HtmlStartTag(i, end, id);
  }

  size_t ForeignStartTag(size_t i, size_t end, uint32_t id) {
    if (name_ == "template") {
      // Gumbo makes an HTML <template> (inert content) of a foreign one.
      name_ = "x-template";
      name_fix_pending_ = true;
      id = NameId(name_);
    }
    const bool svg = (TopKept()->flags & kSvg) != 0;
    uint8_t flags = static_cast<uint8_t>(kForeign | (svg ? kSvg : 0));
    if (svg ? (name_ == "foreignobject" || name_ == "desc" || name_ == "title")
            : (name_ == "mi" || name_ == "mo" || name_ == "mn" ||
               name_ == "ms" || name_ == "mtext")) {
      flags |= kIntegration | kSpecialFlag | kBoundary;
    } else if (!svg && name_ == "annotation-xml") {
      for (const Attr& a : attrs_) {
        if (AttrName(a) == "encoding") {
          std::string_view v = AttrValue(a);
          if (ascii::EqualsIgnoreCase(v, "text/html") ||
              ascii::EqualsIgnoreCase(v, "application/xhtml+xml")) {
            flags |= kIntegration | kSpecialFlag | kBoundary;
          }
          break;
        }
      }
    }
    if (!self_closing_ && (flags & kIntegration) == 0 &&
        kept_.size() >= limits_.max_depth) {
      Flatten(i, end, id, flags);
      return end;
    }
    FixAttributes();  // also writes a renamed tag
    if (!self_closing_) Push(id, flags);
    return end;
  }

  void Flatten(size_t i, size_t end, uint32_t id, uint8_t flags) {
    name_fix_pending_ = false;
    --elements_;  // not handed on
    w_.Replace(i, end, "", &out_->segments);
    ++out_->elements_flattened;
    Push(id, static_cast<uint8_t>(flags | kDropped));
  }

  size_t HtmlStartTag(size_t i, size_t end, uint32_t id) {
    const TagInfo& info = InfoOf(name_);
    const Kind kind = info.kind;
    if (in_select_ && kind != Kind::kRawText && kind != Kind::kUncounted &&
        kind != Kind::kVoid && kind != Kind::kNoscript && name_ != "template") {
      // "In select": other start tags are ignored.
      FixAttributes();
      return end;
    }
    switch (kind) {
      case Kind::kNoscript: {
        const bool raw =
            decisions_.forced ? ForcedRaw(i) : limits_.scripting && !in_select_;
        if (!raw) break;
        // Raw text up to the next "</noscript" that ends a tag name; the end
        // tag is then tokenized like any tag (it may hold attributes).
        size_t close = FindEndTag(end, "noscript");
        size_t after = s_.size();
        if (close != kNpos) {
          size_t e = Tokenize(close, true);
          after = e == kNpos ? s_.size() : e;
          if (e == kNpos) close = kNpos;
        }
        name_fix_pending_ = false;
        out_->noscript_in.push_back(i);
        out_->noscript_out.push_back(w_.out_size_at(i));
        w_.Replace(i, after,
                   close == kNpos ? "<noframes>" : "<noframes></noframes>",
                   &out_->segments);
        return after;
      }
      case Kind::kRawText: {
        FixAttributes();
        if (name_ == "textarea") in_select_ = false;
        // In <select> only <script> and <textarea> switch the tokenizer
        // (other start tags are ignored there).
        if (in_select_ && name_ != "script") return end;
        const size_t close = FindEndTag(end, name_);
        // A <noscript> that Gumbo saw inside what this pass took for raw
        // text: the pass was wrong about this element.
        if (decisions_.forced) {
          auto it = std::lower_bound(decisions_.raw.begin(),
                                     decisions_.raw.end(), end);
          if (it != decisions_.raw.end() && *it < close) return end;
        }
        return close == kNpos ? s_.size() : close;
      }
      case Kind::kPlaintext:
        FixAttributes();
        return s_.size();
      case Kind::kVoid:
      case Kind::kUncounted:
        FixAttributes();
        if (name_ == "select") {
          in_select_ = true;
          select_in_table_ = table_depth_ > 0;
        } else if (name_ == "input" || name_ == "keygen" ||
                   (select_in_table_ && IsTablePart(name_))) {
          in_select_ = false;
        }
        if (name_ == "table" && !in_select_) ++table_depth_;
        return end;
      case Kind::kSvg:
      case Kind::kMath:
        FixAttributes();
        if (!self_closing_) {
          Push(id, static_cast<uint8_t>(kForeign |
                                        (kind == Kind::kSvg ? kSvg : 0)));
        }
        return end;
      case Kind::kKeep:
        FixAttributes();
        Push(id, static_cast<uint8_t>(kSpecialFlag |
                                      (info.boundary ? kBoundary : 0)));
        return end;
      case Kind::kAnchor: {
        FixAttributes();
        // An <a> start tag runs the adoption agency for an open <a>: without
        // a special element above it, that pops up to it.
        const uint32_t a_id = id;
        constexpr size_t kWindow = 64;
        bool special_above = false;
        for (size_t k = stack_.size(), steps = 0; k > 0 && steps < kWindow;
             --k, ++steps) {
          const Entry& e = stack_[k - 1];
          if ((e.flags & kDropped) != 0) continue;
          if (e.id == a_id) {
            if (!special_above) PopTo(k - 1);
            break;
          }
          if ((e.flags & kBoundary) != 0) break;
          if ((e.flags & kSpecialFlag) != 0) special_above = true;
        }
        Push(id, 0);
        return end;
      }
      case Kind::kGroup:
        break;
    }
    // kGroup (and <noscript> parsed as markup).
    const uint8_t flags =
        static_cast<uint8_t>((info.special ? kSpecialFlag : 0) |
                             (info.gumbo_unknown ? kGumboUnknown : 0));
    if (kept_.size() >= limits_.max_depth) {
      Flatten(i, end, id, flags);
      return end;
    }
    FixAttributes();
    Push(id, flags);
    return end;
  }

  // The offset of the next "</name" followed by a tag-name terminator at or
  // after `from` (ASCII case-insensitive), or npos.
  size_t FindEndTag(size_t from, std::string_view name) const {
    const size_t n = s_.size();
    while (true) {
      size_t lt = s_.find("</", from);
      if (lt == kNpos) return kNpos;
      size_t k = 0;
      while (k < name.size() && lt + 2 + k < n &&
             ascii::ToLower(s_[lt + 2 + k]) == name[k]) {
        ++k;
      }
      const size_t t = lt + 2 + k;
      if (k == name.size() && t < n &&
          (IsTagSpace(s_[t]) || s_[t] == '/' || s_[t] == '>')) {
        return lt;
      }
      from = lt + 2;
    }
  }

  std::string_view s_;
  const PrescanLimits& limits_;
  const NoscriptDecisions& decisions_;
  Prescan* out_;
  Writer w_;
  std::string name_;
  size_t name_start_ = 0;
  size_t name_end_ = 0;
  bool name_has_nul_ = false;
  bool name_fix_pending_ = false;
  bool in_select_ = false;
  bool select_in_table_ = false;  // "in select in table"
  size_t table_depth_ = 0;        // open <table> elements (estimate)
  bool self_closing_ = false;
  std::vector<Attr> attrs_;
  std::string attr_name_;
  std::string escaped_;
  std::string repeated_;
  std::vector<Entry> stack_;
  std::vector<size_t> kept_;  // indices of stack_ entries not flattened
  size_t elements_ = 0;       // start tags handed on (not flattened)
};

}  // namespace

size_t Prescan::ToInput(size_t out_offset) const {
  if (segments.empty()) return out_offset;
  auto it = std::upper_bound(
      segments.begin(), segments.end(), out_offset,
      [](size_t o, const std::pair<size_t, size_t>& s) { return o < s.first; });
  if (it == segments.begin()) return out_offset;
  --it;
  return it->second + (out_offset - it->first);
}

void RunPrescan(std::string_view html, const PrescanLimits& limits,
                const NoscriptDecisions& decisions, std::string* storage,
                Prescan* out) {
  out->attributes_dropped = 0;
  out->elements_flattened = 0;
  out->elements_cut = false;
  out->noscript_in.clear();
  out->noscript_out.clear();
  out->segments.clear();
  Scanner scanner(html, limits, decisions, storage, out);
  scanner.Run();
}

bool RestoreC1(std::string* s) {
  size_t p = s->find("\xF4\x8F\xBE");
  if (p == std::string::npos) return false;
  std::string out;
  out.reserve(s->size());
  size_t run = 0;
  while (p != std::string::npos) {
    if (p + 3 < s->size()) {
      const auto last = static_cast<uint8_t>((*s)[p + 3]);
      if (last >= 0x80 && last <= 0x9F) {
        out.append(*s, run, p - run);
        out.push_back('\xC2');
        out.push_back(static_cast<char>(last));
        run = p + 4;
      }
    }
    p = s->find("\xF4\x8F\xBE", p + 3);
  }
  out.append(*s, run, std::string::npos);
  s->swap(out);
  return true;
}

}  // namespace crawld::parser::internal
