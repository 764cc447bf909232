#include "robots/robots.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

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

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool IsAgentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '-';
}

// The product token a user-agent value names: its leading run of
// [a-zA-Z_-] ("Googlebot/2.1" -> "Googlebot"), as Google's robotstxt does.
std::string_view ExtractAgent(std::string_view value) {
  size_t n = 0;
  while (n < value.size() && IsAgentChar(value[n])) ++n;
  return value.substr(0, n);
}

Key Classify(std::string_view key, bool typos) {
  auto is_any = [key](std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
      if (EqualsIgnoreCase(key, name)) return true;
    }
    return false;
  };
  if (is_any({"user-agent"})) return Key::kUserAgent;
  if (is_any({"allow"})) return Key::kAllow;
  if (is_any({"disallow"})) return Key::kDisallow;
  if (is_any({"sitemap"})) return Key::kSitemap;
  if (is_any({"crawl-delay"})) return Key::kCrawlDelay;
  if (typos) {
    // The spellings Google's robotstxt accepts (kAllowFrequentTypos).
    if (is_any({"useragent", "user agent"})) return Key::kUserAgent;
    if (is_any({"dissallow", "dissalow", "disalow", "diasllow", "disallaw"})) {
      return Key::kDisallow;
    }
    if (is_any({"site-map"})) return Key::kSitemap;
  }
  return Key::kOther;
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

bool IsRobotsTxt(std::string_view normal_path) {
  constexpr std::string_view kPath = "/robots.txt";
  return normal_path.substr(0, kPath.size()) == kPath &&
         (normal_path.size() == kPath.size() ||
          normal_path[kPath.size()] == '?');
}

}  // namespace

// One pass over the lines; keeps the rules of every group that names us and
// of every "*" group until the end tells which of the two applies.
class Rules::Parser {
 public:
  Parser(const Options& options, std::string_view product_token)
      : options_(Sanitize(options)),
        token_(ExtractAgent(Trim(product_token))) {}

  void Run(std::string_view body) {
    bool cut_mid_line = false;
    if (body.size() > options_.max_bytes) {
      const char next = body[options_.max_bytes];
      cut_mid_line = next != '\n' && next != '\r';
      body = body.substr(0, options_.max_bytes);
    }
    if (body.substr(0, kBom.size()) == kBom) body.remove_prefix(kBom.size());
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
  }

  Rules Finish() && {
    out_.product_token_ = token_;
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
    text = Trim(text.substr(0, text.find('#')));
    if (text.empty()) return;

    std::string_view key;
    std::string_view value;
    Key kind = Key::kOther;
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      key = Trim(text.substr(0, colon));
      value = Trim(text.substr(colon + 1));
      if (key.empty()) {
        Diagnose(line, "no key before the colon, skipped");
        return;
      }
      kind = Classify(key, options_.accept_typos);
    } else {
      // Google's leniency: "Disallow /x" for a known key and one value.
      const size_t ws = text.find_first_of(" \t");
      if (options_.accept_typos && ws != std::string_view::npos) {
        key = text.substr(0, ws);
        value = Trim(text.substr(ws));
        kind = Classify(key, /*typos=*/true);
      }
      if (key.empty() || kind == Key::kOther ||
          value.find_first_of(" \t") != std::string_view::npos) {
        Diagnose(line, "no colon, skipped: \"" + Printable(text) + "\"");
        return;
      }
    }

    switch (kind) {
      case Key::kUserAgent:
        UserAgent(line, value);
        break;
      case Key::kAllow:
      case Key::kDisallow:
        AllowOrDisallow(line, kind == Key::kAllow, value);
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

  void UserAgent(int line, std::string_view value) {
    if (!in_agent_run_) cur_specific_ = cur_global_ = false;
    in_agent_run_ = true;
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
    } else if (!token_.empty() && EqualsIgnoreCase(agent, token_)) {
      cur_specific_ = ever_specific_ = true;
      specific_agents_.push_back(AgentLine(line, value));
    }
  }

  static std::string AgentLine(int line, std::string_view value) {
    return "line " + std::to_string(line) + ": User-agent: " + Printable(value);
  }

  void AllowOrDisallow(int line, bool allow, std::string_view value) {
    in_agent_run_ = false;
    if (!seen_agent_) {
      Diagnose(line, "rule before any user-agent line, ignored");
      return;
    }
    // An empty pattern matches nothing ("Disallow:" allows all).
    if (value.empty()) return;
    std::string fixed;
    if (value[0] != '/' && value[0] != '*') {
      fixed = "/" + std::string(value);
      Diagnose(line, "pattern does not start with \"/\" or \"*\", read as \"" +
                         Printable(fixed) + "\"");
    }
    if (!cur_specific_ && !cur_global_) return;  // not a group for us
    Rule rule;
    rule.pattern = internal::Pattern::Compile(
        fixed.empty() ? value : std::string_view(fixed));
    rule.allow = allow;
    rule.line = line;
    rule.text = (allow ? "Allow: " : "Disallow: ") + std::string(value);
    if (cur_specific_ && cur_global_) global_.push_back(rule);
    if (cur_specific_) {
      specific_.push_back(std::move(rule));
    } else {
      global_.push_back(std::move(rule));
    }
  }

  void CrawlDelay(int line, std::string_view value) {
    in_agent_run_ = false;  // see "Crawl-delay" in robots.h
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
    // Several values: the most polite one.
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

  bool in_agent_run_ = false;  // the last group record was a user-agent line
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
  if (pattern[0] != '/' && pattern[0] != '*') {
    rule.pattern = internal::Pattern::Compile("/" + std::string(pattern));
  } else {
    rule.pattern = internal::Pattern::Compile(pattern);
  }
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
  const std::string_view path =
      internal::NormalizePath(path_and_query, &scratch);
  // RFC 9309 2.2.2: /robots.txt is implicitly allowed.
  if (IsRobotsTxt(path)) return nullptr;
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
