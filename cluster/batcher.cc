// cluster/batcher.cc: see batcher.h.
#include "cluster/batcher.h"

#include <utility>

#include "cluster/wire.h"

namespace crawld::cluster::internal {

Batcher::Batcher(const ExchangeOptions& options, uint64_t incarnation,
                 ExchangeStats* stats, SealedFn on_sealed)
    : options_(options),
      incarnation_(incarnation),
      stats_(stats),
      on_sealed_(std::move(on_sealed)) {}

Status Batcher::Send(int to, const UrlMessage& m, bool full) {
  if (!ValidDestination(to)) {
    return Status::InvalidArgument("exchange: bad destination worker " +
                                   std::to_string(to));
  }
  if (Status s = wire::ValidateMessage(m, options_); !s.ok()) return s;
  Destination& d = dests_[to];
  if (full ||
      d.pending_urls >= static_cast<size_t>(options_.max_pending_urls)) {
    d.refused = true;
    ++stats_->send_refused;
    return Status::ResourceExhausted("exchange: worker " + std::to_string(to) +
                                     " is back-pressured");
  }
  if (d.building.empty()) d.building_since_ms = wire::NowMs();
  d.building.push_back(m);
  ++d.pending_urls;
  ++stats_->urls_sent;
  if (d.building.size() >= static_cast<size_t>(options_.batch_urls)) {
    Seal(to, d);
  }
  return Status::Ok();
}

const Batcher::Destination* Batcher::Find(int to) const {
  auto it = dests_.find(to);
  return it == dests_.end() ? nullptr : &it->second;
}

bool Batcher::AtBound(int to) const {
  const Destination* d = Find(to);
  return d != nullptr &&
         d->pending_urls >= static_cast<size_t>(options_.max_pending_urls);
}

size_t Batcher::Pending(int to) const {
  const Destination* d = Find(to);
  return d == nullptr ? 0 : d->pending_urls;
}

void Batcher::Seal(int to, Destination& d) {
  if (d.building.empty()) return;
  SealedBatch b;
  b.id = d.next_id++;
  b.count = static_cast<uint32_t>(d.building.size());
  auto blob = std::make_shared<std::string>();
  wire::EncodeBatch({static_cast<uint32_t>(options_.self), incarnation_, b.id},
                    d.building, blob.get());
  b.blob = std::move(blob);
  d.building.clear();
  d.sealed.push_back(std::move(b));
  if (on_sealed_) on_sealed_(to, d.sealed.back());
}

void Batcher::SealAll() {
  for (auto& [to, d] : dests_) Seal(to, d);
}

void Batcher::SealDue(uint64_t now_ms) {
  const auto interval = static_cast<uint64_t>(options_.flush_interval_ms);
  for (auto& [to, d] : dests_) {
    if (!d.building.empty() && now_ms - d.building_since_ms >= interval) {
      Seal(to, d);
    }
  }
}

std::deque<SealedBatch>* Batcher::Queue(int to) {
  auto it = dests_.find(to);
  return it == dests_.end() ? nullptr : &it->second.sealed;
}

bool Batcher::Acknowledge(int to, uint64_t id) {
  auto it = dests_.find(to);
  if (it == dests_.end()) return false;
  Destination& d = it->second;
  for (auto b = d.sealed.begin(); b != d.sealed.end(); ++b) {
    if (b->id != id) continue;
    d.pending_urls -= b->count;
    ++stats_->batches_acked;
    d.sealed.erase(b);
    return true;
  }
  return false;
}

bool Batcher::TakeWritable(int to, bool full) {
  auto it = dests_.find(to);
  if (it == dests_.end() || !it->second.refused || full || AtBound(to)) {
    return false;
  }
  it->second.refused = false;
  return true;
}

void Batcher::ForEachUnacked(
    const std::function<void(int, const UrlMessage&)>& fn) const {
  std::vector<UrlMessage> urls;
  for (const auto& [to, d] : dests_) {
    for (const SealedBatch& b : d.sealed) {
      // Our own encoding, so it decodes.
      wire::BatchHeader h;
      urls.clear();
      if (!wire::DecodeBatch(*b.blob, &h, &urls, UINT32_MAX).ok()) continue;
      for (const UrlMessage& m : urls) fn(to, m);
    }
    for (const UrlMessage& m : d.building) fn(to, m);
  }
}

std::vector<int> Batcher::Destinations() const {
  std::vector<int> out;
  out.reserve(dests_.size());
  for (const auto& [to, d] : dests_) out.push_back(to);
  return out;
}

}  // namespace crawld::cluster::internal
