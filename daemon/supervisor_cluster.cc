// daemon/supervisor_cluster.cc: the supervisor in a cluster (config
// cluster.redis; docs/CLUSTER.md, "Membership"): its node's member of the
// crawl's membership (daemon/membership.h), reporting the node's state each
// tick and making its workers follow the decision (the ring of each epoch,
// their lease, when to go, the crawl's stop), and the "cluster" of
// GET /api/status.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/control.h"
#include "daemon/supervisor_impl.h"

namespace crawld::daemon {

Status Supervisor::StartCluster() {
  if (opt_.config.cluster.redis.empty()) return Status::Ok();
  ClusterLink::Options co;
  co.cluster = opt_.config.cluster;
  co.max_pages = opt_.config.crawl.max_pages;
  co.workers_per_node = std::max(1, opt_.workers + opt_.drainers);
  co.member = opt_.workers > 0;
  co.log = &log_;
  auto link = ClusterLink::Start(&loop_, co);
  if (!link.ok()) return link.status();
  cluster_ = std::move(link).value();
  return Status::Ok();
}

Json Supervisor::ClusterJson() const {
  // The ring's workers by node: a global worker id is node x (workers per
  // node) + i (docs/CLUSTER.md).
  const int per_node = std::max(1, opt_.workers + opt_.drainers);
  std::set<int> live, gone;
  for (int w : ring_live_) live.insert(w / per_node);
  for (int w : ring_gone_) gone.insert(w / per_node);
  for (int n : live) gone.erase(n);
  Json j = Json::object();
  j["node_id"] = opt_.config.cluster.node_id;
  j["nodes"] = opt_.config.cluster.nodes;
  j["epoch"] = ring_epoch_;
  j["live_nodes"] = Json(std::vector<int>(live.begin(), live.end()));
  j["gone_nodes"] = Json(std::vector<int>(gone.begin(), gone.end()));
  j["lease"] = lease_ > 0;
  return j;
}

void Supervisor::ClusterTick(bool idle, uint64_t sent, uint64_t received,
                             uint64_t pages) {
  // The node has switched to the epoch its workers were told once every
  // worker of the ring reports it, handover acknowledged; it fetches once
  // every such worker got its go.
  bool switched = ring_epoch_ > 0, going = true, local_ready = true;
  for (auto& c : children_) {
    if (Drainer(*c)) continue;
    local_ready &= c->proc != nullptr && c->ready;
    switched &= c->proc != nullptr && c->ready && c->epoch == ring_epoch_;
    going &= c->go_epoch == ring_epoch_ && c->proc != nullptr;
  }
  if (switched) acked_epoch_ = ring_epoch_;
  ClusterLink::Local local;
  local.ready = local_ready;
  local.acked_epoch = acked_epoch_;
  local.going = going && acked_epoch_ == ring_epoch_ && ring_epoch_ > 0;
  local.idle = idle && local.going;
  local.sent = sent;
  local.received = received;
  local.pages = pages;
  const ClusterLink::Decision d = cluster_->Tick(local);
  if (!d.stop.empty()) {
    Stop(d.stop);
    return;
  }
  if (d.ring && d.epoch != ring_epoch_) {
    ring_epoch_ = d.epoch;
    ring_live_ = d.live;
    ring_gone_ = d.gone;
  }
  lease_ = d.lease_until_ms;
  for (auto& c : children_) SyncWorker(*c, d);
}

void Supervisor::SyncWorker(Child& c, const ClusterLink::Decision& d) {
  if (c.proc == nullptr || Drainer(c)) return;
  if (ring_epoch_ > 0 && c.ring_sent != ring_epoch_) {
    Send(c, control::RingLine(ring_epoch_, ring_live_, ring_gone_));
    c.ring_sent = ring_epoch_;
  }
  if (lease_ != 0 && lease_ != c.lease_sent) {
    Send(c, control::LeaseLine(lease_));
    c.lease_sent = lease_;
  }
  if (d.may_go && d.epoch == ring_epoch_ && c.ready && c.epoch == ring_epoch_ &&
      c.go_epoch != ring_epoch_) {
    Send(c, "go");
    c.go_epoch = ring_epoch_;
    log_.Write(Level::kInfo, "go",
               {{"worker", std::to_string(Global(c))},
                {"epoch", std::to_string(ring_epoch_)}});
  }
}

}  // namespace crawld::daemon
