#include "daemon/hosts.h"

#include <xxhash.h>

#include <algorithm>

#include "url/url.h"

namespace crawld::daemon {
namespace {

uint64_t KeyHash(std::string_view host_key) {
  return XXH3_64bits(host_key.data(), host_key.size());
}

}  // namespace

std::string_view RobotsStateName(RobotsState state) {
  switch (state) {
    case RobotsState::kUnknown:
      return "unknown";
    case RobotsState::kFetching:
      return "fetching";
    case RobotsState::kReady:
      return "ready";
    case RobotsState::kUnreachable:
      return "unreachable";
    case RobotsState::kSkipped:
      return "skipped";
  }
  return "unknown";
}

HostTable::HostTable(const Options& options, frontier::Frontier* frontier,
                     CrawlStats* stats, EventLog* log)
    : options_(options), frontier_(frontier), stats_(stats), log_(log) {}

void HostTable::SetOverrides(const conf::Overrides* overrides) {
  overrides_ = overrides;
  ++generation_;
}

HostRecord& HostTable::Get(std::string_view host_key, int64_t now_us) {
  auto it = hosts_.find(std::string(host_key));
  if (it == hosts_.end()) {
    it = hosts_.emplace(std::string(host_key), HostRecord()).first;
    if (!evicted_.empty()) LoadBack(host_key, it->second);
  }
  if (now_us >= 0) it->second.last_used_us = now_us;
  return it->second;
}

void HostTable::LoadBack(std::string_view host_key, HostRecord& host) {
  auto e = evicted_.find(KeyHash(host_key));
  if (e == evicted_.end()) return;
  const Evicted was = e->second;
  evicted_.erase(e);
  stats_->Count("host_records_loaded");
  Result<std::optional<checkpoint::RobotsCopy>> copy =
      loader_ ? loader_(host_key)
              : Status::FailedPrecondition("the checkpoint store is closed");
  if (!copy.ok()) {
    // The host starts again from nothing: robots.txt is fetched before its
    // next page, so a lost copy costs a fetch, never a rule.
    stats_->Count("host_record_load_failed");
    log_->Write(Level::kError, "host_record_load_failed",
                {{"host", host_key}, {"error", copy.status().ToString()}});
    return;
  }
  if (!copy->has_value()) return;
  host.copy = std::move(**copy);
  host.fetched = std::make_shared<const robots::Rules>(
      host.copy->has_body
          ? robots::Rules::Parse(host.copy->body, options_.robots_token,
                                 options_.robots_parse)
          : robots::Rules::AllowAll());
  if (was.valid_until_us > 0) {
    // In force until the same moment as before. The override's rules are
    // added at the next page (generation 0). The Crawl-delay is still in
    // the frontier after an eviction, but not after a restart (Restore).
    host.rules = host.fetched;
    host.robots = RobotsState::kReady;
    host.robots_valid_until_us = was.valid_until_us;
    ApplyCrawlDelay(host_key, *host.rules);
  }
}

bool HostTable::Evictable(const std::string& key, const HostRecord& host,
                          int64_t now_us) const {
  if (now_us - host.last_used_us < options_.idle_evict_us) return false;
  switch (host.robots) {
    case RobotsState::kFetching:     // a fetch will come back to it
    case RobotsState::kUnreachable:  // its failure history decides
      return false;
    case RobotsState::kReady:
      // The rules come back from the copy only.
      if (!host.copy.has_value()) return false;
      break;
    case RobotsState::kUnknown:
    case RobotsState::kSkipped:
      break;
  }
  // Rare, and counted once per host when applied (RefreshOverride).
  if (!host.override_rule.empty()) return false;
  return host.failing_since_us < 0 && !dirty_.contains(key);
}

size_t HostTable::EvictIdle(int64_t now_us) {
  if (options_.idle_evict_us <= 0 || !loader_) return 0;
  size_t n = 0;
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    const HostRecord& host = it->second;
    if (!Evictable(it->first, host, now_us)) {
      ++it;
      continue;
    }
    if (host.copy.has_value()) {
      Evicted& e = evicted_[KeyHash(it->first)];
      e.valid_until_us =
          host.robots == RobotsState::kReady ? host.robots_valid_until_us : 0;
    }
    // (Without a copy nothing is kept: a new record is the same record.)
    it = hosts_.erase(it);
    ++n;
  }
  if (n > 0) stats_->Count("host_records_evicted", n);
  return n;
}

const HostRecord* HostTable::Lookup(std::string_view host_key) {
  if (const HostRecord* host = Find(host_key)) return host;
  if (!evicted_.contains(KeyHash(host_key))) return nullptr;
  // Not a use: it may leave again at the next sweep.
  return &Get(host_key, -1);
}

std::optional<RobotsState> HostTable::StateOf(std::string_view host_key,
                                              int64_t now_us) const {
  if (const HostRecord* host = Find(host_key)) return host->robots;
  auto e = evicted_.find(KeyHash(host_key));
  if (e == evicted_.end()) return std::nullopt;
  return e->second.valid_until_us > now_us ? RobotsState::kReady
                                           : RobotsState::kUnknown;
}

Result<std::optional<checkpoint::RobotsCopy>> HostTable::CopyOf(
    std::string_view host_key) {
  if (const HostRecord* host = Find(host_key)) return host->copy;
  if (!evicted_.contains(KeyHash(host_key))) {
    return std::optional<checkpoint::RobotsCopy>();
  }
  if (!loader_)
    return Status::FailedPrecondition("the checkpoint store is closed");
  return loader_(host_key);
}

const HostRecord* HostTable::Find(std::string_view host_key) const {
  auto it = hosts_.find(std::string(host_key));
  return it == hosts_.end() ? nullptr : &it->second;
}

const conf::HostOverride& HostTable::OverrideFor(std::string_view host_key) {
  HostRecord& host = Get(host_key, -1);
  RefreshOverride(host_key, host);
  return host.override_rule;
}

bool HostTable::RefreshOverride(std::string_view host_key, HostRecord& host) {
  if (host.override_generation == generation_) return false;
  host.override_generation = generation_;
  host.override_rule = overrides_ != nullptr
                           ? overrides_->For(url::HostOf(host_key))
                           : conf::HostOverride();
  if (!host.override_rule.empty()) {
    // Never silently: each host an override touches is counted and logged.
    stats_->Count("override_hosts");
    log_->Write(Level::kInfo, "override_applied",
                {{"host", host_key},
                 {"override", overrides_->Describe(host.override_rule)}});
  }
  // Also when empty: a reload may have removed the host's override.
  ApplyPoliteness(host_key, host);
  return true;
}

void HostTable::ApplyPoliteness(std::string_view host_key,
                                const HostRecord& host) {
  const conf::HostOverride& ov = host.override_rule;
  // While robots.txt is fetched the host gets one slot, whatever its
  // override says: a second slot would only fetch robots.txt again.
  frontier_->SetHostPoliteness(
      host_key, ov.delay_ms ? *ov.delay_ms * 1000 : -1,
      host.robots == RobotsState::kFetching ? 1 : ov.concurrency.value_or(1));
}

void HostTable::ApplyCrawlDelay(std::string_view host_key,
                                const robots::Rules& rules) {
  // (An override's delay-ms replaces it in the frontier.)
  if (auto delay = rules.crawl_delay_seconds()) {
    // Clamp before the cast: a hostile "Crawl-delay: 1e300" must not be
    // undefined behaviour; the frontier caps it at max_crawl_delay.
    const double s = std::clamp(*delay, 0.0, options_.max_crawl_delay_s);
    frontier_->SetCrawlDelay(host_key, static_cast<int64_t>(s * 1e6));
  }
}

std::shared_ptr<const robots::Rules> HostTable::Effective(
    std::shared_ptr<const robots::Rules> base, const HostRecord& host) const {
  // Without extra rules the record shares one parse of its robots.txt.
  if (host.override_rule.disallow.empty()) return base;
  robots::Rules rules = *base;
  for (const conf::OverrideDisallow& d : host.override_rule.disallow) {
    rules.AddDisallow(d.pattern, overrides_->Where(d.line));
  }
  return std::make_shared<const robots::Rules>(std::move(rules));
}

HostTable::Gate HostTable::CheckPage(std::string_view host_key,
                                     std::string_view path_and_query,
                                     int64_t now_us) {
  HostRecord& host = Get(host_key, now_us);
  const bool override_changed = RefreshOverride(host_key, host);
  const conf::HostOverride& ov = host.override_rule;
  if (!options_.respect_robots || ov.ignore_robots) {
    // No robots.txt fetch: allow-all plus the override's disallows.
    if (host.robots != RobotsState::kSkipped || override_changed) {
      host.rules = Effective(
          std::make_shared<const robots::Rules>(robots::Rules::AllowAll()),
          host);
      host.robots = RobotsState::kSkipped;
      host.robots_valid_until_us = INT64_MAX;
    }
  } else if (host.robots == RobotsState::kSkipped) {
    // A reload took ignore-robots away: fetch robots.txt now.
    host.robots = RobotsState::kUnknown;
  } else if (override_changed && host.robots == RobotsState::kReady &&
             host.fetched != nullptr) {
    // Same robots.txt, new extra rules.
    host.rules = Effective(host.fetched, host);
  }

  Gate gate;
  if (host.robots == RobotsState::kFetching) {
    // Between two hops of a redirect chain: the next hop uses this slot.
    gate.kind = Gate::kFetchRobots;
    gate.robots_url = host.robots_hop_url;
    return gate;
  }
  const bool need = host.robots == RobotsState::kUnknown ||
                    host.robots == RobotsState::kUnreachable ||
                    (host.robots == RobotsState::kReady &&
                     now_us >= host.robots_valid_until_us);
  if (need) {
    host.robots = RobotsState::kFetching;
    host.robots_hops = 0;
    // The key names the port always; the URL as WHATWG serializes it
    // (http://h/robots.txt, not http://h:80/robots.txt) is the one the
    // WARC and its index record, and that archives look up.
    std::string url = std::string(host_key) + "/robots.txt";
    if (Result<url::Url> u = url::Parse(url); u.ok()) {
      url = std::string(u->href());
    }
    host.robots_hop_url = std::move(url);
    ApplyPoliteness(host_key, host);
    gate.kind = Gate::kFetchRobots;
    gate.robots_url = host.robots_hop_url;
    return gate;
  }
  if (host.rules != nullptr && !host.rules->Allowed(path_and_query)) {
    gate.kind = Gate::kDisallowed;
    gate.verdict = host.rules->Check(path_and_query);
  }
  return gate;
}

void HostTable::SetFetched(std::string_view host_key, HostRecord& host,
                           robots::Rules fetched, int64_t now_us,
                           int64_t valid_until) {
  (void)now_us;
  host.fetched = std::make_shared<const robots::Rules>(std::move(fetched));
  host.rules = Effective(host.fetched, host);
  host.robots = RobotsState::kReady;
  host.robots_valid_until_us = valid_until;
  ApplyCrawlDelay(host_key, *host.rules);
}

HostTable::RobotsResult HostTable::OnRobotsFetched(std::string_view host_key,
                                                   const RobotsFetch& fetch,
                                                   int64_t now_us,
                                                   int64_t wall_us) {
  HostRecord& host = Get(host_key, now_us);
  robots::FetchOutcome outcome;
  outcome.status = fetch.status;
  outcome.undecodable = fetch.undecodable;
  outcome.incomplete = fetch.incomplete;
  outcome.hops = host.robots_hops;
  outcome.has_location = !fetch.location.empty();
  robots::RobotsHistory history;
  history.has_last_good = host.fetched != nullptr;
  history.failing_since_us = host.failing_since_us;
  const robots::RobotsDecision d =
      robots::DecideRobotsFetch(outcome, history, now_us, options_.policy);

  RobotsResult result;
  result.access = d.access;
  result.reason = d.reason;
  result.completion.response_time_us = fetch.response_us;
  host.failing_since_us = d.failing_since_us;
  const int64_t ttl_us = std::max<int64_t>(options_.policy.ttl_us, 1'000'000);
  switch (d.access) {
    case robots::Access::kFollowRedirect:
      // The next hop goes out at the host's next slot: politeness holds
      // between hops as between pages.
      host.robots_hop_url = fetch.location;
      ++host.robots_hops;
      return result;
    case robots::Access::kUseBody: {
      const std::string empty;
      const std::string& body = fetch.body != nullptr ? *fetch.body : empty;
      SetFetched(host_key, host,
                 fetch.rules.has_value()
                     ? *fetch.rules
                     : robots::Rules::Parse(body, options_.robots_token,
                                            options_.robots_parse),
                 now_us, d.valid_until_us);
      // The copy is kept as parsed: at most max_bytes (the parser's own
      // cut), so a restored copy decides exactly as this one.
      host.copy = checkpoint::RobotsCopy{
          wall_us + ttl_us, true,
          body.substr(
              0, std::min(body.size(), options_.robots_parse.max_bytes + 1))};
      dirty_.insert(std::string(host_key));
      break;
    }
    case robots::Access::kAllowAll:
      SetFetched(host_key, host, robots::Rules::AllowAll(), now_us,
                 d.valid_until_us);
      host.copy = checkpoint::RobotsCopy{wall_us + ttl_us, false, ""};
      dirty_.insert(std::string(host_key));
      break;
    case robots::Access::kUseLastGood:
      host.rules = Effective(host.fetched, host);
      host.robots = RobotsState::kReady;
      host.robots_valid_until_us = d.valid_until_us;
      stats_->Count("robots_last_good_used");
      log_->Write(Level::kWarn, "robots_last_good_used", {{"host", host_key}});
      break;
    case robots::Access::kDisallowAll:
      host.robots = RobotsState::kUnreachable;
      result.completion.outcome = fetch.status >= 500 || fetch.status == 429
                                      ? frontier::Outcome::kServerError
                                      : frontier::Outcome::kNetworkError;
      break;
  }
  host.robots_hop_url.clear();
  host.robots_hops = 0;
  ApplyPoliteness(host_key, host);
  return result;
}

HostTable::RobotsParse HostTable::RobotsParser() const {
  return [token = options_.robots_token,
          parse = options_.robots_parse](const std::string& body) {
    return robots::Rules::Parse(body, token, parse);
  };
}

void HostTable::TakeDirty(
    const std::function<void(const std::string&,
                             const std::optional<checkpoint::RobotsCopy>&)>&
        out) {
  for (const std::string& key : dirty_) {
    auto it = hosts_.find(key);
    if (it != hosts_.end()) out(key, it->second.copy);
  }
  dirty_.clear();
}

bool HostTable::Restore(std::string_view host_key,
                        const checkpoint::RobotsCopy& copy, int64_t now_us,
                        int64_t wall_us) {
  const int64_t left_us = copy.expires_unix_us - wall_us;
  if (options_.idle_evict_us > 0 && loader_) {
    // Restored as evicted: read back at the host's first page, so that a
    // restart neither holds every host's rules in memory nor parses them
    // all before its first fetch.
    evicted_[KeyHash(host_key)].valid_until_us =
        left_us > 0 ? now_us + left_us : 0;
    return left_us > 0;
  }
  HostRecord& host = Get(host_key, now_us);
  host.copy = copy;
  // The last good copy serves a later outage even when expired.
  host.fetched = std::make_shared<const robots::Rules>(
      copy.has_body ? robots::Rules::Parse(copy.body, options_.robots_token,
                                           options_.robots_parse)
                    : robots::Rules::AllowAll());
  if (left_us <= 0) return false;
  // The override's rules are added at the host's first page (its
  // generation is 0, so CheckPage looks the override up and rebuilds).
  host.rules = host.fetched;
  host.robots = RobotsState::kReady;
  host.robots_valid_until_us = now_us + left_us;
  ApplyCrawlDelay(host_key, *host.rules);
  return true;
}

}  // namespace crawld::daemon
