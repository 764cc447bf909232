// tests/webfarm/farm.cc: config loading, routing, rendering and the manifest
// BFS. See docs/WEBFARM.md for the contract these implement.
#include "tests/webfarm/farm.h"

#include <toml++/toml.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <ctime>
#include <deque>
#include <iterator>
#include <unordered_set>

namespace crawld::webfarm {
namespace {

// splitmix64: fast, good enough for filler and link choice, and stable
// across platforms (the manifest depends on it).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t a, uint64_t b, uint64_t c) : s_(Mix(Mix(Mix(a) ^ b) ^ c)) {}
  uint64_t Next() { return Mix(s_++); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }

 private:
  uint64_t s_;
};

uint64_t HashBytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 15];
  return out;
}

// Strict decimal: no sign, no leading zeros (so every resource has exactly
// one spelling and the manifest is unambiguous).
bool ParseNum(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 15) return false;
  if (s.size() > 1 && s[0] == '0') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Parses "<prefix><n><suffix>" into n.
bool Match(std::string_view path, std::string_view prefix,
           std::string_view suffix, int64_t* n) {
  if (path.size() < prefix.size() + suffix.size()) return false;
  if (!path.starts_with(prefix) || !path.ends_with(suffix)) return false;
  return ParseNum(
      path.substr(prefix.size(), path.size() - prefix.size() - suffix.size()),
      n);
}

void AppendNum(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, p);
}

std::string_view CharsetName(Charset c) {
  switch (c) {
    case Charset::kWindows1252:
      return "windows-1252";
    case Charset::kShiftJis:
      return "shift_jis";
    case Charset::kIso88591:
      return "iso-8859-1";
    case Charset::kUtf8:
      break;
  }
  return "utf-8";
}

std::string_view HtmlType(Charset c) {
  switch (c) {
    case Charset::kWindows1252:
      return "text/html; charset=windows-1252";
    case Charset::kShiftJis:
      return "text/html; charset=shift_jis";
    case Charset::kIso88591:
      return "text/html; charset=iso-8859-1";
    case Charset::kUtf8:
      break;
  }
  return "text/html; charset=utf-8";
}

// Non-ASCII words, as bytes in each charset.
const std::vector<std::string_view>& CharsetWords(Charset c) {
  static const auto* k1252 = new std::vector<std::string_view>{
      "caf\xe9", "na\xefve", "\x80uro", "\x93quoted\x94", "r\xe9sum\xe9"};
  static const auto* k88591 = new std::vector<std::string_view>{
      "caf\xe9", "na\xefve", "gar\xe7on", "\xbfqu\xe9?",
      "\xfc"
      "ber"};
  static const auto* kSjis = new std::vector<std::string_view>{
      "\x93\xfa\x96\x7b\x8c\xea", "\x82\xa0\x82\xa2\x82\xa4",
      "\x83\x65\x83\x58\x83\x67", "\x93\x8c\x8b\x9e"};
  static const auto* kNone = new std::vector<std::string_view>{};
  switch (c) {
    case Charset::kWindows1252:
      return *k1252;
    case Charset::kShiftJis:
      return *kSjis;
    case Charset::kIso88591:
      return *k88591;
    case Charset::kUtf8:
      break;
  }
  return *kNone;
}

constexpr std::string_view kWords[] = {
    "lorem",  "ipsum",        "dolor",   "sit",    "amet",  "crawler",
    "polite", "farm",         "host",    "page",   "link",  "synthetic",
    "web",    "test",         "quick",   "brown",  "fox",   "jumps",
    "over",   "lazy",         "dog",     "robots", "queue", "frontier",
    "fetch",  "parse",        "archive", "record", "index", "seed",
    "graph",  "deterministic"};

// ---------------------------------------------------------------- config

Status KeyError(const std::string& file, const toml::node& n,
                const std::string& msg) {
  return Status::InvalidArgument(
      file + ":" + std::to_string(n.source().begin.line) + ": " + msg);
}

Result<int64_t> GetInt(const std::string& file, const toml::node& n,
                       std::string_view key, int64_t lo, int64_t hi) {
  auto v = n.value<int64_t>();
  if (!v || *v < lo || *v > hi) {
    return KeyError(file, n,
                    std::string(key) + " must be an integer in [" +
                        std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return *v;
}

Result<bool> GetBool(const std::string& file, const toml::node& n,
                     std::string_view key) {
  auto v = n.value<bool>();
  if (!v) return KeyError(file, n, std::string(key) + " must be a boolean");
  return *v;
}

Result<Robots> ParseRobots(const std::string& file, const toml::node& n) {
  auto v = n.value<std::string>();
  static const std::pair<std::string_view, Robots> kNames[] = {
      {"allow", Robots::kAllow},
      {"disallow", Robots::kDisallow},
      {"crawl-delay", Robots::kCrawlDelay},
      {"404", Robots::k404},
      {"nofile", Robots::k404},
      {"500", Robots::k500},
      {"timeout", Robots::kTimeout},
      {"redirect", Robots::kRedirect},
      {"flaky", Robots::kFlaky}};
  if (v) {
    for (const auto& [name, r] : kNames) {
      if (*v == name) return r;
    }
  }
  return KeyError(file, n,
                  "robots must be one of allow, disallow, crawl-delay, 404, "
                  "nofile, 500, timeout, redirect, flaky");
}

// A string or an array of strings.
Result<std::vector<std::string>> GetStrings(const std::string& file,
                                            const toml::node& n,
                                            std::string_view key) {
  std::vector<std::string> out;
  if (auto s = n.value<std::string>()) {
    out.push_back(*s);
    return out;
  }
  if (const auto* arr = n.as_array()) {
    for (const auto& e : *arr) {
      if (auto s = e.value<std::string>()) {
        out.push_back(*s);
      } else if (auto i = e.value<int64_t>()) {
        out.push_back(std::to_string(*i));
      } else {
        return KeyError(file, e, std::string(key) + ": expected strings");
      }
    }
    return out;
  }
  return KeyError(file, n,
                  std::string(key) + " must be a string or array of strings");
}

// hosts = 3 | [3, 4] | "10-19" | "1,3,5-7"
Status ParseHostSet(const std::string& file, const toml::node& n, int hosts,
                    std::vector<int>* out) {
  auto add = [&](int64_t lo, int64_t hi) -> Status {
    if (lo < 0 || hi >= hosts || lo > hi) {
      return KeyError(file, n, "profile host range out of [0, hosts)");
    }
    for (int64_t i = lo; i <= hi; ++i) out->push_back(static_cast<int>(i));
    return Status::Ok();
  };
  if (auto i = n.value<int64_t>()) return add(*i, *i);
  if (const auto* arr = n.as_array()) {
    for (const auto& e : *arr) {
      auto i = e.value<int64_t>();
      if (!i) return KeyError(file, e, "profile hosts: expected integers");
      if (Status s = add(*i, *i); !s.ok()) return s;
    }
    return Status::Ok();
  }
  if (auto s = n.value<std::string>()) {
    std::string_view rest = *s;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
      size_t dash = part.find('-');
      int64_t lo = 0, hi = 0;
      bool ok = dash == std::string_view::npos
                    ? ParseNum(part, &lo) && (hi = lo, true)
                    : ParseNum(part.substr(0, dash), &lo) &&
                          ParseNum(part.substr(dash + 1), &hi);
      if (!ok) return KeyError(file, n, "bad host range \"" + *s + "\"");
      if (Status st = add(lo, hi); !st.ok()) return st;
    }
    return Status::Ok();
  }
  return KeyError(file, n, "profile hosts must be an int, array or range");
}

Status ApplyProfileKey(const std::string& file, std::string_view key,
                       const toml::node& n, int hosts, Profile* p) {
  auto set_int = [&](auto* field, int64_t lo, int64_t hi) -> Status {
    auto v = GetInt(file, n, key, lo, hi);
    if (!v.ok()) return v.status();
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(*v);
    return Status::Ok();
  };
  auto set_bool = [&](bool* field) -> Status {
    auto v = GetBool(file, n, key);
    if (!v.ok()) return v.status();
    *field = *v;
    return Status::Ok();
  };
  if (key == "robots") {
    auto r = ParseRobots(file, n);
    if (!r.ok()) return r.status();
    p->robots = *r;
    return Status::Ok();
  }
  if (key == "robots_real") {
    auto r = ParseRobots(file, n);
    if (!r.ok()) return r.status();
    if (*r != Robots::kAllow && *r != Robots::kDisallow &&
        *r != Robots::kCrawlDelay) {
      return KeyError(file, n,
                      "robots_real must be allow, disallow or crawl-delay");
    }
    p->robots_real = *r;
    return Status::Ok();
  }
  if (key == "crawl_delay") return set_int(&p->crawl_delay, 0, 3600);
  if (key == "trap" || key == "redirects") {
    auto v = GetStrings(file, n, key);
    if (!v.ok()) return v.status();
    for (const std::string& s : *v) {
      if (key == "trap" && s == "calendar") {
        p->trap_calendar = true;
      } else if (key == "trap" && s == "deep") {
        p->trap_deep = true;
      } else if (key == "trap" && s == "session") {
        p->trap_session = true;
      } else if (key == "redirects" && s == "chain") {
        p->redirect_chain = true;
      } else if (key == "redirects" && s == "loop") {
        p->redirect_loop = true;
      } else if (key == "redirects" && s == "cross-host") {
        p->redirect_cross = true;
      } else {
        return KeyError(file, n,
                        std::string(key) + ": unknown value \"" + s + "\"");
      }
    }
    return Status::Ok();
  }
  if (key == "errors") {
    auto v = GetStrings(file, n, key);
    if (!v.ok()) return v.status();
    p->errors.clear();
    for (const std::string& s : *v) {
      int64_t code = 0;
      if (!ParseNum(s, &code) || code < 400 || code > 599) {
        return KeyError(file, n, "errors: \"" + s + "\" is not a 4xx/5xx");
      }
      p->errors.push_back(static_cast<int>(code));
    }
    return Status::Ok();
  }
  if (key == "duplicates") return set_bool(&p->duplicates);
  if (key == "mirror_of") return set_int(&p->mirror_of, 0, hosts - 1);
  if (key == "first_byte_ms") return set_int(&p->first_byte_ms, 0, 600000);
  if (key == "trickle_bytes_per_s") {
    return set_int(&p->trickle_bytes_per_s, 0, 1 << 30);
  }
  if (key == "large_bytes") {
    return set_int(&p->large_bytes, 0, int64_t{1} << 40);
  }
  if (key == "gzip_bomb") return set_bool(&p->gzip_bomb);
  if (key == "non_html") return set_bool(&p->non_html);
  if (key == "malformed") return set_bool(&p->malformed);
  if (key == "nofollow") return set_bool(&p->nofollow);
  if (key == "link_farm") return set_bool(&p->link_farm);
  if (key == "sitemap") return set_bool(&p->sitemap);
  if (key == "sitemap_pages") return set_int(&p->sitemap_pages, 1, 100000);
  if (key == "sitemap_lastmod_now") return set_bool(&p->sitemap_lastmod_now);
  if (key == "change_ms") return set_int(&p->change_ms, 0, 86400000);
  if (key == "etag_per_request") return set_bool(&p->etag_per_request);
  if (key == "link_farm_links") return set_int(&p->link_farm_links, 1, 1000);
  if (key == "link_farm_entry") {
    return set_int(&p->link_farm_entry, 0, 10000000 - 1);
  }
  if (key == "link_farm_cross_share") {
    auto v = n.value<double>();
    if (!v || !(*v >= 0 && *v <= 1)) {
      return KeyError(file, n, "link_farm_cross_share must be in [0, 1]");
    }
    p->link_farm_cross_share = *v;
    return Status::Ok();
  }
  if (key == "x_robots_tag") {
    auto s = n.value<std::string>();
    // Printable ASCII only: the value goes verbatim into a response head.
    bool ok = s && !s->empty() && s->size() <= 200;
    for (size_t i = 0; ok && i < s->size(); ++i) {
      ok = (*s)[i] >= 0x20 && (*s)[i] < 0x7f;
    }
    if (!ok) {
      return KeyError(file, n,
                      "x_robots_tag must be 1..200 printable ASCII characters");
    }
    p->x_robots_tag = *s;
    return Status::Ok();
  }
  if (key == "charset") {
    auto s = n.value<std::string>();
    if (s && *s == "windows-1252") {
      p->charset = Charset::kWindows1252;
    } else if (s && *s == "shift_jis") {
      p->charset = Charset::kShiftJis;
    } else if (s && *s == "iso-8859-1") {
      p->charset = Charset::kIso88591;
    } else if (s && *s == "utf-8") {
      p->charset = Charset::kUtf8;
    } else {
      return KeyError(file, n,
                      "charset must be utf-8, windows-1252, shift_jis or "
                      "iso-8859-1");
    }
    return Status::Ok();
  }
  return KeyError(file, n, "unknown profile key \"" + std::string(key) + "\"");
}

Result<Config> FromTable(const toml::table& t, const std::string& file) {
  Config c;
  const toml::array* profiles = nullptr;
  for (const auto& [k, n] : t) {
    std::string_view key = k.str();
    Result<int64_t> iv = int64_t{0};
    if (key == "seed") {
      auto v = n.value<int64_t>();
      if (!v) return KeyError(file, n, "seed must be an integer");
      c.seed = static_cast<uint64_t>(*v);
    } else if (key == "hosts") {
      if (!(iv = GetInt(file, n, key, 1, 100000)).ok()) return iv.status();
      c.hosts = static_cast<int>(*iv);
    } else if (key == "pages") {
      if (!(iv = GetInt(file, n, key, 1, 10000000)).ok()) return iv.status();
      c.pages = static_cast<int>(*iv);
    } else if (key == "page_bytes") {
      if (!(iv = GetInt(file, n, key, 0, 16 << 20)).ok()) return iv.status();
      c.page_bytes = static_cast<int>(*iv);
    } else if (key == "links") {
      if (!(iv = GetInt(file, n, key, 1, 10000)).ok()) return iv.status();
      c.links = static_cast<int>(*iv);
    } else if (key == "ips") {
      if (!(iv = GetInt(file, n, key, 1, 62500)).ok()) return iv.status();
      c.ips = static_cast<int>(*iv);
    } else if (key == "cross_host_share" || key == "relative_share") {
      auto v = n.value<double>();
      if (!v || *v < 0 || *v > 1) {
        return KeyError(file, n, std::string(key) + " must be in [0, 1]");
      }
      (key == "cross_host_share" ? c.cross_host_share : c.relative_share) = *v;
    } else if (key == "seeds") {
      auto v = n.value<std::string>();
      if (!v || (*v != "all" && *v != "first")) {
        return KeyError(file, n, "seeds must be \"all\" or \"first\"");
      }
      c.seeds_all = *v == "all";
    } else if (key == "profile") {
      profiles = n.as_array();
      if (profiles == nullptr) {
        return KeyError(file, n, "profile must be an array of tables");
      }
    } else {
      return KeyError(file, n, "unknown key \"" + std::string(key) + "\"");
    }
  }
  c.profiles.assign(c.hosts, Profile{});
  if (profiles != nullptr) {
    for (const auto& pn : *profiles) {
      const toml::table* pt = pn.as_table();
      if (pt == nullptr) return KeyError(file, pn, "profile must be a table");
      const toml::node* hn = pt->get("hosts");
      if (hn == nullptr) return KeyError(file, pn, "profile without hosts");
      std::vector<int> hosts;
      if (Status s = ParseHostSet(file, *hn, c.hosts, &hosts); !s.ok()) {
        return s;
      }
      // Later profiles override earlier ones key by key.
      for (int h : hosts) {
        for (const auto& [k, n] : *pt) {
          if (k.str() == "hosts") continue;
          Status s = ApplyProfileKey(file, k.str(), n, c.hosts, &c.profiles[h]);
          if (!s.ok()) return s;
        }
      }
    }
  }
  bool any_normal = false, any_farm = false;
  for (const Profile& p : c.profiles) {
    (p.link_farm ? any_farm : any_normal) = true;
  }
  auto host_error = [&](int h, const std::string& msg) {
    return Status::InvalidArgument(file + ": host " + std::to_string(h) + ": " +
                                   msg);
  };
  if (!any_normal) {
    return Status::InvalidArgument(
        file + ": at least one host must not be a link_farm host");
  }
  for (int h = 0; h < c.hosts; ++h) {
    const Profile& p = c.profiles[h];
    int m = p.mirror_of;
    if (m >= 0 && (m == h || c.profiles[m].mirror_of >= 0)) {
      return host_error(h, "mirror_of must name a different, non-mirror host");
    }
    // A mirror copies a /p/ link graph, which spam hosts do not have.
    if (m >= 0 && (p.link_farm || c.profiles[m].link_farm)) {
      return host_error(h, "mirror_of cannot involve a link_farm host");
    }
    if (p.sitemap && (p.link_farm || (p.robots != Robots::kAllow &&
                                      p.robots != Robots::kDisallow &&
                                      p.robots != Robots::kCrawlDelay))) {
      // The Sitemap: lines live in a robots.txt that answers 200.
      return host_error(h,
                        "sitemap needs robots allow, disallow or "
                        "crawl-delay, and no link_farm");
    }
    if (p.link_farm_entry >= 0) {
      if (p.link_farm) {
        return host_error(h, "link_farm_entry must be on a normal host");
      }
      if (!any_farm) {
        return host_error(h, "link_farm_entry needs a link_farm host");
      }
      if (p.link_farm_entry >= c.pages) {
        return host_error(h, "link_farm_entry must be a page in [0, pages)");
      }
    }
  }
  return c;
}

constexpr std::string_view kLine =
    "<p>large body filler line, streamed and never buffered whole</p>\n";

const std::string& LargePattern() {
  static const std::string* kPattern = [] {
    auto* s = new std::string;
    while (s->size() < (64 << 10) + kLine.size()) s->append(kLine);
    return s;
  }();
  return *kPattern;
}

// The /sm/ pages with names (Kind::kSitemapPage, Route::a < 0).
constexpr std::pair<int64_t, std::string_view> kNamedSitemapPages[] = {
    {-1, "/sm/before-error.html"},  // in /sitemap-bad.xml before the error
    {-2, "/sm/cross.html"},         // in another host's /sitemap-cross.xml
    {-3, "/sm/over.html"},          // the 50,001st URL of /sitemap-big.xml
    {-4, "/sm/after-error.html"},   // in /sitemap-bad.xml after the error
    {-5, "/sm/foreign.html"},       // in another host's /sitemap-foreign.xml
};

std::string_view NamedSitemapPage(int64_t a) {
  for (const auto& [id, path] : kNamedSitemapPages) {
    if (id == a) return path;
  }
  return "";
}

// A gzip member of `data` (zlib's gzip wrapper: mtime 0, so deterministic).
std::string GzipBytes(std::string_view data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace

std::string_view SitemapPath(int file) {
  static constexpr std::string_view kPaths[kSitemapFileCount] = {
      "/sitemap.xml",         "/sitemap_index.xml", "/sitemap-gz.xml.gz",
      "/sitemap-big.xml",     "/sitemap-bad.xml",   "/sitemap-foreign.xml",
      "/sitemap-bomb.xml.gz", "/sitemap-cross.xml"};
  return file >= 0 && file < kSitemapFileCount ? kPaths[file] : "";
}

int64_t NowMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

Result<Config> ParseConfig(std::string_view text, const std::string& name) {
  try {
    toml::table t = toml::parse(text, name);
    return FromTable(t, name);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(name + ":" +
                                   std::to_string(e.source().begin.line) +
                                   ": " + std::string(e.description()));
  }
}

Result<Config> LoadConfig(const std::string& path) {
  try {
    toml::table t = toml::parse_file(path);
    return FromTable(t, path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(path + ":" +
                                   std::to_string(e.source().begin.line) +
                                   ": " + std::string(e.description()));
  }
}

// ------------------------------------------------------------------ Site

Site::Site(Config config, int port) : config_(std::move(config)), port_(port) {
  std::unordered_set<std::string> seen_ips;
  for (int i = 0; i < config_.hosts; ++i) {
    names_.push_back("h" + std::to_string(i) + ".farm.test");
    int slot = i % config_.ips;
    ips_.push_back("127.1." + std::to_string(slot / 250) + "." +
                   std::to_string(slot % 250 + 1));
    origins_.push_back("http://" + names_.back() + ":" + std::to_string(port_));
    by_name_.emplace(names_.back(), i);
    if (config_.profiles[i].link_farm) {
      normal_pos_.push_back(-1);
      farm_hosts_.push_back(i);
    } else {
      normal_pos_.push_back(static_cast<int>(normal_hosts_.size()));
      normal_hosts_.push_back(i);
    }
    if (seen_ips.insert(ips_.back()).second) {
      distinct_ips_.push_back(ips_.back());
    }
  }
  cross_target_.assign(config_.hosts, false);
  foreign_target_.assign(config_.hosts, false);
  for (int h = 0; h < config_.hosts; ++h) {
    if (!config_.profiles[h].sitemap) continue;
    const int n = NextSitemapHost(h);
    if (n != h) cross_target_[n] = true;
    const int f = NextNormalHost(h);
    if (f != h) foreign_target_[f] = true;
  }
}

int Site::NextSitemapHost(int host) const {
  for (int k = 1; k <= config_.hosts; ++k) {
    const int h = (host + k) % config_.hosts;
    if (config_.profiles[h].sitemap) return h;
  }
  return host;
}

std::optional<int> Site::FindHost(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

int Site::NextNormalHost(int host) const {
  for (int k = 1; k <= config_.hosts; ++k) {
    const int h = (host + k) % config_.hosts;
    if (normal_pos_[h] >= 0) return h;
  }
  return host;
}

bool Site::PathDisallowed(int host, std::string_view path) const {
  const Profile& p = config_.profiles[host];
  if (p.robots == Robots::k500 || p.robots == Robots::kTimeout) return true;
  bool private_off =
      p.robots == Robots::kDisallow || p.robots == Robots::kFlaky ||
      (p.robots == Robots::kRedirect && p.robots_real == Robots::kDisallow);
  return private_off && path.starts_with("/private/");
}

Route Site::Classify(int host, std::string_view target) const {
  const Profile& p = config_.profiles[host];
  Route r;
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  const int64_t pages = config_.pages;
  int64_t n = 0, m = 0;
  auto set = [&r](Kind k, int64_t a = 0, int64_t b = 0) {
    r.kind = k;
    r.a = a;
    r.b = b;
    return r;
  };
  if (q != std::string_view::npos) {
    if (p.trap_session && !p.link_farm && query.starts_with("sid=") &&
        query.size() > 4 &&
        query.find_first_of("&=", 4) == std::string_view::npos &&
        Match(path, "/p/", ".html", &n) && n < pages) {
      r.sid = query.substr(4);
      return set(Kind::kSession, n);
    }
    return r;
  }
  if (path == "/") return set(Kind::kSlash);
  if (path == "/robots.txt") return set(Kind::kRobots);
  if (path == "/robots-real.txt" && p.robots == Robots::kRedirect) {
    return set(Kind::kRobotsReal);
  }
  if (p.sitemap && path.starts_with("/sitemap")) {
    for (int f = 0; f < kSitemapFileCount; ++f) {
      if (path == SitemapPath(f)) return set(Kind::kSitemapFile, f);
    }
    return r;
  }
  if (path.starts_with("/sm/")) {
    if (p.sitemap && Match(path, "/sm/", ".html", &n) && n < p.sitemap_pages) {
      return set(Kind::kSitemapPage, n);
    }
    for (const auto& [id, name] : kNamedSitemapPages) {
      if (path != name) continue;
      const bool served = id == -2   ? cross_target_[host]
                          : id == -5 ? foreign_target_[host]
                                     : p.sitemap;
      return served ? set(Kind::kSitemapPage, id) : r;
    }
    return r;
  }
  if (p.link_farm) {
    // A spam host has nothing but its endless /spam/ space.
    if (Match(path, "/spam/", ".html", &n)) return set(Kind::kSpam, n);
    return r;
  }
  if (Match(path, "/p/", ".html", &n)) {
    return n < pages ? set(Kind::kPage, n) : r;
  }
  if (p.duplicates && Match(path, "/dup/", ".html", &n) && n < pages) {
    return set(Kind::kDup, n);
  }
  bool private_on =
      p.robots == Robots::kDisallow || p.robots == Robots::kFlaky ||
      (p.robots == Robots::kRedirect && p.robots_real == Robots::kDisallow);
  if (private_on && Match(path, "/private/", ".html", &n) && n < pages) {
    return set(Kind::kPrivate, n);
  }
  if (p.trap_calendar && path.size() == 13 && path.starts_with("/cal/") &&
      path[9] == '/' && path[12] == '/' && ParseNum(path.substr(5, 4), &n) &&
      n >= 1000 && path.substr(10, 2) >= "01" && path.substr(10, 2) <= "12" &&
      (path[10] == '0' || path[10] == '1') && isdigit(path[11])) {
    m = (path[10] - '0') * 10 + (path[11] - '0');
    return set(Kind::kCalendar, n, m);
  }
  if (p.trap_deep && path.starts_with("/deep/") && path.size() > 6) {
    std::string_view rest = path.substr(6);
    if (rest.size() % 2 == 0) {
      bool ok = true;
      for (size_t i = 0; i < rest.size(); i += 2) {
        ok = ok && rest[i] == 'a' && rest[i + 1] == '/';
      }
      if (ok) return set(Kind::kDeep, static_cast<int64_t>(rest.size() / 2));
    }
    return r;
  }
  if (p.redirect_chain) {
    if (Match(path, "/r/chain/", "", &n) && n <= 2) return set(Kind::kChain, n);
    if (path == "/r/target/chain.html") return set(Kind::kChainTarget);
  }
  if (p.redirect_loop) {
    if (path == "/r/loop/a") return set(Kind::kLoop, 0);
    if (path == "/r/loop/b") return set(Kind::kLoop, 1);
  }
  if (p.redirect_cross && normal_hosts_.size() > 1 &&
      Match(path, "/r/x/", "", &n) && n < pages) {
    return set(Kind::kCross, n);
  }
  if (!p.errors.empty() && path.starts_with("/e/")) {
    size_t slash = path.find('/', 3);
    if (slash != std::string_view::npos &&
        ParseNum(path.substr(3, slash - 3), &n) &&
        std::find(p.errors.begin(), p.errors.end(), n) != p.errors.end() &&
        Match(path.substr(slash), "/", ".html", &m) && m <= 1) {
      return set(Kind::kError, n, m);
    }
    return r;
  }
  if (p.large_bytes > 0 && Match(path, "/large/", ".html", &n) && n <= 1) {
    return set(Kind::kLarge, n);
  }
  if (p.gzip_bomb && path == "/bomb.html") return set(Kind::kBomb);
  if (p.non_html) {
    if (path == "/f/doc.pdf") return set(Kind::kFile, 0);
    if (path == "/f/img.png") return set(Kind::kFile, 1);
    if (path == "/f/note.txt") return set(Kind::kFile, 2);
    if (path == "/f/lie.html") return set(Kind::kFile, 3);
  }
  if (p.nofollow) {
    if (Match(path, "/nf/rel/", ".html", &n) && n < pages && n % 5 == 2) {
      return set(Kind::kNofollowTarget, n, 0);
    }
    if (Match(path, "/nf/meta/", ".html", &n) && n < pages && n % 5 == 4) {
      return set(Kind::kNofollowTarget, n, 1);
    }
  }
  if (!p.x_robots_tag.empty() && Match(path, "/nf/xrt/", ".html", &n) &&
      n < pages && n % 5 == 3) {
    return set(Kind::kNofollowTarget, n, 2);
  }
  return r;
}

void Site::Links(int host, const Route& r, std::vector<Link>* links,
                 bool* meta_nofollow) const {
  links->clear();
  *meta_nofollow = false;
  const Profile& p = config_.profiles[host];
  const int pages = config_.pages;
  auto add = [links](std::string href, bool nofollow = false) {
    links->push_back(Link{std::move(href), nofollow});
  };
  switch (r.kind) {
    case Kind::kPage:
    case Kind::kDup:
    case Kind::kSession: {
      const int src = p.mirror_of >= 0 ? p.mirror_of : host;
      const int64_t n = r.a;
      Rng rng(config_.seed, static_cast<uint64_t>(src),
              static_cast<uint64_t>(n));
      const std::string& origin = Origin(host);
      auto same = [&](int64_t target) {
        std::string href;
        if (rng.Uniform() < config_.relative_share) {
          switch (rng.Below(4)) {
            case 0:
              href = "../p/";
              break;
            case 1:
              break;
            case 2:
              href = "./";
              break;
            default:
              href = "/p/";
          }
        } else {
          href = origin + "/p/";
        }
        AppendNum(&href, target);
        href += ".html";
        add(std::move(href));
      };
      if (n + 1 < pages) same(n + 1);
      for (int k = 1; k < config_.links; ++k) {
        // Among normal hosts only: the farm is reached by one link alone.
        // Without link-farm hosts this draws exactly what it always did.
        const size_t normal = normal_hosts_.size();
        if (normal > 1 && rng.Uniform() < config_.cross_host_share) {
          size_t t = rng.Below(normal - 1);
          if (t >= static_cast<size_t>(normal_pos_[src])) ++t;
          std::string href = Origin(normal_hosts_[t]) + "/p/";
          AppendNum(&href, static_cast<int64_t>(rng.Below(pages)));
          href += ".html";
          add(std::move(href));
        } else {
          same(static_cast<int64_t>(rng.Below(pages)));
        }
      }
      if (r.kind == Kind::kSession) {
        // Every same-host page link carries a fresh session id derived from
        // the current one: an infinite, deterministic URL space.
        uint64_t h = HashBytes(r.sid);
        std::vector<Link> out;
        for (size_t i = 0; i < links->size(); ++i) {
          std::string& href = (*links)[i].href;
          if (href.starts_with("http://") && !href.starts_with(origin + "/")) {
            out.push_back((*links)[i]);
            continue;
          }
          size_t slash = href.rfind('/');
          std::string file =
              slash == std::string::npos ? href : href.substr(slash + 1);
          out.push_back(
              Link{"/p/" + file + "?sid=" + Hex(Mix(h + i + 1)), false});
        }
        *links = std::move(out);
        return;
      }
      if (p.robots == Robots::kDisallow || p.robots == Robots::kFlaky ||
          (p.robots == Robots::kRedirect &&
           p.robots_real == Robots::kDisallow)) {
        add("/private/" + std::to_string(n) + ".html");
      }
      if (p.duplicates) add("/dup/" + std::to_string(n) + ".html");
      if (p.nofollow && n % 5 == 2) {
        add("/nf/rel/" + std::to_string(n) + ".html", true);
      }
      if (p.nofollow && n % 5 == 4) {
        *meta_nofollow = true;
        add("/nf/meta/" + std::to_string(n) + ".html");
      }
      if (!p.x_robots_tag.empty() && n % 5 == 3) {
        add("/nf/xrt/" + std::to_string(n) + ".html");
      }
      if (n == 0) {
        if (p.trap_calendar) add("/cal/2024/01/");
        if (p.trap_deep) add("/deep/a/");
        if (p.trap_session) {
          add("/p/" + std::to_string(std::min(1, pages - 1)) +
              ".html?sid=" + Hex(Mix(config_.seed ^ Mix(host + 0x5e55))));
        }
        if (p.redirect_chain) add("/r/chain/0");
        if (p.redirect_loop) add("/r/loop/a");
        if (p.redirect_cross && normal_hosts_.size() > 1) {
          add("/r/x/" + std::to_string(std::min(1, pages - 1)));
        }
        for (int code : p.errors) {
          add("/e/" + std::to_string(code) + "/0.html");
          add("/e/" + std::to_string(code) + "/1.html");
        }
        if (p.large_bytes > 0) {
          add("/large/0.html");
          add("/large/1.html");
        }
        if (p.gzip_bomb) add("/bomb.html");
        if (p.non_html) {
          add("/f/doc.pdf");
          add("/f/img.png");
          add("/f/note.txt");
          add("/f/lie.html");
        }
      }
      if (n == p.link_farm_entry && !farm_hosts_.empty()) {
        add(Origin(farm_hosts_.front()) + "/spam/0.html");
      }
      return;
    }
    case Kind::kSpam: {
      // Page n's links: the next page n+1, then ids n*L+k (k = 1..L-1), so
      // every page names fresh URLs and ids grow without bound (wrapping
      // at 10^15, the largest id a URL may spell). Most go to other spam
      // hosts: the farm is dense and closed.
      constexpr int64_t kSpace = 1000000000000000;  // 10^15
      const int64_t n = r.a;
      const int64_t fan = p.link_farm_links;
      Rng rng(config_.seed ^ 0x5ba4f4a3ULL, static_cast<uint64_t>(host),
              static_cast<uint64_t>(n));
      const size_t farm = farm_hosts_.size();
      const size_t pos = static_cast<size_t>(
          std::lower_bound(farm_hosts_.begin(), farm_hosts_.end(), host) -
          farm_hosts_.begin());
      auto spam = [&](int target, int64_t id) {
        std::string href = target == host ? std::string() : Origin(target);
        href += "/spam/";
        AppendNum(&href, id);
        href += ".html";
        add(std::move(href));
      };
      spam(host, (n + 1) % kSpace);
      for (int64_t k = 1; k < fan; ++k) {
        const int64_t id = (n % kSpace * fan + k) % kSpace;
        if (farm > 1 && rng.Uniform() < p.link_farm_cross_share) {
          size_t t = rng.Below(farm - 1);
          if (t >= pos) ++t;
          spam(farm_hosts_[t], id);
        } else {
          spam(host, id);
        }
      }
      return;
    }
    case Kind::kCalendar: {
      int64_t y = r.a, mo = r.b;
      char buf[64];
      int64_t py = mo == 1 ? y - 1 : y, pm = mo == 1 ? 12 : mo - 1;
      int64_t ny = mo == 12 ? y + 1 : y, nm = mo == 12 ? 1 : mo + 1;
      if (py >= 1000) {
        snprintf(buf, sizeof buf, "/cal/%lld/%02lld/",
                 static_cast<long long>(py), static_cast<long long>(pm));
        add(buf);
      }
      if (ny <= 9999) {
        snprintf(buf, sizeof buf, "/cal/%lld/%02lld/",
                 static_cast<long long>(ny), static_cast<long long>(nm));
        add(buf);
      }
      add("/p/0.html");
      return;
    }
    case Kind::kDeep:
      add("a/");
      add("/p/0.html");
      return;
    case Kind::kSlash:
      add(p.link_farm ? "/spam/0.html" : "/p/0.html");
      return;
    case Kind::kChainTarget:
    case Kind::kPrivate:
    case Kind::kNofollowTarget:
    case Kind::kSitemapPage:
      add("/p/0.html");
      return;
    default:
      return;
  }
}

void Site::RenderPage(int host, const Route& r, Response* out) const {
  const Profile& p = config_.profiles[host];
  std::vector<Link> links;
  bool meta_nofollow = false;
  Links(host, r, &links, &meta_nofollow);
  out->status = 200;
  out->content_type = HtmlType(p.charset);
  std::string& b = out->body;
  b.clear();
  const bool big = r.kind == Kind::kPage || r.kind == Kind::kDup ||
                   r.kind == Kind::kSession || r.kind == Kind::kSpam;
  b.reserve((big ? config_.page_bytes : 0) + 256 + links.size() * 80);
  std::string title;
  switch (r.kind) {
    case Kind::kPage:
    case Kind::kDup:
      title = "Page " + std::to_string(r.a);
      break;
    case Kind::kSession:
      title = "Session page " + std::to_string(r.a);
      break;
    case Kind::kSpam:
      title = "Spam " + std::to_string(r.a);
      break;
    case Kind::kCalendar:
      title = "Calendar " + std::to_string(r.a) + "-" + std::to_string(r.b);
      break;
    case Kind::kDeep:
      title = "Deep " + std::to_string(r.a);
      break;
    case Kind::kPrivate:
      title = "Private " + std::to_string(r.a);
      break;
    case Kind::kNofollowTarget:
      title = "Nofollow target " + std::to_string(r.a);
      break;
    case Kind::kSitemapPage:
      title = r.a >= 0 ? "Sitemap page " + std::to_string(r.a)
                       : "Sitemap page " +
                             std::string(NamedSitemapPage(r.a).substr(4));
      break;
    default:
      title = "Index";
  }
  const std::string_view cs = CharsetName(p.charset);
  if (!p.malformed) {
    b += "<!DOCTYPE html>\n<html><head><meta charset=\"";
    b += cs;
    b += "\"><title>";
    b += title;
    b += "</title>";
    if (meta_nofollow) b += "<meta name=\"robots\" content=\"nofollow\">";
    b += "</head>\n<body>\n<h1>";
    b += title;
    b += "</h1>\n<ul>\n";
    for (size_t i = 0; i < links.size(); ++i) {
      b += "<li><a href=\"";
      b += links[i].href;
      b += links[i].nofollow ? "\" rel=\"nofollow\">link " : "\">link ";
      AppendNum(&b, static_cast<int64_t>(i));
      b += "</a></li>\n";
    }
    b += "</ul>\n<p>";
  } else {
    // Tag soup a browser-conformant parser (Gumbo, html5lib) still reads:
    // unclosed elements, misnested inline tags, unquoted attributes.
    b += "<html><head><meta charset=";
    b += cs;
    b += "><title>";
    b += title;
    b += "</title>";
    if (meta_nofollow) b += "<meta name=robots content=nofollow>";
    b += "\n<body><div class=main><p>Intro <b><i>";
    b += title;
    b += "</b></i>\n<table><tr><td>\n";
    for (size_t i = 0; i < links.size(); ++i) {
      const std::string& h = links[i].href;
      const char* rel = links[i].nofollow ? " rel=nofollow" : "";
      if (i % 3 == 0 && h.find_first_of("=?'\"` <>") == std::string::npos) {
        b += "<p><a href=";
        b += h;
        b += rel;
        b += ">link ";
      } else if (i % 3 == 1) {
        b += "<span><a class=l href='";
        b += h;
        b += "'";
        b += rel;
        b += ">link ";
      } else {
        b += "<li><a\nhref=\"";
        b += h;
        b += "\"";
        b += rel;
        b += " >link ";
      }
      AppendNum(&b, static_cast<int64_t>(i));
      b += "</a>\n";
    }
    b += "</table>\n<p>";
  }
  if (big) {
    const int src = p.mirror_of >= 0 ? p.mirror_of : host;
    Rng rng(config_.seed ^ 0xf111e5ULL, static_cast<uint64_t>(src),
            static_cast<uint64_t>(r.a));
    const auto& special = CharsetWords(p.charset);
    const size_t want = static_cast<size_t>(config_.page_bytes);
    int words = 0;
    while (b.size() + 16 < want) {
      uint64_t x = rng.Next();
      if (!special.empty() && (x & 7) == 0) {
        b += special[(x >> 3) % special.size()];
      } else {
        b += kWords[(x >> 3) % std::size(kWords)];
      }
      if (++words % 12 == 0) {
        b += ".</p>\n<p>";
      } else {
        b += ' ';
      }
    }
  } else if (!CharsetWords(p.charset).empty()) {
    b += CharsetWords(p.charset)[0];
  }
  b += p.malformed ? "\n<li>unclosed\n</div></span>\n"
                   : "</p>\n</body></html>\n";
}

void Site::Respond(int host, const Route& r, int count, Response* out,
                   int64_t now_us) {
  const Profile& p = config_.profiles[host];
  *out = Response{};
  auto text = [out](int status, std::string_view type, std::string body) {
    out->status = status;
    out->content_type = type;
    out->body = std::move(body);
  };
  auto robots_body = [&](Robots v) {
    switch (v) {
      case Robots::kDisallow:
        return std::string("User-agent: *\nDisallow: /private/\n");
      case Robots::kCrawlDelay:
        return "User-agent: *\nCrawl-delay: " + std::to_string(p.crawl_delay) +
               "\nDisallow:\n";
      default:
        return std::string("User-agent: *\nDisallow:\n");
    }
  };
  // Sitemap: lines of a sitemap host: its own two, and the cross sitemap
  // of every host whose next sitemap host this is (cross-submission).
  auto sitemap_lines = [&]() {
    std::string lines;
    if (!p.sitemap) return lines;
    lines += "\nSitemap: " + Origin(host) + std::string(SitemapPath(0)) + "\n";
    lines += "Sitemap: " + Origin(host) + std::string(SitemapPath(1)) + "\n";
    for (int s = 0; s < config_.hosts; ++s) {
      if (s != host && config_.profiles[s].sitemap &&
          NextSitemapHost(s) == host) {
        lines += "Sitemap: " + Origin(s) +
                 std::string(SitemapPath(kSitemapCross)) + "\n";
      }
    }
    return lines;
  };
  switch (r.kind) {
    case Kind::kNotFound:
      text(404, "text/html; charset=utf-8",
           "<html><body><h1>404 Not Found</h1></body></html>\n");
      return;
    case Kind::kRobots:
      switch (p.robots) {
        case Robots::k404:
          text(404, "text/plain", "not found\n");
          return;
        case Robots::k500:
          text(500, "text/plain", "internal server error\n");
          return;
        case Robots::kTimeout:
          out->hold = true;
          return;
        case Robots::kRedirect:
          out->status = 301;
          out->content_type = "text/plain";
          out->location = RedirectLocation(host, r);
          return;
        case Robots::kFlaky:
          // The last good copy a crawler may keep is the first answer.
          if (count > 1) {
            text(500, "text/plain", "internal server error\n");
          } else {
            text(200, "text/plain", robots_body(Robots::kDisallow));
          }
          return;
        default:
          text(200, "text/plain", robots_body(p.robots) + sitemap_lines());
          return;
      }
    case Kind::kRobotsReal:
      text(200, "text/plain", robots_body(p.robots_real));
      return;
    case Kind::kChain:
    case Kind::kLoop:
    case Kind::kCross:
      out->status = 301;
      out->content_type = "text/plain";
      out->location = RedirectLocation(host, r);
      return;
    case Kind::kError: {
      const int code = static_cast<int>(r.a);
      std::string body = "<html><body><h1>Status " + std::to_string(code) +
                         "</h1></body></html>\n";
      if ((code == 503 || code == 429) && count > 2) {
        text(200, "text/html; charset=utf-8",
             "<html><body><h1>Recovered</h1></body></html>\n");
        return;
      }
      text(code, "text/html; charset=utf-8", std::move(body));
      if (code == 503 || code == 429) out->retry_after = 1;
      return;
    }
    case Kind::kLarge:
      out->content_type = "text/html; charset=utf-8";
      out->stream_bytes = p.large_bytes;
      return;
    case Kind::kBomb:
      out->content_type = "text/html; charset=utf-8";
      out->gzip = true;
      out->shared_body = Bomb();
      return;
    case Kind::kSitemapFile:
      if (r.a == kSitemapBomb) {
        // A gzip file (no Content-Encoding): the reader inflates it.
        out->content_type = "application/gzip";
        out->shared_body = Bomb();
        return;
      }
      text(200, r.a == kSitemapGz ? "application/gzip" : "application/xml",
           SitemapBody(host, r.a, now_us));
      return;
    case Kind::kFile:
      switch (r.a) {
        case 0:
          text(200, "application/pdf",
               "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> "
               "endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
          return;
        case 1:
          text(200, "image/png",
               std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1"
                           "\x08\x06\0\0\0\x1f\x15\xc4\x89",
                           33));
          return;
        case 2:
          text(200, "text/plain; charset=utf-8",
               "A plain text file. Not a link: http://h0.farm.test/p/0.html\n");
          return;
        default: {
          // A lying Content-Type: says HTML, is a ZIP archive. (Random
          // bytes with NULs and no binary signature would be parsed as
          // HTML, as a browser does: issue 19.)
          std::string bin(4096, '\0');
          for (size_t i = 0; i < bin.size(); ++i) {
            bin[i] = static_cast<char>(Mix(i) & 0xff);
          }
          bin.replace(0, 4, "PK\x03\x04", 4);
          text(200, "text/html", std::move(bin));
          return;
        }
      }
    default:
      RenderPage(host, r, out);
      if (SendsXRobotsTag(host, r)) out->x_robots_tag = p.x_robots_tag;
      if (r.kind == Kind::kPage && (p.change_ms > 0 || p.etag_per_request)) {
        AddVersion(host, r, count, now_us, out);
      }
      return;
  }
}

namespace {

std::string ImfFixdate(int64_t unix_s) {
  const time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// An IMF-fixdate (the only form crawld sends back) as Unix seconds; -1 when
// it is not one.
int64_t ParseImfFixdate(std::string_view s) {
  struct tm tm {};
  const std::string str(s);
  const char* end = strptime(str.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

// The even pages of a change_ms host are at version now / change_ms, the
// odd ones at version 0 forever; the version is in the body, the ETag and
// Last-Modified. etag_per_request: the body stays, the ETag counts requests.
void Site::AddVersion(int host, const Route& r, int count, int64_t now_us,
                      Response* out) const {
  const Profile& p = config_.profiles[host];
  // Version 0 of every page was last modified at this fixed time.
  constexpr int64_t kBornS = 1'767'225'600;  // 2026-01-01T00:00:00Z
  int64_t version = 0;
  int64_t modified_s = kBornS;
  if (p.change_ms > 0 && r.a % 2 == 0) {
    const int64_t now_ms = now_us / 1000;
    version = now_ms / p.change_ms;
    modified_s = version * p.change_ms / 1000;
  }
  out->body += "<!-- version " + std::to_string(version) + " -->\n";
  out->etag = "\"" + std::to_string(r.a) + "-" + std::to_string(version);
  if (p.etag_per_request) out->etag += "-r" + std::to_string(count);
  out->etag += "\"";
  out->last_modified_s = modified_s;
  out->last_modified = ImfFixdate(modified_s);
}

bool Site::NotModified(std::string_view inm, std::string_view ims,
                       Response* out) {
  if (out->status != 200 || out->etag.empty()) return false;
  bool fresh = false;
  if (!inm.empty()) {
    // Weak comparison (13.1.2): W/ prefixes do not count.
    auto opaque = [](std::string_view t) {
      if (t.substr(0, 2) == "W/") t.remove_prefix(2);
      return t;
    };
    while (!inm.empty() && !fresh) {
      const size_t comma = inm.find(',');
      std::string_view tag = inm.substr(0, comma);
      while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
      while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
      fresh = tag == "*" || opaque(tag) == opaque(out->etag);
      inm = comma == std::string_view::npos ? "" : inm.substr(comma + 1);
    }
  } else if (!ims.empty()) {
    const int64_t since = ParseImfFixdate(ims);
    fresh = since >= 0 && since >= out->last_modified_s;
  }
  if (!fresh) return false;
  out->status = 304;
  out->body.clear();
  out->x_robots_tag = {};
  return true;
}

bool Site::SendsXRobotsTag(int host, const Route& r) const {
  return !config_.profiles[host].x_robots_tag.empty() &&
         (r.kind == Kind::kPage || r.kind == Kind::kDup ||
          r.kind == Kind::kSession) &&
         r.a % 5 == 3;
}

bool Site::HeaderNofollow(int host, const Route& r) const {
  return SendsXRobotsTag(host, r) &&
         XRobotsNofollowFor(config_.profiles[host].x_robots_tag, "crawld");
}

bool XRobotsNofollowFor(std::string_view value, std::string_view agent) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
      s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
      s.remove_suffix(1);
    }
    return s;
  };
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) {
      c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  // "otherbot: nofollow" scopes the directives to one robot; a plain list
  // applies to every robot.
  const size_t colon = value.find(':');
  if (colon != std::string_view::npos) {
    std::string_view name = trim(value.substr(0, colon));
    if (!name.empty() && name.find_first_of(" ,") == std::string_view::npos) {
      if (lower(name) != lower(agent)) return false;
      value = value.substr(colon + 1);
    }
  }
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string d = lower(trim(value.substr(0, comma)));
    if (d == "nofollow" || d == "none") return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::string Site::RedirectLocation(int host, const Route& r) const {
  switch (r.kind) {
    case Kind::kRobots:
      if (config_.profiles[host].robots != Robots::kRedirect) return "";
      return Origin(host) + "/robots-real.txt";
    case Kind::kChain:
      return Origin(host) + (r.a < 2 ? "/r/chain/" + std::to_string(r.a + 1)
                                     : std::string("/r/target/chain.html"));
    case Kind::kLoop:
      return Origin(host) + (r.a == 0 ? "/r/loop/b" : "/r/loop/a");
    case Kind::kCross:
      return Origin(NextNormalHost(host)) + "/p/" + std::to_string(r.a) +
             ".html";
    default:
      return "";
  }
}

void Site::LargeChunk(int64_t offset, size_t len, std::string* out) {
  const std::string& pat = LargePattern();
  out->clear();
  out->reserve(len);
  size_t start = static_cast<size_t>(offset % kLine.size());
  while (out->size() < len) {
    size_t take = std::min(len - out->size(), pat.size() - start);
    out->append(pat, start, take);
    start = 0;
  }
}

const std::string& Site::Bomb() {
  if (!bomb_.empty()) return bomb_;
  // 1 MiB of spaces, deflated with a full flush so the block sequence is
  // byte-aligned and self-contained: repeating it 1024 times is a valid
  // deflate stream of 1 GiB. Only ~1 MiB is ever held.
  constexpr size_t kChunk = 1 << 20;
  constexpr int kRepeat = 1024;
  std::string chunk(kChunk, ' ');
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
  std::string block(deflateBound(&zs, kChunk) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(chunk.data());
  zs.avail_in = kChunk;
  zs.next_out = reinterpret_cast<Bytef*>(block.data());
  zs.avail_out = static_cast<uInt>(block.size());
  deflate(&zs, Z_FULL_FLUSH);
  block.resize(block.size() - zs.avail_out);
  char fin[64];
  zs.next_out = reinterpret_cast<Bytef*>(fin);
  zs.avail_out = sizeof fin;
  deflate(&zs, Z_FINISH);
  size_t fin_len = sizeof fin - zs.avail_out;
  deflateEnd(&zs);
  uLong crc1 = crc32(0, reinterpret_cast<const Bytef*>(chunk.data()), kChunk);
  uLong crc = crc1;
  for (int i = 1; i < kRepeat; ++i) crc = crc32_combine(crc, crc1, kChunk);
  const uint32_t isize = static_cast<uint32_t>(
      (static_cast<uint64_t>(kChunk) * kRepeat) & 0xffffffffu);
  bomb_.reserve(10 + block.size() * kRepeat + fin_len + 8);
  bomb_.append("\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03", 10);
  for (int i = 0; i < kRepeat; ++i) bomb_ += block;
  bomb_.append(fin, fin_len);
  for (int i = 0; i < 4; ++i)
    bomb_ += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) {
    bomb_ += static_cast<char>((isize >> (8 * i)) & 0xff);
  }
  return bomb_;
}

std::string Site::SitemapBody(int host, int64_t file, int64_t now_us) const {
  const Profile& p = config_.profiles[host];
  const std::string& origin = Origin(host);
  constexpr std::string_view kHead =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  constexpr std::string_view kNs =
      " xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
  std::string b(kHead);
  auto loc = [&b](std::string_view url) {
    b += "<url><loc>";
    b += url;
    b += "</loc></url>\n";
  };
  // /sm/<k>.html with every optional tag, from k alone.
  auto page = [&](int k) {
    static constexpr std::string_view kFreq[] = {
        "daily", "weekly", "monthly", "hourly", "yearly", "never", "always"};
    char extra[160];
    snprintf(extra, sizeof extra,
             "<lastmod>2026-01-%02dT12:00:00+00:00</lastmod>"
             "<changefreq>%s</changefreq><priority>0.%d</priority>",
             k % 28 + 1, kFreq[k % 7].data(), k % 10);
    b += "<url><loc>" + origin + "/sm/" + std::to_string(k) + ".html</loc>";
    b += extra;
    b += "</url>\n";
  };
  auto urlset = [&](auto&& body) {
    b += "<urlset";
    b += kNs;
    body();
    b += "</urlset>\n";
  };
  switch (file) {
    case kSitemapMain:
      urlset([&] {
        b += "<url><loc>" + origin +
             "/p/0.html</loc><changefreq>daily</changefreq>"
             "<priority>1.0</priority>";
        if (p.sitemap_lastmod_now) {
          // Rounded up: a lastmod has whole seconds, and "now" must not
          // read as earlier than a fetch a moment before the request.
          const time_t t = static_cast<time_t>((now_us + 999'999) / 1'000'000);
          struct tm tm {};
          gmtime_r(&t, &tm);
          char when[40];
          strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
          b += "<lastmod>" + std::string(when) + "</lastmod>";
        }
        b += "</url>\n";
        for (int k = 0; k < p.sitemap_pages; k += 2) page(k);
      });
      return b;
    case kSitemapGz: {
      urlset([&] {
        for (int k = 1; k < p.sitemap_pages; k += 2) page(k);
      });
      return GzipBytes(b);
    }
    case kSitemapIndex:
      b += "<sitemapindex";
      b += kNs;
      for (int f : {kSitemapGz, kSitemapBig, kSitemapBad, kSitemapForeign,
                    kSitemapBomb}) {
        b += "<sitemap><loc>" + origin + std::string(SitemapPath(f)) +
             "</loc><lastmod>2026-01-01</lastmod></sitemap>\n";
      }
      b += "</sitemapindex>\n";
      return b;
    case kSitemapBig:
      // One URL over the protocol's 50,000: /p/ pages (a crawler has them
      // anyway), then /sm/over.html, which must never be fetched.
      b.reserve(50001 * (origin.size() + 40));
      urlset([&] {
        for (int i = 0; i < 50000; ++i) {
          loc(origin + "/p/" + std::to_string(i % config_.pages) + ".html");
        }
        loc(origin + "/sm/over.html");
      });
      return b;
    case kSitemapBad:
      // Well-formed up to a mismatched end tag: a reader keeps the entry
      // before it, and cannot know the one after.
      b += "<urlset";
      b += kNs;
      loc(origin + "/sm/before-error.html");
      b += "<url><loc>" + origin + "/p/0.html</loc></urll>\n";
      loc(origin + "/sm/after-error.html");
      b += "</urlset>\n";
      return b;
    case kSitemapForeign:
      urlset([&] {
        const int f = NextNormalHost(host);
        if (f != host) loc(Origin(f) + "/sm/foreign.html");
      });
      return b;
    case kSitemapCross:
      urlset([&] {
        const int n = NextSitemapHost(host);
        if (n != host) loc(Origin(n) + "/sm/cross.html");
      });
      return b;
    default:
      return "";
  }
}

std::vector<std::string> Site::SitemapNever() const {
  std::vector<std::string> out;
  for (int h = 0; h < config_.hosts; ++h) {
    if (!config_.profiles[h].sitemap) continue;
    out.push_back(Origin(h) + "/sm/over.html");
    out.push_back(Origin(h) + "/sm/after-error.html");
    const int f = NextNormalHost(h);
    if (f != h) out.push_back(Origin(f) + "/sm/foreign.html");
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> Site::SitemapFiles() const {
  std::vector<std::string> out;
  for (int h = 0; h < config_.hosts; ++h) {
    if (!config_.profiles[h].sitemap) continue;
    for (int f = 0; f < kSitemapFileCount; ++f) {
      out.push_back(Origin(h) + std::string(SitemapPath(f)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Site::Seeds() const {
  // Never a link-farm host: the farm is reached by its one entry link.
  std::vector<std::string> out;
  const size_t n = config_.seeds_all ? normal_hosts_.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(Origin(normal_hosts_[i]) + "/p/0.html");
  }
  return out;
}

namespace {

// Removes "." and ".." segments (RFC 3986 sec. 5.2.4) from an absolute path.
std::string RemoveDots(std::string_view path) {
  std::vector<std::string_view> segs;
  size_t i = 1;
  bool trailing = false;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view seg = path.substr(i, j - i);
    trailing = seg == "." || seg == "..";
    if (seg == "..") {
      if (!segs.empty()) segs.pop_back();
    } else if (seg != ".") {
      segs.push_back(seg);
    }
    i = j + 1;
  }
  std::string out;
  for (std::string_view s : segs) {
    out += '/';
    out += s;
  }
  if (trailing || out.empty()) out += '/';
  return out;
}

}  // namespace

void Site::ComputeManifest(std::vector<std::string>* manifest,
                           std::vector<std::string>* disallowed,
                           std::vector<std::string>* sitemap_only) const {
  Bfs(/*with_sitemaps=*/true, manifest, disallowed);
  if (sitemap_only == nullptr) return;
  sitemap_only->clear();
  const bool any = std::any_of(config_.profiles.begin(), config_.profiles.end(),
                               [](const Profile& p) { return p.sitemap; });
  if (!any) return;
  // Sitemap-only: what the crawl finds with sitemaps and not without.
  std::vector<std::string> links_only, unused;
  Bfs(/*with_sitemaps=*/false, &links_only, &unused);
  std::set_difference(manifest->begin(), manifest->end(), links_only.begin(),
                      links_only.end(), std::back_inserter(*sitemap_only));
}

void Site::Bfs(bool with_sitemaps, std::vector<std::string>* manifest,
               std::vector<std::string>* disallowed) const {
  manifest->clear();
  disallowed->clear();
  // A crawler reads a host's robots.txt, and so its Sitemap: lines, when
  // it first has a URL of the host: from then on what its sitemaps list
  // is reachable too.
  std::vector<bool> reached(config_.hosts, !with_sitemaps);
  std::unordered_set<std::string> seen;
  std::deque<std::pair<int, std::string>> queue;
  auto push = [&](int h, std::string target) {
    // The farm is unbounded: none of its URLs can be listed.
    if (config_.profiles[h].link_farm) return;
    if (seen.insert(names_[h] + target).second) {
      queue.emplace_back(h, std::move(target));
    }
  };
  // Resolves a link href (one of the forms the farm writes) against the
  // page's own target.
  auto resolve = [&](int h, const std::string& base, const std::string& href) {
    if (href.starts_with("http://")) {
      size_t slash = href.find('/', 7);
      std::string_view auth = std::string_view(href).substr(
          7, slash == std::string::npos ? std::string::npos : slash - 7);
      auth = auth.substr(0, auth.find(':'));
      std::optional<int> t = FindHost(auth);
      if (t) {
        push(*t, slash == std::string::npos ? "/" : href.substr(slash));
      }
      return;
    }
    if (href.starts_with("/")) {
      push(h, href);
      return;
    }
    std::string_view bpath = std::string_view(base).substr(0, base.find('?'));
    std::string joined(bpath.substr(0, bpath.rfind('/') + 1));
    size_t q = href.find('?');
    joined += href.substr(0, q);
    std::string target = RemoveDots(joined);
    if (q != std::string::npos) target += href.substr(q);
    push(h, std::move(target));
  };
  // Marks host h0 as reached and queues what its sitemaps admit: the
  // /sm/ pages, the /p/ pages /sitemap.xml and /sitemap-big.xml list, and
  // the /sm/cross.html another host's cross sitemap lists for it. That
  // cross sitemap lives on the other host, whose robots.txt is read before
  // it is fetched: the other host is reached too.
  auto reach = [&](int h0) {
    std::vector<int> todo = {h0};
    while (!todo.empty()) {
      const int h = todo.back();
      todo.pop_back();
      if (reached[h]) continue;
      reached[h] = true;
      const Profile& p = config_.profiles[h];
      if (p.sitemap) {
        for (int k = 0; k < p.sitemap_pages; ++k) {
          push(h, "/sm/" + std::to_string(k) + ".html");
        }
        push(h, "/sm/before-error.html");
        for (int i = 0; i < std::min(config_.pages, 50000); ++i) {
          push(h, "/p/" + std::to_string(i) + ".html");
        }
      }
      if (!cross_target_[h]) continue;
      push(h, "/sm/cross.html");
      for (int a = 0; a < config_.hosts; ++a) {
        if (a != h && config_.profiles[a].sitemap && NextSitemapHost(a) == h) {
          todo.push_back(a);
        }
      }
    }
  };
  for (const std::string& seed : Seeds()) {
    push(*FindHost(seed.substr(7, seed.find(':', 7) - 7)), "/p/0.html");
  }
  std::vector<Link> links;
  while (!queue.empty()) {
    auto [h, target] = std::move(queue.front());
    queue.pop_front();
    if (!reached[h]) reach(h);
    std::string url = Origin(h) + target;
    if (PathDisallowed(h,
                       std::string_view(target).substr(0, target.find('?')))) {
      disallowed->push_back(std::move(url));
      continue;
    }
    manifest->push_back(std::move(url));
    Route r = Classify(h, target);
    if (r.kind == Kind::kChain || r.kind == Kind::kLoop ||
        r.kind == Kind::kCross) {
      resolve(h, target, RedirectLocation(h, r));
      continue;
    }
    // Trap spaces: only their entry URL is in the manifest.
    if (r.kind == Kind::kCalendar || r.kind == Kind::kDeep ||
        r.kind == Kind::kSession) {
      continue;
    }
    bool meta_nofollow = false;
    Links(h, r, &links, &meta_nofollow);
    if (meta_nofollow) continue;
    if (HeaderNofollow(h, r)) continue;
    for (const Link& l : links) {
      if (!l.nofollow) resolve(h, target, l.href);
    }
  }
  std::sort(manifest->begin(), manifest->end());
  std::sort(disallowed->begin(), disallowed->end());
}

}  // namespace crawld::webfarm
