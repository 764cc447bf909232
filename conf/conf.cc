// conf/conf.cc: the schema table, the TOML reader and the TOML writer.
//
// Everything about a key (where it lives in Config, its type, its range,
// its doc) is one row of kKeys, so parsing, validation, serialization and
// the documentation checks cannot disagree about the schema.
#include "conf/conf.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <exception>
#include <optional>
#include <system_error>
#include <variant>

#include "conf/read_file.h"

// Debian ships toml++ as a shared library built with exceptions (the
// toml::v3::ex ABI); TOML_EXCEPTIONS=0 here would not link against it. So we
// parse with exceptions on and catch everything inside this file.
#include <toml++/toml.h>
#if !TOML_EXCEPTIONS
#error "conf/ expects toml++ with exceptions (Debian's libtomlplusplus)"
#endif

namespace crawld::conf {
namespace {

// ---------------------------------------------------------------------------
// The schema.

// Where a key's value lives. The pointee type decides the TOML type: bool is
// a boolean, the integer types are integers, double is a float.
using FieldRef = std::variant<bool* (*)(Config&), int* (*)(Config&),
                              int64_t* (*)(Config&), uint64_t* (*)(Config&),
                              double* (*)(Config&), std::string* (*)(Config&),
                              std::vector<std::string>* (*)(Config&)>;

enum class Type { kBool, kInt, kFloat, kString, kStringList };

// Returns "" when the string is acceptable, else what is wrong with it.
using StringCheck = std::string (*)(std::string_view);

struct Loc {
  std::string_view table;
  std::string_view name;
  FieldRef field;
};

struct Key {
  std::string_view table;
  std::string_view name;
  FieldRef field;
  int64_t int_min = 0;  // integer keys: inclusive range
  int64_t int_max = 0;
  double float_min = 0;  // float keys: inclusive range
  double float_max = 0;
  StringCheck check = nullptr;  // string keys, and each element of a list
  std::string_view rule;        // string keys: the check in words
  size_t max_items = 0;         // list keys
  std::string_view doc;
};

constexpr Key BoolKey(Loc l, std::string_view doc) {
  return Key{l.table, l.name, l.field, 0, 0, 0, 0, nullptr, {}, 0, doc};
}
constexpr Key IntKey(Loc l, int64_t lo, int64_t hi, std::string_view doc) {
  return Key{l.table, l.name, l.field, lo, hi, 0, 0, nullptr, {}, 0, doc};
}
constexpr Key FloatKey(Loc l, double lo, double hi, std::string_view doc) {
  return Key{l.table, l.name, l.field, 0, 0, lo, hi, nullptr, {}, 0, doc};
}
constexpr Key StringKey(Loc l, StringCheck check, std::string_view rule,
                        std::string_view doc) {
  return Key{l.table, l.name, l.field, 0, 0, 0, 0, check, rule, 0, doc};
}
constexpr Key ListKey(Loc l, StringCheck check, std::string_view rule,
                      size_t max_items, std::string_view doc) {
  return Key{l.table, l.name, l.field, 0, 0, 0, 0, check, rule, max_items, doc};
}

constexpr Type TypeOf(const Key& k) {
  switch (k.field.index()) {
    case 0:
      return Type::kBool;
    case 1:
    case 2:
    case 3:
      return Type::kInt;
    case 4:
      return Type::kFloat;
    case 5:
      return Type::kString;
    default:
      return Type::kStringList;
  }
}

bool IsPrintableAscii(char c) { return c >= 0x20 && c <= 0x7e; }
bool IsControl(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

std::string CheckUserAgent(std::string_view s) {
  if (s.empty()) return "must not be empty";
  if (s.size() > 512) return "must be at most 512 bytes";
  if (!std::all_of(s.begin(), s.end(), IsPrintableAscii)) {
    return "must be printable ASCII (it is sent as an HTTP header)";
  }
  // A contact URL: "http://" or "https://" followed by at least one
  // character of a host. The "+" that usually precedes it is a convention,
  // not a requirement.
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  for (std::string_view scheme : {"http://", "https://"}) {
    for (size_t pos = lower.find(scheme); pos != std::string::npos;
         pos = lower.find(scheme, pos + 1)) {
      size_t after = pos + scheme.size();
      if (after < lower.size() && lower[after] != ' ' && lower[after] != ')' &&
          lower[after] != ';' && lower[after] != '/') {
        return "";
      }
    }
  }
  return "must contain a contact URL, e.g. \"mybot/1.0 "
         "(+https://example.org/bot)\"";
}

std::string CheckProductToken(std::string_view s) {
  if (s.empty()) return "must not be empty";
  if (s.size() > 64) return "must be at most 64 bytes";
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
          c == '-')) {
      return "must match [a-zA-Z_-]+ (RFC 9309 product token)";
    }
  }
  return "";
}

std::string CheckOptionalPath(std::string_view s) {
  if (s.size() > 4096) return "must be at most 4096 bytes";
  if (std::any_of(s.begin(), s.end(), IsControl)) {
    return "must not contain control characters";
  }
  return "";
}

std::string CheckPath(std::string_view s) {
  if (s.empty()) return "must not be empty";
  return CheckOptionalPath(s);
}

std::string CheckHeaderValue(std::string_view s) {
  if (s.size() > 256) return "must be at most 256 bytes";
  if (!std::all_of(s.begin(), s.end(), IsPrintableAscii)) {
    return "must be printable ASCII (it is sent as an HTTP header)";
  }
  return "";
}

std::string CheckParamName(std::string_view s) {
  if (s.empty() || s.size() > 128) return "must be 1 .. 128 bytes";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '*' && i + 1 == s.size() && i > 0) continue;
    if (!IsPrintableAscii(c) || c == ' ' || c == '&' || c == '=' || c == ';' ||
        c == '#' || c == '*') {
      return "must be a parameter name (printable ASCII without space & = ; "
             "#), optionally ending in '*'";
    }
  }
  return "";
}

std::string CheckIpAddress(std::string_view s) {
  unsigned char buf[16];
  std::string z(s);
  if (inet_pton(AF_INET, z.c_str(), buf) == 1 ||
      inet_pton(AF_INET6, z.c_str(), buf) == 1) {
    return "";
  }
  return "must be a numeric IPv4 or IPv6 address";
}

std::string CheckToken(std::string_view s) {
  if (s.size() > 256) return "must be at most 256 bytes";
  for (char c : s) {
    if (!IsPrintableAscii(c) || c == ' ') {
      return "must be printable ASCII without spaces";
    }
  }
  return "";
}

std::string CheckRedisUrl(std::string_view s) {
  if (s.empty()) return "";
  constexpr std::string_view kScheme = "redis://";
  const std::string bad = "must be empty or redis://HOST:PORT";
  if (s.substr(0, kScheme.size()) != kScheme) return bad;
  s.remove_prefix(kScheme.size());
  const size_t colon = s.rfind(':');
  if (colon == 0 || colon == std::string_view::npos) return bad;
  for (char c : s.substr(0, colon)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      return bad;
    }
  }
  const std::string_view port = s.substr(colon + 1);
  if (port.empty() || port.size() > 5) return bad;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return bad;
  }
  const int n = std::stoi(std::string(port));
  if (n < 1 || n > 65535) return bad;
  return "";
}

std::string CheckClusterName(std::string_view s) {
  if (s.empty() || s.size() > 64) return "must be 1 to 64 bytes";
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
        c != '.') {
      return "must be letters, digits, '_', '-' or '.'";
    }
  }
  return "";
}

std::string CheckDedupeBackend(std::string_view s) {
  if (s == "auto" || s == "node" || s == "off") return "";
  return "must be \"auto\", \"node\" or \"off\"";
}

std::string CheckWarcPrefix(std::string_view s) {
  if (s.empty()) return "must not be empty";
  if (s.size() > 64) return "must be at most 64 bytes";
  if (s.front() == '.') return "must not start with '.'";
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
      return "must match [A-Za-z0-9._-]+ (it is part of a file name)";
    }
  }
  return "";
}

std::string CheckNameServer(std::string_view s) {
  const std::string kWant =
      "must be \"ip:port\" (e.g. \"127.0.0.1:53\" or \"[::1]:53\")";
  std::string_view host;
  std::string_view port;
  int family = AF_INET;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find("]:");
    if (close == std::string_view::npos) return kWant;
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    family = AF_INET6;
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return kWant;
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return "must put an IPv6 address in brackets, e.g. \"[::1]:53\"";
    }
  }
  // inet_pton reads a C string, so reject anything (e.g. a NUL) that is not
  // part of an address before handing it over.
  bool charset_ok = !host.empty() && host.size() <= 45 &&
                    std::all_of(host.begin(), host.end(), [](char c) {
                      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                             (c >= 'A' && c <= 'F') || c == '.' || c == ':';
                    });
  unsigned char addr[16];
  if (!charset_ok || inet_pton(family, std::string(host).c_str(), addr) != 1) {
    return family == AF_INET ? kWant + ": bad IPv4 address"
                             : kWant + ": bad IPv6 address";
  }
  unsigned value = 0;
  auto [end, ec] =
      std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || port.size() > 5 || port.front() == '+' ||
      ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return kWant + ": port must be 1 .. 65535";
  }
  return "";
}

#define CRAWLD_CONF_FIELD(sec, key)                    \
  Loc {                                                \
#sec, #key, +[](Config & c) { return &c.sec.key; } \
  }

// The schema, in the order of crawler.toml. To add a key: add the field
// (default and units comment) to its struct in conf.h, add one row here,
// then refresh conf/crawler.toml (the part after its header is
// ToToml(Defaults())) and the table in docs/CONFIG.md; conf_test fails until
// both list the key with this row's default and range.
constexpr Key kKeys[] = {
    // [crawl]
    StringKey(CRAWLD_CONF_FIELD(crawl, user_agent), CheckUserAgent,
              "printable ASCII, 1 .. 512 bytes, with an http(s):// contact URL",
              "User-Agent header sent with every request. It must identify "
              "the crawler and carry a contact URL where site owners can "
              "learn about it and reach the operator."),
    StringKey(CRAWLD_CONF_FIELD(crawl, robots_token), CheckProductToken,
              "[a-zA-Z_-]+, 1 .. 64 bytes",
              "Product token matched against robots.txt user-agent lines "
              "(RFC 9309 section 2.2.1); groups for \"*\" apply when no "
              "group names it."),
    StringKey(CRAWLD_CONF_FIELD(crawl, data_dir), CheckPath,
              "non-empty path, at most 4096 bytes, no control characters",
              "Directory holding all state of the crawl: the frozen config, "
              "per-worker LevelDB state, WARC files, index and logs. A "
              "relative path is relative to the daemon's working directory."),
    IntKey(CRAWLD_CONF_FIELD(crawl, max_pages), 0, 1'000'000'000'000,
           "Stop after this many pages have been fetched; 0 = no limit."),
    FloatKey(CRAWLD_CONF_FIELD(crawl, max_duration_s), 0, 31'536'000,
             "Stop after this many seconds of crawling (at most 365 days); "
             "0 = no limit."),
    IntKey(CRAWLD_CONF_FIELD(crawl, max_depth), 0, 10'000,
           "Follow links at most this many hops from a seed (a seed is depth "
           "0); 0 = no limit."),
    FloatKey(CRAWLD_CONF_FIELD(crawl, progress_interval_s), 0.1, 3600,
             "Seconds between two progress lines in plain (non-terminal) "
             "output."),
    StringKey(CRAWLD_CONF_FIELD(crawl, rules_file), CheckOptionalPath,
              "path, at most 4096 bytes, no control characters; may be empty",
              "URL filter rule file (docs/RULES.md), reloaded on SIGHUP; "
              "empty = accept every URL. An invalid file stops the start; "
              "on reload it is reported and the previous rules stay."),
    BoolKey(CRAWLD_CONF_FIELD(crawl, path_ascending),
            "Also offer the parent paths of every new link (/a/b/c gives "
            "/a/b/, /a/ and /) to the filter and the frontier."),
    BoolKey(CRAWLD_CONF_FIELD(crawl, follow_rel_nofollow),
            "Follow links marked rel=\"nofollow\". Page-wide nofollow "
            "(meta robots, X-Robots-Tag) is obeyed either way."),

    // [url]
    BoolKey(CRAWLD_CONF_FIELD(url, drop_fragment),
            "Drop #fragment from every URL (it is never sent to a server)."),
    BoolKey(CRAWLD_CONF_FIELD(url, drop_trailing_host_dot),
            "example.com. -> example.com (same site, different string)."),
    BoolKey(CRAWLD_CONF_FIELD(url, normalize_percent_encoding),
            "Uppercase %xx hex digits and decode escapes of unreserved "
            "characters (A-Z a-z 0-9 - . _ ~), so equal URLs compare equal."),
    BoolKey(CRAWLD_CONF_FIELD(url, drop_empty_query),
            "http://a/b? -> http://a/b."),
    BoolKey(CRAWLD_CONF_FIELD(url, strip_session_params),
            "Remove the query parameters (and ;name=value path parameters) "
            "named in strip_params: session ids and trackers multiply URLs."),
    ListKey(CRAWLD_CONF_FIELD(url, strip_params), CheckParamName,
            "up to 256 parameter names; a trailing '*' makes a prefix", 256,
            "Parameter names removed by strip_session_params, compared "
            "ASCII case-insensitively (utm_* matches utm_source)."),
    BoolKey(CRAWLD_CONF_FIELD(url, sort_query_params),
            "Sort query parameters by name so ?b=1&a=2 and ?a=2&b=1 are one "
            "URL. Off by default: some servers care about the order."),
    IntKey(CRAWLD_CONF_FIELD(url, max_length), 16, 1 << 20,
           "Longest URL accepted, in bytes, before and after "
           "canonicalization; longer ones are dropped as invalid_url."),

    // [fetch]
    IntKey(CRAWLD_CONF_FIELD(fetch, connect_timeout_ms), 100, 300'000,
           "Milliseconds allowed for the TCP and TLS handshakes; must not "
           "exceed total_timeout_ms."),
    IntKey(CRAWLD_CONF_FIELD(fetch, total_timeout_ms), 1000, 3'600'000,
           "Milliseconds allowed for a whole transfer, connect included."),
    IntKey(CRAWLD_CONF_FIELD(fetch, low_speed_bytes_per_s), 0, 1ll << 30,
           "A transfer slower than this many bytes per second for "
           "low_speed_time_s is aborted; 0 disables the check."),
    IntKey(CRAWLD_CONF_FIELD(fetch, low_speed_time_s), 1, 3600,
           "Seconds a transfer may stay below low_speed_bytes_per_s."),
    IntKey(CRAWLD_CONF_FIELD(fetch, max_body_bytes), 1024, 1ll << 32,
           "Bytes of body kept per response; a larger body is truncated "
           "and recorded as truncated."),
    IntKey(CRAWLD_CONF_FIELD(fetch, max_redirects), 0, 20,
           "Redirect hops followed from one URL. Each hop goes back through "
           "the frontier as a new URL (curl never follows redirects)."),
    IntKey(CRAWLD_CONF_FIELD(fetch, max_connections), 1, 10'000,
           "Transfers in flight at once per worker (never more than one "
           "per host)."),
    IntKey(CRAWLD_CONF_FIELD(fetch, max_idle_connections), 0, 100'000,
           "Idle keep-alive connections a worker keeps for the next page of "
           "their host (only hosts with more URLs queued keep theirs); when "
           "they are all taken, a new host's connection is closed after its "
           "page and the hosts holding one keep it. Size it to the hosts a "
           "worker has in rotation. Fewer if the open-file limit (raised to "
           "its hard limit at start) is too low for max_connections plus "
           "these plus 256 files."),
    IntKey(CRAWLD_CONF_FIELD(fetch, memory_body_bytes), 0, 1ll << 30,
           "Bodies larger than this many bytes are spilled to a temporary "
           "file instead of memory."),
    IntKey(CRAWLD_CONF_FIELD(fetch, max_header_bytes), 1024, 16ll << 20,
           "Bytes of a response's head (status line and header fields); a "
           "longer head fails the fetch as header_too_large and nothing of "
           "it is recorded."),
    BoolKey(CRAWLD_CONF_FIELD(fetch, verify_tls),
            "Verify TLS certificates and host names. Turn off only for "
            "tests."),
    StringKey(CRAWLD_CONF_FIELD(fetch, ca_file), CheckOptionalPath,
              "path, at most 4096 bytes, no control characters; may be empty",
              "Extra CA bundle (PEM file) to trust, e.g. a test CA; empty = "
              "the system's CA store only."),
    StringKey(CRAWLD_CONF_FIELD(fetch, accept_encoding), CheckHeaderValue,
              "printable ASCII, at most 256 bytes; may be empty",
              "Accept-Encoding request header offered to servers; empty = "
              "send none, so bodies arrive uncompressed. crawld decodes "
              "gzip, deflate, br and zstd."),
    BoolKey(CRAWLD_CONF_FIELD(fetch, http2),
            "Use HTTP/2 with https servers that offer it in the TLS "
            "handshake (ALPN h2); plain http stays HTTP/1.1. On by default: "
            "browsers use HTTP/2 wherever it is offered, so servers and "
            "their rate limits are tuned for it, and one connection then "
            "costs the server less than HTTP/1.1. Still one request at a "
            "time per host (never several streams at once). Exchanges are "
            "recorded as HTTP/1.1 messages with WARC-Protocol: h2 "
            "(docs/STORE.md). false: HTTP/1.1 everywhere."),

    // [parse]
    IntKey(CRAWLD_CONF_FIELD(parse, max_bytes), 1024, 256ll << 20,
           "Bytes of a page (converted to UTF-8) the HTML parser reads; the "
           "rest is archived but not parsed (counted: parse_bytes_cut)."),
    IntKey(CRAWLD_CONF_FIELD(parse, max_elements), 1000, 10'000'000,
           "Start tags and comments parsed per page; the page is cut there "
           "(counted: parse_elements_cut). Bounds the parse of a page of "
           "millions of tiny elements."),
    IntKey(CRAWLD_CONF_FIELD(parse, max_attributes), 16, 100000,
           "Attributes kept on one element (the ones the parser reads are "
           "always kept; counted: parse_attributes_dropped). Gumbo's check "
           "for duplicate attributes costs their count squared."),
    IntKey(CRAWLD_CONF_FIELD(parse, max_nesting_depth), 16, 100000,
           "Open elements past which grouping elements are flattened, their "
           "content kept one level up (counted: parse_elements_flattened)."),
    IntKey(CRAWLD_CONF_FIELD(parse, max_links), 1, 10'000'000,
           "Links kept per page, in each of hyperlinks and other links "
           "(counted: parse_links_dropped)."),
    BoolKey(CRAWLD_CONF_FIELD(parse, scripting),
            "Parse as a browser with scripting on: `<noscript>` content is "
            "text, so links inside it are not links."),
    BoolKey(CRAWLD_CONF_FIELD(parse, follow_other_links),
            "Also follow links a browser does not list as hyperlinks: link "
            "rel=canonical, next and alternate, meta refresh, frame and "
            "iframe src, SVG anchors."),
    // [sitemaps]
    BoolKey(CRAWLD_CONF_FIELD(sitemaps, from_robots),
            "Read the sitemaps a host's robots.txt names (Sitemap: lines) "
            "as sources of its URLs, with the sitemaps.org protocol's "
            "scope: the sitemap's host and directory, or the hosts whose "
            "robots.txt named it (docs/SITEMAPS.md)."),
    BoolKey(CRAWLD_CONF_FIELD(sitemaps, probe),
            "Also read /sitemap.xml of every host the crawl reaches, "
            "named or not (one more request per host)."),
    IntKey(CRAWLD_CONF_FIELD(sitemaps, max_per_host), 0, 100000,
           "Sitemaps entered per host: robots.txt lines and a sitemap "
           "index's children (counted past it: sitemap_cap); 0 = none."),
    IntKey(CRAWLD_CONF_FIELD(sitemaps, max_urls), 1, 10'000'000,
           "Entries read per sitemap file; the protocol's limit is 50000 "
           "(counted past it: sitemap_urls_over_limit)."),
    IntKey(CRAWLD_CONF_FIELD(sitemaps, max_bytes), 1024, 1ll << 30,
           "Bytes of one sitemap read after gzip decompression (a gzip "
           "bomb costs at most this); the protocol's limit is 50 MB. A "
           "file is also bounded by fetch.max_body_bytes as it arrives."),
    // [politeness]
    IntKey(CRAWLD_CONF_FIELD(politeness, min_delay_ms), 0, 3'600'000,
           "Least milliseconds between two requests to one host; must not "
           "exceed max_delay_ms."),
    IntKey(CRAWLD_CONF_FIELD(politeness, max_delay_ms), 0, 86'400'000,
           "Most milliseconds between two requests to one host: caps the "
           "delay computed from min_delay_ms, Crawl-delay and "
           "delay_factor."),
    FloatKey(CRAWLD_CONF_FIELD(politeness, delay_factor), 0, 100,
             "The delay after a response is at least this factor times "
             "that response's duration, so slow servers are asked less "
             "often."),
    IntKey(CRAWLD_CONF_FIELD(politeness, max_crawl_delay_ms), 0, 86'400'000,
           "A robots.txt Crawl-delay is honoured up to this many "
           "milliseconds."),
    BoolKey(CRAWLD_CONF_FIELD(politeness, respect_robots),
            "Fetch and obey robots.txt (RFC 9309) before the first page of "
            "each host. Turn off only for sites you operate."),
    IntKey(CRAWLD_CONF_FIELD(politeness, robots_ttl_s), 1, 86'400,
           "Seconds a fetched robots.txt is cached. RFC 9309 section 2.4 "
           "asks crawlers not to use a cached copy for more than 24 hours."),
    IntKey(CRAWLD_CONF_FIELD(politeness, robots_outage_grace_s), 0, 31'536'000,
           "While robots.txt fails (5xx, timeout, network error) nothing of "
           "the host is fetched; after this many seconds of failure the "
           "last good copy, if there is one, is used again."),
    IntKey(CRAWLD_CONF_FIELD(politeness, host_record_idle_s), 0, 31'536'000,
           "Seconds a host's robots.txt record (its rules and last good "
           "copy) stays in memory after the host's last page. Then, once a "
           "checkpoint holds the copy, the record leaves memory and is read "
           "back from the checkpoint store at the host's next page, with "
           "the same rules in force until the same moment. A restart "
           "restores every record this way, read back at its host's first "
           "page. 0 keeps every record in memory. Needs checkpoints "
           "(checkpoint.interval_s)."),
    BoolKey(CRAWLD_CONF_FIELD(politeness, per_ip),
            "At most one request in flight per IP address, as per host "
            "(shared hosting puts many hosts on one address), whichever "
            "worker process or node makes it: the workers of a machine "
            "share run/ip-slots in the data directory, and nodes take "
            "leases on addresses in Redis (docs/CLUSTER.md)."),
    IntKey(CRAWLD_CONF_FIELD(politeness, ip_min_delay_ms), 0, 3'600'000,
           "Least milliseconds between two requests to one IP address, from "
           "any worker or node, when per_ip is on; delay_factor x response "
           "time applies as well, capped by max_delay_ms."),
    IntKey(CRAWLD_CONF_FIELD(politeness, max_host_errors), 1, 1000,
           "Consecutive failures (network errors, 5xx, 429/503) after which "
           "a host is retired: its queue is dropped and counted."),
    StringKey(CRAWLD_CONF_FIELD(politeness, overrides_file), CheckOptionalPath,
              "path, at most 4096 bytes, no control characters; may be empty",
              "Admin robots overrides file (docs/OVERRIDES.md), reloaded on "
              "SIGHUP; empty = none. Every use of an override is counted "
              "and logged."),

    // [dns]
    ListKey(CRAWLD_CONF_FIELD(dns, servers), CheckNameServer,
            "up to 16 strings \"ipv4:port\" or \"[ipv6]:port\"", 16,
            "Name servers to query, in order; empty = the system's "
            "resolv.conf."),
    IntKey(CRAWLD_CONF_FIELD(dns, min_ttl_s), 0, 86'400,
           "Answers are cached at least this many seconds, whatever their "
           "TTL; must not exceed max_ttl_s."),
    IntKey(CRAWLD_CONF_FIELD(dns, max_ttl_s), 1, 604'800,
           "Answers are cached at most this many seconds, whatever their "
           "TTL."),
    IntKey(CRAWLD_CONF_FIELD(dns, negative_ttl_s), 0, 86'400,
           "Seconds a failed lookup (NXDOMAIN, no address, timeout) is "
           "cached."),
    IntKey(CRAWLD_CONF_FIELD(dns, timeout_ms), 100, 60'000,
           "Milliseconds to wait for one answer before trying again."),
    IntKey(CRAWLD_CONF_FIELD(dns, tries), 1, 10,
           "Attempts per name server before a lookup fails."),
    IntKey(CRAWLD_CONF_FIELD(dns, max_queries_in_flight), 1, 100'000,
           "Names a worker asks its name servers at once; more lookups wait "
           "their turn. A burst of thousands of queries loses answers to "
           "full socket buffers and server rate limits."),

    // [network]
    BoolKey(CRAWLD_CONF_FIELD(network, allow_private),
            "Allow fetching private, loopback, link-local and other "
            "non-public addresses. Keep false for a public crawl; tests and "
            "intranet crawls set it."),

    // [store]
    StringKey(CRAWLD_CONF_FIELD(store, warc_prefix), CheckWarcPrefix,
              "[A-Za-z0-9._-]+, 1 .. 64 bytes, not starting with '.'",
              "First part of WARC file names: "
              "<prefix>-<timestamp>-<worker>-<serial>.warc.gz."),
    IntKey(CRAWLD_CONF_FIELD(store, rotate_bytes), 1ll << 20, 1ll << 40,
           "A WARC file is closed and a new one started once it reaches "
           "this many bytes."),
    IntKey(CRAWLD_CONF_FIELD(store, gzip_level), 0, 9,
           "Gzip level of each WARC record: 0 = stored, 9 = smallest and "
           "slowest."),
    BoolKey(CRAWLD_CONF_FIELD(store, write_metadata),
            "Write a WARC metadata record after each parsed page: its "
            "outlinks and its robots flags (noindex, nofollow) for "
            "indexers."),

    IntKey(CRAWLD_CONF_FIELD(store, near_duplicate_bits), 0, 3,
           "A parsed page whose text's 64-bit SimHash is within this many "
           "bits of an earlier page's is flagged near-duplicate (CDXJ, "
           "feed, metadata record) with that page's URL; 0 = off."),
    // The bound keeps the index's reservation (copies and ring, 32 bytes
    // a text, reserved at capacity) at 512 MB of address space: 2^28
    // would reserve 8.6 GB, which overcommit refuses at start on a small
    // machine as a bad_alloc rather than a clear error.
    IntKey(CRAWLD_CONF_FIELD(store, near_duplicate_entries), 1, 1ll << 24,
           "Texts each worker remembers for the near-duplicate check, the "
           "oldest forgotten first: a page is compared with the last this "
           "many new texts its worker stored. About 120 bytes of the "
           "worker's memory per text held, nothing at start (125-145 MB "
           "once full at the default 1048576)."),
    BoolKey(CRAWLD_CONF_FIELD(store, write_index),
            "Write a CDXJ index line per response and revisit record, one "
            "index file per WARC in <data>/index (docs/STORE.md)."),
    BoolKey(CRAWLD_CONF_FIELD(store, write_feed),
            "Append every stored response and revisit to the document feed "
            "in <data>/index/feed, read by indexers from a cursor; needs "
            "write_index."),
    BoolKey(CRAWLD_CONF_FIELD(store, conversion_records),
            "Also store the extracted text of each parsed page as a WARC "
            "conversion record."),

    // [dedupe]
    StringKey(CRAWLD_CONF_FIELD(dedupe, documents), CheckDedupeBackend,
              "\"auto\", \"node\" or \"off\"",
              "Where the claims of stored bodies live, so that a body "
              "identical to one stored earlier in the crawl becomes a "
              "revisit record whichever worker or node fetched either: "
              "\"auto\" = the crawl's Redis with cluster.redis, else a file "
              "shared by this machine's workers (<data>/dedupe/claims); "
              "\"node\" = that file even in a cluster (each node dedupes "
              "alone, with no Redis round trip); \"off\" = every body "
              "stored in full."),
    IntKey(CRAWLD_CONF_FIELD(dedupe, max_documents), 1024, 4'294'967'296,
           "Distinct bodies remembered over the crawl; beyond it new bodies "
           "are stored in full (counted: dedupe_full). The machine's table "
           "takes about 51 bytes a body (sized when it is created); Redis "
           "about 240 bytes plus the URI."),
    IntKey(CRAWLD_CONF_FIELD(dedupe, text_bytes), 1ll << 20, 1ll << 40,
           "Bytes of the machine's table for the record id and URI of each "
           "body (about 50 + the URI's length); beyond it new bodies are "
           "stored in full. Sized when the table is created."),
    IntKey(CRAWLD_CONF_FIELD(dedupe, redis_timeout_ms), 1, 60'000,
           "Milliseconds a claim may wait for Redis (connect or reply); on "
           "timeout or error the body is stored in full (counted: "
           "dedupe_unavailable) and Redis is left alone for a second."),
    ListKey(CRAWLD_CONF_FIELD(dedupe, earlier), CheckPath,
            "up to 64 paths, each at most 4096 bytes", 64,
            "Earlier crawls to dedupe against: crawld data directories "
            "(their index/*.cdxj and warc/) or CDXJ files (their WARCs "
            "beside them). A payload archived there is written as a "
            "revisit of that capture (counted: dedupe_earlier), so a "
            "recrawl stores only what changed. Loaded at start into "
            "DATA/dedupe/earlier.idx, 32 bytes a capture, which the node's "
            "workers map and share; a source that is missing stops the "
            "start."),

    // [recrawl]
    BoolKey(CRAWLD_CONF_FIELD(recrawl, enabled),
            "A continuous crawl: crawld does not stop when its frontier is "
            "empty; every fetched URL is due again after an adaptive "
            "interval and refetched with If-None-Match / If-Modified-Since "
            "(a 304 is written as a server-not-modified revisit). Its "
            "schedule is on disk in <data>/worker-<id>/recrawl "
            "(docs/OPERATIONS.md, \"A continuous crawl\"). false = one "
            "pass, as before."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, initial_interval_s), 0.001, 1e9,
             "Seconds (simulated, see time_scale) from a URL's first "
             "capture to its first revisit; clamped to the bounds below."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, min_interval_s), 0.001, 1e9,
             "Shortest interval between two visits of a URL (simulated "
             "seconds), however often it changes."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, max_interval_s), 0.001, 1e9,
             "Longest interval between two visits of a URL (simulated "
             "seconds), however long it stays the same; raised to "
             "min_interval_s if below it."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, shrink), 0.01, 1,
             "Factor on a URL's interval after a visit that found it "
             "changed (another payload digest)."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, grow), 1, 100,
             "Factor on a URL's interval after a visit that found it "
             "unchanged (a 304, or the same payload digest)."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, time_scale), 0.001, 1e9,
             "Simulated seconds per real second, for tests and simulations: "
             "every interval above is divided by it (30240 runs a week in "
             "20 s). 1 in production."),
    FloatKey(CRAWLD_CONF_FIELD(recrawl, share), 0.01, 1,
             "While new URLs wait in a worker's frontier, the revisits "
             "moved into it are at most this share of its queue (each "
             "host's queue is first in, first out: about this share of its "
             "fetches); with none waiting, revisits take all, up to "
             "max_queued."),
    IntKey(CRAWLD_CONF_FIELD(recrawl, max_queued), 1, 10'000'000,
           "Due URLs a worker moves from its schedule into its frontier at "
           "once; the rest wait on disk, in due order."),

    // [traps]
    IntKey(CRAWLD_CONF_FIELD(traps, host_budget), 0, 1'000'000'000'000,
           "URLs queued per host over the crawl; later ones are dropped and "
           "counted (trap_host_budget). 0 = unlimited."),
    IntKey(CRAWLD_CONF_FIELD(traps, max_path_repeats), 0, 100,
           "A URL whose path repeats one segment more than this many times "
           "(/a/b/a/b/a/b/...) is dropped (trap_path_repeats). 0 = no "
           "check."),
    BoolKey(CRAWLD_CONF_FIELD(traps, calendar),
            "Drop date-like URLs (/2031/05/, ?date=2031-05-01) whose year "
            "lies outside the window below (trap_calendar)."),
    IntKey(CRAWLD_CONF_FIELD(traps, calendar_years_back), 0, 10'000,
           "Years before the current one that a date-like URL may name."),
    IntKey(CRAWLD_CONF_FIELD(traps, calendar_years_ahead), 0, 10'000,
           "Years after the current one that a date-like URL may name."),
    IntKey(CRAWLD_CONF_FIELD(traps, max_query_variants), 0, 100'000'000,
           "Distinct query strings queued per host and path; later ones "
           "are dropped (trap_query_variants). 0 = unlimited."),
    IntKey(CRAWLD_CONF_FIELD(traps, max_query_params), 0, 10'000,
           "A URL with more query parameters than this is dropped "
           "(trap_query_params). 0 = unlimited."),

    // [frontier]
    BoolKey(CRAWLD_CONF_FIELD(frontier, credit_scheduling),
            "AOPIC: among hosts politeness allows, the one with the most "
            "credit is fetched first, and a host's page budget grows with "
            "the credit other hosts give it. false = earliest ready first, "
            "no budget."),
    FloatKey(CRAWLD_CONF_FIELD(frontier, tax), 0, 1,
             "Share of each fetched page's credit paid to the lambda "
             "account, which is shared out over all hosts with queued work."),
    IntKey(CRAWLD_CONF_FIELD(frontier, lambda_interval), 1, 1'000'000'000,
           "Fetches between two share-outs of the lambda account."),
    IntKey(CRAWLD_CONF_FIELD(frontier, base_page_budget), 0, 1'000'000'000'000,
           "Distinct pages a host may have fetched before credit from other "
           "hosts raises its budget (revisits of a continuous crawl do not "
           "count); 0 = no budget."),
    FloatKey(CRAWLD_CONF_FIELD(frontier, budget_pages_per_credit), 0,
             1'000'000'000,
             "Extra pages of budget per unit of credit a host receives from "
             "other hosts."),
    BoolKey(CRAWLD_CONF_FIELD(frontier, spill),
            "Keep only the head and tail of each host queue in memory and "
            "spill the middle to segment files in "
            "<data>/worker-<id>/frontier."),
    IntKey(CRAWLD_CONF_FIELD(frontier, memory_budget_bytes), 1ll << 20,
           1ll << 40,
           "Bytes of queued URLs kept in memory over all hosts when "
           "spilling; above it tails go to disk early, and with many hosts "
           "each keeps fewer URLs in memory, so that the budget holds "
           "however many hosts have queues."),

    // [checkpoint]
    FloatKey(CRAWLD_CONF_FIELD(checkpoint, interval_s), 0, 86'400,
             "Seconds between two checkpoints of the queues, the seen-set, "
             "the counters and the WARC position (also one at start and at "
             "exit); 0 = none, and every run starts afresh. Needs "
             "frontier.spill."),
    BoolKey(CRAWLD_CONF_FIELD(checkpoint, resume),
            "Resume the crawl found in the data directory: after a stop or "
            "a crash (kill -9 included) no queued URL is lost and a URL in "
            "flight is fetched at most once more. false = start afresh."),

    // [admin]
    BoolKey(CRAWLD_CONF_FIELD(admin, enabled),
            "Serve the admin HTTP API (docs/API.md); its base URL is written "
            "to <data>/run/admin.url."),
    StringKey(CRAWLD_CONF_FIELD(admin, address), CheckIpAddress,
              "a numeric IPv4 or IPv6 address",
              "Address the admin API listens on. Anything but loopback "
              "requires a token; crawld refuses to start otherwise."),
    IntKey(CRAWLD_CONF_FIELD(admin, port), 0, 65535,
           "TCP port of the admin API; 0 = any free port."),
    StringKey(CRAWLD_CONF_FIELD(admin, token), CheckToken,
              "printable ASCII without spaces, at most 256 bytes; may be "
              "empty",
              "Bearer token every admin request must carry "
              "(Authorization: Bearer <token>); empty = no token (loopback "
              "only)."),
    BoolKey(CRAWLD_CONF_FIELD(admin, console),
            "Serve the operator's web console at / on the admin API's "
            "address and port (docs/OPERATIONS.md, \"Console\"); false = "
            "the API only."),

    // [workers]
    IntKey(CRAWLD_CONF_FIELD(workers, count), 0, 256,
           "Worker processes, each owning the hosts the consistent-hash "
           "ring gives it (docs/CLUSTER.md); 0 = one per CPU core. With "
           "more than one, crawld supervises them and serves the admin "
           "API itself."),
    IntKey(CRAWLD_CONF_FIELD(workers, parse_threads), 1, 64,
           "Threads per worker that parse pages beside its event loop: a "
           "page is never parsed on the loop, so transfers, timers and the "
           "admin API go on while it is parsed."),
    // [cluster]
    StringKey(CRAWLD_CONF_FIELD(cluster, redis), CheckRedisUrl,
              "empty, or redis://HOST:PORT",
              "Redis server of a multi-machine crawl (also --cluster); empty "
              "= this machine alone. Every node of a crawl uses the same "
              "one."),
    StringKey(CRAWLD_CONF_FIELD(cluster, name), CheckClusterName,
              "1 to 64 of letters, digits, '_', '-', '.'",
              "Crawl name: the prefix of every Redis key (crawld:<name>:...)."),
    IntKey(CRAWLD_CONF_FIELD(cluster, nodes), 1, 1024,
           "Machines (crawld processes) the crawl starts with; each runs "
           "workers.count workers. Nothing is fetched until this many are "
           "up; after that nodes may leave and join while it runs, and the "
           "ring has the workers of the live nodes."),
    IntKey(CRAWLD_CONF_FIELD(cluster, node_id), 0, 1023,
           "This machine's id in [0, nodes) (also --node-id); a restarted "
           "node must keep its id."),
    IntKey(CRAWLD_CONF_FIELD(cluster, virtual_nodes), 1, 65536,
           "Points per worker on the consistent-hash ring (also with one "
           "machine). More even out the hosts per worker: 1024 keeps the "
           "busiest of 10 workers within 10% of the mean. Every node of a "
           "crawl must use the same value; changing it moves hosts like a "
           "change of the worker count."),
    IntKey(CRAWLD_CONF_FIELD(cluster, heartbeat_ttl_ms), 1000, 600000,
           "Milliseconds a node's heartbeat lives in Redis: a node silent "
           "this long is out of the crawl and its hosts go to the others. "
           "A node stops fetching after three quarters of it without "
           "reaching Redis. A dead node's leases on IP addresses "
           "(politeness.per_ip) expire one second after it. Every node of "
           "a crawl should use the same value."),
};

#undef CRAWLD_CONF_FIELD

constexpr std::string_view kTables[] = {
    "crawl",    "url",        "fetch", "parse",   "sitemaps", "politeness",
    "dns",      "network",    "store", "dedupe",  "recrawl",  "traps",
    "frontier", "checkpoint", "admin", "workers", "cluster"};

constexpr size_t kNumKeys = std::size(kKeys);

// Pairs whose first key must not exceed the second.
struct OrderedPair {
  std::string_view table;
  std::string_view lo;
  std::string_view hi;
};
constexpr OrderedPair kOrderedPairs[] = {
    {"fetch", "connect_timeout_ms", "total_timeout_ms"},
    {"politeness", "min_delay_ms", "max_delay_ms"},
    {"dns", "min_ttl_s", "max_ttl_s"},
};

constexpr std::optional<size_t> FindKey(std::string_view table,
                                        std::string_view name) {
  for (size_t i = 0; i < kNumKeys; ++i) {
    if (kKeys[i].table == table && kKeys[i].name == name) return i;
  }
  return std::nullopt;
}

// Compile-time checks of the table itself: every range fits its field,
// every string key has a check, every key names a known table, no
// duplicates, and every ordered pair names integer keys.
constexpr bool SchemaIsSane() {
  for (size_t i = 0; i < kNumKeys; ++i) {
    const Key& k = kKeys[i];
    if (std::find(std::begin(kTables), std::end(kTables), k.table) ==
        std::end(kTables)) {
      return false;
    }
    if (FindKey(k.table, k.name) != i) return false;
    switch (k.field.index()) {
      case 1:  // int
        if (k.int_min < INT_MIN || k.int_max > INT_MAX) return false;
        break;
      case 3:  // uint64_t
        if (k.int_min < 0) return false;
        break;
      default:
        break;
    }
    switch (TypeOf(k)) {
      case Type::kInt:
        if (k.int_min > k.int_max) return false;
        break;
      case Type::kFloat:
        if (!(k.float_min <= k.float_max)) return false;
        break;
      case Type::kString:
        if (k.check == nullptr) return false;
        break;
      case Type::kStringList:
        if (k.check == nullptr || k.max_items == 0) return false;
        break;
      case Type::kBool:
        break;
    }
    if (k.doc.empty()) return false;
  }
  for (const OrderedPair& p : kOrderedPairs) {
    auto lo = FindKey(p.table, p.lo);
    auto hi = FindKey(p.table, p.hi);
    if (!lo || !hi || TypeOf(kKeys[*lo]) != Type::kInt ||
        TypeOf(kKeys[*hi]) != Type::kInt) {
      return false;
    }
  }
  return true;
}
static_assert(SchemaIsSane(), "conf: the key table is inconsistent");

// The accessors in kKeys only form a pointer to a member, so reading a
// const Config through them is safe; this avoids a second, const table.
// Nothing ever writes through the result of Mut().
Config& Mut(const Config& c) { return const_cast<Config&>(c); }

// Field access. Ranges are checked before any Write, so the casts below
// never narrow a value (SchemaIsSane proves the ranges fit).
int64_t ReadInt(const Key& k, const Config& config) {
  Config& c = Mut(config);
  return std::visit(
      [&](auto get) -> int64_t {
        using T = std::remove_pointer_t<decltype(get(c))>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return static_cast<int64_t>(*get(c));
        } else {
          return 0;
        }
      },
      k.field);
}

void WriteInt(const Key& k, Config& c, int64_t v) {
  std::visit(
      [&](auto get) {
        using T = std::remove_pointer_t<decltype(get(c))>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          *get(c) = static_cast<T>(v);
        }
      },
      k.field);
}

bool* BoolField(const Key& k, Config& c) {
  return std::get<bool* (*)(Config&)>(k.field)(c);
}
double* FloatField(const Key& k, Config& c) {
  return std::get<double* (*)(Config&)>(k.field)(c);
}
std::string* StringField(const Key& k, Config& c) {
  return std::get<std::string* (*)(Config&)>(k.field)(c);
}
std::vector<std::string>* ListField(const Key& k, Config& c) {
  return std::get<std::vector<std::string>* (*)(Config&)>(k.field)(c);
}

// ---------------------------------------------------------------------------
// Formatting.

std::string FormatDouble(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc() ? end : buf);
  // "3" would read back as an integer; accepted for a float key, but a
  // frozen config should say what it means.
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

// A TOML basic string (also used to quote user input in messages, where it
// keeps control characters visible).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (IsControl(c)) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04X",
                        static_cast<unsigned char>(c));
          out += esc;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// A key as TOML would spell it: bare when it can be, else quoted, so that a
// key holding a newline cannot split an error message.
std::string KeyText(std::string_view key) {
  const bool bare =
      !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  return bare ? std::string(key) : Quote(key);
}

// The parser's description with control characters escaped: it may quote
// the offending character, which can be a newline.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (IsControl(c)) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\x%02X", static_cast<unsigned char>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(const Key& k, const Config& config) {
  Config& c = Mut(config);
  switch (TypeOf(k)) {
    case Type::kBool:
      return *BoolField(k, c) ? "true" : "false";
    case Type::kInt:
      return std::visit(
          [&](auto get) -> std::string {
            using T = std::remove_pointer_t<decltype(get(c))>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
              return std::to_string(*get(c));
            } else {
              return "";
            }
          },
          k.field);
    case Type::kFloat:
      return FormatDouble(*FloatField(k, c));
    case Type::kString:
      return Quote(*StringField(k, c));
    case Type::kStringList: {
      std::string out = "[";
      for (const std::string& item : *ListField(k, c)) {
        if (out.size() > 1) out += ", ";
        out += Quote(item);
      }
      return out + "]";
    }
  }
  return "";
}

std::string RangeText(const Key& k) {
  switch (TypeOf(k)) {
    case Type::kBool:
      return "true or false";
    case Type::kInt:
      return std::to_string(k.int_min) + " .. " + std::to_string(k.int_max);
    case Type::kFloat:
      return FormatDouble(k.float_min) + " .. " + FormatDouble(k.float_max);
    case Type::kString:
    case Type::kStringList:
      return std::string(k.rule);
  }
  return "";
}

std::string_view TypeName(Type t) {
  switch (t) {
    case Type::kBool:
      return "boolean";
    case Type::kInt:
      return "integer";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "string";
    case Type::kStringList:
      return "array of strings";
  }
  return "";
}

std::string_view NodeTypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// Comment lines of at most 79 columns.
void AppendComment(std::string& out, std::string_view text) {
  std::string line = "#";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t space = text.find(' ', pos);
    std::string_view word = text.substr(pos, space == std::string_view::npos
                                                 ? std::string_view::npos
                                                 : space - pos);
    pos = space == std::string_view::npos ? text.size() : space + 1;
    if (word.empty()) continue;
    if (line.size() > 1 && line.size() + 1 + word.size() > 79) {
      out += line + "\n";
      line = "#";
    }
    line += ' ';
    line += word;
  }
  if (line.size() > 1) out += line + "\n";
}

// ---------------------------------------------------------------------------
// Errors.

constexpr size_t kMaxReportedErrors = 20;

// Collects errors and reports them in file order. Without a source (Validate)
// messages carry no location.
class Errors {
 public:
  explicit Errors(std::optional<std::string_view> source) : source_(source) {}

  void Add(uint32_t line, std::string_view key, std::string_view what) {
    std::string text;
    if (source_) {
      text = std::string(*source_) + ":" + std::to_string(line) + ": ";
    }
    text += key;
    text += ": ";
    text += what;
    list_.push_back({line, std::move(text)});
  }

  [[nodiscard]] bool empty() const { return list_.empty(); }

  [[nodiscard]] Status ToStatus() {
    if (list_.empty()) return Status::Ok();
    std::stable_sort(
        list_.begin(), list_.end(),
        [](const Entry& a, const Entry& b) { return a.line < b.line; });
    std::string msg;
    size_t n = std::min(list_.size(), kMaxReportedErrors);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) msg += '\n';
      msg += list_[i].text;
    }
    if (list_.size() > n) {
      msg += "\n(" + std::to_string(list_.size() - n) + " more errors)";
    }
    return Status::InvalidArgument(std::move(msg));
  }

 private:
  struct Entry {
    uint32_t line;
    std::string text;
  };
  std::optional<std::string_view> source_;
  std::vector<Entry> list_;
};

std::string QualifiedName(const Key& k) {
  return std::string(k.table) + "." + std::string(k.name);
}

// The checks shared by ParseConfig and Validate. Each returns "" when the
// value is acceptable.
std::string CheckInt(const Key& k, int64_t v) {
  if (v < k.int_min || v > k.int_max) {
    return "must be between " + std::to_string(k.int_min) + " and " +
           std::to_string(k.int_max);
  }
  return "";
}

std::string CheckFloat(const Key& k, double v) {
  if (!(v >= k.float_min && v <= k.float_max)) {  // also rejects NaN
    return "must be between " + FormatDouble(k.float_min) + " and " +
           FormatDouble(k.float_max);
  }
  return "";
}

std::string CheckListSize(const Key& k, size_t n) {
  if (n > k.max_items) {
    return "must have at most " + std::to_string(k.max_items) + " entries";
  }
  return "";
}

std::string ElementName(const Key& k, size_t i) {
  return QualifiedName(k) + "[" + std::to_string(i) + "]";
}

// Checks every ordered pair whose two keys are both valid. lines[i] is the
// line where key i was set, 0 when it kept its default; the later of the two
// keys in the file gets the error (the upper key when neither was set).
void CheckOrderedPairs(const Config& c, const std::vector<uint32_t>& lines,
                       const std::vector<bool>& bad, Errors& errors) {
  for (const OrderedPair& p : kOrderedPairs) {
    size_t lo = *FindKey(p.table, p.lo);
    size_t hi = *FindKey(p.table, p.hi);
    if (bad[lo] || bad[hi]) continue;
    int64_t lo_v = ReadInt(kKeys[lo], c);
    int64_t hi_v = ReadInt(kKeys[hi], c);
    if (lo_v <= hi_v) continue;
    if (lines[hi] >= lines[lo]) {
      errors.Add(lines[hi], QualifiedName(kKeys[hi]),
                 "must be >= " + QualifiedName(kKeys[lo]) + " (" +
                     std::to_string(lo_v) + ")");
    } else {
      errors.Add(lines[lo], QualifiedName(kKeys[lo]),
                 "must be <= " + QualifiedName(kKeys[hi]) + " (" +
                     std::to_string(hi_v) + ")");
    }
  }
}

// True for a numeric address in 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104.
bool IsLoopbackIp(const std::string& s) {
  unsigned char b[16];
  if (inet_pton(AF_INET, s.c_str(), b) == 1) return b[0] == 127;
  if (inet_pton(AF_INET6, s.c_str(), b) != 1) return false;
  static constexpr unsigned char kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0,    0,
                                                0, 0, 0, 0, 0xff, 0xff};
  return std::equal(b, b + 16, kLoop) ||
         (std::equal(b, b + 12, kMapped) && b[12] == 127);
}

// The admin API pauses, stops and feeds the crawl: off loopback it needs a
// token (docs/API.md). A config error (exit 2 at startup, file:line) rather
// than the server's refusal at runtime, which exited 1 and made the
// systemd unit restart crawld forever (issue 19).
void CheckAdminExposure(const Config& c, const std::vector<uint32_t>& lines,
                        const std::vector<bool>& bad, Errors& errors) {
  const size_t address = *FindKey("admin", "address");
  const size_t token = *FindKey("admin", "token");
  if (bad[address] || bad[token] || !c.admin.enabled) return;
  if (!c.admin.token.empty() || IsLoopbackIp(c.admin.address)) return;
  errors.Add(lines[address], QualifiedName(kKeys[address]),
             "'" + c.admin.address +
                 "' is not a loopback address, so admin.token must be set "
                 "(or listen on 127.0.0.1)");
}

// ---------------------------------------------------------------------------
// Reading.

// toml++ numbers lines from 1; 0 would mean "no position", which messages
// should never show.
uint32_t LineOf(const toml::source_region& r) {
  return std::max<uint32_t>(1, r.begin.line);
}

// Edit distance, for "did you mean" hints on short key names.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

bool Similar(std::string_view a, std::string_view b) {
  if (a.size() > 64) return false;  // user input; keep the hint cheap
  return Distance(a, b) <=
         std::max<size_t>(2, std::min<size_t>(3, b.size() / 4));
}

std::string UnknownKeyMessage(std::string_view table, std::string_view name) {
  std::string msg = "unknown key";
  for (const Key& k : kKeys) {
    if (k.table == table && Similar(name, k.name)) {
      return msg + " (did you mean " + QualifiedName(k) + "?)";
    }
  }
  for (const Key& k : kKeys) {
    if (k.name == name) {
      return msg + " (it belongs in [" + std::string(k.table) + "])";
    }
  }
  return msg;
}

std::string UnknownTableMessage(std::string_view name) {
  for (std::string_view t : kTables) {
    if (Similar(name, t)) {
      return "unknown table (did you mean [" + std::string(t) + "]?)";
    }
  }
  return "unknown table";
}

std::string UnknownRootKeyMessage(std::string_view name) {
  for (const Key& k : kKeys) {
    if (k.name == name) {
      return "unknown key outside any table (it belongs in [" +
             std::string(k.table) + "])";
    }
  }
  return "unknown key outside any table";
}

// Reads node into key k's field. Returns false (after adding an error) when
// the node has the wrong type or value.
bool ApplyValue(const Key& k, const toml::node& node, Config& c,
                Errors& errors) {
  const uint32_t line = LineOf(node.source());
  const std::string name = QualifiedName(k);
  const Type type = TypeOf(k);
  auto wrong_type = [&] {
    const std::string_view type_name = TypeName(type);
    const bool vowel = type_name.front() == 'a' || type_name.front() == 'i';
    errors.Add(line, name,
               std::string(vowel ? "must be an " : "must be a ") +
                   std::string(type_name) + ", got " +
                   std::string(NodeTypeName(node)));
    return false;
  };
  switch (type) {
    case Type::kBool:
      if (const auto* v = node.as_boolean()) {
        *BoolField(k, c) = v->get();
        return true;
      }
      return wrong_type();
    case Type::kInt: {
      const auto* v = node.as_integer();
      if (v == nullptr) return wrong_type();
      if (std::string err = CheckInt(k, v->get()); !err.empty()) {
        errors.Add(line, name, err);
        return false;
      }
      WriteInt(k, c, v->get());
      return true;
    }
    case Type::kFloat: {
      double d;
      if (const auto* f = node.as_floating_point()) {
        d = f->get();
      } else if (const auto* i = node.as_integer()) {
        d = static_cast<double>(i->get());
      } else {
        return wrong_type();
      }
      if (std::string err = CheckFloat(k, d); !err.empty()) {
        errors.Add(line, name, err);
        return false;
      }
      *FloatField(k, c) = d;
      return true;
    }
    case Type::kString: {
      const auto* v = node.as_string();
      if (v == nullptr) return wrong_type();
      if (std::string err = k.check(v->get()); !err.empty()) {
        errors.Add(line, name, err);
        return false;
      }
      *StringField(k, c) = v->get();
      return true;
    }
    case Type::kStringList: {
      const auto* arr = node.as_array();
      if (arr == nullptr) return wrong_type();
      if (std::string err = CheckListSize(k, arr->size()); !err.empty()) {
        errors.Add(line, name, err);
        return false;
      }
      std::vector<std::string> items;
      bool ok = true;
      for (size_t i = 0; i < arr->size(); ++i) {
        const toml::node& el = *arr->get(i);
        const auto* s = el.as_string();
        if (s == nullptr) {
          errors.Add(LineOf(el.source()), ElementName(k, i),
                     "must be a string, got " + std::string(NodeTypeName(el)));
          ok = false;
          continue;
        }
        if (std::string err = k.check(s->get()); !err.empty()) {
          errors.Add(LineOf(el.source()), ElementName(k, i),
                     err + ", got " + Quote(s->get()));
          ok = false;
          continue;
        }
        items.push_back(s->get());
      }
      if (ok) *ListField(k, c) = std::move(items);
      return ok;
    }
  }
  return false;
}

Result<Config> ParseTable(const toml::table& root, std::string_view source) {
  Config config;
  config.source = std::string(source);
  Errors errors(source);
  std::vector<uint32_t> lines(kNumKeys, 0);
  std::vector<bool> bad(kNumKeys, false);

  for (const auto& [table_key, table_node] : root) {
    const std::string_view table_name = table_key.str();
    const bool known = std::find(std::begin(kTables), std::end(kTables),
                                 table_name) != std::end(kTables);
    if (!known) {
      errors.Add(LineOf(table_key.source()), KeyText(table_name),
                 table_node.is_table() ? UnknownTableMessage(table_name)
                                       : UnknownRootKeyMessage(table_name));
      continue;
    }
    const toml::table* table = table_node.as_table();
    if (table == nullptr) {
      errors.Add(
          LineOf(table_node.source()), table_name,
          "must be a table, got " + std::string(NodeTypeName(table_node)));
      continue;
    }
    for (const auto& [key, node] : *table) {
      std::optional<size_t> index = FindKey(table_name, key.str());
      if (!index) {
        errors.Add(LineOf(key.source()),
                   std::string(table_name) + "." + KeyText(key.str()),
                   UnknownKeyMessage(table_name, key.str()));
        continue;
      }
      lines[*index] = LineOf(node.source());
      if (!ApplyValue(kKeys[*index], node, config, errors)) bad[*index] = true;
    }
  }
  CheckOrderedPairs(config, lines, bad, errors);
  CheckAdminExposure(config, lines, bad, errors);
  if (!errors.empty()) return errors.ToStatus();
  return config;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API.

Result<Config> ParseConfig(std::string_view toml_text,
                           std::string_view source_name) {
  try {
    toml::table root;
    try {
      root = toml::parse(toml_text, source_name);
    } catch (const toml::parse_error& e) {
      return Status::InvalidArgument(
          std::string(source_name) + ":" + std::to_string(LineOf(e.source())) +
          ": syntax error: " + OneLine(e.description()));
    }
    return ParseTable(root, source_name);
  } catch (const std::exception& e) {
    // Only allocation failure is expected here; no exception leaves conf/.
    return Status::Internal(std::string(source_name) + ": " + e.what());
  } catch (...) {
    return Status::Internal(std::string(source_name) + ": unknown exception");
  }
}

Result<Config> LoadConfigFile(const std::string& path) {
  auto text = internal::ReadSmallFile(path, 4u << 20);
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

Status Validate(const Config& config) {
  Config& c = Mut(config);
  Errors errors(std::nullopt);
  std::vector<bool> bad(kNumKeys, false);
  for (size_t i = 0; i < kNumKeys; ++i) {
    const Key& k = kKeys[i];
    std::string err;
    switch (TypeOf(k)) {
      case Type::kBool:
        break;
      case Type::kInt:
        // A uint64_t above INT64_MAX reads back negative, which every range
        // rejects.
        err = CheckInt(k, ReadInt(k, c));
        break;
      case Type::kFloat:
        err = CheckFloat(k, *FloatField(k, c));
        break;
      case Type::kString:
        err = k.check(*StringField(k, c));
        break;
      case Type::kStringList: {
        const auto& items = *ListField(k, c);
        err = CheckListSize(k, items.size());
        for (size_t j = 0; err.empty() && j < items.size(); ++j) {
          if (std::string e = k.check(items[j]); !e.empty()) {
            errors.Add(0, ElementName(k, j), e + ", got " + Quote(items[j]));
            bad[i] = true;
          }
        }
        break;
      }
    }
    if (!err.empty()) {
      errors.Add(0, QualifiedName(k), err);
      bad[i] = true;
    }
  }
  CheckOrderedPairs(c, std::vector<uint32_t>(kNumKeys, 0), bad, errors);
  CheckAdminExposure(c, std::vector<uint32_t>(kNumKeys, 0), bad, errors);
  return errors.ToStatus();
}

std::string ToToml(const Config& config) {
  std::string out =
      "# crawld configuration (TOML). Every key is documented in "
      "docs/CONFIG.md.\n";
  if (!config.source.empty()) {
    // A path is any bytes; escape all but printable ASCII so that the
    // comment stays one line of valid UTF-8.
    std::string shown;
    for (char c : config.source) {
      if (IsPrintableAscii(c) && c != '\\') {
        shown += c;
      } else {
        char esc[8];
        std::snprintf(esc, sizeof(esc), "\\x%02X",
                      static_cast<unsigned char>(c));
        shown += esc;
      }
    }
    out += "# Frozen from " + shown + "\n";
  }
  const Config defaults;
  std::string_view table;
  for (const Key& k : kKeys) {
    if (k.table != table) {
      table = k.table;
      out += "\n[" + std::string(table) + "]\n";
    }
    out += '\n';
    AppendComment(out, k.doc);
    AppendComment(out,
                  std::string(TypeName(TypeOf(k))) + ": " + RangeText(k) + ".");
    std::string value = FormatValue(k, config);
    // A frozen config says what was changed; on one line, as a value that
    // can be pasted back.
    if (std::string def = FormatValue(k, defaults); def != value) {
      out += "# Default: " + def + "\n";
    }
    out += std::string(k.name) + " = " + value + "\n";
  }
  return out;
}

Config Defaults() { return Config{}; }

RedisAddress ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  url.remove_prefix(std::min(url.size(), kScheme.size()));
  const size_t colon = url.rfind(':');
  RedisAddress a;
  a.host = std::string(url.substr(0, colon));
  if (colon != std::string_view::npos) {
    a.port = atoi(std::string(url.substr(colon + 1)).c_str());
  }
  return a;
}

std::vector<KeyInfo> Schema() {
  std::vector<KeyInfo> out;
  out.reserve(kNumKeys);
  Config defaults;
  for (const Key& k : kKeys) {
    out.push_back(KeyInfo{k.table, k.name, TypeName(TypeOf(k)),
                          FormatValue(k, defaults), RangeText(k), k.doc});
  }
  return out;
}

}  // namespace crawld::conf
