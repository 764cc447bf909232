#include "conf/traps.h"

#include <xxhash.h>

#include <string>
#include <unordered_map>
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

// The non-empty segments of a path, one after the other, without a copy.
class Segments {
 public:
  explicit Segments(std::string_view path) : rest_(path) {}
  // The next non-empty segment, or false at the end.
  bool Next(std::string_view* seg) {
    while (!done_) {
      const size_t slash = rest_.find('/');
      if (slash == std::string_view::npos) {
        *seg = rest_;
        done_ = true;
      } else {
        *seg = rest_.substr(0, slash);
        rest_.remove_prefix(slash + 1);
      }
      if (!seg->empty()) return true;
    }
    return false;
  }

 private:
  std::string_view rest_;
  bool done_ = false;
};

}  // namespace

int TrapGuard::DateYear(const url::Url& u) {
  // Path: /YYYY/MM/ as two segments, or one token like 2031-05-01.
  // (Walked with one segment of lookahead: no vector per URL, issue 16.)
  Segments segs(u.path());
  std::string_view cur, next;
  bool have = segs.Next(&cur);
  while (have) {
    const bool have_next = segs.Next(&next);
    if (cur.size() == 4 && AllDigits(cur) && have_next && IsMonth(next)) {
      return ToInt(cur);
    }
    if (int y = YearOfToken(cur); y != 0) return y;
    cur = next;
    have = have_next;
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

namespace {

// True when some non-empty segment of `path` occurs more than `max` times.
// Paths of a few segments (nearly all) are counted in a small array on the
// stack; longer ones in a hash map, so a hostile path of thousands of
// segments stays linear.
bool SegmentRepeatsOver(std::string_view path, int max) {  // max >= 1
  constexpr size_t kSmall = 16;
  struct Count {
    std::string_view seg;
    int n;
  };
  Count small[kSmall];
  size_t used = 0;
  Segments segs(path);
  std::string_view seg;
  while (segs.Next(&seg)) {
    size_t k = 0;
    while (k < used && small[k].seg != seg) ++k;
    if (k < used) {
      if (++small[k].n > max) return true;
      continue;
    }
    if (used == kSmall) {
      std::unordered_map<std::string_view, int> seen;
      bool trap = false;
      Split(path, '/', [&](std::string_view s) {
        if (!s.empty() && ++seen[s] > max) trap = true;
      });
      return trap;
    }
    small[used++] = {seg, 1};
  }
  return false;
}

}  // namespace

std::string_view TrapGuard::CheckShape(const url::Url& u) const {
  if (options_.max_path_repeats > 0 &&
      SegmentRepeatsOver(u.path(), options_.max_path_repeats)) {
    return "path_repeats";
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
    host = &per_host_[HostHash(host_key)];
    if (host->admitted >= options_.host_budget) return "host_budget";
  }
  if (options_.max_query_variants > 0 && u.has_query()) {
    std::string& key = path_key_;  // reused: no allocation per URL
    key.assign(host_key);
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

uint64_t TrapGuard::HostHash(std::string_view host_key) {
  return XXH3_64bits(host_key.data(), host_key.size());
}

uint64_t TrapGuard::Admitted(std::string_view host_key) const {
  auto it = per_host_.find(HostHash(host_key));
  return it == per_host_.end() ? 0 : it->second.admitted;
}

void TrapGuard::ForEachDirty(
    const std::function<void(const std::string&, uint64_t)>& host,
    const std::function<void(uint64_t, uint32_t)>& path) const {
  for (const std::string& key : dirty_hosts_) {
    auto it = per_host_.find(HostHash(key));
    if (it != per_host_.end()) host(key, it->second.admitted);
  }
  for (uint64_t key : dirty_paths_) {
    auto it = per_path_.find(key);
    if (it != per_path_.end()) path(key, it->second.variants);
  }
}

void TrapGuard::ClearDirty() {
  for (const std::string& key : dirty_hosts_) {
    auto it = per_host_.find(HostHash(key));
    if (it != per_host_.end()) it->second.dirty = false;
  }
  for (uint64_t key : dirty_paths_) {
    auto it = per_path_.find(key);
    if (it != per_path_.end()) it->second.dirty = false;
  }
  // Released, not cleared: after a burst of new hosts the capacity would
  // stay as a few dozen bytes per host for the rest of the crawl.
  std::vector<std::string>().swap(dirty_hosts_);
  std::vector<uint64_t>().swap(dirty_paths_);
}

void TrapGuard::RestoreHost(std::string_view host_key, uint64_t admitted) {
  if (admitted > 0) per_host_[HostHash(host_key)].admitted = admitted;
}

void TrapGuard::RestoreVariants(uint64_t key, uint32_t variants) {
  if (variants > 0) per_path_[key].variants = variants;
}

}  // namespace crawld::conf
