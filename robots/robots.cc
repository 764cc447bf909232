#include "robots/robots.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "base/ascii.h"
#include "robots/pattern.h"

namespace crawld::robots {

struct Rules::Rule {
  internal::Pattern pattern;
  bool allow = false;
  int line = 0;
  bool from_override = false;
  std::string text;    // "Disallow: /x", for Verdict
  std::string origin;  // AddDisallow's origin, e.g. "overrides.conf:3"
};

namespace {

constexpr size_t kMinMaxBytes = 500 * 1024;  // RFC 9309 2.5
constexpr size_t kMaxMaxBytes = 64 * 1024 * 1024;
constexpr size_t kMinLineBytes = 256;
constexpr size_t kMaxDiagnostics = 10000;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

Options Sanitize(const Options& in) {
  Options o = in;
  o.max_bytes = std::clamp(o.max_bytes, kMinMaxBytes, kMaxMaxBytes);
  o.max_line_bytes = std::clamp(o.max_line_bytes, kMinLineBytes, o.max_bytes);
  o.max_diagnostics = std::min(o.max_diagnostics, kMaxDiagnostics);
  return o;
}

enum class Key { kUserAgent, kAllow, kDisallow, kSitemap, kCrawlDelay, kOther };

// Whitespace as Google strips it around keys and values (absl's ASCII
// whitespace; CR and LF cannot occur inside a line).
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsAgentChar(char c) { return ascii::IsAlpha(c) || c == '_' || c == '-'; }

// The product token a user-agent value names: its leading run of
// [a-zA-Z_-] ("Googlebot/2.1" -> "Googlebot"), as Google's robotstxt does.
std::string_view ExtractAgent(std::string_view value) {
  size_t n = 0;
  while (n < value.size() && IsAgentChar(value[n])) ++n;
  return value.substr(0, n);
}

// What a key means, and whether it was read by Google's leniency rather than
// spelled as the RFC does.
struct KeyKind {
  Key key = Key::kOther;
  bool lenient = false;
};

// Google's robots.cc GetKeyType with kAllowFrequentTypos: prefixes, tried in
// this order. Sitemap and Crawl-delay, which decide no verdict, are matched
// exactly so that "Sitemap https://x" (key "Sitemap https") is not a sitemap.
KeyKind ClassifyLenient(std::string_view key) {
  auto starts = [key](std::initializer_list<std::string_view> prefixes) {
    for (std::string_view p : prefixes) {
      if (ascii::StartsWithIgnoreCase(key, p)) return true;
    }
    return false;
  };
  KeyKind k;
  if (starts({"user-agent", "useragent", "user agent"})) {
    k.key = Key::kUserAgent;
    k.lenient = !ascii::EqualsIgnoreCase(key, "user-agent");
  } else if (starts({"allow"})) {
    k.key = Key::kAllow;
    k.lenient = !ascii::EqualsIgnoreCase(key, "allow");
  } else if (starts({"disallow", "dissallow", "dissalow", "disalow", "diasllow",
                     "disallaw"})) {
    k.key = Key::kDisallow;
    k.lenient = !ascii::EqualsIgnoreCase(key, "disallow");
  } else if (ascii::EqualsIgnoreCase(key, "sitemap") ||
             ascii::EqualsIgnoreCase(key, "site-map")) {
    k.key = Key::kSitemap;
  } else if (ascii::EqualsIgnoreCase(key, "crawl-delay")) {
    k.key = Key::kCrawlDelay;
  }
  return k;
}

// The RFC's spellings only (Options::accept_typos off).
KeyKind ClassifyStrict(std::string_view key) {
  KeyKind k;
  if (ascii::EqualsIgnoreCase(key, "user-agent")) {
    k.key = Key::kUserAgent;
  } else if (ascii::EqualsIgnoreCase(key, "allow")) {
    k.key = Key::kAllow;
  } else if (ascii::EqualsIgnoreCase(key, "disallow")) {
    k.key = Key::kDisallow;
  } else if (ascii::EqualsIgnoreCase(key, "sitemap")) {
    k.key = Key::kSitemap;
  } else if (ascii::EqualsIgnoreCase(key, "crawl-delay")) {
    k.key = Key::kCrawlDelay;
  }
  return k;
}

std::string_view KeyName(Key key) {
  switch (key) {
    case Key::kUserAgent:
      return "User-agent";
    case Key::kAllow:
      return "Allow";
    case Key::kDisallow:
      return "Disallow";
    case Key::kSitemap:
      return "Sitemap";
    case Key::kCrawlDelay:
      return "Crawl-delay";
    case Key::kOther:
      break;
  }
  return "?";
}

// Decimal seconds: digits with an optional fraction. No sign, exponent,
// "inf" or "nan", which from_chars alone would take.
std::optional<double> ParseDelay(std::string_view value) {
  size_t digits = 0;
  size_t dots = 0;
  for (char c : value) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (c == '.') {
      ++dots;
    } else {
      return std::nullopt;
    }
  }
  if (digits == 0 || dots > 1) return std::nullopt;
  double d = 0;
  auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), d);
  if (ec != std::errc() || end != value.data() + value.size() ||
      !std::isfinite(d)) {
    return std::nullopt;
  }
  return d;
}

// Bytes from a hostile file go into log lines: keep them short and
// printable.
std::string Printable(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '?');
  }
  if (s.size() > kMax) out.append("...");
  return out;
}

// Rules earlier in this order win: longest match first, then Allow.
bool Precedes(const internal::Pattern& a, bool a_allow,
              const internal::Pattern& b, bool b_allow) {
  if (a.priority() != b.priority()) return a.priority() > b.priority();
  return a_allow && !b_allow;
}

bool IsRobotsTxt(std::string_view path) {
  constexpr std::string_view kPath = "/robots.txt";
  return path.substr(0, kPath.size()) == kPath &&
         (path.size() == kPath.size() || path[kPath.size()] == '?');
}

// Google's "index.html" alias: for "/dir/index.html" (any "/index.htm..."
// after the last "/"), the pattern "/dir/$"; empty when there is none.
// `escaped` is the pattern as compiled (EscapePattern's output).
std::string IndexAlias(std::string_view escaped) {
  const size_t slash = escaped.rfind('/');
  if (slash == std::string_view::npos ||
      escaped.substr(slash).substr(0, 10) != "/index.htm") {
    return {};
  }
  std::string alias(escaped.substr(0, slash + 1));
  alias.push_back('$');
  return alias;
}

}  // namespace

std::string PathFromUrl(std::string_view url) {
  // A transcription of Google's GetPathParamsQuery (robots.cc), on views.
  constexpr auto npos = std::string_view::npos;
  size_t search_start = 0;
  if (url.size() >= 2 && url[0] == '/' && url[1] == '/') search_start = 2;
  const size_t early_path = url.find_first_of("/?;", search_start);
  size_t protocol_end = url.find("://", search_start);
  // "://" after the first "/", "?" or ";" does not end a scheme.
  if (early_path < protocol_end) protocol_end = npos;
  protocol_end = protocol_end == npos ? search_start : protocol_end + 3;
  const size_t path_start = url.find_first_of("/?;", protocol_end);
  if (path_start == npos) return "/";
  const size_t hash = url.find('#', search_start);
  if (hash < path_start) return "/";
  const size_t path_end = hash == npos ? url.size() : hash;
  std::string path;
  if (url[path_start] != '/') path.push_back('/');
  path.append(url.substr(path_start, path_end - path_start));
  return path;
}

// One pass over the lines, following Google's RobotsMatcher: keeps the rules
// of every group that names us and of every "*" group until the end tells
// which of the two applies.
class Rules::Parser {
 public:
  Parser(const Options& options, std::string_view product_token)
      : options_(Sanitize(options)), token_(product_token) {}

  void Run(std::string_view body) {
    bool cut_mid_line = false;
    if (body.size() > options_.max_bytes) {
      const char next = body[options_.max_bytes];
      cut_mid_line = next != '\n' && next != '\r';
      body = body.substr(0, options_.max_bytes);
    }
    // A BOM, or the part of one the body starts with, as Google skips it.
    size_t bom = 0;
    while (bom < kBom.size() && bom < body.size() && body[bom] == kBom[bom]) {
      ++bom;
    }
    body.remove_prefix(bom);
    int line = 0;
    size_t i = 0;
    const size_t n = body.size();
    while (i < n) {
      size_t j = i;
      while (j < n && body[j] != '\n' && body[j] != '\r') ++j;
      ++line;
      if (j == n && cut_mid_line) {
        Diagnose(line, "cut by the " + std::to_string(options_.max_bytes) +
                           "-byte parsing limit, ignored");
        break;
      }
      Line(line, body.substr(i, j - i));
      if (j < n && body[j] == '\r' && j + 1 < n && body[j + 1] == '\n') ++j;
      i = j + 1;
    }
    EndGroup();
  }

  Rules Finish() && {
    out_.product_token_ = token_;
    out_.rfc_matching_ = options_.rfc_matching;
    out_.robots_txt_exempt_ = options_.rfc_matching;
    std::vector<Rule>* chosen = nullptr;
    if (ever_specific_) {
      out_.group_ = Group::kSpecific;
      chosen = &specific_;
      out_.crawl_delay_ = specific_delay_;
      out_.group_agents_ = std::move(specific_agents_);
    } else if (ever_global_) {
      out_.group_ = Group::kGlobal;
      chosen = &global_;
      out_.crawl_delay_ = global_delay_;
      out_.group_agents_ = std::move(global_agents_);
    }
    if (chosen != nullptr) {
      std::stable_sort(
          chosen->begin(), chosen->end(), [](const Rule& a, const Rule& b) {
            return Precedes(a.pattern, a.allow, b.pattern, b.allow);
          });
      // Equal patterns of the same kind are adjacent now; the first (the
      // earliest line) is the one to report.
      auto last = std::unique(
          chosen->begin(), chosen->end(), [](const Rule& a, const Rule& b) {
            return a.allow == b.allow && a.pattern.text == b.pattern.text;
          });
      chosen->erase(last, chosen->end());
      out_.rules_ = std::move(*chosen);
    }
    return std::move(out_);
  }

 private:
  void Diagnose(int line, std::string reason) {
    ++out_.diagnostic_count_;
    if (out_.diagnostics_.size() < options_.max_diagnostics) {
      out_.diagnostics_.push_back("line " + std::to_string(line) + ": " +
                                  std::move(reason));
    }
  }

  void Line(int line, std::string_view text) {
    if (text.size() > options_.max_line_bytes) {
      Diagnose(line, "longer than " + std::to_string(options_.max_line_bytes) +
                         " bytes, cut");
      text = text.substr(0, options_.max_line_bytes);
    }
    // Google reads a line as a C string: a NUL byte ends it.
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
      Diagnose(line, "NUL byte, the rest of the line is ignored");
      text = text.substr(0, nul);
    }
    text = Trim(text.substr(0, text.find('#')));
    if (text.empty()) return;

    std::string_view key;
    std::string_view value;
    KeyKind kind;
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      key = Trim(text.substr(0, colon));
      value = Trim(text.substr(colon + 1));
      if (key.empty()) {
        Diagnose(line, "no key before the colon, skipped");
        return;
      }
      kind = options_.accept_typos ? ClassifyLenient(key) : ClassifyStrict(key);
    } else {
      // Google's leniency: "Disallow /x", exactly two words, where only
      // space and tab separate words.
      const size_t ws = text.find_first_of(" \t");
      bool two_words = false;
      if (options_.accept_typos && ws != std::string_view::npos) {
        std::string_view rest = text.substr(ws);
        rest.remove_prefix(
            std::min(rest.find_first_not_of(" \t"), rest.size()));
        two_words = rest.find_first_of(" \t") == std::string_view::npos;
        key = Trim(text.substr(0, ws));
        value = Trim(rest);
        kind = ClassifyLenient(key);
      }
      if (!two_words || kind.key == Key::kOther) {
        Diagnose(line, "no colon, skipped: \"" + Printable(text) + "\"");
        return;
      }
    }
    if (kind.lenient) {
      Diagnose(line, "key \"" + Printable(key) + "\" read as " +
                         std::string(KeyName(kind.key)));
    }

    switch (kind.key) {
      case Key::kUserAgent:
        UserAgent(line, value);
        break;
      case Key::kAllow:
      case Key::kDisallow:
        AllowOrDisallow(line, kind.key == Key::kAllow, value);
        break;
      case Key::kCrawlDelay:
        CrawlDelay(line, value);
        break;
      case Key::kSitemap:
        // Global and never ending a group (RFC 9309 2.2.4).
        if (value.empty()) {
          Diagnose(line, "empty sitemap, skipped");
        } else {
          out_.sitemaps_.emplace_back(value);
        }
        break;
      case Key::kOther:
        // Other records do not end a group either (RFC 9309 2.2.4).
        Diagnose(line, "unknown key \"" + Printable(key) + "\", skipped");
        break;
    }
  }

  // A group ends at the first User-agent line after an Allow or Disallow
  // line (Google's seen_separator_), and at the end of the body.
  void EndGroup() { cur_specific_ = cur_global_ = rule_seen_ = false; }

  void UserAgent(int line, std::string_view value) {
    if (rule_seen_) EndGroup();
    seen_agent_ = true;
    // Google reads "* anything" as "*" too.
    if (!value.empty() && value[0] == '*' &&
        (value.size() == 1 || IsSpace(value[1]))) {
      cur_global_ = ever_global_ = true;
      global_agents_.push_back(AgentLine(line, value));
      return;
    }
    const std::string_view agent = ExtractAgent(value);
    if (agent.empty()) {
      Diagnose(line, "user-agent \"" + Printable(value) +
                         "\" is not a product token");
    } else if (!token_.empty() && ascii::EqualsIgnoreCase(agent, token_)) {
      cur_specific_ = ever_specific_ = true;
      specific_agents_.push_back(AgentLine(line, value));
    }
  }

  static std::string AgentLine(int line, std::string_view value) {
    return "line " + std::to_string(line) + ": User-agent: " + Printable(value);
  }

  void AllowOrDisallow(int line, bool allow, std::string_view value) {
    if (!seen_agent_) {
      Diagnose(line, "rule before any user-agent line, ignored");
      return;
    }
    rule_seen_ = true;
    // An empty pattern matches nothing ("Disallow:" allows all).
    if (value.empty()) return;
    if (value[0] != '/' && value[0] != '*') {
      // Paths start with "/": Google's matcher never matches such a
      // pattern (nor its index.html alias), so it is no rule.
      Diagnose(line, "pattern \"" + Printable(value) +
                         "\" starts with neither \"/\" nor \"*\": it never "
                         "matches");
      return;
    }
    if (!cur_specific_ && !cur_global_) return;  // not a group for us
    Rule rule;
    rule.pattern = options_.rfc_matching ? internal::Pattern::CompileRfc(value)
                                         : internal::Pattern::Compile(value);
    rule.allow = allow;
    rule.line = line;
    rule.text = (allow ? "Allow: " : "Disallow: ") + std::string(value);
    if (allow && !options_.rfc_matching) {
      // Google's "index.html" alias: "/dir/index.html" allows "/dir/" too.
      std::string alias = IndexAlias(rule.pattern.text);
      if (!alias.empty()) {
        Rule also = rule;
        also.pattern = internal::Pattern::Compile(alias);
        also.text += " (as " + alias + ")";
        Keep(std::move(also));
      }
    }
    Keep(std::move(rule));
  }

  void Keep(Rule rule) {
    // Rules of a group that names us and "*" are ours alone, as in Google's.
    (cur_specific_ ? specific_ : global_).push_back(std::move(rule));
  }

  void CrawlDelay(int line, std::string_view value) {
    if (!seen_agent_) {
      Diagnose(line, "crawl-delay before any user-agent line, ignored");
      return;
    }
    const std::optional<double> delay = ParseDelay(value);
    if (!delay) {
      Diagnose(line, "crawl-delay \"" + Printable(value) +
                         "\" is not a number of seconds, ignored");
      return;
    }
    // Several values: the most polite one. For the agents named so far.
    auto keep = [&](std::optional<double>* slot) {
      *slot = slot->has_value() ? std::max(**slot, *delay) : *delay;
    };
    if (cur_specific_) keep(&specific_delay_);
    if (cur_global_) keep(&global_delay_);
  }

  const Options options_;
  const std::string token_;
  Rules out_;

  std::vector<Rule> specific_;
  std::vector<Rule> global_;
  std::optional<double> specific_delay_;
  std::optional<double> global_delay_;
  std::vector<std::string> specific_agents_;  // for Rules::group_agents()
  std::vector<std::string> global_agents_;

  bool rule_seen_ = false;     // an Allow/Disallow since the group began
  bool cur_specific_ = false;  // the current group names us
  bool cur_global_ = false;    // the current group is "*"
  bool seen_agent_ = false;
  bool ever_specific_ = false;
  bool ever_global_ = false;
};

Rules::Rules() = default;
Rules::~Rules() = default;
Rules::Rules(const Rules&) = default;
Rules& Rules::operator=(const Rules&) = default;
Rules::Rules(Rules&&) noexcept = default;
Rules& Rules::operator=(Rules&&) noexcept = default;

Rules Rules::Parse(std::string_view body, std::string_view product_token,
                   const Options& options) {
  Parser parser(options, product_token);
  parser.Run(body);
  return std::move(parser).Finish();
}

Rules Rules::AllowAll() { return Rules(); }

Rules Rules::DisallowAll() {
  Rules rules;
  Rule rule;
  rule.pattern = internal::Pattern::Compile("/");
  rule.text = "Disallow: /";
  rules.AddRule(std::move(rule));
  return rules;
}

size_t Rules::rule_count() const { return rules_.size(); }

void Rules::AddDisallow(std::string_view pattern) { AddDisallow(pattern, {}); }

void Rules::AddDisallow(std::string_view pattern, std::string_view origin) {
  pattern = Trim(pattern);
  if (pattern.empty()) return;
  Rule rule;
  std::string fixed;
  if (pattern[0] != '/' && pattern[0] != '*') fixed = "/";
  fixed += pattern;
  rule.pattern = rfc_matching_ ? internal::Pattern::CompileRfc(fixed)
                               : internal::Pattern::Compile(fixed);
  rule.from_override = true;
  rule.text = "Disallow: " + std::string(pattern);
  rule.origin = std::string(origin);
  AddRule(std::move(rule));
}

void Rules::AddRule(Rule rule) {
  // After the rules it ties with, so a robots.txt line is reported first.
  auto at = std::upper_bound(
      rules_.begin(), rules_.end(), rule, [](const Rule& a, const Rule& b) {
        return Precedes(a.pattern, a.allow, b.pattern, b.allow);
      });
  rules_.insert(at, std::move(rule));
}

const Rules::Rule* Rules::Decide(std::string_view path_and_query) const {
  if (rules_.empty()) return nullptr;  // AllowAll, or no group for us
  std::string scratch;
  std::string_view path;
  if (rfc_matching_) {
    path = internal::NormalizePath(path_and_query, &scratch);
  } else {
    // The path as Google's matcher sees it: a C string, no fragment,
    // starting with "/". (memchr: find_first_of of a set is far slower.)
    path = path_and_query;
    for (const char stop : {'#', '\0'}) {
      const void* at = std::memchr(path.data(), stop, path.size());
      if (at != nullptr) {
        path = path.substr(
            0, static_cast<size_t>(static_cast<const char*>(at) - path.data()));
      }
    }
    if (path.empty() || path[0] != '/') {
      scratch.reserve(path.size() + 1);
      scratch.push_back('/');
      scratch.append(path);
      path = scratch;
    }
  }
  // RFC 9309 2.2.2: /robots.txt is implicitly allowed (not by Google's).
  if (robots_txt_exempt_ && IsRobotsTxt(path)) return nullptr;
  for (const Rule& rule : rules_) {
    if (rule.pattern.Matches(path)) return &rule;
  }
  return nullptr;
}

bool Rules::Allowed(std::string_view path_and_query) const {
  const Rule* rule = Decide(path_and_query);
  return rule == nullptr || rule->allow;
}

Verdict Rules::Check(std::string_view path_and_query) const {
  const Rule* rule = Decide(path_and_query);
  Verdict v;
  if (rule != nullptr) {
    v.allowed = rule->allow;
    v.line = rule->line;
    v.rule = rule->text;
    v.from_override = rule->from_override;
    v.origin = rule->origin;
  }
  return v;
}

std::string Rules::Describe() const {
  // Rule texts and sitemaps are bytes from a hostile file on an operator's
  // terminal: no control characters.
  auto clean = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7F) c = '?';
    }
    return out;
  };
  std::string out = "group: ";
  const std::string token = "\"" + clean(product_token_) + "\"";
  switch (group_) {
    case Group::kSpecific:
      out += "specific (names " + token + ")\n";
      break;
    case Group::kGlobal:
      out += "* (no group names " + token + ")\n";
      break;
    case Group::kNone:
      out += product_token_.empty() ? "none\n"
                                    : "none (no group names " + token +
                                          " and there is no \"*\" group)\n";
      break;
  }
  for (const std::string& a : group_agents_) out += "  " + a + "\n";
  if (rules_.empty()) {
    out += "rules: none, everything is allowed\n";
  } else {
    out += "rules: " + std::to_string(rules_.size()) + ", first match wins\n";
    for (const Rule& r : rules_) {
      out += "  ";
      if (r.from_override) {
        out += r.origin.empty() ? "override: "
                                : "override " + clean(r.origin) + ": ";
      } else if (r.line > 0) {
        out += "line " + std::to_string(r.line) + ": ";
      }
      out += clean(r.text) + "\n";
    }
  }
  if (crawl_delay_) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *crawl_delay_);
    out += "crawl-delay: " + std::string(buf) + " s\n";
  } else {
    out += "crawl-delay: none\n";
  }
  if (sitemaps_.empty()) {
    out += "sitemaps: none\n";
  } else {
    out += "sitemaps: " + std::to_string(sitemaps_.size()) + "\n";
    for (const std::string& m : sitemaps_) out += "  " + clean(m) + "\n";
  }
  return out;
}

}  // namespace crawld::robots
