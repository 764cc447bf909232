// conf/overrides.cc: the robots/politeness override file (overrides.h).
#include "conf/overrides.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "conf/read_file.h"
#include "conf/rule_lines.h"
#include "url/url.h"

namespace crawld::conf {

enum class SelectorKind { kExact, kDomain, kAll };
enum class Directive {
  kIgnoreRobots,
  kObeyRobots,
  kDisallow,
  kDelayMs,
  kConcurrency
};

struct OverrideEntry {
  int line = 0;
  std::string text;  // tokens joined by one space
  SelectorKind kind = SelectorKind::kExact;
  std::string host;  // normalized; empty for kAll
  Directive directive = Directive::kDisallow;
  std::string pattern;  // disallow
  int64_t number = 0;   // delay-ms, concurrency
};

namespace {

constexpr size_t kMaxPatternBytes = 4096;

// Keeps a hostile selector short and printable in an error message.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.push_back(c >= 0x20 && c != 0x7F ? static_cast<char>(c) : '?');
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// Fills entry.kind and entry.host from a selector token; returns an error
// text, empty on success.
std::string ParseSelector(std::string_view sel, OverrideEntry& entry) {
  if (sel == "*") {
    entry.kind = SelectorKind::kAll;
    return {};
  }
  std::string_view name = sel;
  entry.kind = SelectorKind::kExact;
  if (name.starts_with("*.")) {
    entry.kind = SelectorKind::kDomain;
    name.remove_prefix(2);
  } else if (name.starts_with(".")) {
    entry.kind = SelectorKind::kDomain;
    name.remove_prefix(1);
  }
  if (name.empty()) {
    return "selector " + Quote(sel) + " names no host";
  }
  if (name.find('*') != std::string_view::npos) {
    return "selector " + Quote(sel) +
           ": '*' is allowed only as the whole selector or as a leading "
           "'*.'";
  }
  const bool bracketed = name.front() == '[' && name.back() == ']';
  if (name.find_first_of("/?#@\\%") != std::string_view::npos ||
      (!bracketed && name.find(':') != std::string_view::npos)) {
    return "selector " + Quote(sel) +
           " is not a host name (no scheme, port, path or userinfo)";
  }
  Result<url::Url> u = url::Parse("http://" + std::string(name) + "/");
  if (!u.ok() || u->host().empty() || u->path() != "/") {
    return "selector " + Quote(sel) + " is not a valid host name" +
           (u.ok() ? std::string() : " (" + u.status().message() + ")");
  }
  entry.host = std::string(u->host());
  if (entry.kind == SelectorKind::kDomain &&
      internal::LooksLikeIp(entry.host)) {
    return "selector " + Quote(sel) +
           ": a domain selector needs a domain name, not an IP address";
  }
  return {};
}

std::string ParseNumber(std::string_view directive, std::string_view arg,
                        int64_t min, int64_t max, int64_t* out) {
  int64_t n = 0;
  const auto [end, ec] =
      std::from_chars(arg.data(), arg.data() + arg.size(), n);
  if (ec != std::errc() || end != arg.data() + arg.size() || n < min ||
      n > max) {
    return std::string(directive) + ": bad number " + Quote(arg) +
           " (expected a decimal integer from " + std::to_string(min) + " to " +
           std::to_string(max) + ")";
  }
  *out = n;
  return {};
}

// Fills the directive part of `entry` from t[1..]; returns an error text,
// empty on success.
std::string ParseDirective(const std::vector<std::string_view>& t,
                           OverrideEntry& entry) {
  if (t.size() < 2) {
    return "missing directive after selector " + Quote(t[0]) +
           " (expected ignore-robots, obey-robots, disallow, delay-ms or "
           "concurrency)";
  }
  static const auto* kDirectives = new std::map<std::string_view, Directive>{
      {"ignore-robots", Directive::kIgnoreRobots},
      {"obey-robots", Directive::kObeyRobots},
      {"disallow", Directive::kDisallow},
      {"delay-ms", Directive::kDelayMs},
      {"concurrency", Directive::kConcurrency},
  };
  const auto it = kDirectives->find(t[1]);
  if (it == kDirectives->end()) {
    return "unknown directive " + Quote(t[1]) +
           " (expected ignore-robots, obey-robots, disallow, delay-ms or "
           "concurrency)";
  }
  entry.directive = it->second;
  const std::string name(t[1]);
  if (entry.directive == Directive::kIgnoreRobots ||
      entry.directive == Directive::kObeyRobots) {
    if (t.size() != 2) return name + ": takes no argument";
    return {};
  }
  if (t.size() != 3) return name + ": expected exactly one argument";
  const std::string_view arg = t[2];
  switch (entry.directive) {
    case Directive::kDisallow:
      if (arg.front() != '/' && arg.front() != '*') {
        return "disallow: pattern " + Quote(arg) +
               " must start with '/' or '*' (robots.txt path syntax)";
      }
      if (arg.size() > kMaxPatternBytes) {
        return "disallow: pattern longer than " +
               std::to_string(kMaxPatternBytes) + " bytes";
      }
      if (std::any_of(arg.begin(), arg.end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
          })) {
        return "disallow: control character in pattern";
      }
      entry.pattern = std::string(arg);
      return {};
    case Directive::kDelayMs:
      return ParseNumber("delay-ms", arg, 0, Overrides::kMaxDelayMs,
                         &entry.number);
    case Directive::kConcurrency:
      return ParseNumber("concurrency", arg, 1, Overrides::kMaxConcurrency,
                         &entry.number);
    default:
      return "internal: unhandled directive";
  }
}

// Directives that compete (one decides per host) share a slot; "ignore" and
// "obey" are two values of one setting.
int Slot(Directive d) {
  switch (d) {
    case Directive::kIgnoreRobots:
    case Directive::kObeyRobots:
      return 0;
    case Directive::kDelayMs:
      return 1;
    case Directive::kConcurrency:
      return 2;
    case Directive::kDisallow:
      return -1;
  }
  return -1;
}
constexpr int kSlots = 3;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>()(s);
  }
};

}  // namespace

// Entries (indices into entries_, file order) of one selector.
struct Overrides::Index {
  using Map = std::unordered_map<std::string, std::vector<size_t>, StringHash,
                                 std::equal_to<>>;
  Map exact;
  Map domain;
  std::vector<size_t> all;
};

Overrides::Overrides() : index_(std::make_unique<Index>()) {}
Overrides::~Overrides() = default;

Result<std::unique_ptr<Overrides>> Overrides::Parse(
    std::string_view text, std::string_view source_name) {
  std::unique_ptr<Overrides> set(new Overrides());
  set->source_ = std::string(source_name);
  // (kind, host, slot) -> line, to reject a directive given twice.
  std::map<std::tuple<int, std::string, int>, int> seen;
  internal::RuleLines lines(text, source_name);
  while (lines.Next()) {
    const std::vector<std::string_view>& t = lines.tokens();
    const int line_no = lines.number();
    auto error = [&](const std::string& what) { return lines.Error(what); };
    auto entry = std::make_unique<OverrideEntry>();
    entry->line = line_no;
    entry->text = internal::JoinTokens(t);
    std::string what = ParseSelector(t[0], *entry);
    if (what.empty()) what = ParseDirective(t, *entry);
    if (!what.empty()) return error(what);
    const int slot = Slot(entry->directive);
    if (slot >= 0) {
      const auto [it, inserted] = seen.emplace(
          std::make_tuple(static_cast<int>(entry->kind), entry->host, slot),
          line_no);
      if (!inserted) {
        return error("selector " + Quote(t[0]) + " already sets this (line " +
                     std::to_string(it->second) +
                     "); one value per selector and setting");
      }
    }
    const size_t index = set->entries_.size();
    switch (entry->kind) {
      case SelectorKind::kExact:
        set->index_->exact[entry->host].push_back(index);
        break;
      case SelectorKind::kDomain:
        set->index_->domain[entry->host].push_back(index);
        break;
      case SelectorKind::kAll:
        set->index_->all.push_back(index);
        break;
    }
    set->entries_.push_back(std::move(entry));
  }
  if (!lines.status().ok()) return lines.status();
  const size_t n = set->entries_.size();
  set->hits_ = std::make_unique<std::atomic<uint64_t>[]>(n);
  for (size_t i = 0; i < n; ++i) set->hits_[i].store(0);
  return set;
}

Result<std::unique_ptr<Overrides>> Overrides::Load(const std::string& path) {
  auto text = internal::ReadSmallFile(path, 4u << 20);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

std::unique_ptr<Overrides> Overrides::None() {
  auto r = Parse("", "no-overrides");
  return std::move(r).value();
}

HostOverride Overrides::For(std::string_view host) const {
  HostOverride out;
  if (entries_.empty() || host.empty()) return out;
  // The deciding entry per slot; selectors are visited most specific first,
  // so the first entry found for a slot decides it.
  size_t decided[kSlots];
  std::fill(std::begin(decided), std::end(decided), SIZE_MAX);
  std::vector<size_t> used;
  auto visit = [&](const std::vector<size_t>& list) {
    for (size_t i : list) {
      const int slot = Slot(entries_[i]->directive);
      if (slot < 0) {
        used.push_back(i);
      } else if (decided[slot] == SIZE_MAX) {
        decided[slot] = i;
      }
    }
  };
  if (auto it = index_->exact.find(host); it != index_->exact.end()) {
    visit(it->second);
  }
  if (!index_->domain.empty() && !internal::LooksLikeIp(host)) {
    // "a.b.example.com", "b.example.com", "example.com", "com".
    std::string_view rest = host;
    while (!rest.empty()) {
      if (auto it = index_->domain.find(rest); it != index_->domain.end()) {
        visit(it->second);
      }
      const size_t dot = rest.find('.');
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
  }
  visit(index_->all);
  for (size_t i : decided) {
    if (i == SIZE_MAX) continue;
    used.push_back(i);
    const OverrideEntry& e = *entries_[i];
    switch (e.directive) {
      case Directive::kIgnoreRobots:
        out.ignore_robots = true;
        break;
      case Directive::kObeyRobots:
        out.ignore_robots = false;
        break;
      case Directive::kDelayMs:
        out.delay_ms = e.number;
        break;
      case Directive::kConcurrency:
        out.concurrency = static_cast<int>(e.number);
        break;
      case Directive::kDisallow:
        break;
    }
  }
  // Entry indices are in file order, so sorting them sorts by line.
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  out.lines.reserve(used.size());
  for (size_t i : used) {
    const OverrideEntry& e = *entries_[i];
    hits_[i].fetch_add(1, std::memory_order_relaxed);
    out.lines.push_back(e.line);
    if (e.directive == Directive::kDisallow) {
      out.disallow.push_back({e.pattern, e.line});
    }
  }
  return out;
}

std::vector<Overrides::LineStats> Overrides::Stats() const {
  std::vector<LineStats> out;
  out.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    out.push_back({entries_[i]->line, entries_[i]->text,
                   hits_[i].load(std::memory_order_relaxed)});
  }
  return out;
}

std::string Overrides::Where(int line) const {
  return source_ + ":" + std::to_string(line);
}

std::string Overrides::Describe(const HostOverride& o) const {
  std::string out;
  for (int line : o.lines) {
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), line,
                                     [](const std::unique_ptr<OverrideEntry>& e,
                                        int l) { return e->line < l; });
    if (!out.empty()) out += "; ";
    out += Where(line);
    if (it != entries_.end() && (*it)->line == line) {
      out += ' ';
      out += (*it)->text;
    }
  }
  return out;
}

}  // namespace crawld::conf
