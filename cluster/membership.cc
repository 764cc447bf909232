// cluster/membership.cc: node membership over Redis (docs/CLUSTER.md,
// "Membership"), and the pure rules built on a view.
//
// One Lua script does a whole heartbeat atomically: renew this node's key
// (with its report), compute the live set from every member's key, bump the
// epoch if the set changed, and read back every live report and the done
// key. So Redis alone decides the view, once per change, however many nodes
// notice it; the nodes only read it.
#include <uv.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/redis_conn.h"
#include "cluster/wire.h"

namespace crawld::cluster {
namespace {

using internal::IsError;
using internal::Str;

// ARGV: prefix, node id, value ("<incarnation> <report>"), ttl ms, mode,
// incarnation, done reason to set ("" = none).
// mode: "claim" (first beat of a node: the key is ours whoever held it),
// "beat" (renew unless another incarnation took the id), "observe" (read
// only), "leave" (delete our key).
// Returns {status, epoch, view, gone, {live values...}, done, {their PTTLs}}.
constexpr const char* kBeatScript = R"lua(
local p, me, value, ttl, mode, inc, done =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local key = p .. 'node:' .. me
local function owner(v) return v and string.match(v, '^(%S+)') end
local status = 'ok'
if mode == 'claim' or mode == 'beat' then
  local cur = redis.call('GET', key)
  if mode == 'beat' and cur and owner(cur) ~= inc then
    status = 'displaced'
  else
    redis.call('SET', key, value, 'PX', ttl)
    redis.call('SADD', p .. 'members', me)
  end
elseif mode == 'leave' then
  local cur = redis.call('GET', key)
  if cur and owner(cur) == inc then redis.call('DEL', key) end
end
if done ~= '' then redis.call('SET', p .. 'done', done, 'PX', 60000) end
local members = redis.call('SMEMBERS', p .. 'members')
table.sort(members, function(a, b) return tonumber(a) < tonumber(b) end)
local live, gone, values, ttls = {}, {}, {}, {}
for _, m in ipairs(members) do
  local v = redis.call('GET', p .. 'node:' .. m)
  if v then
    table.insert(live, m)
    table.insert(values, v)
    table.insert(ttls, redis.call('PTTL', p .. 'node:' .. m))
  else
    table.insert(gone, m)
  end
end
if mode == 'claim' then
  -- A done key when no other node is fetching belongs to an earlier run.
  local running = false
  for i, v in ipairs(values) do
    if live[i] ~= me and string.match(v, '^%S+ %S+ 1 ') then running = true end
  end
  if not running then redis.call('DEL', p .. 'done') end
end
local view = table.concat(live, ',')
if redis.call('GET', p .. 'view') ~= view then
  redis.call('SET', p .. 'view', view)
  redis.call('INCR', p .. 'epoch')
end
local epoch = tonumber(redis.call('GET', p .. 'epoch') or '0')
return {status, epoch, view, table.concat(gone, ','), values,
        redis.call('GET', p .. 'done') or '', ttls}
)lua";

std::vector<int> ParseIds(std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string item(text.substr(0, comma));
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// "<incarnation> <acked_epoch> <going> <idle> <sent> <received> <pages>"
bool ParseReport(std::string_view value, NodeReport* r) {
  const std::string s(value);
  unsigned long long inc = 0, sent = 0, received = 0, pages = 0;
  long long acked = 0;
  int going = 0, idle = 0;
  if (std::sscanf(s.c_str(), "%llx %lld %d %d %llu %llu %llu", &inc, &acked,
                  &going, &idle, &sent, &received, &pages) != 7) {
    return false;
  }
  r->acked_epoch = acked;
  r->going = going == 1;
  r->idle = idle == 1;
  r->sent = sent;
  r->received = received;
  r->pages = pages;
  return true;
}

class RedisMembership final : public Membership {
 public:
  RedisMembership(uv_loop_t* loop, const MembershipOptions& o, ViewFn on_view)
      : loop_(loop),
        opt_(o),
        keys_(o.crawl),
        incarnation_(wire::NewIncarnation()),
        on_view_(std::move(on_view)),
        conn_(loop, {o.host, o.port, o.reconnect_min_ms, o.reconnect_max_ms},
              nullptr, nullptr) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%016" PRIx64, incarnation_);
    incarnation_text_ = buf;
  }

  ~RedisMembership() override {
    if (timer_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(timer_),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
  }

  void Start() {
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    const auto period = static_cast<uint64_t>(opt_.period_ms);
    uv_timer_start(
        timer_,
        [](uv_timer_t* t) { static_cast<RedisMembership*>(t->data)->Tick(); },
        period, period);
    conn_.Start();
  }

  void Join() override { joining_ = true; }

  void Publish(const NodeReport& report) override { report_ = report; }

  void SetDone(const std::string& reason) override {
    if (done_sent_ || reason.empty()) return;
    // Tagged with our incarnation: a node tells this run's end from an
    // earlier run's key by its value, whatever the reason.
    done_to_set_ = reason + " " + incarnation_text_;
  }

  void Leave(std::function<void()> done) override {
    if (leaving_) return;
    leaving_ = true;
    leave_done_ = std::move(done);
    // Redis may be out of reach: a node that cannot say goodbye expires
    // after its TTL instead.
    leave_deadline_ms_ = wire::NowMs() + 1000;
    if (joined_ && !displaced_) {
      leave_sent_ = SendBeat("leave");
    }
  }

 private:
  void Tick() {
    const uint64_t now = wire::NowMs();
    conn_.Tick(now);
    if (leaving_) {
      // From the timer, never from inside a reply: the callback may destroy
      // this object.
      if (!leave_sent_ || leave_acked_ || now >= leave_deadline_ms_) {
        FinishLeave();
      }
      return;
    }
    if (in_flight_) return;
    const char* mode = !joining_ || displaced_ ? "observe"
                       : joined_               ? "beat"
                                               : "claim";
    SendBeat(mode);
  }

  bool SendBeat(const char* mode) {
    char report[160];
    std::snprintf(report, sizeof(report),
                  "%s %" PRId64 " %d %d %" PRIu64 " %" PRIu64 " %" PRIu64,
                  incarnation_text_.c_str(), report_.acked_epoch,
                  report_.going ? 1 : 0, report_.idle ? 1 : 0, report_.sent,
                  report_.received, report_.pages);
    const uint64_t sent_ms = wire::NowMs();
    const std::string done = done_to_set_;
    const std::string m = mode;
    const bool queued = conn_.Command(
        {"EVAL", kBeatScript, "0", keys_.prefix(), std::to_string(opt_.node_id),
         report, std::to_string(opt_.heartbeat_ttl_ms), m, incarnation_text_,
         done},
        [this, sent_ms, done, m](redisReply* r) {
          OnBeat(r, sent_ms, done, m);
        });
    in_flight_ = queued;
    return queued;
  }

  void OnBeat(redisReply* r, uint64_t sent_ms, const std::string& done,
              const std::string& mode) {
    in_flight_ = false;
    if (mode == "leave") leave_acked_ = true;
    if (leaving_) return;
    if (IsError(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 7) return;
    if (!done.empty()) {
      done_sent_ = true;
      done_to_set_.clear();
    }
    MembershipView v;
    const bool ok = Str(r->element[0]) == "ok";
    if ((mode == "claim" || mode == "beat") && ok) {
      joined_ = true;
      // The key lives until Redis applied the SET plus the TTL; we count
      // from before we sent it, and keep a quarter as margin for the time a
      // worker needs to stop (docs/CLUSTER.md, "Fencing").
      v.lease_until_ms =
          sent_ms + static_cast<uint64_t>(opt_.heartbeat_ttl_ms * 3 / 4);
    }
    if (mode == "beat" && !ok) displaced_ = true;
    v.displaced = displaced_;
    v.epoch = internal::Int(r->element[1]);
    v.live = ParseIds(Str(r->element[2]));
    v.gone = ParseIds(Str(r->element[3]));
    const redisReply* values = r->element[4];
    const redisReply* ttls = r->element[6];
    for (size_t i = 0; values != nullptr && values->type == REDIS_REPLY_ARRAY &&
                       i < values->elements && i < v.live.size();
         ++i) {
      NodeReport rep;
      if (!ParseReport(Str(values->element[i]), &rep)) continue;
      if (ttls != nullptr && ttls->type == REDIS_REPLY_ARRAY &&
          i < ttls->elements) {
        // A key renewed every period_ms has about the whole TTL left.
        const int64_t left = internal::Int(ttls->element[i]);
        rep.age_ms = left < 0
                         ? opt_.heartbeat_ttl_ms
                         : std::max<int64_t>(0, opt_.heartbeat_ttl_ms - left);
      }
      v.reports[v.live[i]] = rep;
    }
    // A done key already there at our first view is an earlier run's (a
    // running crawl stops its nodes at once): it is not our end. A claim
    // deletes it, unless another node fetches.
    const std::string_view done_raw = Str(r->element[5]);
    if (!seen_view_) {
      seen_view_ = true;
      stale_done_ = std::string(done_raw);
    }
    if (done_raw != stale_done_) {
      v.done = std::string(done_raw.substr(0, done_raw.find(' ')));
    }
    if (on_view_) on_view_(v);
  }

  void FinishLeave() {
    if (!leave_done_) return;
    auto done = std::move(leave_done_);
    leave_done_ = nullptr;
    done();
  }

  uv_loop_t* loop_;
  MembershipOptions opt_;
  internal::Keys keys_;
  uint64_t incarnation_;
  std::string incarnation_text_;
  ViewFn on_view_;
  internal::RedisConn conn_;
  uv_timer_t* timer_ = nullptr;
  NodeReport report_;
  std::string done_to_set_;
  bool done_sent_ = false;
  bool seen_view_ = false;
  std::string stale_done_;  // the done key's value at our first view
  bool in_flight_ = false;
  bool joining_ = false;  // Join() was called
  bool joined_ = false;   // and a heartbeat renewed the key
  bool displaced_ = false;
  bool leaving_ = false;
  bool leave_sent_ = false;
  bool leave_acked_ = false;
  uint64_t leave_deadline_ms_ = 0;
  std::function<void()> leave_done_;
};

}  // namespace

Result<std::unique_ptr<Membership>> NewRedisMembership(
    uv_loop_t* loop, const MembershipOptions& options,
    Membership::ViewFn on_view) {
  if (loop == nullptr) return Status::InvalidArgument("membership: no loop");
  MembershipOptions o = options;
  if (o.host.empty() || o.port <= 0 || o.port > 65535) {
    return Status::InvalidArgument("membership: bad host or port");
  }
  if (o.crawl.empty()) return Status::InvalidArgument("membership: no crawl");
  if (o.node_id < 0) return Status::InvalidArgument("membership: bad node id");
  o.heartbeat_ttl_ms = std::clamp(o.heartbeat_ttl_ms, 100, 3600000);
  o.period_ms =
      std::clamp(o.period_ms, 10, std::max(10, o.heartbeat_ttl_ms / 4));
  o.reconnect_min_ms = std::clamp(o.reconnect_min_ms, 1, 60000);
  o.reconnect_max_ms =
      std::clamp(o.reconnect_max_ms, o.reconnect_min_ms, 600000);
  auto m = std::make_unique<RedisMembership>(loop, o, std::move(on_view));
  m->Start();
  return std::unique_ptr<Membership>(std::move(m));
}

// --- The rules built on a view.

std::vector<int> WorkersOf(const std::vector<int>& nodes,
                           int workers_per_node) {
  std::vector<int> out;
  for (int n : nodes) {
    for (int i = 0; i < workers_per_node; ++i) {
      out.push_back(n * workers_per_node + i);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool EpochSettled(const MembershipView& view) {
  if (view.live.empty()) return false;
  for (int n : view.live) {
    auto it = view.reports.find(n);
    if (it == view.reports.end() || it->second.acked_epoch != view.epoch) {
      return false;
    }
  }
  return true;
}

bool QuorumMet(const MembershipView& view, int self, int expected_nodes) {
  if (std::find(view.live.begin(), view.live.end(), self) == view.live.end()) {
    return false;
  }
  if (static_cast<int>(view.live.size()) >= expected_nodes) return true;
  for (const auto& [node, report] : view.reports) {
    if (node != self && report.going) return true;
  }
  return false;
}

int AdopterOf(const Ring& ring, int gone_worker) {
  return ring.Owner("inbox:" + std::to_string(gone_worker));
}

}  // namespace crawld::cluster
