// cluster/batcher.h (private to cluster/): the sending half that both
// exchanges share. It checks and accepts URLs per destination, seals them
// into encoded batches (at batch_urls, or when the oldest URL waited
// flush_interval_ms), keeps every sealed batch until the transport reports
// it acknowledged, and applies the per-destination bound (docs/CLUSTER.md,
// "Back-pressure"). A transport (local sockets, Redis Streams) only moves
// sealed batches and reports acknowledgements.
//
// Destinations are created on first use, so a large worker-id space (a
// cluster whose membership grows) costs nothing for ids never sent to.
#ifndef CRAWLD_CLUSTER_BATCHER_H_
#define CRAWLD_CLUSTER_BATCHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"

namespace crawld::cluster::internal {

// A sealed batch waiting for its acknowledgement.
struct SealedBatch {
  uint64_t id = 0;     // per destination, from 1, no gaps
  uint32_t count = 0;  // URLs in the batch
  // wire::EncodeBatch() output. Shared: a transport may still be writing it
  // when the acknowledgement removes the batch.
  std::shared_ptr<const std::string> blob;
  bool transmitted = false;  // handed to the transport at least once
  bool in_flight = false;    // the transport awaits the outcome of a send
};

// Lives on one loop, like the exchange that owns it. Not copyable.
class Batcher {
 public:
  // Called when a batch was sealed for `to` (it is the last of Queue(to)).
  using SealedFn = std::function<void(int to, SealedBatch& batch)>;

  // `options` must be sanitized (wire::SanitizeExchangeOptions). `stats`
  // (not owned, outlives the batcher) gets urls_sent, send_refused and
  // batches_acked.
  Batcher(const ExchangeOptions& options, uint64_t incarnation,
          ExchangeStats* stats, SealedFn on_sealed);
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Exchange::Send: InvalidArgument for a bad destination or message,
  // ResourceExhausted when the destination is at its bound or `full` (the
  // transport's own bound, e.g. a Redis backlog); the destination then
  // remembers the refusal for TakeWritable().
  Status Send(int to, const UrlMessage& m, bool full);

  // True when `to` is at max_pending_urls.
  bool AtBound(int to) const;
  // URLs accepted for `to` and not acknowledged (count).
  size_t Pending(int to) const;

  // Seals every open batch now / those whose oldest URL waited at least
  // flush_interval_ms by `now_ms` (monotonic milliseconds).
  void SealAll();
  void SealDue(uint64_t now_ms);

  // The unacknowledged sealed batches of `to`, in id order; nullptr for a
  // destination never sent to. Valid until the next call that seals or
  // acknowledges.
  std::deque<SealedBatch>* Queue(int to);

  // Removes batch `id` of `to` (a repeated acknowledgement is ignored, and
  // returns false).
  bool Acknowledge(int to, uint64_t id);

  // True once after a refused Send, when `to` has room again (the caller
  // then tells its WritableFn); `full` as for Send.
  bool TakeWritable(int to, bool full);

  // Exchange::ForEachUnacked.
  void ForEachUnacked(
      const std::function<void(int to, const UrlMessage& m)>& fn) const;

  // Destinations sent to so far, ascending.
  std::vector<int> Destinations() const;

  // True when `to` is a valid destination (not self, in range).
  bool ValidDestination(int to) const {
    return to >= 0 && to < options_.workers && to != options_.self;
  }

 private:
  struct Destination {
    std::vector<UrlMessage> building;
    uint64_t building_since_ms = 0;
    std::deque<SealedBatch> sealed;  // id order
    size_t pending_urls = 0;         // building + sealed
    uint64_t next_id = 1;
    bool refused = false;
  };

  void Seal(int to, Destination& d);
  const Destination* Find(int to) const;

  const ExchangeOptions options_;
  const uint64_t incarnation_;
  ExchangeStats* stats_;
  SealedFn on_sealed_;
  // Ordered, so that ForEachUnacked and the ticks visit destinations in a
  // stable order; node addresses are stable for the references handed out.
  std::map<int, Destination> dests_;
};

}  // namespace crawld::cluster::internal

#endif  // CRAWLD_CLUSTER_BATCHER_H_
