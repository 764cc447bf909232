// Gumbo-based extraction; see parser.h.
#include "parser/parser.h"

#include <gumbo.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "parser/charset.h"
#include "parser/gumbo_arena.h"
#include "parser/nesting.h"

namespace crawld::parser {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

char ToLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Calls f(token) for each token of `list` split on any of `seps`.
template <typename F>
void ForEachToken(std::string_view list, std::string_view seps, F f) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && seps.find(list[i]) != std::string_view::npos) ++i;
    size_t j = i;
    while (j < list.size() && seps.find(list[j]) == std::string_view::npos) ++j;
    if (j > i) f(list.substr(i, j - i));
    i = j;
  }
}

constexpr std::string_view kSpaces = " \t\n\f\r";

// rel is an unordered set of space-separated, ASCII case-insensitive tokens.
bool HasRelToken(std::string_view rel, std::string_view token) {
  bool found = false;
  ForEachToken(rel, kSpaces, [&](std::string_view t) {
    if (EqualsNoCase(t, token)) found = true;
  });
  return found;
}

std::string_view AttrValue(const GumboElement& el, const char* name,
                           bool* present = nullptr) {
  const GumboAttribute* a = gumbo_get_attribute(&el.attributes, name);
  if (present != nullptr) *present = a != nullptr;
  return a != nullptr ? std::string_view(a->value) : std::string_view();
}

// The URL part of a meta refresh content value, per the HTML spec's
// "shared declarative refresh steps"; false when there is none (a plain
// reload) or the value is not a refresh.
bool ParseRefresh(std::string_view in, std::string_view* url) {
  size_t pos = 0;
  const size_t n = in.size();
  while (pos < n && IsAsciiSpace(in[pos])) ++pos;
  size_t digits = pos;
  while (pos < n && in[pos] >= '0' && in[pos] <= '9') ++pos;
  if (pos == digits && (pos >= n || in[pos] != '.')) return false;
  while (pos < n && ((in[pos] >= '0' && in[pos] <= '9') || in[pos] == '.')) {
    ++pos;
  }
  if (pos >= n) return false;
  if (in[pos] != ';' && in[pos] != ',' && !IsAsciiSpace(in[pos])) return false;
  while (pos < n && IsAsciiSpace(in[pos])) ++pos;
  if (pos < n && (in[pos] == ';' || in[pos] == ',')) ++pos;
  while (pos < n && IsAsciiSpace(in[pos])) ++pos;
  if (pos >= n) return false;
  // Optional "url" "=" prefix; a mismatch falls through to the quotes.
  size_t p = pos;
  if (p < n && ToLower(in[p]) == 'u') {
    ++p;
    if (p < n && ToLower(in[p]) == 'r') {
      ++p;
      if (p < n && ToLower(in[p]) == 'l') {
        ++p;
        while (p < n && IsAsciiSpace(in[p])) ++p;
        if (p < n && in[p] == '=') {
          ++p;
          while (p < n && IsAsciiSpace(in[p])) ++p;
          pos = p;
        }
      }
    }
  }
  char quote = 0;
  if (pos < n && (in[pos] == '"' || in[pos] == '\'')) quote = in[pos++];
  std::string_view rest = in.substr(pos);
  if (quote != 0) {
    size_t q = rest.find(quote);
    if (q != std::string_view::npos) rest = rest.substr(0, q);
  }
  *url = rest;
  return true;
}

bool IsTextBlock(GumboTag tag) {
  switch (tag) {
    case GUMBO_TAG_ADDRESS:
    case GUMBO_TAG_ARTICLE:
    case GUMBO_TAG_ASIDE:
    case GUMBO_TAG_BLOCKQUOTE:
    case GUMBO_TAG_BR:
    case GUMBO_TAG_BUTTON:
    case GUMBO_TAG_CAPTION:
    case GUMBO_TAG_DD:
    case GUMBO_TAG_DETAILS:
    case GUMBO_TAG_DIV:
    case GUMBO_TAG_DL:
    case GUMBO_TAG_DT:
    case GUMBO_TAG_FIELDSET:
    case GUMBO_TAG_FIGCAPTION:
    case GUMBO_TAG_FIGURE:
    case GUMBO_TAG_FOOTER:
    case GUMBO_TAG_FORM:
    case GUMBO_TAG_H1:
    case GUMBO_TAG_H2:
    case GUMBO_TAG_H3:
    case GUMBO_TAG_H4:
    case GUMBO_TAG_H5:
    case GUMBO_TAG_H6:
    case GUMBO_TAG_HEADER:
    case GUMBO_TAG_HR:
    case GUMBO_TAG_LI:
    case GUMBO_TAG_MAIN:
    case GUMBO_TAG_NAV:
    case GUMBO_TAG_OL:
    case GUMBO_TAG_OPTION:
    case GUMBO_TAG_P:
    case GUMBO_TAG_PRE:
    case GUMBO_TAG_SECTION:
    case GUMBO_TAG_SELECT:
    case GUMBO_TAG_SUMMARY:
    case GUMBO_TAG_TABLE:
    case GUMBO_TAG_TD:
    case GUMBO_TAG_TEXTAREA:
    case GUMBO_TAG_TH:
    case GUMBO_TAG_TR:
    case GUMBO_TAG_UL:
    case GUMBO_TAG_BODY:
    case GUMBO_TAG_IMG:
    case GUMBO_TAG_INPUT:
      return true;
    default:
      return false;
  }
}

// Appends text with runs of ASCII whitespace collapsed to one space, never
// leading, up to a byte cap (cut on a UTF-8 boundary).
class TextSink {
 public:
  TextSink(std::string* out, size_t cap) : out_(out), cap_(cap) {}

  void Break() { pending_space_ = !out_->empty(); }

  // One pass writing through a pointer: text nodes are most of a page, and
  // appending word by word cost as much as hashing the text afterwards.
  void Append(std::string_view s) {
    if (full_) return;
    const size_t start = out_->size();
    out_->resize(start + s.size() + 1);  // + a pending space
    char* const base = out_->data();
    char* put = base + start;
    for (char c : s) {
      if (IsAsciiSpace(c)) {
        pending_space_ = put != base;
        continue;
      }
      if (pending_space_) {
        *put++ = ' ';
        pending_space_ = false;
      }
      *put++ = c;
    }
    size_t n = static_cast<size_t>(put - base);
    if (n > cap_) {
      // Cut on a UTF-8 boundary; a space the cut left last goes too (the
      // only spaces in the text are the ones written here).
      full_ = true;
      n = internal::Utf8Boundary(std::string_view(base, n), cap_);
      if (n > 0 && base[n - 1] == ' ') --n;
    }
    out_->resize(n);
  }

 private:
  std::string* out_;
  size_t cap_;
  bool pending_space_ = false;
  bool full_ = false;
};

// Gumbo's output is not always well-formed UTF-8 even for UTF-8 input: a
// numeric character reference that overflows (&#x2Faaaa...;) comes out as
// stray bytes. Indexers expect UTF-8 text, so repair it here, once per field.
void RepairUtf8(std::string* s, size_t cap) {
  if (internal::IsValidUtf8(*s, false)) return;
  std::string fixed;
  fixed.reserve(s->size() + 8);
  internal::AppendSanitizedUtf8(*s, &fixed);
  fixed.resize(internal::Utf8Boundary(fixed, std::min(cap, fixed.size())));
  s->swap(fixed);
}

struct RawLink {
  std::string_view href;  // points into the Gumbo tree
  LinkKind kind;
  bool nofollow;
};

// Gumbo's memory for one parse never outlives the parse: the tree is not
// walked to be freed, the arena is rewound (see gumbo_arena.h).
class ArenaRewind {
 public:
  explicit ArenaRewind(internal::GumboArena* arena) : arena_(arena) {}
  ~ArenaRewind() { arena_->Reset(); }
  ArenaRewind(const ArenaRewind&) = delete;
  ArenaRewind& operator=(const ArenaRewind&) = delete;

 private:
  internal::GumboArena* arena_;
};

enum : uint8_t {
  kHideText = 1,    // inside script/style/template/noscript/title
  kInTemplate = 2,  // inside <template>: inert, no links
};

struct Frame {
  const GumboNode* node;
  uint8_t flags;
  bool exit;  // the closing boundary of a block element (text separator)
};

// Url::is_http() would do; spelled out so the filter does not depend on
// whether another component's helper counts ws/wss or ftp as fetchable.
bool HttpScheme(const url::Url& u) {
  std::string_view s = u.scheme();
  return s == "http" || s == "https";
}

}  // namespace

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kAnchor:
      return "anchor";
    case LinkKind::kArea:
      return "area";
    case LinkKind::kCanonical:
      return "canonical";
    case LinkKind::kAlternate:
      return "alternate";
    case LinkKind::kNext:
      return "next";
    case LinkKind::kRefresh:
      return "refresh";
    case LinkKind::kFrame:
      return "frame";
    case LinkKind::kIframe:
      return "iframe";
  }
  return "unknown";
}

Extractor::Extractor(const Options& options) : options_(options) {
  options_.max_parse_bytes =
      std::clamp<size_t>(options_.max_parse_bytes, 1 << 10, size_t{256} << 20);
  options_.max_text_bytes =
      std::min(options_.max_text_bytes, options_.max_parse_bytes);
  options_.max_links = std::clamp<size_t>(options_.max_links, 1, 10'000'000);
  options_.max_nesting_depth =
      std::clamp<size_t>(options_.max_nesting_depth, 16, 100'000);
  // Enough to keep the tree of an ordinary large page between parses; a
  // rare huge one gets its memory back when its parse ends, and past 64 MiB
  // its parse allocates as Gumbo would without the arena.
  arena_ =
      std::make_unique<internal::GumboArena>(size_t{8} << 20, size_t{64} << 20);
}

Extractor::~Extractor() = default;

Page Extractor::Extract(std::string_view body, std::string_view content_type,
                        const url::Url& document_url,
                        std::string_view robots_token) const {
  Page page;
  ExtractInto(body, content_type, document_url, robots_token, &page);
  return page;
}

void Extractor::ExtractInto(std::string_view body,
                            std::string_view content_type,
                            const url::Url& document_url,
                            std::string_view robots_token, Page* page) const {
  page->base_url.clear();
  page->title.clear();
  page->lang.clear();
  page->canonical.clear();
  page->meta_noindex = false;
  page->meta_nofollow = false;
  page->links.clear();
  page->text.clear();
  page->charset.clear();
  page->truncated = false;
  page->invalid_links = 0;

  // Holds the UTF-8 text only when the body needed converting or repair;
  // valid UTF-8 bodies are parsed in place.
  std::string storage;
  internal::Decoded decoded = internal::DecodeToUtf8(
      body, content_type, options_.max_parse_bytes, &storage);
  page->charset.assign(decoded.charset);
  page->truncated = decoded.truncated;
  std::string_view html = decoded.html;
  size_t cut = internal::NestingCutOffset(html, options_.max_nesting_depth);
  if (cut != std::string_view::npos) {
    html = html.substr(0, cut);
    page->truncated = true;
  }

  GumboOptions gopts = kGumboDefaultOptions;
  // Gumbo copies the stack of open elements into every parse error it
  // records: quadratic memory on deep markup. We never read the errors.
  gopts.max_errors = 0;
  gopts.allocator = &internal::GumboArena::GumboAllocate;
  gopts.deallocator = &internal::GumboArena::GumboDeallocate;
  gopts.userdata = arena_.get();
  ArenaRewind rewind(arena_.get());
  const GumboOutput* out =
      gumbo_parse_with_options(&gopts, html.data(), html.size());

  robots_token = Trim(robots_token);
  // Hrefs are collected first and resolved after the walk: the frozen base
  // URL is the first <base href> anywhere in the tree, so a link can only be
  // resolved once the whole tree has been seen.
  std::vector<RawLink> raw;
  std::string_view base_href;
  bool have_base = false;
  bool have_title = false;
  TextSink text(&page->text, options_.max_text_bytes);

  if (out != nullptr && out->root != nullptr &&
      out->root->type == GUMBO_NODE_ELEMENT) {
    page->lang.assign(Trim(AttrValue(out->root->v.element, "lang")));
  }

  // An explicit stack, not recursion: even after the nesting cut the tree
  // can be thousands of levels deep (uncounted elements nest inside counted
  // ones), and a worker's stack is not the place to find out.
  std::vector<Frame> stack;
  stack.reserve(256);
  if (out != nullptr) stack.push_back({out->document, 0, false});
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    if (f.exit) {
      text.Break();
      continue;
    }
    const GumboNode* node = f.node;
    const GumboVector* children = nullptr;
    uint8_t flags = f.flags;
    switch (node->type) {
      case GUMBO_NODE_DOCUMENT:
        children = &node->v.document.children;
        break;
      case GUMBO_NODE_TEXT:
      case GUMBO_NODE_CDATA:
      case GUMBO_NODE_WHITESPACE:
        if (options_.extract_text && (flags & kHideText) == 0) {
          text.Append(node->v.text.text);
        }
        break;
      case GUMBO_NODE_COMMENT:
        break;
      case GUMBO_NODE_ELEMENT:
      case GUMBO_NODE_TEMPLATE: {
        const GumboElement& el = node->v.element;
        children = &el.children;
        const bool html_ns = el.tag_namespace == GUMBO_NAMESPACE_HTML;
        const bool links_ok = (flags & kInTemplate) == 0;
        switch (el.tag) {
          case GUMBO_TAG_A:
          case GUMBO_TAG_AREA: {
            // SVG <a href> / <a xlink:href> are links too; Gumbo names both
            // attributes "href".
            bool has_href;
            std::string_view href = AttrValue(el, "href", &has_href);
            if (has_href && links_ok &&
                (html_ns || el.tag_namespace == GUMBO_NAMESPACE_SVG)) {
              raw.push_back(
                  {href,
                   el.tag == GUMBO_TAG_A ? LinkKind::kAnchor : LinkKind::kArea,
                   HasRelToken(AttrValue(el, "rel"), "nofollow")});
            }
            break;
          }
          case GUMBO_TAG_BASE:
            if (html_ns && !have_base && links_ok) {
              bool has_href;
              std::string_view href = AttrValue(el, "href", &has_href);
              if (has_href) {
                base_href = href;
                have_base = true;
              }
            }
            break;
          // <link> is honoured wherever Gumbo put it (body-placed links are
          // common on real pages); one Link per element, by priority.
          case GUMBO_TAG_LINK: {
            bool has_href;
            std::string_view href = AttrValue(el, "href", &has_href);
            if (!html_ns || !has_href || !links_ok) break;
            std::string_view rel = AttrValue(el, "rel");
            LinkKind kind;
            if (HasRelToken(rel, "canonical")) {
              kind = LinkKind::kCanonical;
            } else if (HasRelToken(rel, "next")) {
              kind = LinkKind::kNext;
            } else if (HasRelToken(rel, "alternate") &&
                       !HasRelToken(rel, "stylesheet")) {
              kind = LinkKind::kAlternate;
            } else {
              break;
            }
            raw.push_back({href, kind, HasRelToken(rel, "nofollow")});
            break;
          }
          // Meta robots and refresh are honoured in the body too: the parser
          // moves late <meta> tags there on pages with stray content.
          case GUMBO_TAG_META: {
            if (!html_ns || !links_ok) break;
            std::string_view content = AttrValue(el, "content");
            std::string_view name = Trim(AttrValue(el, "name"));
            if (EqualsNoCase(name, "robots") ||
                (!robots_token.empty() && EqualsNoCase(name, robots_token))) {
              ForEachToken(content, ", \t\n\f\r", [&](std::string_view t) {
                if (EqualsNoCase(t, "noindex")) {
                  page->meta_noindex = true;
                } else if (EqualsNoCase(t, "nofollow")) {
                  page->meta_nofollow = true;
                } else if (EqualsNoCase(t, "none")) {
                  page->meta_noindex = page->meta_nofollow = true;
                }
              });
            }
            std::string_view target;
            if (EqualsNoCase(Trim(AttrValue(el, "http-equiv")), "refresh") &&
                ParseRefresh(content, &target)) {
              raw.push_back({target, LinkKind::kRefresh, false});
            }
            break;
          }
          case GUMBO_TAG_FRAME:
          case GUMBO_TAG_IFRAME:
            if (html_ns && links_ok && options_.extract_frames) {
              bool has_src;
              std::string_view src = AttrValue(el, "src", &has_src);
              if (has_src) {
                raw.push_back({src,
                               el.tag == GUMBO_TAG_FRAME ? LinkKind::kFrame
                                                         : LinkKind::kIframe,
                               false});
              }
            }
            flags |= kHideText;  // fallback content, not the page's text
            break;
          case GUMBO_TAG_TITLE:
            if (html_ns && !have_title && links_ok) {
              have_title = true;
              TextSink title(&page->title, options_.max_text_bytes);
              for (unsigned i = 0; i < el.children.length; ++i) {
                const auto* c =
                    static_cast<const GumboNode*>(el.children.data[i]);
                if (c->type == GUMBO_NODE_TEXT ||
                    c->type == GUMBO_NODE_WHITESPACE) {
                  title.Append(c->v.text.text);
                }
              }
            }
            flags |= kHideText;
            break;
          case GUMBO_TAG_SCRIPT:
          case GUMBO_TAG_STYLE:
          case GUMBO_TAG_NOSCRIPT:
          case GUMBO_TAG_HEAD:
            flags |= kHideText;
            break;
          case GUMBO_TAG_TEMPLATE:
            flags |= kHideText | kInTemplate;
            break;
          default:
            break;
        }
        // Block boundaries separate words ("a</p><p>b" is "a b"); inline
        // ones do not ("a<b>b</b>" is "ab"), as in rendered text.
        if (html_ns && IsTextBlock(el.tag)) {
          text.Break();
          stack.push_back({node, flags, true});
        }
        break;
      }
    }
    if (children != nullptr) {
      for (unsigned i = children->length; i > 0; --i) {
        stack.push_back({static_cast<const GumboNode*>(children->data[i - 1]),
                         flags, false});
      }
    }
  }

  RepairUtf8(&page->text, options_.max_text_bytes);
  RepairUtf8(&page->title, options_.max_text_bytes);
  RepairUtf8(&page->lang, options_.max_text_bytes);

  // The base applies to every link, including those before it in the tree
  // (links are resolved after parsing, against the frozen base URL).
  const url::Url* doc = document_url.href().empty() ? nullptr : &document_url;
  url::Url base_storage;
  const url::Url* base = doc;
  if (have_base) {
    Result<url::Url> b = url::Parse(base_href, doc);
    if (b.ok()) {
      base_storage = std::move(b).value();
      base = &base_storage;
    }
  }
  if (base != nullptr) page->base_url.assign(base->href());

  page->links.reserve(std::min(raw.size(), options_.max_links));
  // Past max_links we keep scanning only for the canonical URL, which the
  // caller needs even on link-heavy pages.
  for (const RawLink& r : raw) {
    const bool room = page->links.size() < options_.max_links;
    if (!room && (r.kind != LinkKind::kCanonical || !page->canonical.empty())) {
      continue;
    }
    Result<url::Url> u = url::Parse(r.href, base);
    if (!u.ok()) {
      if (room) ++page->invalid_links;
      continue;
    }
    if (!HttpScheme(*u)) continue;
    if (r.kind == LinkKind::kCanonical && page->canonical.empty()) {
      page->canonical.assign(u->href());
    }
    if (room)
      page->links.push_back({std::string(u->href()), r.kind, r.nofollow});
  }
}

RobotsDirectives ParseXRobotsTag(const std::vector<std::string_view>& values,
                                 std::string_view robots_token) {
  // Directive names that take a value after a colon: a value starting with
  // one of them is not an agent prefix ("unavailable_after: 25 Jun 2030").
  static constexpr std::string_view kValued[] = {
      "unavailable_after", "max-snippet", "max-image-preview",
      "max-video-preview"};
  RobotsDirectives d;
  for (std::string_view v : values) {
    std::string_view list = Trim(v);
    const size_t colon = list.find(':');
    if (colon != std::string_view::npos) {
      std::string_view agent = Trim(list.substr(0, colon));
      const bool valued = std::any_of(
          std::begin(kValued), std::end(kValued),
          [&](std::string_view k) { return EqualsNoCase(agent, k); });
      const bool is_agent =
          !valued && !agent.empty() &&
          agent.find_first_of(", \t") == std::string_view::npos;
      if (is_agent) {
        if (!EqualsNoCase(agent, robots_token)) continue;  // another agent's
        list = list.substr(colon + 1);
      }
    }
    ForEachToken(list, ", \t", [&](std::string_view t) {
      if (EqualsNoCase(t, "noindex")) {
        d.noindex = true;
      } else if (EqualsNoCase(t, "nofollow")) {
        d.nofollow = true;
      } else if (EqualsNoCase(t, "none")) {
        d.noindex = d.nofollow = true;
      }
    });
  }
  return d;
}

}  // namespace crawld::parser
