// conf/conf.h: the crawld configuration file (TOML) and its typed schema.
//
// A config file is TOML v1.0.0 (https://toml.io/en/v1.0.0) with the tables
// [crawl] [fetch] [politeness] [dns] [network] [store] [workers]; the keys
// inside each table are the field names of the structs below. The reference
// for every key (type, default, range, meaning) is docs/CONFIG.md, and
// conf/crawler.toml lists every key with its default. Only this component
// reads TOML: it fills these plain structs, and the daemon copies them into
// each component's own Options.
//
// Deliberate strictness (after BUbiNG's StartupConfiguration): a key or table
// we do not know, a value of the wrong type, a value out of its range or in a
// bad format is an error, never ignored, so that a typo cannot silently fall
// back to a default. A key that is absent takes its default. An integer is
// accepted where a float is expected; a float where an integer is expected
// is an error (it would be truncated).
//
// Error messages have the form "<source>:<line>: <table>.<key>: <what>",
// e.g. "crawl.toml:12: fetch.max_body_bytes: must be between 1024 and
// 4294967296". When a file has several errors they are all reported, one per
// line, in file order (at most 20).
#ifndef CRAWLD_CONF_CONF_H_
#define CRAWLD_CONF_CONF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::conf {

// [crawl]: what the crawl is, and when it stops.
struct CrawlConfig {
  // Sent as the User-Agent header. Printable ASCII, at most 512 bytes, and
  // must contain a contact URL ("http://..." or "https://...", usually
  // written "+https://...").
  std::string user_agent = "crawld/0.1 (+https://github.com/crawld/crawld)";
  // Product token looked up in robots.txt user-agent lines (RFC 9309
  // section 2.2.1): [a-zA-Z_-]+, at most 64 bytes.
  std::string robots_token = "crawld";
  // Data directory (path; relative paths are relative to the daemon's cwd).
  std::string data_dir = "data";
  uint64_t max_pages = 0;            // pages fetched; 0 = unlimited
  double max_duration_s = 0;         // seconds of crawling; 0 = unlimited
  int max_depth = 0;                 // links from a seed; 0 = unlimited
  double progress_interval_s = 1.0;  // seconds between progress lines
  // URL filter rule file (path, docs/RULES.md); empty = accept everything.
  std::string rules_file;
  // Also offer the parent paths of every new link to the filter.
  bool path_ascending = false;
  // Follow links marked rel="nofollow" (Page-level meta/X-Robots-Tag
  // nofollow is always obeyed).
  bool follow_rel_nofollow = false;

  bool operator==(const CrawlConfig&) const = default;
};

// [url]: crawler canonicalization on top of WHATWG parsing (url::Options).
struct UrlConfig {
  bool drop_fragment = true;
  bool drop_trailing_host_dot = true;
  bool normalize_percent_encoding = true;
  bool drop_empty_query = true;
  bool strip_session_params = true;
  // Query and ;path parameter names removed when strip_session_params;
  // a trailing '*' makes a prefix ("utm_*").
  std::vector<std::string> strip_params = {"jsessionid", "phpsessid", "sid",
                                           "sessionid",  "utm_*",     "gclid",
                                           "fbclid"};
  bool sort_query_params = false;
  int max_length = 2048;  // bytes of input and canonical URL

  bool operator==(const UrlConfig&) const = default;
};

// [fetch]: HTTP transfer limits (applied through curl by fetcher/).
struct FetchConfig {
  int64_t connect_timeout_ms = 10000;   // milliseconds; <= total_timeout_ms
  int64_t total_timeout_ms = 60000;     // milliseconds, whole transfer
  int64_t low_speed_bytes_per_s = 100;  // abort when slower than this ...
  int64_t low_speed_time_s = 30;        // ... for this many seconds
  // Body cap in bytes; larger bodies are truncated and recorded as such.
  uint64_t max_body_bytes = 10 << 20;
  // Redirect hops followed (each hop is a new frontier entry).
  int max_redirects = 5;
  int max_connections = 64;  // transfers in flight per worker
  // Idle keep-alive connections kept per worker (within the open-file limit).
  int64_t max_idle_connections = 4096;
  // Bodies larger than this many bytes spill to a temporary file.
  uint64_t memory_body_bytes = 64 << 10;
  uint64_t max_header_bytes = 128 << 10;  // a response head over this fails
  bool verify_tls = true;  // verify server certificates and host names
  std::string ca_file;     // extra CA bundle (path; tests); empty = system
  // Accept-Encoding request header; empty = send none (identity only).
  std::string accept_encoding = "gzip, deflate, br, zstd";
  bool http2 = true;  // HTTP/2 over TLS where the server offers it (ALPN)

  bool operator==(const FetchConfig&) const = default;
};

// [politeness]: spacing of requests to one host.
struct PolitenessConfig {
  int64_t min_delay_ms = 1000;   // milliseconds; <= max_delay_ms
  int64_t max_delay_ms = 60000;  // milliseconds; caps every computed delay
  double delay_factor = 2.0;     // delay >= factor x last response time
  int64_t max_crawl_delay_ms = 30000;  // robots.txt Crawl-delay capped here
  bool respect_robots = true;
  // Seconds a fetched robots.txt is cached; at most 86400 (RFC 9309 2.4).
  int64_t robots_ttl_s = 86400;
  // Seconds a robots.txt may fail (5xx, timeout, network) before the last
  // good copy of it, if any, is used again.
  int64_t robots_outage_grace_s = 43200;
  // Seconds a host's robots record stays in memory after its last use;
  // then it may leave for the checkpoint store. 0 = always in memory.
  int64_t host_record_idle_s = 600;
  // At most one request in flight per IP address as well as per host.
  bool per_ip = true;
  // Least milliseconds between two requests to one IP address (the
  // delay_factor x response time rule applies per IP too).
  int64_t ip_min_delay_ms = 0;
  // Consecutive failures (network errors, 5xx, 429/503) that retire a host.
  int max_host_errors = 5;
  // Admin robots overrides file (path, docs/OVERRIDES.md); empty = none.
  std::string overrides_file;

  bool operator==(const PolitenessConfig&) const = default;
};

// [dns]: the c-ares resolver and its cache.
struct DnsConfig {
  // Name servers as "ip:port" ("1.2.3.4:53" or "[2001:db8::1]:53");
  // empty = the system's resolv.conf.
  std::vector<std::string> servers;
  int64_t min_ttl_s = 60;       // seconds; answers cached at least this long
  int64_t max_ttl_s = 3600;     // seconds; ... and at most this long
  int64_t negative_ttl_s = 60;  // seconds a failed lookup is cached
  int64_t timeout_ms = 5000;    // milliseconds per try
  int tries = 2;                // attempts per server
  int64_t max_queries_in_flight = 64;  // names asked at once; more wait

  bool operator==(const DnsConfig&) const = default;
};

// [network]
struct NetworkConfig {
  // Allow fetching private, loopback and link-local addresses (tests and
  // intranet crawls). Off by default: a public crawl must not reach them.
  bool allow_private = false;

  bool operator==(const NetworkConfig&) const = default;
};

// [parse]: bounds of the HTML parser against hostile pages (each cut is
// counted: parse_*), and which links beyond hyperlinks a crawl follows.
struct ParseConfig {
  uint64_t max_bytes = 4 << 20;     // bytes of a page parsed (UTF-8)
  int64_t max_elements = 100000;    // start tags and comments parsed
  int64_t max_attributes = 32;      // attributes kept on one element
  int64_t max_nesting_depth = 512;  // deeper grouping elements flattened
  int64_t max_links = 20000;        // links kept per page
  bool scripting = true;            // <noscript> as a browser with JS
  bool follow_other_links = true;   // canonical, next, refresh, frames

  bool operator==(const ParseConfig&) const = default;
};

// [sitemaps]: sitemaps.org sitemaps as link sources (docs/SITEMAPS.md).
struct SitemapsConfig {
  bool from_robots = true;           // read the sitemaps robots.txt names
  bool probe = false;                // also /sitemap.xml of every host
  int64_t max_per_host = 100;        // sitemaps entered per host (count)
  int64_t max_urls = 50000;          // entries read per file (count)
  uint64_t max_bytes = 50ull << 20;  // bytes read per file, uncompressed

  bool operator==(const SitemapsConfig&) const = default;
};

// [store]: WARC output.
struct StoreConfig {
  // File name prefix of WARC files: [A-Za-z0-9._-]+, not starting with '.'.
  std::string warc_prefix = "crawld";
  uint64_t rotate_bytes = 1ull << 30;  // bytes per WARC file before rotation
  int gzip_level = 6;                  // 0 (store) .. 9 (smallest)
  // A metadata record per parsed page: outlinks and robots flags.
  bool write_metadata = true;
  // Flag pages whose text is within near_duplicate_bits (SimHash Hamming
  // distance) of an earlier page's; 0 = off.
  int near_duplicate_bits = 3;
  // Simhashes each worker remembers for that check, oldest forgotten first.
  uint64_t near_duplicate_entries = 1ull << 20;
  bool write_index = true;          // CDXJ index per WARC in <data>/index
  bool write_feed = true;           // document feed in <data>/index/feed
  bool conversion_records = false;  // extracted text as conversion records

  bool operator==(const StoreConfig&) const = default;
};

// [dedupe]: a body identical to one stored earlier in the crawl is written
// as a revisit record, whichever worker or node fetched either
// (docs/STORE.md, "Document dedupe").
struct DedupeConfig {
  // Where the claims of stored bodies live: "auto" (the crawl's Redis when
  // cluster.redis is set, else a table shared by this machine's workers),
  // "node" (that table even in a cluster: each node dedupes alone) or
  // "off" (every body stored in full).
  std::string documents = "auto";
  uint64_t max_documents = 2'000'000;  // digests remembered (count)
  uint64_t text_bytes = 256ull << 20;  // node table: record ids and URIs
  int redis_timeout_ms = 250;          // one claim with Redis (ms)
  // Earlier crawls (data directories or CDXJ files): a payload archived
  // there is written as a revisit of that capture.
  std::vector<std::string> earlier;

  bool operator==(const DedupeConfig&) const = default;
};

// [recrawl]: a continuous crawl (docs/OPERATIONS.md, "A continuous
// crawl"): every fetched URL is visited again on an adaptive schedule, with
// conditional GET. Off by default: a one-pass crawl is exactly as before.
struct RecrawlConfig {
  bool enabled = false;
  double initial_interval_s = 86400;  // first interval (simulated s)
  double min_interval_s = 3600;       // bounds (simulated s)
  double max_interval_s = 30 * 86400.0;
  double shrink = 0.5;        // interval factor after a change, (0, 1]
  double grow = 1.5;          // interval factor when unchanged, >= 1
  double time_scale = 1;      // simulated seconds per real second
  double share = 0.5;         // of fetches, while new URLs wait (0..1)
  int64_t max_queued = 1000;  // due URLs in the frontier at once (count)

  bool operator==(const RecrawlConfig&) const = default;
};

// [traps]: heuristics against endless URL spaces (besides AOPIC credit).
struct TrapsConfig {
  uint64_t host_budget = 100000;  // URLs queued per host; 0 = unlimited
  int max_path_repeats = 3;       // a path segment repeated more often
  // Date-like paths (/2031/05/, ?date=2031-05-01) outside this window
  // around today are calendar pages.
  bool calendar = true;
  int calendar_years_back = 30;
  int calendar_years_ahead = 2;
  // Distinct query strings per host and path; 0 = unlimited.
  int max_query_variants = 500;
  int max_query_params = 16;  // parameters in one query; 0 = unlimited

  bool operator==(const TrapsConfig&) const = default;
};

// [frontier]: per-host queues and AOPIC credit scheduling.
struct FrontierConfig {
  bool credit_scheduling = true;
  double tax = 0.10;                   // share of a page's credit to lambda
  int64_t lambda_interval = 1000;      // fetches between lambda share-outs
  uint64_t base_page_budget = 100000;  // pages per host before credit
  double budget_pages_per_credit = 100.0;
  bool spill = true;  // spill queue middles to <data>/worker-<id>/frontier
  uint64_t memory_budget_bytes = 64ull << 20;

  bool operator==(const FrontierConfig&) const = default;
};

// [checkpoint]: crash safety (docs/OPERATIONS.md).
struct CheckpointConfig {
  double interval_s = 30;  // seconds between checkpoints; 0 = none
  bool resume = true;      // a data dir with a checkpoint is resumed

  bool operator==(const CheckpointConfig&) const = default;
};

// [admin]: the admin HTTP API (docs/API.md).
struct AdminConfig {
  bool enabled = true;
  std::string address = "127.0.0.1";  // numeric IP; non-loopback needs token
  int port = 0;         // 0 = any free port (written to <data>/run/admin.url)
  std::string token;    // bearer token; empty = none (loopback only)
  bool console = true;  // serve the web console at / (console/console.h)

  bool operator==(const AdminConfig&) const = default;
};

// [workers]
struct WorkersConfig {
  int count = 0;          // worker processes; 0 = number of cores
  int parse_threads = 2;  // page parsers per worker, off its loop

  bool operator==(const WorkersConfig&) const = default;
};

// [cluster]: several machines over Redis (docs/CLUSTER.md).
struct ClusterConfig {
  std::string redis;             // "" = one machine; redis://HOST:PORT
  std::string name = "default";  // crawl name in every Redis key
  int nodes = 1;                 // machines (crawld processes) in the crawl
  int node_id = 0;               // this machine, in [0, nodes)
  int virtual_nodes = 1024;      // ring points per worker
  int heartbeat_ttl_ms = 10000;  // a node silent this long leaves the crawl

  bool operator==(const ClusterConfig&) const = default;
};

// The whole file. A plain value: copy it freely.
struct Config {
  CrawlConfig crawl;
  UrlConfig url;
  FetchConfig fetch;
  PolitenessConfig politeness;
  DnsConfig dns;
  NetworkConfig network;
  StoreConfig store;
  DedupeConfig dedupe;
  RecrawlConfig recrawl;
  TrapsConfig traps;
  FrontierConfig frontier;
  CheckpointConfig checkpoint;
  AdminConfig admin;
  WorkersConfig workers;
  ParseConfig parse;
  SitemapsConfig sitemaps;
  ClusterConfig cluster;
  // Where it was loaded from ("" for Defaults()). Compared by operator==
  // like every other field; compare the tables when only values matter.
  std::string source;

  bool operator==(const Config&) const = default;
};

// Parses and validates TOML text. source_name names the text in error
// messages and is copied into Config::source.
//
// Success: every key present is copied in, every other key has its default.
// Failure: InvalidArgument with one line per error,
// "<source_name>:<line>: <table>.<key>: <what>" (a TOML syntax error gives
// "<source_name>:<line>: syntax error: <what>"). Unknown keys and tables,
// wrong types, out-of-range values, bad formats (a dns server "x", a
// user_agent without a contact URL) and min > max pairs are errors.
// Never throws.
[[nodiscard]] Result<Config> ParseConfig(std::string_view toml_text,
                                         std::string_view source_name);

// Reads the file at path and parses it with source_name = path.
// Failure: IOError "<path>: <strerror>" if it cannot be read (or
// "<path>: larger than 4194304 bytes"); otherwise as ParseConfig.
[[nodiscard]] Result<Config> LoadConfigFile(const std::string& path);

// Checks a Config built or changed in code (e.g. after a command-line
// override) against the same rules as ParseConfig, without line numbers:
// OK, or InvalidArgument with lines "<table>.<key>: <what>".
[[nodiscard]] Status Validate(const Config& config);

// Serializes config to TOML: every key, in schema order, each with a short
// comment, and config.source in the leading comment. Used to freeze the
// config into the data directory (data/crawl.toml).
// For any config that Validate() accepts, ParseConfig(ToToml(c), c.source)
// returns a Config equal to c.
// REQUIRES: string fields are valid UTF-8 (always true after ParseConfig).
std::string ToToml(const Config& config);

// The built-in defaults; equal to ParseConfig("", "").value().
Config Defaults();

// Host and port of a cluster.redis value ("redis://HOST:PORT", as Validate
// accepts). REQUIRES: a non-empty value that passed Validate.
struct RedisAddress {
  std::string host;
  int port = 0;
};
RedisAddress ParseRedisUrl(std::string_view url);

// One key of the schema, for documentation and drift checks (crawler.toml
// and docs/CONFIG.md are tested against this list).
struct KeyInfo {
  std::string_view table;  // "fetch"
  std::string_view key;    // "max_body_bytes"
  // "boolean", "integer", "float", "string" or "array of strings".
  std::string_view type;
  std::string default_toml;  // the default as a TOML value, e.g. "10485760"
  std::string range;         // the accepted values, e.g. "1024 .. 4294967296"
  std::string_view doc;      // what the key means, one or two sentences
};

// Every key, in the order of crawler.toml. The string_views point to static
// storage and stay valid for the life of the program.
std::vector<KeyInfo> Schema();

}  // namespace crawld::conf

#endif  // CRAWLD_CONF_CONF_H_
