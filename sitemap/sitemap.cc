// sitemap/sitemap.cc: Reader, a pipeline of three stages fed push-style:
//   bytes -> [gzip magic? inflate, capped] -> [sniff: XML or text]
//         -> [expat handlers | line splitter] -> entries (scope-checked).
// Each stage hands its output on at once, so nothing but the current text
// field, the current text line and one inflate buffer is ever held.
#include "sitemap/sitemap.h"

#include <expat.h>
#include <utf8.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "base/ascii.h"

namespace crawld::sitemap {
namespace {

constexpr size_t kInflateChunk = 64 * 1024;
// Bytes handed to expat per call: keeps a stop (cap, error) prompt.
constexpr size_t kXmlSlice = 1 << 20;
// Text of lastmod, changefreq, priority, pubDate, updated: no valid value
// is longer.
constexpr size_t kMaxFieldBytes = 256;
// Blanks around a text sitemap's line that may push it past max_loc_bytes
// before trimming.
constexpr size_t kLineSlack = 256;
// expat's separator between a namespace URI and a local name.
constexpr char kNsSep = '\x01';
constexpr std::string_view kAtomNs = "http://www.w3.org/2005/Atom";
constexpr std::string_view kXmlNs = "http://www.w3.org/XML/1998/namespace";
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

Options Sanitize(Options o) {
  o.max_urls = std::clamp<size_t>(o.max_urls, 1, 10'000'000);
  o.max_uncompressed_bytes =
      std::clamp<size_t>(o.max_uncompressed_bytes, 1024, size_t{1} << 30);
  o.max_loc_bytes = std::clamp<size_t>(o.max_loc_bytes, 16, 1 << 20);
  return o;
}

bool IsXmlSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

struct Name {
  std::string_view ns;     // empty: no namespace
  std::string_view local;  // the local name
};

Name SplitName(const XML_Char* name) {
  const std::string_view s(name);
  const size_t sep = s.find(kNsSep);
  if (sep == std::string_view::npos) return {{}, s};
  return {s.substr(0, sep), s.substr(sep + 1)};
}

// The value of the attribute `local` (in namespace `ns`) of a start tag.
const XML_Char* Attribute(const XML_Char** atts, std::string_view ns,
                          std::string_view local) {
  for (size_t i = 0; atts[i] != nullptr; i += 2) {
    const Name n = SplitName(atts[i]);
    if (n.ns == ns && n.local == local) return atts[i + 1];
  }
  return nullptr;
}

std::optional<ChangeFreq> ParseChangeFreq(std::string_view s) {
  static constexpr std::pair<std::string_view, ChangeFreq> kValues[] = {
      {"always", ChangeFreq::kAlways},   {"hourly", ChangeFreq::kHourly},
      {"daily", ChangeFreq::kDaily},     {"weekly", ChangeFreq::kWeekly},
      {"monthly", ChangeFreq::kMonthly}, {"yearly", ChangeFreq::kYearly},
      {"never", ChangeFreq::kNever}};
  for (const auto& [name, value] : kValues) {
    if (ascii::EqualsIgnoreCase(s, name)) return value;
  }
  return std::nullopt;
}

// Which element of an entry a text field is.
enum class Field {
  kNone,
  kLoc,        // urlset/url/loc, sitemapindex/sitemap/loc, rss item/link
  kLastmod,    // W3C datetime
  kPubDate,    // RFC 822 (else W3C)
  kUpdated,    // Atom updated (RFC 3339)
  kPublished,  // Atom published, used when there is no updated
  kChangefreq,
  kPriority,
};

// Collects the text of one field: leading blanks dropped, trailing blanks
// never kept, at most `limit` bytes; past it only `overflow` is set. Keeps
// the bytes in between as they are.
class FieldText {
 public:
  void Reset(size_t limit) {
    text_.clear();
    blanks_.clear();
    limit_ = limit;
    overflow_ = false;
    held_too_many_ = false;
  }
  void Append(std::string_view s) {
    for (char c : s) {
      if (overflow_) return;
      if (IsXmlSpace(c)) {
        if (text_.empty()) continue;
        // Held until a non-blank follows: trailing blanks never count.
        if (blanks_.size() <= limit_) {
          blanks_.push_back(c);
        } else {
          held_too_many_ = true;
        }
        continue;
      }
      if (!blanks_.empty() || held_too_many_) {
        if (held_too_many_ || text_.size() + blanks_.size() > limit_) {
          Overflow();
          return;
        }
        text_ += blanks_;
        blanks_.clear();
      }
      if (text_.size() + 1 > limit_) {
        Overflow();
        return;
      }
      text_.push_back(c);
    }
  }
  const std::string& text() const { return text_; }
  bool overflow() const { return overflow_; }

 private:
  void Overflow() {
    overflow_ = true;
    text_.clear();
    text_.shrink_to_fit();
    blanks_.clear();
  }
  std::string text_;
  std::string blanks_;
  size_t limit_ = 0;
  bool overflow_ = false;
  bool held_too_many_ = false;
};

// An entry being read: its fields as they were found.
struct Pending {
  bool has_loc = false;
  bool loc_too_long = false;
  std::string loc;
  // The base `loc` is resolved against (feeds); none: must be absolute.
  std::optional<url::Url> base;
  std::optional<int64_t> lastmod;
  std::optional<int64_t> published;  // Atom, when there is no updated
  bool bad_lastmod = false;
  ChangeFreq changefreq = ChangeFreq::kUnset;
  bool bad_changefreq = false;
  double priority = kDefaultPriority;
  bool bad_priority = false;
  bool clamped_priority = false;

  void Clear() { *this = Pending(); }
};

}  // namespace

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kUrlset:
      return "urlset";
    case Format::kSitemapIndex:
      return "sitemapindex";
    case Format::kRss:
      return "rss";
    case Format::kAtom:
      return "atom";
    case Format::kText:
      return "text";
    case Format::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view ChangeFreqName(ChangeFreq freq) {
  switch (freq) {
    case ChangeFreq::kAlways:
      return "always";
    case ChangeFreq::kHourly:
      return "hourly";
    case ChangeFreq::kDaily:
      return "daily";
    case ChangeFreq::kWeekly:
      return "weekly";
    case ChangeFreq::kMonthly:
      return "monthly";
    case ChangeFreq::kYearly:
      return "yearly";
    case ChangeFreq::kNever:
      return "never";
    case ChangeFreq::kUnset:
      break;
  }
  return "unset";
}

std::string_view EntryKindName(EntryKind kind) {
  return kind == EntryKind::kSitemap ? "sitemap" : "page";
}

struct Reader::Impl {
  enum class Stage {
    kMagic,    // fewer than 2 bytes seen: gzip or not is still open
    kSniff,    // blanks (and a BOM) so far: XML or text is still open
    kXml,      // expat reads
    kText,     // lines are read
    kEpilog,   // the root element closed: the rest is counted, not parsed
    kStopped,  // an error, the cap, the end of the gzip data, or Finish
  };

  Impl(const url::Url& url, const std::vector<std::string>& hosts,
       const Options& o)
      : options(Sanitize(o)), sitemap_url(url) {
    const std::string_view path = sitemap_url.path();
    scope_dir = std::string(path.substr(0, path.rfind('/') + 1));
    for (const std::string& h : hosts) {
      const std::string_view trimmed = ascii::TrimWhatwgSpace(h);
      if (trimmed.empty()) continue;
      // WHATWG host parsing (lower case, IDN to punycode) as for the URLs
      // compared with it.
      Result<url::Url> u = url::Parse("http://" + std::string(trimmed) + "/");
      cross_hosts.push_back(u.ok() ? std::string(u->host())
                                   : ascii::ToLower(trimmed));
    }
  }

  ~Impl() {
    if (xml != nullptr) XML_ParserFree(xml);
    if (inflating) inflateEnd(&zs);
  }

  // ---- errors ----

  // Keeps the first error; stops everything.
  void Fail(Status status, uint64_t line = 0, uint64_t column = 0) {
    if (report.error.ok()) {
      report.error = std::move(status);
      report.error_line = line;
      report.error_column = column;
    }
    stage = Stage::kStopped;
    if (xml != nullptr && in_handler) XML_StopParser(xml, XML_FALSE);
  }

  // The 1-based position in the inflated document of expat's current
  // event, counting the blanks the sniffer skipped before expat.
  std::pair<uint64_t, uint64_t> XmlPosition() const {
    const uint64_t line = XML_GetCurrentLineNumber(xml);
    uint64_t column = XML_GetCurrentColumnNumber(xml) + 1;
    if (line == 1) column += skipped_columns;
    return {line + skipped_lines, column};
  }

  void FailXml(std::string_view what, Status::Code code) {
    const auto [line, column] = XmlPosition();
    std::string msg = "line " + std::to_string(line) + ", column " +
                      std::to_string(column) + ": " + std::string(what);
    Fail(code == Status::Code::kInvalidArgument
             ? Status::InvalidArgument(std::move(msg))
             : Status::Corruption(std::move(msg)),
         line, column);
  }

  // ---- stage 1: gzip ----

  void Input(std::string_view data) {
    if (stage == Stage::kStopped) return;
    if (stage == Stage::kMagic) {
      if (head.empty() && data.size() >= 2) {
        Decide(data);
        return;
      }
      const size_t take = std::min(data.size(), 2 - head.size());
      head.append(data.substr(0, take));
      data.remove_prefix(take);
      if (head.size() < 2) return;
      std::string first = std::move(head);
      head.clear();
      Decide(first);
      if (!data.empty()) Input(data);
      return;
    }
    if (inflating) {
      Inflate(data);
    } else {
      Decoded(data);
    }
  }

  void Decide(std::string_view data) {
    if (static_cast<unsigned char>(data[0]) == 0x1f &&
        static_cast<unsigned char>(data[1]) == 0x8b) {
      // 16 + MAX_WBITS: a gzip wrapper, checked (header, CRC-32, size).
      if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        Fail(Status::Internal("gzip: inflateInit2 failed"));
        return;
      }
      inflating = true;
      report.gzip = true;
      out.reset(new char[kInflateChunk]);
    }
    stage = Stage::kSniff;
    Input(data);
  }

  void Inflate(std::string_view data) {
    // Once trailing garbage began, the rest is garbage too, whatever bytes
    // a later read starts with (sitemap_fuzz: a later piece starting with
    // the gzip magic was read as a member the whole buffer never reads).
    if (gzip_trailing) return;
    while (!data.empty() && stage != Stage::kStopped) {
      if (member_ended) {
        // RFC 1952 2.2: a gzip file is a series of members. Anything else
        // after a member is trailing garbage, which gzip(1) ignores too.
        if (static_cast<unsigned char>(data[0]) != 0x1f ||
            (data.size() > 1 && static_cast<unsigned char>(data[1]) != 0x8b)) {
          gzip_trailing = true;
          return;
        }
        inflateReset(&zs);
        member_ended = false;
      }
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      const size_t in_now = std::min<size_t>(data.size(), 1u << 30);
      zs.avail_in = static_cast<uInt>(in_now);
      int ret = Z_OK;
      do {
        zs.next_out = reinterpret_cast<Bytef*>(out.get());
        zs.avail_out = kInflateChunk;
        ret = inflate(&zs, Z_NO_FLUSH);
        const size_t produced = kInflateChunk - zs.avail_out;
        if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_MEM_ERROR ||
            ret == Z_STREAM_ERROR) {
          if (produced > 0) Decoded({out.get(), produced});
          Fail(Status::Corruption(std::string("gzip: ") +
                                  (zs.msg != nullptr ? zs.msg : "bad data")));
          return;
        }
        if (produced > 0) Decoded({out.get(), produced});
        if (stage == Stage::kStopped) return;
        if (ret == Z_STREAM_END) break;
        // Z_BUF_ERROR: no progress possible, i.e. all input consumed.
      } while (zs.avail_out == 0 || (zs.avail_in > 0 && ret == Z_OK));
      data.remove_prefix(in_now - zs.avail_in);
      if (ret == Z_STREAM_END) member_ended = true;
    }
  }

  // ---- stage 2: the cap, then sniffing ----

  void Decoded(std::string_view data) {
    if (stage == Stage::kStopped || gzip_trailing) return;
    const uint64_t room = options.max_uncompressed_bytes -
                          std::min<uint64_t>(report.counters.bytes_out,
                                             options.max_uncompressed_bytes);
    const bool cut = data.size() > room;
    if (cut) data = data.substr(0, room);
    report.counters.bytes_out += data.size();
    Sniff(data);
    if (cut && stage != Stage::kStopped) {
      report.truncated = true;
      Fail(Status::ResourceExhausted(
          "the uncompressed size cap of " +
          std::to_string(options.max_uncompressed_bytes) +
          " bytes was reached; the rest was not read"));
    }
  }

  void Sniff(std::string_view data) {
    while (stage == Stage::kSniff && !data.empty()) {
      const char c = data.front();
      const auto u = static_cast<unsigned char>(c);
      if (sniffed == bom_seen && bom_seen < 3 && c == kUtf8Bom[bom_seen]) {
        ++bom_seen;
        ++sniffed;
        ++skipped_columns;
        data.remove_prefix(1);
        continue;
      }
      if (bom_seen > 0 && bom_seen < 3) {
        // Half a BOM: not XML as we read it, and not text either (a URL
        // cannot start with these bytes): text, whose first line fails.
        StartText();
        Text(kUtf8Bom.substr(0, bom_seen));
        break;
      }
      if (IsXmlSpace(c)) {
        // A whole run at once: a bomb of blanks is all sniffing.
        const size_t n =
            std::min(data.find_first_not_of(" \t\r\n"), data.size());
        const std::string_view run = data.substr(0, n);
        const size_t last_nl = run.rfind('\n');
        if (last_nl == std::string_view::npos) {
          skipped_columns += n;
        } else {
          skipped_lines += std::count(run.begin(), run.end(), '\n');
          skipped_columns = n - last_nl - 1;
        }
        sniffed += n;
        data.remove_prefix(n);
        continue;
      }
      // '<', or UTF-16 (a BOM FE FF / FF FE, or a NUL byte of "<"): XML.
      if (c == '<' || (sniffed == 0 && (u == 0xFE || u == 0xFF || u == 0))) {
        StartXml();
      } else {
        StartText();
      }
    }
    if (data.empty()) return;
    if (stage == Stage::kXml) {
      Xml(data, /*final=*/false);
    } else if (stage == Stage::kText) {
      Text(data);
    }
  }

  // ---- stage 3a: XML ----

  void StartXml() {
    stage = Stage::kXml;
    xml = XML_ParserCreateNS(nullptr, kNsSep);
    if (xml == nullptr) {
      Fail(Status::Internal("expat: out of memory"));
      return;
    }
    XML_SetUserData(xml, this);
    XML_SetElementHandler(xml, &Impl::OnStart, &Impl::OnEnd);
    XML_SetCharacterDataHandler(xml, &Impl::OnText);
    // Entity expansion attacks (billion laughs, quadratic blowup) need
    // entity declarations; sitemaps need none. The first declaration
    // stops the reading before any entity is defined, let alone expanded.
    XML_SetEntityDeclHandler(xml, &Impl::OnEntityDecl);
    // Never read the external DTD subset or parameter entities (expat does
    // no I/O by itself, and with no external entity handler installed it
    // never asks for any: XXE has nothing to reach).
    XML_SetParamEntityParsing(xml, XML_PARAM_ENTITY_PARSING_NEVER);
  }

  void Xml(std::string_view data, bool final) {
    do {
      const std::string_view slice = data.substr(0, kXmlSlice);
      data.remove_prefix(slice.size());
      in_handler = true;
      const XML_Status st =
          XML_Parse(xml, slice.data(), static_cast<int>(slice.size()),
                    final && data.empty() ? XML_TRUE : XML_FALSE);
      in_handler = false;
      // A handler failed, or the root closed.
      if (stage == Stage::kStopped || stage == Stage::kEpilog) return;
      if (st == XML_STATUS_ERROR) {
        FailXml(XML_ErrorString(XML_GetErrorCode(xml)),
                Status::Code::kCorruption);
        return;
      }
    } while (!data.empty());
  }

  static void XMLCALL OnStart(void* self, const XML_Char* name,
                              const XML_Char** atts) {
    static_cast<Impl*>(self)->Start(SplitName(name), atts);
  }
  static void XMLCALL OnEnd(void* self, const XML_Char* /*name*/) {
    static_cast<Impl*>(self)->End();
  }
  static void XMLCALL OnText(void* self, const XML_Char* s, int len) {
    Impl* impl = static_cast<Impl*>(self);
    if (impl->field != Field::kNone && impl->depth == impl->field_depth) {
      impl->field_text.Append({s, static_cast<size_t>(len)});
    }
  }
  static void XMLCALL OnEntityDecl(
      void* self, const XML_Char* entity_name, int /*is_parameter_entity*/,
      const XML_Char* /*value*/, int /*value_length*/, const XML_Char* /*base*/,
      const XML_Char* /*system_id*/, const XML_Char* /*public_id*/,
      const XML_Char* /*notation_name*/) {
    static_cast<Impl*>(self)->FailXml(
        "entity declaration <!ENTITY " + std::string(entity_name) +
            "> refused (sitemaps need none; entity expansion is not "
            "allowed)",
        Status::Code::kInvalidArgument);
  }

  void Start(Name n, const XML_Char** atts) {
    ++depth;
    if (depth == 1) {
      Root(n, atts);
      return;
    }
    if (n.ns != root_ns) return;  // extension elements are not ours
    const Format f = report.format;
    if (!in_entry) {
      const bool entry_element =
          (f == Format::kUrlset && depth == 2 && n.local == "url") ||
          (f == Format::kSitemapIndex && depth == 2 && n.local == "sitemap") ||
          (f == Format::kRss && depth == 3 && channel_open &&
           n.local == "item") ||
          (f == Format::kAtom && depth == 2 && n.local == "entry");
      if (f == Format::kRss && depth == 2 && n.local == "channel") {
        channel_open = true;
      }
      if (entry_element) {
        in_entry = true;
        entry_depth = depth;
        pending.Clear();
        if (f == Format::kAtom) entry_base = Rebase(feed_base, atts);
      }
      return;
    }
    if (depth != entry_depth + 1 || field != Field::kNone) return;
    Field which = Field::kNone;
    switch (f) {
      case Format::kUrlset:
        if (n.local == "changefreq") which = Field::kChangefreq;
        if (n.local == "priority") which = Field::kPriority;
        [[fallthrough]];
      case Format::kSitemapIndex:
        if (n.local == "loc") which = Field::kLoc;
        if (n.local == "lastmod") which = Field::kLastmod;
        break;
      case Format::kRss:
        if (n.local == "link") which = Field::kLoc;
        if (n.local == "pubDate") which = Field::kPubDate;
        break;
      case Format::kAtom:
        if (n.local == "updated") which = Field::kUpdated;
        if (n.local == "published") which = Field::kPublished;
        if (n.local == "link") AtomLink(atts);
        break;
      default:
        break;
    }
    if (which == Field::kNone) return;
    field = which;
    field_depth = depth;
    field_text.Reset(which == Field::kLoc ? options.max_loc_bytes
                                          : kMaxFieldBytes);
  }

  void Root(Name n, const XML_Char** atts) {
    root_ns = std::string(n.ns);
    if (n.local == "urlset") {
      report.format = Format::kUrlset;
    } else if (n.local == "sitemapindex") {
      report.format = Format::kSitemapIndex;
    } else if (n.local == "rss" && n.ns.empty()) {
      report.format = Format::kRss;
    } else if (n.local == "feed" && n.ns == kAtomNs) {
      report.format = Format::kAtom;
      feed_base = Rebase(sitemap_url, atts);
    } else {
      FailXml("root element <" + std::string(n.local) +
                  "> is not urlset, sitemapindex, rss or feed",
              Status::Code::kInvalidArgument);
    }
  }

  // `base` with the element's xml:base applied (RFC 4287 uses XML Base);
  // `base` itself when there is none or it does not resolve.
  static url::Url Rebase(const url::Url& base, const XML_Char** atts) {
    const XML_Char* attr = Attribute(atts, kXmlNs, "base");
    if (attr == nullptr) return base;
    Result<url::Url> u = url::Parse(ascii::TrimWhatwgSpace(attr), &base);
    return u.ok() ? std::move(u).value() : base;
  }

  // RFC 4287 4.2.7.2: a link without rel is an alternate link. rel values
  // may also be written as IRIs under the IANA registry.
  void AtomLink(const XML_Char** atts) {
    if (pending.has_loc || pending.loc_too_long) return;  // first one wins
    const XML_Char* rel = Attribute(atts, {}, "rel");
    if (rel != nullptr) {
      const std::string_view r = ascii::TrimWhatwgSpace(rel);
      if (r != "alternate" &&
          r != "http://www.iana.org/assignments/relation/alternate") {
        return;
      }
    }
    const XML_Char* href = Attribute(atts, {}, "href");
    if (href == nullptr) return;
    FieldText t;
    t.Reset(options.max_loc_bytes);
    t.Append(href);
    if (t.overflow()) {
      pending.loc_too_long = true;
      return;
    }
    if (t.text().empty()) return;
    pending.has_loc = true;
    pending.loc = t.text();
    pending.base = Rebase(entry_base, atts);
  }

  void End() {
    if (field != Field::kNone && depth == field_depth) EndField();
    if (in_entry && depth == entry_depth) {
      in_entry = false;
      EndEntry();
    }
    if (report.format == Format::kRss && depth == 2) channel_open = false;
    --depth;
    if (depth == 0 && stage == Stage::kXml) {
      // Every entry is inside the root, so the reading ends here. What
      // follows it is not parsed: expat's verdict on junk after the root
      // (its message and column) depends on where the network split the
      // bytes, and a report must not. The bytes are still counted.
      stage = Stage::kEpilog;
      XML_StopParser(xml, XML_FALSE);
    }
  }

  void EndField() {
    const Field f = field;
    field = Field::kNone;
    const std::string& text = field_text.text();
    switch (f) {
      case Field::kLoc:
        if (pending.has_loc || pending.loc_too_long) break;  // first wins
        if (field_text.overflow()) {
          pending.loc_too_long = true;
        } else if (!text.empty()) {
          pending.has_loc = true;
          pending.loc = text;
          if (report.format == Format::kRss) pending.base = sitemap_url;
        }
        break;
      case Field::kLastmod:
      case Field::kUpdated:
      case Field::kPubDate: {
        if (text.empty() && !field_text.overflow()) break;
        std::optional<int64_t> t;
        if (f == Field::kPubDate) t = ParseRfc822Date(text);
        if (!t) t = ParseW3cDatetime(text);
        if (t) {
          pending.lastmod = t;
        } else {
          pending.bad_lastmod = true;
        }
        break;
      }
      case Field::kPublished:
        pending.published = ParseW3cDatetime(text);
        break;
      case Field::kChangefreq: {
        if (text.empty() && !field_text.overflow()) break;
        const std::optional<ChangeFreq> v = ParseChangeFreq(text);
        pending.changefreq = v.value_or(ChangeFreq::kUnset);
        pending.bad_changefreq = !v.has_value();
        break;
      }
      case Field::kPriority: {
        if (text.empty() && !field_text.overflow()) break;
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || p != end || !std::isfinite(v) ||
            text.front() == '+') {
          pending.bad_priority = true;
          break;
        }
        pending.clamped_priority = v < 0.0 || v > 1.0;
        pending.priority = std::clamp(v, 0.0, 1.0);
        break;
      }
      case Field::kNone:
        break;
    }
  }

  void EndEntry() {
    if (report.format == Format::kAtom && !pending.lastmod &&
        !pending.bad_lastmod) {
      pending.lastmod = pending.published;
    }
    Entry e;
    e.kind = report.format == Format::kSitemapIndex ? EntryKind::kSitemap
                                                    : EntryKind::kPage;
    if (!Admit(pending.has_loc, pending.loc_too_long, /*bad_utf8=*/false,
               pending.loc, pending.base ? &*pending.base : nullptr, &e.url)) {
      return;
    }
    Counters& c = report.counters;
    e.lastmod = pending.lastmod;
    c.bad_lastmod += pending.bad_lastmod ? 1 : 0;
    if (report.format == Format::kUrlset) {
      e.changefreq = pending.changefreq;
      e.priority = pending.priority;
      c.bad_changefreq += pending.bad_changefreq ? 1 : 0;
      c.bad_priority += pending.bad_priority ? 1 : 0;
      c.clamped_priority += pending.clamped_priority ? 1 : 0;
    }
    ready.push_back(std::move(e));
  }

  // Counts one entry, and returns true with *href set when it is
  // admitted. The checks in order: the limit, the loc's length, its
  // presence, its encoding (text files), the URL, the scheme, the scope.
  bool Admit(bool has_loc, bool too_long, bool bad_utf8, std::string_view loc,
             const url::Url* base, std::string* href) {
    Counters& c = report.counters;
    ++c.entries;
    if (c.entries > options.max_urls) {
      ++c.over_limit;
      return false;
    }
    if (too_long) {
      ++c.too_long;
      return false;
    }
    if (!has_loc) {
      ++c.no_loc;
      return false;
    }
    Result<url::Url> u =
        bad_utf8 ? Result<url::Url>(Status::InvalidArgument("not UTF-8"))
                 : url::Parse(loc, base);
    if (!u.ok()) {
      ++c.invalid_url;
      return false;
    }
    if (!u->is_http()) {
      ++c.not_http;
      return false;
    }
    if (options.enforce_scope && !InScope(*u)) return false;
    ++c.admitted;
    *href = std::string(u->href());
    return true;
  }

  // sitemaps.org "Sitemap file location" and "Sitemaps & Cross Submits".
  bool InScope(const url::Url& u) {
    if (std::find(cross_hosts.begin(), cross_hosts.end(), u.host()) !=
        cross_hosts.end()) {
      return true;
    }
    if (u.scheme() != sitemap_url.scheme() || u.host() != sitemap_url.host() ||
        u.port() != sitemap_url.port()) {
      ++report.counters.other_origin;
      return false;
    }
    if (!u.path().starts_with(scope_dir)) {
      ++report.counters.outside_path;
      return false;
    }
    return true;
  }

  // ---- stage 3b: text ----

  void StartText() {
    stage = Stage::kText;
    report.format = Format::kText;
  }

  void Text(std::string_view data) {
    while (!data.empty()) {
      const size_t nl = data.find('\n');
      const std::string_view part = data.substr(0, nl);
      if (!line_overflow) {
        if (line.size() + part.size() > options.max_loc_bytes + kLineSlack) {
          line_overflow = true;
          line.clear();
        } else {
          line.append(part);
        }
      }
      if (nl == std::string_view::npos) return;
      EndLine();
      data.remove_prefix(nl + 1);
    }
  }

  void EndLine() {
    const std::string_view t = ascii::TrimWhatwgSpace(line);
    if (line_overflow || !t.empty()) {
      const bool too_long = line_overflow || t.size() > options.max_loc_bytes;
      // The protocol: "The text file must use UTF-8 encoding".
      const bool bad_utf8 = !too_long && !utf8::is_valid(t.begin(), t.end());
      std::string href;
      if (Admit(true, too_long, bad_utf8, t, nullptr, &href)) {
        Entry e;
        e.url = std::move(href);
        ready.push_back(std::move(e));
      }
    }
    line.clear();
    line_overflow = false;
  }

  // ---- the end ----

  void Finish() {
    if (finished) return;
    finished = true;
    if (stage == Stage::kMagic && !head.empty()) {
      // One byte: too short for gzip.
      std::string first = std::move(head);
      head.clear();
      stage = Stage::kSniff;
      Decoded(first);
    }
    if (stage == Stage::kStopped) return;
    if (inflating && !member_ended && !gzip_trailing) {
      Fail(Status::Corruption("gzip: unexpected end of data"));
      return;
    }
    if (stage == Stage::kXml) {
      Xml({}, /*final=*/true);
    } else if (stage == Stage::kText) {
      EndLine();
    }
    stage = Stage::kStopped;
  }

  Options options;
  url::Url sitemap_url;
  std::string scope_dir;  // the sitemap's path up to its last '/'
  std::vector<std::string> cross_hosts;
  Report report;
  std::vector<Entry> ready;  // admitted, not yet taken
  Stage stage = Stage::kMagic;
  bool finished = false;
  std::string head;  // the first byte, while the second is awaited

  // gzip
  bool inflating = false;
  z_stream zs{};
  std::unique_ptr<char[]> out;
  bool member_ended = false;   // the last member ended at its trailer
  bool gzip_trailing = false;  // trailing garbage: ignored

  // sniffing
  uint64_t sniffed = 0;          // bytes looked at before deciding
  size_t bom_seen = 0;           // bytes of a UTF-8 BOM skipped
  uint64_t skipped_lines = 0;    // newlines skipped before the XML
  uint64_t skipped_columns = 0;  // bytes skipped on the XML's first line

  // XML
  XML_Parser xml = nullptr;
  bool in_handler = false;  // inside XML_Parse: stop with XML_StopParser
  std::string root_ns;
  int depth = 0;              // of the element being read; the root is 1
  bool channel_open = false;  // RSS: inside rss/channel
  bool in_entry = false;
  int entry_depth = 0;
  Field field = Field::kNone;
  int field_depth = 0;
  FieldText field_text;
  Pending pending;
  url::Url feed_base;   // Atom: the feed's xml:base applied
  url::Url entry_base;  // Atom: the entry's xml:base applied

  // text
  std::string line;
  bool line_overflow = false;
};

Reader::Reader(const url::Url& sitemap_url,
               const std::vector<std::string>& cross_submitted_hosts,
               const Options& options)
    : impl_(std::make_unique<Impl>(sitemap_url, cross_submitted_hosts,
                                   options)) {}

Reader::~Reader() = default;

bool Reader::Feed(std::string_view bytes) {
  impl_->report.counters.bytes_in += bytes.size();
  if (impl_->finished) return false;
  impl_->Input(bytes);
  return impl_->stage != Impl::Stage::kStopped && !impl_->gzip_trailing;
}

const Report& Reader::Finish() {
  impl_->Finish();
  return impl_->report;
}

size_t Reader::TakeEntries(std::vector<Entry>* out) {
  const size_t n = impl_->ready.size();
  out->insert(out->end(), std::make_move_iterator(impl_->ready.begin()),
              std::make_move_iterator(impl_->ready.end()));
  impl_->ready.clear();
  return n;
}

const Report& Reader::report() const { return impl_->report; }

const Options& Reader::options() const { return impl_->options; }

Contents Read(std::string_view bytes, const url::Url& sitemap_url,
              const std::vector<std::string>& cross_submitted_hosts,
              const Options& options) {
  Reader reader(sitemap_url, cross_submitted_hosts, options);
  reader.Feed(bytes);
  Contents c;
  c.report = reader.Finish();
  reader.TakeEntries(&c.entries);
  return c;
}

}  // namespace crawld::sitemap
