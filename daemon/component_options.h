// daemon/component_options.h: the config (conf::Config, read and checked
// by conf/) turned into each component's Options. Pure functions: the one
// place that knows which config key feeds which component knob.
#ifndef CRAWLD_DAEMON_COMPONENT_OPTIONS_H_
#define CRAWLD_DAEMON_COMPONENT_OPTIONS_H_

#include <cstdint>
#include <string>

#include "cluster/ip_leases.h"
#include "conf/conf.h"
#include "conf/traps.h"
#include "console/console.h"
#include "daemon/crawl_path.h"
#include "daemon/documents.h"
#include "daemon/hosts.h"
#include "dedupe/dedupe.h"
#include "dns/dns.h"
#include "fetcher/fetcher.h"
#include "frontier/frontier.h"
#include "frontier/ip_gate.h"
#include "frontier/ip_slots.h"
#include "recrawl/recrawl.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

url::Options CanonOptions(const conf::Config& c);
// `spill_dir` empty: a memory-only frontier.
frontier::Options FrontierOptions(const conf::Config& c,
                                  const std::string& spill_dir);
frontier::IpGate::Options IpGateOptions(const conf::Config& c);
// The table of address slots shared by the node's `workers` processes
// (docs/CLUSTER.md, "Per-IP politeness across workers and nodes").
frontier::IpSlotTable::Options IpSlotOptions(const conf::Config& c,
                                             int workers);
// The node's leases on addresses in Redis; for a crawl with cluster.redis.
cluster::IpLeaseOptions IpLeaseOptionsFor(const conf::Config& c);
// `current_year`: the calendar window's centre.
conf::TrapGuard::Options TrapOptions(const conf::Config& c, int current_year);
dns::Options DnsOptions(const conf::Config& c);
// `max_idle`: the idle connections the open-file limit allows.
fetcher::Options FetcherOptions(const conf::Config& c, size_t max_idle);
store::Options StoreOptions(const conf::Config& c, int worker_id);
dedupe::Options SeenOptions(const conf::Config& c, const std::string& dir);
HostTable::Options HostOptions(const conf::Config& c);
Documents::Options DocumentOptions(const conf::Config& c);
// Where the crawl's document claims live (dedupe.documents).
enum class ClaimStore : uint8_t { kNone, kNode, kRedis };
ClaimStore ClaimStoreOf(const conf::Config& c);
// The claim store's options: the node table under <data>/dedupe, the
// crawl's Redis and key prefix, the bounds.
dedupe::Options ClaimOptions(const conf::Config& c);
CrawlPath::Options PathOptions(const conf::Config& c);
// The web console on an admin API: the worker's own and the supervisor's.
console::Options ConsoleOptions(const conf::AdminConfig& admin);
// [recrawl] as the schedule's options (sanitized).
recrawl::Options RecrawlOptions(const conf::Config& c);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_COMPONENT_OPTIONS_H_
