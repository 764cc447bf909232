// daemon/membership.cc: see membership.h.
#include "daemon/membership.h"

#include <uv.h>

#include <algorithm>
#include <utility>

#include "daemon/control.h"

namespace crawld::daemon {
namespace {

// Fresh views (one per heartbeat, 200 ms apart) with every node idle and
// the summed exchange counters unchanged before the crawl is done: two
// seconds, as a stream entry waits up to one read block (100 ms) before
// its receiver counts it, and reports are 200 ms apart.
constexpr int kQuietViews = 10;
// A report older than this (five heartbeats) is stale.
constexpr int64_t kFreshReportMs = 1000;

std::string Ids(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace

ClusterLink::ClusterLink(const Options& options) : opt_(options) {}

ClusterLink::~ClusterLink() = default;

Result<std::unique_ptr<ClusterLink>> ClusterLink::Start(uv_loop_s* loop,
                                                        const Options& o) {
  if (o.workers_per_node < 1) {
    return Status::InvalidArgument("cluster: workers per node must be >= 1");
  }
  const conf::RedisAddress addr = conf::ParseRedisUrl(o.cluster.redis);
  cluster::MembershipOptions mo;
  mo.host = addr.host;
  mo.port = addr.port;
  mo.crawl = o.cluster.name;
  mo.node_id = o.cluster.node_id;
  mo.heartbeat_ttl_ms = o.cluster.heartbeat_ttl_ms;
  std::unique_ptr<ClusterLink> link(new ClusterLink(o));
  ClusterLink* self = link.get();
  auto m = cluster::NewRedisMembership(
      loop, mo, [self](const cluster::MembershipView& v) { self->OnView(v); });
  if (!m.ok()) return m.status();
  link->membership_ = std::move(m).value();
  return link;
}

void ClusterLink::OnView(const cluster::MembershipView& view) {
  view_ = view;
  have_view_ = true;
  fresh_ = true;
  if (view.epoch != logged_epoch_ && opt_.log != nullptr) {
    logged_epoch_ = view.epoch;
    opt_.log->Write(Level::kInfo, "membership",
                    {{"epoch", std::to_string(view.epoch)},
                     {"live_nodes", Ids(view.live)},
                     {"gone_nodes", Ids(view.gone)}});
  }
}

ClusterLink::Decision ClusterLink::Tick(const Local& local) {
  const bool in_view =
      have_view_ && std::find(view_.live.begin(), view_.live.end(),
                              opt_.cluster.node_id) != view_.live.end();
  if (opt_.member && !joined_ && (local.ready || in_view)) {
    // Joins once its workers are up and their own handover is done: a node
    // still starting would hold every other node at the next epoch change.
    // At once if the view still has this node (restarted within the TTL):
    // claiming the key then changes no epoch, and keeps it from expiring.
    joined_ = true;
    membership_->Join();
  }
  cluster::NodeReport report;
  report.acked_epoch = local.acked_epoch;
  report.going = local.going;
  report.idle = local.idle;
  report.sent = local.sent;
  report.received = local.received;
  report.pages = local.pages;
  membership_->Publish(report);

  Decision d;
  if (!have_view_) return d;
  const cluster::MembershipView& v = view_;
  if (v.displaced) {
    d.stop = "node_id_in_use";
    return d;
  }
  if (!v.done.empty()) {
    d.stop = v.done;
    return d;
  }
  if (!opt_.member) return d;
  if (!quorum_) {
    quorum_ = cluster::QuorumMet(v, opt_.cluster.node_id, opt_.cluster.nodes);
    if (!quorum_) return d;
  }
  d.ring = true;
  d.epoch = v.epoch;
  d.live = cluster::WorkersOf(v.live, opt_.workers_per_node);
  d.gone = cluster::WorkersOf(v.gone, opt_.workers_per_node);
  const uint64_t now = control::MonotonicMs();
  d.lease_until_ms = v.lease_until_ms > now ? v.lease_until_ms : 0;
  d.may_go = d.lease_until_ms != 0 && cluster::EpochSettled(v);
  if (fresh_) {
    fresh_ = false;
    d.stop = EndVerdict(v);
    if (!d.stop.empty()) membership_->SetDone(d.stop);
  }
  return d;
}

std::string ClusterLink::EndVerdict(const cluster::MembershipView& v) {
  uint64_t pages = 0, sent = 0, received = 0;
  bool all_idle = !v.live.empty();
  for (int n : v.live) {
    auto it = v.reports.find(n);
    if (it == v.reports.end()) {
      all_idle = false;
      continue;
    }
    // A report is the node's state only while the node renews it: a node
    // that died idle must not end the crawl while its inbox fills.
    all_idle &= it->second.idle && it->second.age_ms < kFreshReportMs;
    pages += it->second.pages;
    sent += it->second.sent;
    received += it->second.received;
  }
  std::string stop;
  if (opt_.max_pages > 0 && pages >= opt_.max_pages) {
    stop = "max_pages";
  } else if (all_idle && sent == last_sent_ && received == last_received_) {
    if (++quiet_views_ >= kQuietViews) stop = "done";
  } else {
    quiet_views_ = 0;
  }
  last_sent_ = sent;
  last_received_ = received;
  return stop;
}

void ClusterLink::Leave(std::function<void()> done) {
  membership_->Leave(std::move(done));
}

}  // namespace crawld::daemon
