#include "daemon/component_options.h"

#include <algorithm>

namespace crawld::daemon {

url::Options CanonOptions(const conf::Config& c) {
  url::Options o;
  o.drop_fragment = c.url.drop_fragment;
  o.drop_trailing_host_dot = c.url.drop_trailing_host_dot;
  o.normalize_percent_encoding = c.url.normalize_percent_encoding;
  o.drop_empty_query = c.url.drop_empty_query;
  o.strip_session_params = c.url.strip_session_params;
  o.strip_params = c.url.strip_params;
  o.sort_query_params = c.url.sort_query_params;
  o.max_length = static_cast<size_t>(c.url.max_length);
  return o;
}

frontier::Options FrontierOptions(const conf::Config& c,
                                  const std::string& spill_dir) {
  frontier::Options o;
  o.min_delay_us = c.politeness.min_delay_ms * 1000;
  o.max_delay_us = c.politeness.max_delay_ms * 1000;
  o.delay_factor = c.politeness.delay_factor;
  o.max_crawl_delay_us = c.politeness.max_crawl_delay_ms * 1000;
  o.max_consecutive_errors = c.politeness.max_host_errors;
  o.credit_scheduling = c.frontier.credit_scheduling;
  // Credit enters only with the seeds (1.0 on each seed's item) and the
  // API, and flows along links: a host created by a link must not mint
  // credit, or a link farm of N hosts would mint N credits out of one link.
  o.seed_credit = 0.0;
  o.tax = c.frontier.tax;
  o.lambda_interval = static_cast<uint64_t>(c.frontier.lambda_interval);
  o.base_page_budget = c.frontier.base_page_budget;
  o.budget_pages_per_credit = c.frontier.budget_pages_per_credit;
  o.memory_budget_bytes = static_cast<size_t>(c.frontier.memory_budget_bytes);
  o.spill_dir = spill_dir;
  return o;
}

frontier::IpGate::Options IpGateOptions(const conf::Config& c) {
  frontier::IpGate::Options o;
  o.enabled = c.politeness.per_ip;
  o.min_delay_us = c.politeness.ip_min_delay_ms * 1000;
  o.delay_factor = c.politeness.delay_factor;
  o.max_delay_us = c.politeness.max_delay_ms * 1000;
  return o;
}

frontier::IpSlotTable::Options IpSlotOptions(const conf::Config& c,
                                             int workers) {
  frontier::IpSlotTable::Options o;
  // A dead holder's request ended at an unknown time: the next one waits
  // the per-IP minimum from when that is found out.
  o.reclaim_gap_us = c.politeness.ip_min_delay_ms * 1000;
  // Longer than any request (a slow transfer must keep its address), with
  // room for the time between the gate and the transfer's start.
  o.lease_us = (c.fetch.total_timeout_ms + 10'000) * 1000;
  // Room for every connection of every worker in flight or inside its gap
  // at once, several times over (8 slots a bucket; a full bucket only
  // makes an address wait). 4096 buckets is 4 MiB.
  o.buckets = static_cast<uint32_t>(std::clamp<int64_t>(
      int64_t{workers} * c.fetch.max_connections, 4096, 1 << 20));
  return o;
}

cluster::IpLeaseOptions IpLeaseOptionsFor(const conf::Config& c) {
  cluster::IpLeaseOptions o;
  const conf::RedisAddress addr = conf::ParseRedisUrl(c.cluster.redis);
  o.host = addr.host;
  o.port = addr.port;
  o.crawl = c.cluster.name;
  o.node_id = c.cluster.node_id;
  // A node cut off from Redis must stop its transfers (its membership
  // lease, 3/4 of heartbeat_ttl_ms after its last heartbeat, checked every
  // 200 ms) before its address leases expire. Renewed in flight whenever
  // less than 3/4 of the lease is left, a lease outlives the partition by
  // at least 3/4 of its life less one renewal period (100 ms): one second
  // more than the heartbeat's TTL covers both delays.
  o.lease_ttl_ms = c.cluster.heartbeat_ttl_ms + 1000;
  return o;
}

conf::TrapGuard::Options TrapOptions(const conf::Config& c, int current_year) {
  conf::TrapGuard::Options o;
  o.host_budget = c.traps.host_budget;
  o.max_path_repeats = c.traps.max_path_repeats;
  o.calendar = c.traps.calendar;
  o.current_year = current_year;
  o.calendar_years_back = c.traps.calendar_years_back;
  o.calendar_years_ahead = c.traps.calendar_years_ahead;
  o.max_query_variants = static_cast<uint32_t>(c.traps.max_query_variants);
  o.max_query_params = c.traps.max_query_params;
  return o;
}

dns::Options DnsOptions(const conf::Config& c) {
  dns::Options o;
  o.servers = c.dns.servers;
  o.min_ttl_s = c.dns.min_ttl_s;
  o.max_ttl_s = c.dns.max_ttl_s;
  o.negative_ttl_s = c.dns.negative_ttl_s;
  o.timeout_ms = c.dns.timeout_ms;
  o.tries = c.dns.tries;
  o.max_queries_in_flight = static_cast<size_t>(c.dns.max_queries_in_flight);
  o.allow_private = c.network.allow_private;
  return o;
}

fetcher::Options FetcherOptions(const conf::Config& c, size_t max_idle) {
  fetcher::Options o;
  o.user_agent = c.crawl.user_agent;
  o.connect_timeout_ms = c.fetch.connect_timeout_ms;
  o.total_timeout_ms = c.fetch.total_timeout_ms;
  o.low_speed_bytes_per_s = c.fetch.low_speed_bytes_per_s;
  o.low_speed_time_s = c.fetch.low_speed_time_s;
  o.max_body_bytes = c.fetch.max_body_bytes;
  o.max_connections = static_cast<size_t>(c.fetch.max_connections);
  o.max_idle_connections = max_idle;
  o.body_buffer.memory_limit = c.fetch.memory_body_bytes;
  o.body_buffer.spill_dir = c.crawl.data_dir + "/tmp";
  o.verify_tls = c.fetch.verify_tls;
  o.ca_file = c.fetch.ca_file;
  o.accept_encoding = c.fetch.accept_encoding;
  o.http2 = c.fetch.http2;
  o.max_header_bytes = c.fetch.max_header_bytes;
  return o;
}

store::Options StoreOptions(const conf::Config& c, int worker_id) {
  store::Options o;
  o.dir = c.crawl.data_dir + "/warc";
  o.prefix = c.store.warc_prefix;
  o.worker_id = worker_id;
  o.rotate_bytes = c.store.rotate_bytes;
  o.gzip_level = c.store.gzip_level;
  o.user_agent = c.crawl.user_agent;
  if (c.store.write_index) o.index_dir = c.crawl.data_dir + "/index";
  o.write_feed = c.store.write_feed;
  o.node_id = c.cluster.node_id;  // with worker_id, in every feed ID
  o.conversion_records = c.store.conversion_records;
  return o;
}

dedupe::Options SeenOptions(const conf::Config& c, const std::string& dir) {
  dedupe::Options o;
  o.dir = dir;
  o.expected_urls = std::max<uint64_t>(1'000'000, c.crawl.max_pages * 20);
  // Fingerprints reach the disk only at checkpoints, after the frontier's
  // queues: the seen store never remembers a URL the queues could lose,
  // not even when a checkpoint fails and the process ends.
  o.flush_only = true;
  return o;
}

HostTable::Options HostOptions(const conf::Config& c) {
  HostTable::Options o;
  o.respect_robots = c.politeness.respect_robots;
  o.robots_token = c.crawl.robots_token;
  o.policy.ttl_us = c.politeness.robots_ttl_s * 1'000'000;
  o.policy.outage_grace_us = c.politeness.robots_outage_grace_s * 1'000'000;
  o.idle_evict_us = c.politeness.host_record_idle_s * 1'000'000;
  return o;
}

Documents::Options DocumentOptions(const conf::Config& c) {
  Documents::Options o;
  o.warc_dir = c.crawl.data_dir + "/warc";
  o.near_duplicate_bits = c.store.near_duplicate_bits;
  o.near_max_entries = c.store.near_duplicate_entries;
  return o;
}

ClaimStore ClaimStoreOf(const conf::Config& c) {
  if (c.dedupe.documents == "off") return ClaimStore::kNone;
  if (c.dedupe.documents == "auto" && !c.cluster.redis.empty()) {
    return ClaimStore::kRedis;
  }
  return ClaimStore::kNode;
}

dedupe::Options ClaimOptions(const conf::Config& c) {
  dedupe::Options o;
  o.claims_path = c.crawl.data_dir + "/dedupe/claims";
  o.max_documents = c.dedupe.max_documents;
  o.claim_text_bytes = c.dedupe.text_bytes;
  if (!c.cluster.redis.empty()) {
    const conf::RedisAddress addr = conf::ParseRedisUrl(c.cluster.redis);
    o.redis_host = addr.host;
    o.redis_port = addr.port;
  }
  o.redis_prefix = "crawld:" + c.cluster.name + ":";
  o.redis_timeout_ms = c.dedupe.redis_timeout_ms;
  return o;
}

recrawl::Options RecrawlOptions(const conf::Config& c) {
  recrawl::Options o;
  o.initial_interval_s = c.recrawl.initial_interval_s;
  o.min_interval_s = c.recrawl.min_interval_s;
  o.max_interval_s = c.recrawl.max_interval_s;
  o.shrink = c.recrawl.shrink;
  o.grow = c.recrawl.grow;
  o.time_scale = c.recrawl.time_scale;
  return recrawl::Sanitize(o);
}

CrawlPath::Options PathOptions(const conf::Config& c) {
  CrawlPath::Options o;
  o.max_connections = static_cast<size_t>(c.fetch.max_connections);
  o.max_pages = c.crawl.max_pages;
  o.max_depth = c.crawl.max_depth;
  o.max_redirects = c.fetch.max_redirects;
  o.follow_rel_nofollow = c.crawl.follow_rel_nofollow;
  o.path_ascending = c.crawl.path_ascending;
  o.write_metadata = c.store.write_metadata;
  o.conversion_records = c.store.conversion_records;
  o.robots_token = c.crawl.robots_token;
  o.max_decoded_robots_bytes = robots::Options().max_bytes + 1;
  o.parse_slots = static_cast<size_t>(c.workers.parse_threads);
  o.follow_other_links = c.parse.follow_other_links;
  o.parser.max_parse_bytes = static_cast<size_t>(c.parse.max_bytes);
  o.parser.max_elements = static_cast<size_t>(c.parse.max_elements);
  o.parser.max_attributes_per_element =
      static_cast<size_t>(c.parse.max_attributes);
  o.parser.max_nesting_depth = static_cast<size_t>(c.parse.max_nesting_depth);
  o.parser.max_links = static_cast<size_t>(c.parse.max_links);
  o.parser.scripting = c.parse.scripting;
  o.parser.extract_frames = c.parse.follow_other_links;
  o.sitemaps_from_robots = c.sitemaps.from_robots;
  o.sitemaps_probe = c.sitemaps.probe;
  o.sitemaps_per_host = static_cast<size_t>(c.sitemaps.max_per_host);
  o.sitemap.max_urls = static_cast<size_t>(c.sitemaps.max_urls);
  o.sitemap.max_uncompressed_bytes = static_cast<size_t>(c.sitemaps.max_bytes);
  o.recrawl_share = c.recrawl.share;
  o.recrawl_max_queued = static_cast<size_t>(c.recrawl.max_queued);
  // Text only where something uses it: SimHash, conversion records.
  o.parser.extract_text =
      c.store.near_duplicate_bits > 0 || c.store.conversion_records;
  return o;
}

console::Options ConsoleOptions(const conf::AdminConfig& admin) {
  console::Options o;
  o.enabled = admin.console;
  return o;
}

}  // namespace crawld::daemon
