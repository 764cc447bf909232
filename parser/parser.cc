// Gumbo-based extraction; see parser.h.
#include "parser/parser.h"

#include <gumbo.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "base/ascii.h"
#include "parser/charset.h"
#include "parser/gumbo_arena.h"
#include "parser/prescan.h"

namespace crawld::parser {
namespace {

using ascii::EqualsIgnoreCase;
using ascii::ToLower;
constexpr auto IsAsciiSpace = ascii::IsWhatwgSpace;

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
    if (EqualsIgnoreCase(t, token)) found = true;
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

// What one walk of Gumbo's tree found, before resolution.
struct Walked {
  std::vector<RawLink> hyperlinks;  // HTML a/area href, tree order
  std::vector<RawLink> others;      // link rel, refresh, frames, SVG a
  std::string_view base_href;
  bool have_base = false;
  // <noscript> checks (see prescan.h): raw-text stand-ins Gumbo inserted
  // where the pre-pass put them, and <noscript> elements it still built
  // (input offsets of their start tags).
  std::vector<size_t> confirmed;
  std::vector<size_t> missed;
};

// The input offset of an element's start tag, or npos when the parser
// created it without one.
size_t StartTagOffset(const GumboElement& el, std::string_view html) {
  if (el.original_tag.length == 0 || el.original_tag.data == nullptr) {
    return std::string_view::npos;
  }
  return static_cast<size_t>(el.original_tag.data - html.data());
}

void CheckNoscript(const GumboNode* node, std::string_view html,
                   const internal::Prescan& pre, Walked* w) {
  const GumboElement& el = node->v.element;
  const size_t at = StartTagOffset(el, html);
  if (at == std::string_view::npos) return;
  if (el.tag == GUMBO_TAG_NOSCRIPT) {
    w->missed.push_back(pre.ToInput(at));
    return;
  }
  // A stand-in counts where a browser would have inserted the <noscript>:
  // not in a frameset, where <noframes> is honoured and <noscript> is not.
  auto it =
      std::lower_bound(pre.noscript_out.begin(), pre.noscript_out.end(), at);
  if (it == pre.noscript_out.end() || *it != at) return;
  const GumboNode* parent = node->parent;
  if (parent != nullptr && parent->type == GUMBO_NODE_ELEMENT &&
      (parent->v.element.tag == GUMBO_TAG_FRAMESET ||
       parent->v.element.tag == GUMBO_TAG_HTML)) {
    return;
  }
  w->confirmed.push_back(
      pre.noscript_in[static_cast<size_t>(it - pre.noscript_out.begin())]);
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
    case LinkKind::kSvgAnchor:
      return "svg-anchor";
    case LinkKind::kSitemap:
      return "sitemap";
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
  options_.max_elements =
      std::clamp<size_t>(options_.max_elements, 1'000, 10'000'000);
  options_.max_attributes_per_element =
      std::clamp<size_t>(options_.max_attributes_per_element, 16, 100'000);
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

namespace {

// One walk of Gumbo's tree: links, base, title, lang, meta robots, text.
// An explicit stack, not recursion: the tree can be thousands of levels
// deep, and a worker's stack is not the place to find out.
void Walk(const GumboOutput* out, std::string_view html,
          const internal::Prescan& pre, const Options& options,
          std::string_view robots_token, Page* page, Walked* w) {
  bool have_title = false;
  TextSink text(&page->text, options.max_text_bytes);
  if (out == nullptr) return;
  if (out->root != nullptr && out->root->type == GUMBO_NODE_ELEMENT) {
    page->lang.assign(Trim(AttrValue(out->root->v.element, "lang")));
  }
  const bool check_noscript = options.scripting;
  std::vector<Frame> stack;
  stack.reserve(256);
  stack.push_back({out->document, 0, false});
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
        if (options.extract_text && (flags & kHideText) == 0) {
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
            // Hyperlinks are HTML a/area only (what document.links lists);
            // an SVG <a href> or <a xlink:href> (Gumbo names both "href")
            // is another kind of outlink.
            bool has_href;
            std::string_view href = AttrValue(el, "href", &has_href);
            if (!has_href || !links_ok) break;
            const bool nofollow = HasRelToken(AttrValue(el, "rel"), "nofollow");
            if (html_ns) {
              w->hyperlinks.push_back(
                  {href,
                   el.tag == GUMBO_TAG_A ? LinkKind::kAnchor : LinkKind::kArea,
                   nofollow});
            } else if (el.tag_namespace == GUMBO_NAMESPACE_SVG) {
              w->others.push_back({href, LinkKind::kSvgAnchor, nofollow});
            }
            break;
          }
          case GUMBO_TAG_BASE:
            if (html_ns && !w->have_base && links_ok) {
              bool has_href;
              std::string_view href = AttrValue(el, "href", &has_href);
              if (has_href) {
                w->base_href = href;
                w->have_base = true;
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
            w->others.push_back({href, kind, HasRelToken(rel, "nofollow")});
            break;
          }
          // Meta robots and refresh are honoured in the body too: the parser
          // moves late <meta> tags there on pages with stray content.
          case GUMBO_TAG_META: {
            if (!html_ns || !links_ok) break;
            std::string_view content = AttrValue(el, "content");
            std::string_view name = Trim(AttrValue(el, "name"));
            if (EqualsIgnoreCase(name, "robots") ||
                (!robots_token.empty() &&
                 EqualsIgnoreCase(name, robots_token))) {
              ForEachToken(content, ", \t\n\f\r", [&](std::string_view t) {
                if (EqualsIgnoreCase(t, "noindex")) {
                  page->meta_noindex = true;
                } else if (EqualsIgnoreCase(t, "nofollow")) {
                  page->meta_nofollow = true;
                } else if (EqualsIgnoreCase(t, "none")) {
                  page->meta_noindex = page->meta_nofollow = true;
                }
              });
            }
            std::string_view target;
            if (EqualsIgnoreCase(Trim(AttrValue(el, "http-equiv")),
                                 "refresh") &&
                ParseRefresh(content, &target)) {
              w->others.push_back({target, LinkKind::kRefresh, false});
            }
            break;
          }
          case GUMBO_TAG_FRAME:
          case GUMBO_TAG_IFRAME:
            if (html_ns && links_ok && options.extract_frames) {
              bool has_src;
              std::string_view src = AttrValue(el, "src", &has_src);
              if (has_src) {
                w->others.push_back({src,
                                     el.tag == GUMBO_TAG_FRAME
                                         ? LinkKind::kFrame
                                         : LinkKind::kIframe,
                                     false});
              }
            }
            flags |= kHideText;  // fallback content, not the page's text
            break;
          case GUMBO_TAG_TITLE:
            if (html_ns && !have_title && links_ok) {
              have_title = true;
              TextSink title(&page->title, options.max_text_bytes);
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
          case GUMBO_TAG_NOSCRIPT:
          case GUMBO_TAG_NOFRAMES:
            if (html_ns && check_noscript) CheckNoscript(node, html, pre, w);
            flags |= kHideText;
            break;
          case GUMBO_TAG_SCRIPT:
          case GUMBO_TAG_STYLE:
          case GUMBO_TAG_NOEMBED:
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
}

// Resolves `raw` against `base` into *out (http(s) only, at most `cap`).
void Resolve(const std::vector<RawLink>& raw, const url::Url* base, size_t cap,
             Page* page, std::vector<Link>* out) {
  std::string restored;
  url::Url parsed;  // one allocation for all the page's links
  url::Url* const u = &parsed;
  for (const RawLink& r : raw) {
    const bool room = out->size() < cap;
    // Past the cap only the canonical URL is still looked for: the caller
    // needs it even on link-heavy pages.
    if (!room && (r.kind != LinkKind::kCanonical || !page->canonical.empty())) {
      ++page->cuts.links_dropped;
      continue;
    }
    std::string_view href = r.href;
    if (href.find("\xF4\x8F\xBE") != std::string_view::npos) {
      restored.assign(href);
      internal::RestoreC1(&restored);
      href = restored;
    }
    if (!url::ParseInto(href, base, u).ok()) {
      if (room) ++page->invalid_links;
      continue;
    }
    if (!HttpScheme(*u)) continue;
    if (r.kind == LinkKind::kCanonical && page->canonical.empty()) {
      page->canonical.assign(u->href());
    }
    if (room) out->push_back({std::string(u->href()), r.kind, r.nofollow});
  }
}

void ClearWalkOutput(Page* page) {
  page->title.clear();
  page->lang.clear();
  page->text.clear();
  page->meta_noindex = false;
  page->meta_nofollow = false;
}

}  // namespace

void Extractor::ExtractInto(std::string_view body,
                            std::string_view content_type,
                            const url::Url& document_url,
                            std::string_view robots_token, Page* page) const {
  page->base_url.clear();
  page->canonical.clear();
  page->links.clear();
  page->other_links.clear();
  page->charset.clear();
  page->truncated = false;
  page->invalid_links = 0;
  page->cuts = ParseCuts();
  ClearWalkOutput(page);

  // Holds the UTF-8 text only when the body needed converting or repair;
  // valid UTF-8 bodies are parsed in place.
  std::string storage;
  internal::Decoded decoded = internal::DecodeToUtf8(
      body, content_type, options_.max_parse_bytes, &storage);
  page->charset.assign(decoded.charset);
  if (decoded.truncated) {
    page->truncated = true;
    page->cuts.bytes_cut = true;
  }
  robots_token = Trim(robots_token);

  internal::PrescanLimits limits;
  limits.max_attributes = options_.max_attributes_per_element;
  limits.max_depth = options_.max_nesting_depth;
  limits.max_elements = options_.max_elements;
  limits.scripting = options_.scripting;
  internal::NoscriptDecisions decisions;
  internal::Prescan pre;
  std::string rewritten;
  Walked walked;
  // Where the pre-pass guessed wrong which <noscript> tags the tree builder
  // sees (inside <select>, foreign content, a frameset), Gumbo's tree says
  // so, and the pass runs again with its decisions forced. One more parse
  // settles nearly every page; a second is allowed on pages up to 1 MiB,
  // so that the worst case stays within about three small parses or two
  // large ones. A page still unsettled keeps the last parse (counted).
  const int max_rounds = decoded.html.size() <= (size_t{1} << 20) ? 3 : 2;
  ArenaRewind rewind(arena_.get());
  for (int round = 0;; ++round) {
    internal::RunPrescan(decoded.html, limits, decisions, &rewritten, &pre);
    GumboOptions gopts = kGumboDefaultOptions;
    // Gumbo copies the stack of open elements into every parse error it
    // records: quadratic memory on deep markup. We never read the errors.
    gopts.max_errors = 0;
    gopts.allocator = &internal::GumboArena::GumboAllocate;
    gopts.deallocator = &internal::GumboArena::GumboDeallocate;
    gopts.userdata = arena_.get();
    const GumboOutput* out =
        gumbo_parse_with_options(&gopts, pre.html.data(), pre.html.size());
    walked = Walked();
    ClearWalkOutput(page);
    Walk(out, pre.html, pre, options_, robots_token, page, &walked);
    if (!options_.scripting) break;
    std::sort(walked.confirmed.begin(), walked.confirmed.end());
    std::sort(walked.missed.begin(), walked.missed.end());
    if (walked.missed.empty() &&
        walked.confirmed.size() == pre.noscript_in.size()) {
      break;
    }
    if (round + 1 >= max_rounds) {
      page->cuts.noscript_unsettled = true;
      break;
    }
    ++page->cuts.noscript_reparses;
    decisions.forced = true;
    decisions.raw.clear();
    std::merge(walked.confirmed.begin(), walked.confirmed.end(),
               walked.missed.begin(), walked.missed.end(),
               std::back_inserter(decisions.raw));
    decisions.raw.erase(std::unique(decisions.raw.begin(), decisions.raw.end()),
                        decisions.raw.end());
    arena_->Reset();
  }
  if (pre.elements_cut) {
    page->cuts.elements_cut = true;
    page->truncated = true;
  }
  page->cuts.attributes_dropped = pre.attributes_dropped;
  page->cuts.elements_flattened = pre.elements_flattened;

  RepairUtf8(&page->text, options_.max_text_bytes);
  RepairUtf8(&page->title, options_.max_text_bytes);
  RepairUtf8(&page->lang, options_.max_text_bytes);

  // The frozen base URL (HTML, "set the frozen base URL"): the first base
  // element with an href, in tree order, wherever it is; ignored when its
  // URL does not parse or is data: or javascript:. It applies to every
  // link, including those before it in the tree.
  const url::Url* doc = document_url.href().empty() ? nullptr : &document_url;
  url::Url base_storage;
  const url::Url* base = doc;
  if (walked.have_base) {
    Result<url::Url> b = url::Parse(walked.base_href, doc);
    if (b.ok() && b->scheme() != "data" && b->scheme() != "javascript") {
      base_storage = std::move(b).value();
      base = &base_storage;
    }
  }
  if (base != nullptr) page->base_url.assign(base->href());

  page->links.reserve(std::min(walked.hyperlinks.size(), options_.max_links));
  Resolve(walked.hyperlinks, base, options_.max_links, page, &page->links);
  Resolve(walked.others, base, options_.max_links, page, &page->other_links);
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
          [&](std::string_view k) { return EqualsIgnoreCase(agent, k); });
      const bool is_agent =
          !valued && !agent.empty() &&
          agent.find_first_of(", \t") == std::string_view::npos;
      if (is_agent) {
        if (!EqualsIgnoreCase(agent, robots_token))
          continue;  // another agent's
        list = list.substr(colon + 1);
      }
    }
    ForEachToken(list, ", \t", [&](std::string_view t) {
      if (EqualsIgnoreCase(t, "noindex")) {
        d.noindex = true;
      } else if (EqualsIgnoreCase(t, "nofollow")) {
        d.nofollow = true;
      } else if (EqualsIgnoreCase(t, "none")) {
        d.noindex = d.nofollow = true;
      }
    });
  }
  return d;
}

}  // namespace crawld::parser
