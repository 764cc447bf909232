#include "conf/traps.h"

#include <xxhash.h>

#include <vector>

namespace crawld::conf {

namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

int ToInt(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

bool IsMonth(std::string_view s) {
  return (s.size() == 1 || s.size() == 2) && AllDigits(s) && ToInt(s) >= 1 &&
         ToInt(s) <= 12;
}

// "2031-05", "2031-05-01", "2031_5", "20310501", "203105": a year followed
// by a month, in one token.
int YearOfToken(std::string_view t) {
  if (t.size() >= 6 && AllDigits(t.substr(0, 4))) {
    std::string_view rest = t.substr(4);
    if (rest[0] == '-' || rest[0] == '_' || rest[0] == '.') {
      rest.remove_prefix(1);
      size_t end = 0;
      while (end < rest.size() && end < 2 && rest[end] >= '0' &&
             rest[end] <= '9') {
        ++end;
      }
      if (end > 0 && IsMonth(rest.substr(0, end)) &&
          (end == rest.size() || !(rest[end] >= '0' && rest[end] <= '9'))) {
        return ToInt(t.substr(0, 4));
      }
    } else if ((t.size() == 6 || t.size() == 8) && AllDigits(t) &&
               IsMonth(t.substr(4, 2))) {
      return ToInt(t.substr(0, 4));
    }
  }
  return 0;
}

template <typename F>
void Split(std::string_view s, char sep, F&& f) {
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    f(s.substr(start, end - start));
    start = end + 1;
  }
}

std::string_view QueryOf(const url::Url& u) {
  std::string_view q = u.query();
  if (!q.empty() && q.front() == '?') q.remove_prefix(1);
  return q;
}

}  // namespace

int TrapGuard::DateYear(const url::Url& u) {
  // Path: /YYYY/MM/ as two segments, or one token like 2031-05-01.
  std::vector<std::string_view> segs;
  Split(u.path(), '/', [&](std::string_view s) {
    if (!s.empty()) segs.push_back(s);
  });
  for (size_t i = 0; i < segs.size(); ++i) {
    if (segs[i].size() == 4 && AllDigits(segs[i]) && i + 1 < segs.size() &&
        IsMonth(segs[i + 1])) {
      return ToInt(segs[i]);
    }
    if (int y = YearOfToken(segs[i]); y != 0) return y;
  }
  // Query: a value like 2031-05(-01), or year=YYYY.
  int year = 0;
  Split(QueryOf(u), '&', [&](std::string_view kv) {
    if (year != 0) return;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return;
    std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (int y = YearOfToken(v); y != 0) {
      year = y;
    } else if ((k == "year" || k == "y" || k == "yr") && v.size() == 4 &&
               AllDigits(v)) {
      year = ToInt(v);
    }
  });
  return year;
}

std::string_view TrapGuard::CheckShape(const url::Url& u) const {
  if (options_.max_path_repeats > 0) {
    std::unordered_map<std::string_view, int> seen;
    bool trap = false;
    Split(u.path(), '/', [&](std::string_view s) {
      if (!s.empty() && ++seen[s] > options_.max_path_repeats) trap = true;
    });
    if (trap) return "path_repeats";
  }
  if (options_.calendar) {
    if (int y = DateYear(u); y != 0) {
      if (y < options_.current_year - options_.calendar_years_back ||
          y > options_.current_year + options_.calendar_years_ahead) {
        return "calendar";
      }
    }
  }
  if (options_.max_query_params > 0 && u.has_query()) {
    int params = 0;
    Split(QueryOf(u), '&', [&](std::string_view kv) {
      if (!kv.empty()) ++params;
    });
    if (params > options_.max_query_params) return "query_params";
  }
  return "";
}

std::string_view TrapGuard::Admit(std::string_view host_key,
                                  const url::Url& u) {
  HostCount* host = nullptr;
  if (options_.host_budget > 0) {
    host = &per_host_[std::string(host_key)];
    if (host->admitted >= options_.host_budget) return "host_budget";
  }
  if (options_.max_query_variants > 0 && u.has_query()) {
    std::string key(host_key);
    key += '\n';
    key += u.path();
    const uint64_t hash = XXH3_64bits(key.data(), key.size());
    PathCount& path = per_path_[hash];
    if (path.variants >= options_.max_query_variants) return "query_variants";
    ++path.variants;
    if (!path.dirty) {
      path.dirty = true;
      dirty_paths_.push_back(hash);
    }
  }
  if (host != nullptr) {
    ++host->admitted;
    if (!host->dirty) {
      host->dirty = true;
      dirty_hosts_.emplace_back(host_key);
    }
  }
  return "";
}

uint64_t TrapGuard::Admitted(std::string_view host_key) const {
  auto it = per_host_.find(std::string(host_key));
  return it == per_host_.end() ? 0 : it->second.admitted;
}

void TrapGuard::ForEachDirty(
    const std::function<void(const std::string&, uint64_t)>& host,
    const std::function<void(uint64_t, uint32_t)>& path) const {
  for (const std::string& key : dirty_hosts_) {
    auto it = per_host_.find(key);
    if (it != per_host_.end()) host(key, it->second.admitted);
  }
  for (uint64_t key : dirty_paths_) {
    auto it = per_path_.find(key);
    if (it != per_path_.end()) path(key, it->second.variants);
  }
}

void TrapGuard::ClearDirty() {
  for (const std::string& key : dirty_hosts_) {
    auto it = per_host_.find(key);
    if (it != per_host_.end()) it->second.dirty = false;
  }
  for (uint64_t key : dirty_paths_) {
    auto it = per_path_.find(key);
    if (it != per_path_.end()) it->second.dirty = false;
  }
  dirty_hosts_.clear();
  dirty_paths_.clear();
}

void TrapGuard::RestoreHost(std::string_view host_key, uint64_t admitted) {
  if (admitted > 0) per_host_[std::string(host_key)].admitted = admitted;
}

void TrapGuard::RestoreVariants(uint64_t key, uint32_t variants) {
  if (variants > 0) per_path_[key].variants = variants;
}

}  // namespace crawld::conf
