// cluster/ip_leases.cc: see ip_leases.h.
//
// Two Lua scripts do all of it, each atomically in Redis: kAskScript takes
// or renews a node's lease (or records that the node waits for it), and
// kGiveBackScript hands it back, leaving the gap behind. Everything else is
// bookkeeping in the machine's table (frontier/ip_slots.h), where the
// lease is the slot's permit.
#include "cluster/ip_leases.h"

#include <arpa/inet.h>
#include <uv.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "cluster/redis_conn.h"
#include "cluster/wire.h"

namespace crawld::cluster {
namespace {

using frontier::IpSlotTable;
using internal::IsError;

// KEYS: lease, want. ARGV: node, lease ms, want ms, mode ("ask", "renew"
// or "check").
// Returns {1, contended}: the lease is the node's (taken or renewed; it
// only ever lengthens here; a check leaves it as it is), and contended = 1
// if another node waits for it. {0, ms}: another node's lease or gap, or
// free but promised to the node that waited first; ask again within ms. A
// renewal or check never takes a lease afresh nor waits for one: it may
// arrive after the node gave the lease back.
constexpr const char* kAskScript = R"lua(
local lease, want = KEYS[1], KEYS[2]
local me, ttl, wttl, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local v = redis.call('GET', lease)
local w = redis.call('GET', want)
if v == me then
  if mode ~= 'check' and redis.call('PTTL', lease) < ttl then
    redis.call('PEXPIRE', lease, ttl)
  end
  if w and w ~= me then return {1, 1} end
  return {1, 0}
end
if mode ~= 'ask' then return {0, 0} end
if not v and (not w or w == me) then
  redis.call('SET', lease, me, 'PX', ttl)
  if w then redis.call('DEL', want) end
  return {1, 0}
end
if not w or w == me then
  redis.call('SET', want, me, 'PX', wttl)
end
if v then return {0, redis.call('PTTL', lease)} end
return {0, redis.call('PTTL', want)}
)lua";

// KEYS: lease. ARGV: node, gap ms. The node's lease becomes the gap (or
// goes, without one); anything else is left alone.
constexpr const char* kGiveBackScript = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], 'gap:' .. ARGV[1], 'PX', ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
return 1
)lua";

int64_t NowUs() { return static_cast<int64_t>(uv_hrtime() / 1000); }

// One spelling per address, so that every node names it alike.
std::string Canonical(std::string_view ip) {
  char text[INET6_ADDRSTRLEN + 1];
  if (ip.size() >= sizeof(text)) return std::string(ip);
  std::memcpy(text, ip.data(), ip.size());
  text[ip.size()] = '\0';
  unsigned char bin[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, text, bin) == 1 &&
      inet_ntop(AF_INET, bin, out, sizeof(out)) != nullptr) {
    return out;
  }
  if (inet_pton(AF_INET6, text, bin) == 1) {
    // An IPv4-mapped address is the IPv4 address (as in the table).
    static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0,    0,
                                                  0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(bin, kMapped, 12) == 0 &&
        inet_ntop(AF_INET, bin + 12, out, sizeof(out)) != nullptr) {
      return out;
    }
    if (inet_ntop(AF_INET6, bin, out, sizeof(out)) != nullptr) return out;
  }
  return std::string(ip);
}

class RedisIpLeases final : public IpLeases {
 public:
  RedisIpLeases(uv_loop_t* loop, IpSlotTable* table, const IpLeaseOptions& o)
      : loop_(loop),
        table_(table),
        opt_(o),
        prefix_(internal::Keys(o.crawl).prefix()),
        node_(std::to_string(o.node_id)),
        ttl_us_(int64_t{o.lease_ttl_ms} * 1000),
        conn_(std::make_unique<internal::RedisConn>(
            loop,
            internal::RedisConn::Options{o.host, o.port, o.reconnect_min_ms,
                                         o.reconnect_max_ms},
            nullptr, nullptr)) {
    // A request starts only with a quarter of the lease left at least;
    // in flight, renewals (below half) keep it above that.
    rule_.min_left_us = ttl_us_ / 4;
    rule_.ask_timeout_us = int64_t{o.ask_timeout_ms} * 1000;
  }

  ~RedisIpLeases() override { Close(); }

  void Close() override {
    if (timer_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(timer_),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
      timer_ = nullptr;
    }
    // Pending replies are dropped, not called back.
    conn_.reset();
  }

  void Start() {
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    // Often enough to renew in flight (an eighth of the lease) and to
    // reconnect promptly.
    const auto period =
        static_cast<uint64_t>(std::clamp(opt_.lease_ttl_ms / 8, 10, 100));
    uv_timer_start(
        timer_,
        [](uv_timer_t* t) { static_cast<RedisIpLeases*>(t->data)->Tick(); },
        period, period);
    conn_->Start();
  }

  Attempt TryAcquire(std::string_view ip, int64_t now_us) override {
    const IpSlotTable::SlotAttempt a = table_->Acquire(ip, now_us, &rule_);
    switch (a.verdict) {
      case IpSlotTable::Verdict::kAcquired: {
        idle_.erase(std::string(ip));
        Held& h = held_[std::string(ip)];
        h.permit_until_us = a.permit_until_us;
        if (a.permit_until_us - now_us < ttl_us_ / 2)
          Renew(ip, opt_.lease_ttl_ms);
        return {true, 0};
      }
      case IpSlotTable::Verdict::kAsk:
        Ask(ip, now_us);
        return {false, a.retry_us};
      default:
        return {false, a.retry_us};
    }
  }

  void Release(std::string_view ip, int64_t now_us, int64_t next_us) override {
    held_.erase(std::string(ip));
    const IpSlotTable::SlotRelease r =
        table_->ReleaseSlot(ip, now_us, next_us, rule_);
    if (!r.released) return;
    if (r.give_back) {
      GiveBack(ip, now_us, r.next_us);
      return;
    }
    // Idle here from now on, perhaps for good: unless used again, another
    // node waiting for the address learns it from a check (Tick).
    Idle& idle = idle_[std::string(ip)];
    idle.permit_until_us = r.permit_until_us;
    idle.quick = Contested(ip, now_us) ? kQuickChecks : 0;
    idle.check_us = now_us + CheckAfterUs(idle);
    if (r.next_us >= r.permit_until_us) {
      // The gap outlasts the lease as we know it: lengthen the lease over
      // the gap, or another node could start inside it.
      Renew(ip, static_cast<int>(std::min<int64_t>(
                    (r.next_us - now_us + 999) / 1000 + opt_.lease_ttl_ms,
                    INT32_MAX)));
    }
  }

  const IpLeaseStats& stats() const override { return stats_; }
  bool connected() const override {
    return conn_ != nullptr && conn_->connected();
  }

 private:
  struct Held {
    int64_t permit_until_us = 0;
    bool renewing = false;
  };
  struct Idle {
    int64_t permit_until_us = 0;  // as this process last knew it
    int64_t check_us = 0;         // the next check
    int quick = 0;                // checks left at the short interval
  };
  // Checks a few polls apart after the last use of an address another
  // node wanted lately (it is likely to want it again soon).
  static constexpr int kQuickChecks = 3;
  enum class Mode { kAsk, kRenew, kCheck };

  std::string LeaseKey(std::string_view ip) const {
    return prefix_ + "ip:" + Canonical(ip);
  }
  std::string WantKey(std::string_view ip) const {
    return prefix_ + "ipwant:" + Canonical(ip);
  }

  // Sends kAskScript for `ip` (ms: the lease's life); kRenew and kCheck
  // for a lease this node should hold already.
  bool SendAsk(std::string_view ip, int ms, Mode mode) {
    const int64_t sent_us = NowUs();
    if (conn_ == nullptr) return false;  // closed
    static constexpr const char* kModes[] = {"ask", "renew", "check"};
    std::string key(ip);
    return conn_->Command(
        {"EVAL", kAskScript, "2", LeaseKey(ip), WantKey(ip), node_,
         std::to_string(ms), std::to_string(opt_.contend_poll_ms * 5),
         kModes[static_cast<int>(mode)]},
        [this, key = std::move(key), sent_us, ms, mode](redisReply* r) {
          OnAnswer(key, sent_us, ms, mode, r);
        });
  }

  void Ask(std::string_view ip, int64_t now_us) {
    if (SendAsk(ip, opt_.lease_ttl_ms, Mode::kAsk)) {
      ++stats_.asked;
    } else {
      ++stats_.unreachable;
      table_->DenyPermit(ip, now_us, now_us,
                         now_us + int64_t{opt_.reconnect_min_ms} * 1000);
    }
  }

  void Renew(std::string_view ip, int ms) {
    auto it = held_.find(std::string(ip));
    if (it != held_.end()) {
      if (it->second.renewing) return;
      it->second.renewing = true;
    }
    if (SendAsk(ip, ms, Mode::kRenew)) {
      ++stats_.renewed;
    } else {
      ++stats_.unreachable;
      if (it != held_.end()) it->second.renewing = false;
    }
  }

  void OnAnswer(const std::string& ip, int64_t sent_us, int ms, Mode mode,
                redisReply* r) {
    const int64_t now = NowUs();
    const bool renewal = mode != Mode::kAsk;  // renew or check
    auto held = held_.find(ip);
    if (held != held_.end() && mode == Mode::kRenew) {
      held->second.renewing = false;
    }
    if (IsError(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      // No answer (the connection died) or a broken one: as a refusal, so
      // that nothing here starts without a lease; asked again soon.
      ++stats_.unreachable;
      if (!renewal) {
        table_->DenyPermit(ip, now, sent_us,
                           now + int64_t{opt_.reconnect_min_ms} * 1000);
      }
      return;
    }
    const int64_t value = internal::Int(r->element[1]);
    if (internal::Int(r->element[0]) == 1) {
      ++stats_.granted;
      // The key lives until Redis applied the command plus `ms`; we count
      // from before we sent it and keep a quarter of the lease as margin
      // for the clocks' rates and this loop's latency.
      // A check lengthened nothing.
      const int64_t until = mode == Mode::kCheck
                                ? INT64_MIN
                                : sent_us + int64_t{ms} * 1000 - ttl_us_ / 4;
      if (held != held_.end()) {
        held->second.permit_until_us =
            std::max(held->second.permit_until_us, until);
      }
      if (auto idle = idle_.find(ip); idle != idle_.end()) {
        idle->second.permit_until_us =
            std::max(idle->second.permit_until_us, until);
      }
      int64_t next_us = 0;
      if (value == 1) contested_[ip] = now + ttl_us_;
      if (table_->GrantPermit(ip, now, sent_us, until, value == 1, rule_,
                              &next_us)) {
        GiveBack(ip, now, next_us);
      }
      return;
    }
    ++stats_.denied;
    if (renewal) ++stats_.lost;
    idle_.erase(ip);  // not the node's: nothing to check
    if (!renewal) contested_[ip] = now + ttl_us_;
    // Another node's lease: ask again soon (our claim in `ipwant` must not
    // lapse); its gap or a claim that ends sooner: right then.
    const int64_t wait_ms = std::clamp<int64_t>(value, 1, opt_.contend_poll_ms);
    table_->DenyPermit(ip, now, sent_us, now + wait_ms * 1000);
  }

  // The table has forgotten the permit and holds questions back until
  // EndQuestion, so that no question of this node overtakes the give-back.
  void GiveBack(std::string_view ip, int64_t now_us, int64_t next_us) {
    ++stats_.given_back;
    idle_.erase(std::string(ip));
    const int64_t gap_ms =
        std::max<int64_t>(0, (next_us - now_us + 999) / 1000);
    std::string key(ip);
    if (conn_ == nullptr ||
        !conn_->Command({"EVAL", kGiveBackScript, "1", LeaseKey(ip), node_,
                         std::to_string(gap_ms)},
                        [this, key](redisReply* r) {
                          // No reply: the connection died with the
                          // give-back perhaps still on its way in; a
                          // question from another connection waits a
                          // little so as not to overtake it.
                          const int64_t now = NowUs();
                          table_->EndQuestion(
                              key, now,
                              r == nullptr
                                  ? now + int64_t{opt_.reconnect_min_ms} * 1000
                                  : now);
                        })) {
      // Redis out of reach: the lease expires by itself.
      ++stats_.unreachable;
      table_->EndQuestion(ip, now_us,
                          now_us + int64_t{opt_.reconnect_min_ms} * 1000);
    }
  }

  bool Contested(std::string_view ip, int64_t now_us) const {
    auto it = contested_.find(std::string(ip));
    return it != contested_.end() && it->second > now_us;
  }

  // How long until the next check of an address unused here: a quarter
  // lease, or a few of the waiting node's polls while quick checks last.
  int64_t CheckAfterUs(const Idle& idle) const {
    if (idle.quick > 0) {
      return std::min<int64_t>(ttl_us_ / 4,
                               int64_t{opt_.contend_poll_ms} * 4 * 1000);
    }
    return ttl_us_ / 4;
  }

  void Tick() {
    if (conn_ != nullptr) conn_->Tick(wire::NowMs());
    const int64_t now = NowUs();
    for (auto& [ip, h] : held_) {
      if (!h.renewing && h.permit_until_us - now < ttl_us_ / 2) {
        Renew(ip, opt_.lease_ttl_ms);
      }
    }
    for (auto it = contested_.begin(); it != contested_.end();) {
      it = it->second <= now ? contested_.erase(it) : std::next(it);
    }
    // An address this process used, idle since: is another node waiting
    // for it? Once per quarter lease while the permit lasts, so at most
    // about three checks after the last use, and none while the address is
    // used more often than that (its renewals tell the same); the first
    // few sooner for an address another node wanted lately.
    for (auto it = idle_.begin(); it != idle_.end();) {
      Idle& i = it->second;
      if (i.permit_until_us <= now) {
        it = idle_.erase(it);
        continue;
      }
      if (i.check_us <= now) {
        if (i.quick > 0) --i.quick;
        i.check_us = now + CheckAfterUs(i);
        if (SendAsk(it->first, opt_.lease_ttl_ms, Mode::kCheck)) {
          ++stats_.checked;
        }
      }
      ++it;
    }
  }

  uv_loop_t* loop_;
  IpSlotTable* table_;
  IpLeaseOptions opt_;
  std::string prefix_;
  std::string node_;
  int64_t ttl_us_;
  IpSlotTable::PermitRule rule_;
  std::unique_ptr<internal::RedisConn> conn_;  // null once closed
  uv_timer_t* timer_ = nullptr;
  // Addresses this process holds (a request in flight), for renewals.
  std::unordered_map<std::string, Held> held_;
  // Addresses this process released while the node's permit lasts.
  std::unordered_map<std::string, Idle> idle_;
  // Addresses another node wanted (a contended answer, or a refusal to
  // this process), until when that is news.
  std::unordered_map<std::string, int64_t> contested_;
  IpLeaseStats stats_;
};

}  // namespace

Result<std::unique_ptr<IpLeases>> NewRedisIpLeases(
    uv_loop_t* loop, IpSlotTable* table, const IpLeaseOptions& options) {
  if (loop == nullptr || table == nullptr) {
    return Status::InvalidArgument("ip leases: no loop or table");
  }
  IpLeaseOptions o = options;
  if (o.host.empty() || o.port <= 0 || o.port > 65535) {
    return Status::InvalidArgument("ip leases: bad host or port");
  }
  if (o.crawl.empty()) return Status::InvalidArgument("ip leases: no crawl");
  if (o.node_id < 0) return Status::InvalidArgument("ip leases: bad node id");
  o.lease_ttl_ms = std::clamp(o.lease_ttl_ms, 100, 3'600'000);
  o.contend_poll_ms = std::clamp(o.contend_poll_ms, 1, o.lease_ttl_ms / 4);
  o.ask_timeout_ms = std::clamp(o.ask_timeout_ms, 10, o.lease_ttl_ms);
  o.reconnect_min_ms = std::clamp(o.reconnect_min_ms, 1, 60'000);
  o.reconnect_max_ms =
      std::clamp(o.reconnect_max_ms, o.reconnect_min_ms, 600'000);
  auto l = std::make_unique<RedisIpLeases>(loop, table, o);
  l->Start();
  return std::unique_ptr<IpLeases>(std::move(l));
}

}  // namespace crawld::cluster
