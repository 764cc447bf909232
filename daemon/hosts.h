// daemon/hosts.h: one record per host (BUbiNG's VisitState, Heritrix's
// CrawlServer): the host's robots.txt state and rules, the last good copy,
// the admin override in force, and the single place that writes the host's
// politeness into the frontier (Crawl-delay, an override's delay and
// concurrency, one slot while robots.txt is fetched).
//
// The robots gate of the way of one URL (crawl_path.h, step 8) is
// CheckPage(); what a robots.txt fetch means is robots/fetch_policy.h,
// applied by OnRobotsFetched(). A robots.txt redirect hop is a fetch of its
// own in the host's schedule: after each hop the host's slot is completed,
// so the politeness gap holds between hops too (issue 19: five hops went
// out 1-3 ms apart).
#ifndef CRAWLD_DAEMON_HOSTS_H_
#define CRAWLD_DAEMON_HOSTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "checkpoint/crawl_state.h"
#include "conf/overrides.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "frontier/frontier.h"
#include "robots/fetch_policy.h"
#include "robots/robots.h"

namespace crawld::daemon {

enum class RobotsState : uint8_t {
  kUnknown,      // never fetched, or expired: fetch before the next page
  kFetching,     // a robots.txt fetch or redirect chain is under way
  kReady,        // rules in force until robots_valid_until_us
  kUnreachable,  // complete disallow; fetched again at the next page
  kSkipped,      // not fetched: robots off, or an ignore-robots override
};

// "unknown", "fetching", "ready", "unreachable", "skipped".
std::string_view RobotsStateName(RobotsState state);

struct HostRecord {
  RobotsState robots = RobotsState::kUnknown;
  // The rules in force: the fetched ones (or allow-all) plus the override's
  // extra disallows. Set whenever robots is kReady or kSkipped. The same
  // object as `fetched` when no override adds rules (a parse is several
  // KB: bench/hosts_bench.cc).
  std::shared_ptr<const robots::Rules> rules;
  // The rules as last fetched successfully (2xx, or allow-all for a 4xx),
  // without override rules: the last good copy of RFC 9309 2.3.1.4.
  std::shared_ptr<const robots::Rules> fetched;
  // What the checkpoint keeps of that copy (the body, with a wall-clock
  // expiry), so that a restart does not fetch every robots.txt again.
  std::optional<checkpoint::RobotsCopy> copy;
  int64_t robots_valid_until_us = 0;  // monotonic
  int64_t failing_since_us = -1;      // monotonic; -1 while not failing
  // The next hop of a robots.txt redirect chain ("" when none).
  std::string robots_hop_url;
  int robots_hops = 0;
  // The override in force and the rule-set generation it was looked up in.
  conf::HostOverride override_rule;
  uint64_t override_generation = 0;
  int64_t last_used_us = 0;  // monotonic: the last page or robots fetch
};

// What one fetch of /robots.txt (or one hop of it) gave.
struct RobotsFetch {
  int status = 0;            // 0: no response
  bool undecodable = false;  // a 2xx whose Content-Encoding failed
  bool incomplete = false;   // a 2xx cut by the network (not the cap)
  // A 3xx's Location resolved to an http(s) URL; "" when none.
  std::string location;
  // The decoded body of a 2xx, at most robots::Options::max_bytes + 1
  // bytes (so the parser sees that a longer file was cut); may be null.
  const std::string* body = nullptr;
  // `body` parsed already (off the loop, with HostTable::RobotsParser());
  // parsed here when empty.
  std::optional<robots::Rules> rules;
  std::string decoded;      // storage `body` may point at
  int64_t response_us = 0;  // the fetch's duration, for the frontier
};

// Owned by one worker loop; not thread-safe.
//
// Records of idle hosts leave memory (issue 16: a record with its rules
// twice and the robots.txt body is about 1.3 KB, and a long crawl meets
// millions of hosts). EvictIdle() drops the record of a host not used for
// Options::idle_evict_us whose robots copy the checkpoint store holds; what
// stays is 8 bytes of key hash with the state's expiry. The host's next
// page loads the copy back through the Loader and finds the same rules in
// force until the same moment, so eviction changes no decision. A record
// is kept while its copy is not durable yet (dirty), while robots.txt is
// being fetched or failing, and while an override applies to it.
class HostTable {
 public:
  // Parses a robots.txt body as OnRobotsFetched would; safe on any thread
  // (it holds copies of what it needs).
  using RobotsParse = std::function<robots::Rules(const std::string& body)>;
  struct Options {
    bool respect_robots = true;
    std::string robots_token;  // the product token robots.txt groups name
    robots::Options robots_parse;
    robots::FetchPolicyOptions policy;
    // Cap of a robots.txt Crawl-delay handed to the frontier (seconds);
    // the frontier caps it again at its max_crawl_delay.
    double max_crawl_delay_s = 86400;
    // A record unused this long may leave memory (EvictIdle); 0 = never.
    int64_t idle_evict_us = 0;
  };
  // The robots copy the checkpoint store holds for a host (nullopt: none).
  using Loader = std::function<Result<std::optional<checkpoint::RobotsCopy>>(
      std::string_view host_key)>;

  // The frontier, stats and log are not owned and must outlive the table.
  HostTable(const Options& options, frontier::Frontier* frontier,
            CrawlStats* stats, EventLog* log);
  HostTable(const HostTable&) = delete;
  HostTable& operator=(const HostTable&) = delete;

  // The overrides in force (not owned; kept until the next call). Every
  // host looks its override up again at its next page.
  void SetOverrides(const conf::Overrides* overrides);

  // The robots gate for a page of `host_key` popped at `now_us`.
  struct Gate {
    enum Kind { kFetchRobots, kAllowed, kDisallowed } kind = kAllowed;
    std::string robots_url;   // kFetchRobots: the URL to fetch
    robots::Verdict verdict;  // kDisallowed: the deciding rule
  };
  [[nodiscard]] Gate CheckPage(std::string_view host_key,
                               std::string_view path_and_query, int64_t now_us);

  // A robots.txt fetch for `host_key` ended. Applies RFC 9309 2.3.1
  // (robots/fetch_policy.h) and the frontier politeness that follows.
  struct RobotsResult {
    frontier::Completion completion;  // for Frontier::Complete
    robots::Access access = robots::Access::kDisallowAll;
    std::string_view reason;  // fetch_policy's reason
  };
  [[nodiscard]] RobotsParse RobotsParser() const;
  [[nodiscard]] RobotsResult OnRobotsFetched(std::string_view host_key,
                                             const RobotsFetch& fetch,
                                             int64_t now_us, int64_t wall_us);

  // The record of a host in memory, or nullptr (none yet, or evicted).
  [[nodiscard]] const HostRecord* Find(std::string_view host_key) const;
  // As Find, but an evicted record is loaded back first (admin API).
  const HostRecord* Lookup(std::string_view host_key);
  // The host's robots state, also of an evicted record (without loading
  // it); nullopt when the host has no record.
  [[nodiscard]] std::optional<RobotsState> StateOf(std::string_view host_key,
                                                   int64_t now_us) const;
  // Records in memory, and records evicted to the checkpoint store.
  [[nodiscard]] size_t size() const { return hosts_.size(); }
  [[nodiscard]] size_t evicted() const { return evicted_.size(); }

  // The host's override as in force now (looked up again after a reload).
  const conf::HostOverride& OverrideFor(std::string_view host_key);

  // --- checkpoint ---
  // Hosts whose robots copy changed since the last call, with the copy.
  void TakeDirty(
      const std::function<void(const std::string& host_key,
                               const std::optional<checkpoint::RobotsCopy>&)>&
          out);
  // The write of those copies failed: report them again next time.
  void MarkDirty(const std::vector<std::string>& host_keys) {
    dirty_.insert(host_keys.begin(), host_keys.end());
  }
  // A checkpointed copy: the last good copy again, and in force if it has
  // not expired by `wall_us`. Returns true if it is in force. With a Loader
  // and eviction on, the record is restored as evicted (read back at the
  // host's first page).
  bool Restore(std::string_view host_key, const checkpoint::RobotsCopy& copy,
               int64_t now_us, int64_t wall_us);
  // The robots copy of a host for a checkpoint entry, from memory or, for
  // an evicted record, from the store. An I/O error is returned, never
  // taken for "no copy" (that would erase the stored one).
  [[nodiscard]] Result<std::optional<checkpoint::RobotsCopy>> CopyOf(
      std::string_view host_key);

  // --- memory ---
  // Where evicted records are loaded from; without one nothing is evicted.
  void SetLoader(Loader loader) { loader_ = std::move(loader); }
  // Evicts the idle records whose copy is durable (call right after a
  // checkpoint is written). Returns how many left memory.
  size_t EvictIdle(int64_t now_us);

 private:
  // The record, created or loaded back when not in memory; `now_us` marks
  // it used (-1: not a use).
  HostRecord& Get(std::string_view host_key, int64_t now_us);
  // An evicted record's rules back into `host` (just created).
  void LoadBack(std::string_view host_key, HostRecord& host);
  bool Evictable(const std::string& key, const HostRecord& host,
                 int64_t now_us) const;
  // Looks the override up again after a reload; true when it changed.
  bool RefreshOverride(std::string_view host_key, HostRecord& host);
  // The single writer of the host's politeness in the frontier.
  void ApplyPoliteness(std::string_view host_key, const HostRecord& host);
  void ApplyCrawlDelay(std::string_view host_key, const robots::Rules& rules);
  std::shared_ptr<const robots::Rules> Effective(
      std::shared_ptr<const robots::Rules> base, const HostRecord& host) const;
  void SetFetched(std::string_view host_key, HostRecord& host,
                  robots::Rules fetched, int64_t now_us, int64_t valid_until);

  Options options_;
  frontier::Frontier* frontier_;
  CrawlStats* stats_;
  EventLog* log_;
  const conf::Overrides* overrides_ = nullptr;
  uint64_t generation_ = 1;
  std::unordered_map<std::string, HostRecord> hosts_;
  std::unordered_set<std::string> dirty_;
  // What stays of an evicted record (keyed by XXH3 of the host key).
  struct Evicted {
    int64_t valid_until_us = 0;  // monotonic; 0: no rules were in force
  };
  std::unordered_map<uint64_t, Evicted> evicted_;
  Loader loader_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_HOSTS_H_
