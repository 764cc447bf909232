// tests/webfarm/farm.h: the webfarm's deterministic site model.
//
// The webfarm is the synthetic multi-host web every crawler test lives in
// (docs/WEBFARM.md). This header holds everything that does not touch a
// socket: the TOML config, the per-host behaviour profiles, the routing of a
// request target to a resource, the rendering of every response body, and the
// BFS that derives manifest.txt and disallowed.txt from the same link lists
// the pages are rendered from (so the manifest cannot drift from the pages).
//
// Robots semantics follow RFC 9309 (https://www.rfc-editor.org/rfc/rfc9309):
// a 4xx robots.txt means "crawl everything", a 5xx or unreachable one means
// "crawl nothing" (sec. 2.3.1.3 and 2.3.1.4).
//
// Deliberate simplifications: only the link forms the farm itself writes are
// resolved (absolute http URLs, "/abs", "../p/x", "x", "./x"); the farm is
// not a general URL library.
#ifndef CRAWLD_TESTS_WEBFARM_FARM_H_
#define CRAWLD_TESTS_WEBFARM_FARM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace crawld::webfarm {

enum class Robots {
  kAllow,       // "allow": User-agent: * / Disallow: (empty)
  kDisallow,    // "disallow": Disallow: /private/
  kCrawlDelay,  // "crawl-delay": allow-all plus Crawl-delay: <crawl_delay>
  k404,         // "404" and "nofile": robots.txt answers 404
  k500,         // "500": robots.txt answers 500 (crawl nothing)
  kTimeout,     // "timeout": request held without answer (crawl nothing)
  kRedirect,    // "redirect": 301 to /robots-real.txt (robots_real variant)
  kFlaky,       // "flaky": first request as kDisallow, every later one 500
};

enum class Charset { kUtf8, kWindows1252, kShiftJis, kIso88591 };

// One host's behaviour; every field defaults to the plain, well-behaved host.
struct Profile {
  Robots robots = Robots::kAllow;
  Robots robots_real = Robots::kDisallow;  // served by /robots-real.txt
  int crawl_delay = 2;                     // seconds, in robots.txt
  bool trap_calendar = false;
  bool trap_deep = false;
  bool trap_session = false;
  bool duplicates = false;  // /dup/<n>.html byte-identical to /p/<n>.html
  int mirror_of = -1;       // host index whose pages this host serves
  bool redirect_chain = false;
  bool redirect_loop = false;
  bool redirect_cross = false;
  std::vector<int> errors;      // status codes served under /e/<code>/
  int first_byte_ms = 0;        // milliseconds before the response head
  int trickle_bytes_per_s = 0;  // bytes per second for bodies; 0 = full speed
  int64_t large_bytes = 0;      // bytes of each /large/<k>.html; 0 = none
  bool gzip_bomb = false;       // /bomb.html, gzip expanding to 1 GiB
  bool non_html = false;        // /f/doc.pdf, img.png, note.txt, lie.html
  bool malformed = false;       // pages rendered as tag soup
  Charset charset = Charset::kUtf8;
  bool nofollow = false;  // meta nofollow pages and rel=nofollow links
  // Sent as X-Robots-Tag by pages with n % 5 == 3 (empty: none); those pages
  // also link to /nf/xrt/<n>.html.
  std::string x_robots_tag;
  // Link farm (docs/bench/linkfarm.md, "The webfarm's link farm"): this
  // host is a spam host. It serves only /spam/<n>.html pages (n unbounded),
  // each with link_farm_links links, a share link_farm_cross_share of them
  // to other spam hosts; it is never a seed and never in the manifest, and
  // normal pages never link to it except through link_farm_entry.
  bool link_farm = false;
  int link_farm_links = 20;            // links per spam page, >= 1
  double link_farm_cross_share = 0.9;  // 0..1 of them to other spam hosts
  // On a normal host: page /p/<n>.html also links to the first spam host's
  // /spam/0.html (-1: no link). The one way into the farm.
  int link_farm_entry = -1;
  // Sitemaps (docs/WEBFARM.md, "Sitemaps"): robots.txt names /sitemap.xml
  // and /sitemap_index.xml, which (with their children) list the pages
  // /sm/<k>.html, k in [0, sitemap_pages), that no page links to, and the
  // hostile cases: a 50,001-URL file, malformed XML, another host's URLs,
  // a gzip bomb. Needs robots allow, disallow or crawl-delay.
  bool sitemap = false;
  int sitemap_pages = 4;
  // The /sitemap.xml of a sitemap host gives /p/0.html the time of the
  // request (rounded up to a whole second) as its <lastmod>: "changed
  // just now", for recrawl tests (a
  // crawler that fetched it before reading the sitemap is told it is
  // stale).
  bool sitemap_lastmod_now = false;
  // Recrawl (docs/WEBFARM.md, "Changing pages and validators"): > 0 makes
  // the even pages /p/<2k>.html change every change_ms milliseconds (a new
  // version of the body, ETag and Last-Modified) while the odd ones never
  // change. Every /p/ page of such a host sends ETag and Last-Modified and
  // answers a matching If-None-Match (or, without one, an If-Modified-Since
  // not older than Last-Modified) with 304 and no body.
  int change_ms = 0;
  // A lying host for recrawl tests: /p/ pages send a new ETag on every
  // request (bodies unchanged), so no If-None-Match ever matches.
  bool etag_per_request = false;
};

// Whether an X-Robots-Tag value tells the robot `agent` not to follow links:
// "nofollow" or "none", either for every robot or after "<agent>:".
bool XRobotsNofollowFor(std::string_view value, std::string_view agent);

struct Config {
  uint64_t seed = 1;
  int hosts = 4;                  // number of h<i>.farm.test hosts
  int pages = 20;                 // /p/<n>.html per host
  int page_bytes = 2048;          // approximate HTML size of a page, bytes
  int links = 8;                  // links per page (before profile extras)
  double cross_host_share = 0.1;  // 0..1 of links to other hosts
  double relative_share = 0.5;    // 0..1 of same-host links written relative
  int ips = 16;                   // distinct 127.1.x.y addresses
  bool seeds_all = true;          // seeds = "all" (true) or "first"
  std::vector<Profile> profiles;  // one per host, after merging [[profile]]
};

// Parses and validates a config file. Failure: InvalidArgument with the file
// and line of the first offending key (unknown keys are errors).
[[nodiscard]] Result<Config> LoadConfig(const std::string& path);

// Same, from TOML text (for tests); `name` is used in messages.
[[nodiscard]] Result<Config> ParseConfig(std::string_view text,
                                         const std::string& name);

// The resource a request target names on one host.
enum class Kind {
  kNotFound,
  kSlash,           // "/": a tiny page linking to /p/0.html
  kRobots,          // /robots.txt
  kRobotsReal,      // /robots-real.txt (redirect profile only)
  kPage,            // /p/<a>.html
  kDup,             // /dup/<a>.html
  kPrivate,         // /private/<a>.html (disallowed)
  kSession,         // /p/<a>.html?sid=<sid>
  kCalendar,        // /cal/<a>/<b>/ (year, month)
  kDeep,            // /deep/a/.../ with <a> levels
  kChain,           // /r/chain/<a>, a in 0..2
  kChainTarget,     // /r/target/chain.html
  kLoop,            // /r/loop/a (a=0) or /r/loop/b (a=1)
  kCross,           // /r/x/<a>: 301 to another host's /p/<a>.html
  kError,           // /e/<a>/<b>.html: status a
  kLarge,           // /large/<a>.html
  kBomb,            // /bomb.html
  kFile,            // /f/...: a=0 pdf, 1 png, 2 txt, 3 lie
  kNofollowTarget,  // /nf/rel/<a>.html (b=0), /nf/meta/<a>.html (b=1),
                    // /nf/xrt/<a>.html (b=2)
  kSpam,            // /spam/<a>.html on a link-farm host
  kSitemapFile,     // a sitemap (profile sitemap); a = SitemapFile
  kSitemapPage,     // /sm/<a>.html (a >= 0), or a named /sm/ page (a < 0)
};

// The sitemap files of a host with the sitemap profile (Kind::kSitemapFile,
// Route::a), and their paths (SitemapPath).
enum SitemapFile : int {
  kSitemapMain = 0,     // /sitemap.xml: /p/0.html and the even /sm/<k>
  kSitemapIndex = 1,    // /sitemap_index.xml: the five below
  kSitemapGz = 2,       // /sitemap-gz.xml.gz: the odd /sm/<k>, gzipped
  kSitemapBig = 3,      // /sitemap-big.xml: 50,001 URLs, the last /sm/over
  kSitemapBad = 4,      // /sitemap-bad.xml: malformed after one entry
  kSitemapForeign = 5,  // /sitemap-foreign.xml: another host's URL
  kSitemapBomb = 6,     // /sitemap-bomb.xml.gz: gzip, 1 GiB of blanks
  kSitemapCross = 7,    // /sitemap-cross.xml: named by the next sitemap
                        // host's robots.txt, lists that host's /sm/cross
  kSitemapFileCount = 8,
};
std::string_view SitemapPath(int file);

struct Route {
  Kind kind = Kind::kNotFound;
  int64_t a = 0;
  int64_t b = 0;
  std::string_view sid;  // view into the classified target
};

struct Link {
  std::string href;
  bool nofollow = false;
};

// What to send for one request. Bodies are either held in `body`, or streamed
// (large pages) or shared (the gzip bomb, owned by the Site).
struct Response {
  int status = 200;
  std::string_view content_type;  // static storage
  std::string location;           // absolute URL for 3xx
  int retry_after = -1;           // seconds; -1 = no header
  bool gzip = false;              // Content-Encoding: gzip
  bool hold = false;              // never answer (robots timeout)
  std::string_view x_robots_tag;  // X-Robots-Tag value; empty = none
  // Validators (profile change_ms or etag_per_request); empty = none.
  std::string etag;
  std::string last_modified;    // an IMF-fixdate
  int64_t last_modified_s = 0;  // the same, Unix seconds
  std::string body;
  int64_t stream_bytes = -1;     // >= 0: body is this many generated bytes
  std::string_view shared_body;  // non-empty: body is this (Site-owned)
  int64_t length() const {
    if (stream_bytes >= 0) return stream_bytes;
    if (!shared_body.empty()) return static_cast<int64_t>(shared_body.size());
    return static_cast<int64_t>(body.size());
  }
};

// The generated web. Immutable after construction except for the lazily
// built gzip bomb; used from the server's one loop thread.
class Site {
 public:
  // REQUIRES: config validated by LoadConfig/ParseConfig; port > 0.
  Site(Config config, int port);
  Site(const Site&) = delete;
  Site& operator=(const Site&) = delete;

  const Config& config() const { return config_; }
  int port() const { return port_; }
  int host_count() const { return config_.hosts; }
  const std::string& HostName(int i) const { return names_[i]; }
  const std::string& HostIp(int i) const { return ips_[i]; }
  // Distinct host addresses, in first-use order.
  const std::vector<std::string>& DistinctIps() const { return distinct_ips_; }
  // Host index of a lowercase name without port; nullopt if not a farm host.
  std::optional<int> FindHost(std::string_view name) const;
  // Host indexes of the link-farm (spam) hosts, ascending; empty if none.
  const std::vector<int>& LinkFarmHosts() const { return farm_hosts_; }

  // Maps an origin-form target (path plus optional query) to a resource.
  // The returned Route may view into `target`.
  Route Classify(int host, std::string_view target) const;

  // Fills `links` (cleared first) with the links the resource's body holds;
  // *meta_nofollow says the page carries <meta name=robots content=nofollow>.
  void Links(int host, const Route& r, std::vector<Link>* links,
             bool* meta_nofollow) const;

  // Fills `out` for a request; `count` is how many requests (1-based,
  // including this one) this host+target has received, for the 503/429
  // profile and etag_per_request. `now_us`: the wall clock, for pages
  // that change (change_ms).
  void Respond(int host, const Route& r, int count, Response* out,
               int64_t now_us = 0);

  // A conditional request's answer (RFC 9110 13.1.1, 13.1.3, 13.2.2): true
  // when `out` has validators and If-None-Match (any listed entity tag
  // matching weakly, or "*") or, without one, If-Modified-Since (an
  // IMF-fixdate not older than Last-Modified) says the client's copy is
  // current; `out` is then a 304 without body.
  static bool NotModified(std::string_view if_none_match,
                          std::string_view if_modified_since, Response* out);

  // The absolute Location of a redirect resource (robots redirect, chain,
  // loop, cross-host); empty for any other kind.
  std::string RedirectLocation(int host, const Route& r) const;

  // Writes one generated streamed body chunk: bytes [offset, offset+len) of
  // a large page into `out` (replaced).
  static void LargeChunk(int64_t offset, size_t len, std::string* out);

  // The manifest and disallowed URL lists (sorted, canonical) and seeds.
  // With sitemap hosts, the manifest holds their sitemap-only pages too;
  // `sitemap_only` (if given) gets those alone (sorted).
  void ComputeManifest(std::vector<std::string>* manifest,
                       std::vector<std::string>* disallowed,
                       std::vector<std::string>* sitemap_only = nullptr) const;
  // The URLs sitemaps list that a crawler obeying the protocol (and
  // stopping at the first XML error) never requests, and every sitemap
  // file URL; both sorted, empty without sitemap hosts.
  std::vector<std::string> SitemapNever() const;
  std::vector<std::string> SitemapFiles() const;
  std::vector<std::string> Seeds() const;

  // "http://<name>:<port>" for host i; valid as long as the Site.
  const std::string& Origin(int i) const { return origins_[i]; }

 private:
  void RenderPage(int host, const Route& r, Response* out) const;
  bool PathDisallowed(int host, std::string_view path) const;
  // The response for `r` carries the profile's X-Robots-Tag.
  bool SendsXRobotsTag(int host, const Route& r) const;
  // The version, ETag and Last-Modified of a page of a change_ms or
  // etag_per_request host.
  void AddVersion(int host, const Route& r, int count, int64_t now_us,
                  Response* out) const;
  // ... and that header forbids crawld to follow the page's links.
  bool HeaderNofollow(int host, const Route& r) const;
  const std::string& Bomb();
  // The manifest BFS, reading the sitemaps of the hosts it reaches or not.
  void Bfs(bool with_sitemaps, std::vector<std::string>* manifest,
           std::vector<std::string>* disallowed) const;
  // The body of a sitemap file (not the bomb).
  std::string SitemapBody(int host, int64_t file, int64_t now_us) const;
  // The next host after `host` with the sitemap profile, wrapping around;
  // `host` itself when it is the only one.
  int NextSitemapHost(int host) const;
  // The i-th host of the normal (non-link-farm) hosts, in index order.
  int NormalHost(size_t i) const { return normal_hosts_[i]; }
  // The next normal host after `host`, wrapping around.
  int NextNormalHost(int host) const;

  Config config_;
  int port_;
  std::vector<std::string> names_;
  std::vector<std::string> ips_;
  std::vector<std::string> origins_;
  std::vector<std::string> distinct_ips_;
  std::unordered_map<std::string, int> by_name_;
  // Normal pages link only among normal hosts; a spam host among spam
  // hosts. normal_pos_[h] is h's index in normal_hosts_ (-1 for spam).
  std::vector<int> normal_hosts_;
  std::vector<int> normal_pos_;
  std::vector<int> farm_hosts_;
  // Per host: /sm/cross.html is listed by another host's cross sitemap
  // (this host's robots.txt names it); /sm/foreign.html is listed by
  // another host's foreign sitemap (nothing names it here).
  std::vector<bool> cross_target_;
  std::vector<bool> foreign_target_;
  std::string bomb_;  // built on first request
};

// Wall clock (CLOCK_REALTIME) in microseconds.
int64_t NowMicros();

}  // namespace crawld::webfarm

#endif  // CRAWLD_TESTS_WEBFARM_FARM_H_
