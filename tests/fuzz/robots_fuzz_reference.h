// tests/fuzz/robots_fuzz_reference.h: a slow, literal model of Google's
// robots.txt matcher (github.com/google/robotstxt at 22b355f, robots.cc,
// Apache-2.0), for differential tests of robots/.
//
// It follows Google's code step by step rather than crawld's design: a byte
// loop with a fixed-size line buffer, C-string semantics (a NUL ends a line
// or a path), the key/value split of GetKeyAndValueFrom, prefix key matching
// with the frequent typos, the RobotsMatcher group state machine
// (seen_global/seen_specific/seen_separator), the position-set pattern
// matcher, MaybeEscapePattern, the index.html alias, and the priority
// comparison of disallow(). It answers for several URLs in one parse.
//
// Trust comes from data, not from reading: tests/unit/robots/
// google_corpus_test.cc replays every verdict Google's own binary recorded in
// tests/data/robots/google_verdicts.txt through this model as well as through
// robots::Rules. robots_fuzz.cc then compares Rules with the model on inputs
// that nobody recorded.
#ifndef CRAWLD_TESTS_FUZZ_ROBOTS_FUZZ_REFERENCE_H_
#define CRAWLD_TESTS_FUZZ_ROBOTS_FUZZ_REFERENCE_H_

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace robots_reference {

// Google's GetPathParamsQuery, char by char.
inline std::string PathParamsQuery(const std::string& url) {
  size_t search_start = 0;
  if (url.size() >= 2 && url[0] == '/' && url[1] == '/') search_start = 2;
  size_t early_path = url.find_first_of("/?;", search_start);
  size_t protocol_end = url.find("://", search_start);
  if (early_path < protocol_end) protocol_end = std::string::npos;
  if (protocol_end == std::string::npos) {
    protocol_end = search_start;
  } else {
    protocol_end += 3;
  }
  size_t path_start = url.find_first_of("/?;", protocol_end);
  if (path_start != std::string::npos) {
    size_t hash_pos = url.find('#', search_start);
    if (hash_pos < path_start) return "/";
    size_t path_end = (hash_pos == std::string::npos) ? url.size() : hash_pos;
    if (url[path_start] != '/') {
      return "/" + url.substr(path_start, path_end - path_start);
    }
    return url.substr(path_start, path_end - path_start);
  }
  return "/";
}

namespace detail {

inline bool IsXDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}
inline bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline char Upper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}
// absl::ascii_isspace and C isspace: SP HT LF VT FF CR.
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}
inline bool StartsWithIgnoreCase(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (Upper(s[i]) != Upper(p[i])) return false;
  }
  return true;
}
inline std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The position-set matcher of RobotsMatchStrategy::Matches.
inline bool Matches(std::string_view path, std::string_view pattern) {
  const size_t pathlen = path.size();
  std::vector<size_t> pos(pathlen + 1);
  size_t numpos = 1;
  pos[0] = 0;
  for (size_t p = 0; p < pattern.size(); ++p) {
    const char c = pattern[p];
    if (c == '$' && p + 1 == pattern.size()) return pos[numpos - 1] == pathlen;
    if (c == '*') {
      numpos = pathlen - pos[0] + 1;
      for (size_t i = 1; i < numpos; ++i) pos[i] = pos[i - 1] + 1;
    } else {
      size_t newnumpos = 0;
      for (size_t i = 0; i < numpos; ++i) {
        if (pos[i] < pathlen && path[pos[i]] == c)
          pos[newnumpos++] = pos[i] + 1;
      }
      numpos = newnumpos;
      if (numpos == 0) return false;
    }
  }
  return true;
}

inline std::string MaybeEscapePattern(std::string_view src) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string dst;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '%' && i + 2 < src.size() && IsXDigit(src[i + 1]) &&
        IsXDigit(src[i + 2])) {
      dst += '%';
      dst += Upper(src[i + 1]);
      dst += Upper(src[i + 2]);
      i += 2;
    } else if (static_cast<unsigned char>(src[i]) & 0x80) {
      const auto u = static_cast<unsigned char>(src[i]);
      dst += '%';
      dst += kHex[u >> 4];
      dst += kHex[u & 0xF];
    } else {
      dst += src[i];
    }
  }
  return dst;
}

enum class KeyType { kUserAgent, kAllow, kDisallow, kOther };

inline KeyType GetKeyType(std::string_view key) {
  auto any = [key](std::initializer_list<std::string_view> ps) {
    for (std::string_view p : ps) {
      if (StartsWithIgnoreCase(key, p)) return true;
    }
    return false;
  };
  if (any({"user-agent", "useragent", "user agent"}))
    return KeyType::kUserAgent;
  if (any({"allow"})) return KeyType::kAllow;
  if (any({"disallow", "dissallow", "dissalow", "disalow", "diasllow",
           "disallaw"})) {
    return KeyType::kDisallow;
  }
  return KeyType::kOther;  // sitemap and unknown keys: no effect on verdicts
}

class Matcher {
 public:
  Matcher(std::string_view agent, std::vector<std::string> paths)
      : agent_(agent), paths_(std::move(paths)), state_(paths_.size()) {}

  void Line(std::string_view line) {
    // C-string semantics: the line ends at its first NUL.
    line = line.substr(0, line.find('\0'));
    line = line.substr(0, line.find('#'));
    line = Strip(line);
    if (line.empty()) return;
    std::string_view key;
    std::string_view value;
    size_t sep = line.find(':');
    if (sep == std::string_view::npos) {
      sep = line.find_first_of(" \t");
      if (sep == std::string_view::npos) return;
      std::string_view val = line.substr(sep);
      val.remove_prefix(std::min(val.find_first_not_of(" \t"), val.size()));
      if (val.find_first_of(" \t") != std::string_view::npos) return;
    }
    key = Strip(line.substr(0, sep));
    if (key.empty()) return;
    value = Strip(line.substr(sep + 1));
    switch (GetKeyType(key)) {
      case KeyType::kUserAgent:
        UserAgent(value);
        break;
      case KeyType::kAllow:
        Rule(/*allow=*/true, MaybeEscapePattern(value));
        break;
      case KeyType::kDisallow:
        Rule(/*allow=*/false, MaybeEscapePattern(value));
        break;
      case KeyType::kOther:
        break;
    }
  }

  bool Allowed(size_t i) const {
    const State& s = state_[i];
    if (s.allow_specific > 0 || s.disallow_specific > 0) {
      return s.disallow_specific <= s.allow_specific;
    }
    if (ever_seen_specific_) return true;
    if (s.disallow_global > 0 || s.allow_global > 0) {
      return s.disallow_global <= s.allow_global;
    }
    return true;
  }

 private:
  struct State {
    long allow_specific = -1, disallow_specific = -1;
    long allow_global = -1, disallow_global = -1;
  };

  void UserAgent(std::string_view ua) {
    if (seen_separator_)
      seen_specific_ = seen_global_ = seen_separator_ = false;
    if (!ua.empty() && ua[0] == '*' && (ua.size() == 1 || IsSpace(ua[1]))) {
      seen_global_ = true;
      return;
    }
    size_t n = 0;
    while (n < ua.size() && (IsAlpha(ua[n]) || ua[n] == '-' || ua[n] == '_')) {
      ++n;
    }
    ua = ua.substr(0, n);
    if (ua.size() == agent_.size() && StartsWithIgnoreCase(ua, agent_)) {
      ever_seen_specific_ = seen_specific_ = true;
    }
  }

  void Rule(bool allow, const std::string& pattern) {
    if (!seen_global_ && !seen_specific_) return;
    seen_separator_ = true;
    for (size_t i = 0; i < paths_.size(); ++i) Apply(i, allow, pattern);
  }

  void Apply(size_t i, bool allow, const std::string& pattern) {
    State& s = state_[i];
    if (Matches(paths_[i], pattern)) {
      const long priority = static_cast<long>(pattern.size());
      long& slot = seen_specific_
                       ? (allow ? s.allow_specific : s.disallow_specific)
                       : (allow ? s.allow_global : s.disallow_global);
      if (slot < priority) slot = priority;
      return;
    }
    if (!allow) return;
    // 'index.htm' and 'index.html' are normalised to '/'.
    const size_t slash = pattern.rfind('/');
    if (slash != std::string::npos &&
        pattern.compare(slash, 10, "/index.htm") == 0) {
      Apply(i, true, pattern.substr(0, slash + 1) + "$");
    }
  }

  std::string agent_;
  std::vector<std::string> paths_;
  std::vector<State> state_;
  bool seen_global_ = false;
  bool seen_specific_ = false;
  bool ever_seen_specific_ = false;
  bool seen_separator_ = false;
};

}  // namespace detail

// Google's verdicts for `urls` (as robots_check reads them: one per line,
// no trailing CR) under `body` for `agent`.
inline std::vector<bool> Verdicts(std::string_view body, std::string_view agent,
                                  const std::vector<std::string>& urls) {
  std::vector<std::string> paths;
  for (const std::string& url : urls) {
    std::string path = PathParamsQuery(url);
    paths.push_back(path.substr(0, path.find('\0')));  // path_.c_str()
  }
  detail::Matcher m(agent, std::move(paths));
  // RobotsTxtParser::Parse: BOM prefix, CR/LF/CRLF, a bounded line buffer.
  constexpr size_t kMaxLineLen = 2083 * 8;
  static const unsigned char kBom[3] = {0xEF, 0xBB, 0xBF};
  std::string line;
  size_t bom_pos = 0;
  bool last_was_cr = false;
  for (const char c : body) {
    const auto ch = static_cast<unsigned char>(c);
    if (bom_pos < 3 && ch == kBom[bom_pos++]) continue;
    bom_pos = 3;
    if (ch != 0x0A && ch != 0x0D) {
      if (line.size() < kMaxLineLen - 1) line.push_back(c);
    } else {
      const bool crlf = line.empty() && last_was_cr && ch == 0x0A;
      if (!crlf) m.Line(line);
      line.clear();
      last_was_cr = ch == 0x0D;
    }
  }
  m.Line(line);
  std::vector<bool> out;
  for (size_t i = 0; i < urls.size(); ++i) out.push_back(m.Allowed(i));
  return out;
}

}  // namespace robots_reference

#endif  // CRAWLD_TESTS_FUZZ_ROBOTS_FUZZ_REFERENCE_H_
