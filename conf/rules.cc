// conf/rules.cc: the URL filter rule file parser and matcher (rules.h).
#include "conf/rules.h"

#include <libpsl.h>
#include <re2/re2.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <system_error>
#include <utility>

#include "conf/read_file.h"
#include "conf/rule_lines.h"
#include "url/url.h"

namespace crawld::conf {

enum class Kind {
  kRegex,
  kHost,
  kSuffix,
  kDomain,
  kPrefix,
  kScheme,
  kDepth,
  kLength,
  kSegments,
  kRepeated,
  kScope,
  kAny,  // "recrawl" lines only: every URL
};

enum class Op { kGt, kGe, kLt, kLe, kEq, kNe };
enum class Scope { kSameHost, kSameDomain, kAny };

struct Rule {
  int line = 0;
  std::string text;
  bool accept = false;
  Kind kind = Kind::kHost;
  std::string arg;  // host, suffix, domain, prefix, scheme
  std::unique_ptr<RE2> re;
  Op op = Op::kGt;
  uint64_t number = 0;
  Scope scope = Scope::kAny;
  // "recrawl" lines: the interval bounds (simulated seconds).
  double min_s = 0;
  double max_s = 0;
};

namespace {

constexpr uint64_t kMaxNumber = 1000000000;  // bounds a typo like 10^20

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x80;
  });
}

// The registrable domain (public suffix + one label) of a lowercase host;
// empty when the host is an IP address or itself a public suffix.
std::string RegistrableDomain(std::string_view host) {
  if (host.empty() || internal::LooksLikeIp(host)) return {};
  const psl_ctx_t* psl = psl_builtin();
  if (psl == nullptr) return {};
  const std::string h(host);
  const char* rd = psl_registrable_domain(psl, h.c_str());
  return rd == nullptr ? std::string() : std::string(rd);
}

bool Compare(uint64_t value, Op op, uint64_t n) {
  switch (op) {
    case Op::kGt:
      return value > n;
    case Op::kGe:
      return value >= n;
    case Op::kLt:
      return value < n;
    case Op::kLe:
      return value <= n;
    case Op::kEq:
      return value == n;
    case Op::kNe:
      return value != n;
  }
  return false;
}

// Non-empty '/'-separated segments of a path.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

uint64_t MaxRepeat(const std::vector<std::string_view>& segments) {
  std::map<std::string_view, uint64_t> count;
  uint64_t best = 0;
  for (std::string_view s : segments) best = std::max(best, ++count[s]);
  return best;
}

class LineError {
 public:
  explicit LineError(std::string what) : what_(std::move(what)) {}
  const std::string& what() const { return what_; }

 private:
  std::string what_;
};

const std::map<std::string_view, Kind>& Kinds() {
  static const auto* kinds = new std::map<std::string_view, Kind>{
      {"regex", Kind::kRegex},       {"host", Kind::kHost},
      {"suffix", Kind::kSuffix},     {"domain", Kind::kDomain},
      {"prefix", Kind::kPrefix},     {"scheme", Kind::kScheme},
      {"depth", Kind::kDepth},       {"length", Kind::kLength},
      {"segments", Kind::kSegments}, {"repeated", Kind::kRepeated},
      {"scope", Kind::kScope},
  };
  return *kinds;
}

bool IsNumericKind(Kind k) {
  return k == Kind::kDepth || k == Kind::kLength || k == Kind::kSegments ||
         k == Kind::kRepeated;
}

// Fills `rule` from tokens[1..] (tokens[0] is the action); returns an
// error text, empty on success.
std::string ParseRuleBody(const std::vector<std::string_view>& t, Rule& rule) {
  if (t.size() < 2)
    return "missing rule kind after '" + std::string(t[0]) + "'";
  const auto it = Kinds().find(t[1]);
  if (it == Kinds().end()) {
    return "unknown rule kind '" + std::string(t[1]) +
           "' (expected regex, host, suffix, domain, prefix, scheme, depth, "
           "length, segments, repeated or scope)";
  }
  rule.kind = it->second;
  const std::string kind(t[1]);
  if (IsNumericKind(rule.kind)) {
    if (t.size() != 4) {
      return kind + ": expected an operator and a number, e.g. '" + kind +
             " > 5'";
    }
    static const std::map<std::string_view, Op> kOps = {
        {">", Op::kGt},  {">=", Op::kGe}, {"<", Op::kLt},
        {"<=", Op::kLe}, {"==", Op::kEq}, {"!=", Op::kNe}};
    const auto op = kOps.find(t[2]);
    if (op == kOps.end()) {
      return kind + ": unknown operator '" + std::string(t[2]) +
             "' (expected >, >=, <, <=, == or !=)";
    }
    rule.op = op->second;
    const std::string_view num = t[3];
    uint64_t n = 0;
    const auto [end, ec] =
        std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || end != num.data() + num.size() || n > kMaxNumber) {
      return kind + ": bad number '" + std::string(num) +
             "' (expected a decimal integer from 0 to 1000000000)";
    }
    rule.number = n;
    return {};
  }
  if (t.size() != 3) return kind + ": expected exactly one argument";
  const std::string_view arg = t[2];
  switch (rule.kind) {
    case Kind::kRegex: {
      RE2::Options options;
      options.set_log_errors(false);
      rule.re = std::make_unique<RE2>(re2::StringPiece(arg.data(), arg.size()),
                                      options);
      if (!rule.re->ok()) return "regex: " + rule.re->error();
      return {};
    }
    case Kind::kHost:
    case Kind::kSuffix:
    case Kind::kDomain: {
      if (!IsAscii(arg)) {
        return kind + ": '" + std::string(arg) +
               "' is not ASCII; write the punycode (xn--) form";
      }
      if (arg.find_first_of("/?#@") != std::string_view::npos) {
        return kind + ": '" + std::string(arg) + "' is not a host name";
      }
      rule.arg = Lower(arg);
      if (rule.kind == Kind::kSuffix &&
          (rule.arg.size() < 2 || rule.arg.front() != '.')) {
        return "suffix: '" + std::string(arg) +
               "' must start with '.', e.g. '.example.org'";
      }
      if (rule.kind == Kind::kDomain) {
        if (psl_builtin() == nullptr) {
          return "domain: this libpsl has no built-in Public Suffix List";
        }
        const std::string rd = RegistrableDomain(rule.arg);
        if (rd != rule.arg) {
          return "domain: '" + std::string(arg) +
                 "' is not a registrable domain" +
                 (rd.empty() ? std::string()
                             : " (its registrable domain is '" + rd + "')");
        }
      }
      return {};
    }
    case Kind::kPrefix:
      rule.arg = std::string(arg);
      return {};
    case Kind::kScheme: {
      rule.arg = Lower(arg);
      const bool ok =
          !rule.arg.empty() && rule.arg[0] >= 'a' && rule.arg[0] <= 'z' &&
          std::all_of(rule.arg.begin(), rule.arg.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '+' || c == '-' || c == '.';
          });
      if (!ok) return "scheme: '" + std::string(arg) + "' is not a scheme";
      return {};
    }
    case Kind::kScope:
      if (arg == "same-host") {
        rule.scope = Scope::kSameHost;
      } else if (arg == "same-domain") {
        rule.scope = Scope::kSameDomain;
      } else if (arg == "any") {
        rule.scope = Scope::kAny;
      } else {
        return "scope: unknown preset '" + std::string(arg) +
               "' (expected same-host, same-domain or any)";
      }
      return {};
    default:
      return "internal: unhandled kind";
  }
}

constexpr double kMaxDurationS = 3650.0 * 86400;  // ten years

// Fills a "recrawl" rule from its tokens ("recrawl", interval, kind,
// argument...); returns an error text, empty on success.
std::string ParseRecrawlRule(const std::vector<std::string_view>& t,
                             Rule& rule) {
  if (t.size() < 2) {
    return "recrawl: missing interval, e.g. 'recrawl 1h prefix "
           "http://example.com/news/' or 'recrawl 1d..30d any'";
  }
  const std::string_view interval = t[1];
  const size_t dots = interval.find("..");
  const std::string_view lo_text = interval.substr(0, dots);
  const std::string_view hi_text =
      dots == std::string_view::npos ? interval : interval.substr(dots + 2);
  const std::optional<double> lo = ParseDuration(lo_text);
  const std::optional<double> hi = ParseDuration(hi_text);
  if (!lo.has_value() || !hi.has_value()) {
    return "recrawl: bad interval '" + std::string(interval) +
           "' (expected a duration such as 30m, 1h, 7d or a range such as "
           "1h..1d: an integer from 1 s to 3650 d with a unit s, m, h, d or "
           "w)";
  }
  if (*lo > *hi) {
    return "recrawl: interval range '" + std::string(interval) +
           "' has its minimum above its maximum";
  }
  rule.min_s = *lo;
  rule.max_s = *hi;
  if (t.size() == 3 && t[2] == "any") {
    rule.kind = Kind::kAny;
    return {};
  }
  if (t.size() >= 3 && t[2] == "any") return "any: takes no argument";
  // The matching part is an accept/reject rule's: "recrawl" stands where
  // the action would, so the messages read the same.
  std::vector<std::string_view> body;
  body.push_back(t[0]);
  body.insert(body.end(), t.begin() + 2, t.end());
  if (body.size() < 2) {
    return "missing rule kind after 'recrawl " + std::string(interval) +
           "' (any, or a kind as accept and reject take)";
  }
  return ParseRuleBody(body, rule);
}

bool Matches(const Rule& r, const url::Url& u, const UrlFacts& facts) {
  switch (r.kind) {
    case Kind::kRegex: {
      const std::string_view href = u.href();
      return RE2::PartialMatch(re2::StringPiece(href.data(), href.size()),
                               *r.re);
    }
    case Kind::kHost:
      return u.host() == r.arg;
    case Kind::kSuffix: {
      const std::string_view host = u.host();
      return host.ends_with(r.arg) || host == std::string_view(r.arg).substr(1);
    }
    case Kind::kDomain:
      return RegistrableDomain(u.host()) == r.arg;
    case Kind::kPrefix:
      return u.href().starts_with(r.arg);
    case Kind::kScheme:
      return u.scheme() == r.arg;
    case Kind::kDepth:
      return Compare(facts.depth < 0 ? 0 : static_cast<uint64_t>(facts.depth),
                     r.op, r.number);
    case Kind::kLength:
      return Compare(u.href().size(), r.op, r.number);
    case Kind::kSegments:
      return Compare(u.has_opaque_path() ? 0 : Segments(u.path()).size(), r.op,
                     r.number);
    case Kind::kRepeated:
      return Compare(u.has_opaque_path() ? 0 : MaxRepeat(Segments(u.path())),
                     r.op, r.number);
    case Kind::kAny:
      return true;
    case Kind::kScope: {
      if (r.scope == Scope::kAny) return true;
      const std::string seed = Lower(facts.seed_host);
      const std::string_view host = u.host();
      if (seed.empty() || host.empty()) return false;
      if (r.scope == Scope::kSameHost) return host == seed;
      const std::string a = RegistrableDomain(host);
      const std::string b = RegistrableDomain(seed);
      // IP addresses and bare public suffixes have no registrable domain:
      // they are their own "domain".
      return (a.empty() ? std::string(host) : a) == (b.empty() ? seed : b);
    }
  }
  return false;
}

}  // namespace

std::optional<double> ParseDuration(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  double unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return std::nullopt;
  }
  const std::string_view digits = text.substr(0, text.size() - 1);
  uint64_t n = 0;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() ||
      n > kMaxNumber) {
    return std::nullopt;
  }
  const double seconds = static_cast<double>(n) * unit;
  if (seconds < 1 || seconds > kMaxDurationS) return std::nullopt;
  return seconds;
}

RuleSet::RuleSet() = default;
RuleSet::~RuleSet() = default;

Result<std::unique_ptr<RuleSet>> RuleSet::Parse(std::string_view text,
                                                std::string_view source_name) {
  std::unique_ptr<RuleSet> set(new RuleSet());
  internal::RuleLines lines(text, source_name);
  while (lines.Next()) {
    const std::vector<std::string_view>& t = lines.tokens();
    const int line_no = lines.number();
    auto error = [&](const std::string& what) { return lines.Error(what); };
    if (set->default_line_ != 0) {
      return error("rule after 'default' (line " +
                   std::to_string(set->default_line_) +
                   "); 'default' must be the last rule");
    }
    if (t[0] == "default") {
      if (t.size() != 2 || (t[1] != "accept" && t[1] != "reject")) {
        return error("expected 'default accept' or 'default reject'");
      }
      set->default_accept_ = t[1] == "accept";
      set->default_line_ = line_no;
      continue;
    }
    if (t[0] == "recrawl") {
      auto rule = std::make_unique<Rule>();
      rule->line = line_no;
      rule->text = internal::JoinTokens(t);
      const std::string what = ParseRecrawlRule(t, *rule);
      if (!what.empty()) return error(what);
      set->recrawl_rules_.push_back(std::move(rule));
      continue;
    }
    if (t[0] != "accept" && t[0] != "reject") {
      return error("unknown action '" + std::string(t[0]) +
                   "' (expected accept, reject, recrawl or default)");
    }
    auto rule = std::make_unique<Rule>();
    rule->line = line_no;
    rule->accept = t[0] == "accept";
    rule->text = internal::JoinTokens(t);
    const std::string what = ParseRuleBody(t, *rule);
    if (!what.empty()) return error(what);
    set->rules_.push_back(std::move(rule));
  }
  if (!lines.status().ok()) return lines.status();
  const size_t n = set->rules_.size() + 2;
  set->hits_ = std::make_unique<std::atomic<uint64_t>[]>(n);
  for (size_t i = 0; i < n; ++i) set->hits_[i].store(0);
  return set;
}

Result<std::unique_ptr<RuleSet>> RuleSet::Load(const std::string& path) {
  auto text = internal::ReadSmallFile(path, 4u << 20);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

std::unique_ptr<RuleSet> RuleSet::AcceptAll() {
  auto r = Parse("", "accept-all");
  return std::move(r).value();
}

RuleVerdict RuleSet::Decide(const UrlFacts& facts) const {
  const size_t n = rules_.size();
  Result<url::Url> parsed = url::Parse(facts.url);
  if (!parsed.ok()) {
    hits_[n + 1].fetch_add(1, std::memory_order_relaxed);
    return {false, 0, "invalid url"};
  }
  const url::Url& u = parsed.value();
  for (size_t i = 0; i < n; ++i) {
    const Rule& r = *rules_[i];
    if (Matches(r, u, facts)) {
      hits_[i].fetch_add(1, std::memory_order_relaxed);
      return {r.accept, r.line, r.text};
    }
  }
  hits_[n].fetch_add(1, std::memory_order_relaxed);
  return {default_accept_, 0, "default"};
}

std::optional<RecrawlVerdict> RuleSet::Recrawl(const UrlFacts& facts) const {
  if (recrawl_rules_.empty()) return std::nullopt;
  Result<url::Url> parsed = url::Parse(facts.url);
  if (!parsed.ok()) return std::nullopt;
  for (const auto& r : recrawl_rules_) {
    if (Matches(*r, parsed.value(), facts)) {
      return RecrawlVerdict{r->min_s, r->max_s, r->line, r->text};
    }
  }
  return std::nullopt;
}

std::vector<RuleSet::RuleStats> RuleSet::Stats() const {
  const size_t n = rules_.size();
  std::vector<RuleStats> out;
  out.reserve(n + 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back({rules_[i]->line, rules_[i]->text,
                   hits_[i].load(std::memory_order_relaxed)});
  }
  out.push_back({0, "default", hits_[n].load(std::memory_order_relaxed)});
  out.push_back(
      {0, "invalid url", hits_[n + 1].load(std::memory_order_relaxed)});
  return out;
}

}  // namespace crawld::conf
