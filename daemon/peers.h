// daemon/peers.h: this worker among several (docs/CLUSTER.md, "Worker
// processes"): the ring that says who owns a host, the exchange that
// carries URLs to their owner (step 5 of the way of one URL), and the
// handover of hosts when the worker count changes.
//
// - Out: a URL of another worker's host goes to the exchange; what the
//   exchange refuses (back-pressure) waits in an overflow queue, and no new
//   fetch starts until it drained (blocked()).
// - In: a received batch is appended to the inbox log (durable) before it
//   is acknowledged, then admitted; after a crash the log is replayed. The
//   log starts over at each checkpoint, which holds what it had.
// - Before "go" (the supervisor's word that every handover is done), URLs
//   received wait, so that a host's previous owner's seen-marks are in
//   before any of its URLs is admitted.
// - Rebalance: on a start with another worker count, the queues of hosts
//   this worker no longer owns are sent to their new owners, with a
//   seen-mark for each page it fetched of them.
// - Recrawl hand-off (crawl_path_handoff.cc): a message with a capture is
//   admitted at once, even before "go" (it only goes into the schedule);
//   ForEachUnackedCapture() tells its sender when it is acknowledged.
#ifndef CRAWLD_DAEMON_PEERS_H_
#define CRAWLD_DAEMON_PEERS_H_

#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/crawl_state.h"
#include "cluster/cluster.h"
#include "daemon/crawl_path.h"
#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"

namespace crawld::daemon {

// Owned by the worker, on its loop.
class Peers final : public Router {
 public:
  struct Options {
    int self = 0;     // this worker's id on the ring
    int workers = 1;  // workers on the ring
    // Workers the exchange connects: the ring's, or more while workers the
    // ring no longer has hand their hosts over.
    int exchange_workers = 1;
    cluster::Options ring;
    std::string inbox_log_path;  // "": no inbox log (no checkpoints)
  };

  // `admit` receives every URL message this worker accepts (after "go")
  // and returns false when it could not keep it now (a capture whose
  // schedule store failed): that batch is then held unacknowledged, so
  // that its sender keeps it, and RetryHeld() admits what failed again.
  // `wake` is called when something may start (the exchange has room).
  Peers(const Options& options, std::unique_ptr<cluster::Exchange> exchange,
        CrawlStats* stats, EventLog* log);
  ~Peers() override;
  Peers(const Peers&) = delete;
  Peers& operator=(const Peers&) = delete;

  void SetAdmit(std::function<bool(const cluster::UrlMessage&)> admit) {
    admit_ = std::move(admit);
  }
  void SetWake(std::function<void()> wake) { wake_ = std::move(wake); }

  // Opens the inbox log for appending (after Recover replayed it).
  [[nodiscard]] Status OpenInboxLog();
  // Recovery: admits the URLs of the inbox log (received after the last
  // checkpoint, acknowledged, not in the checkpoint).
  void ReplayInboxLog();
  // The checkpoint holds every URL received so far: the log starts over.
  void TruncateInboxLog();

  // Router.
  int Owner(std::string_view host) const override;
  int self() const override { return options_.self; }
  bool Send(int to, cluster::UrlMessage message) override;
  [[nodiscard]] bool ForEachUnackedCapture(
      const std::function<void(const std::string& url)>& fn) const override;

  // The supervisor's "go": URLs received before it are admitted now.
  void Go();
  [[nodiscard]] bool go() const { return go_; }
  void set_go(bool go) { go_ = go; }

  // URLs wait for the exchange: no new fetch should start.
  [[nodiscard]] bool blocked() const { return overflow_urls_ > 0; }
  [[nodiscard]] size_t overflow_urls() const { return overflow_urls_; }
  // Nothing sent and unacknowledged, nothing waiting, no batch held.
  [[nodiscard]] bool Drained() const;

  // Admits again what failed of the batches held back (SetAdmit), at most
  // once a second by `now_us` (monotonic); acknowledges a batch once all of
  // it is kept. Returns the batches still held.
  size_t RetryHeld(int64_t now_us);
  [[nodiscard]] size_t held() const { return held_.size(); }

  // Unacknowledged and waiting URLs, for the checkpoint.
  [[nodiscard]] std::vector<checkpoint::RoutedUrl> Outbox() const;
  // Recovery: the checkpoint's outbox again, each URL to its owner now.
  void Resend(const std::vector<checkpoint::RoutedUrl>& outbox);

  // Hands the queues of hosts this worker no longer owns to their owners,
  // and a seen-mark for each page it fetched of them (from its WARCs).
  void Rebalance(frontier::Frontier* frontier,
                 const std::vector<std::string>& own_warc_paths,
                 int previous_workers);

  // Cluster membership (docs/CLUSTER.md, "Membership"): the ring of the
  // live workers of a new epoch. Adopts the inboxes of the gone workers
  // this worker is the adopter of (their URLs are read again and routed to
  // their hosts' new owners). Returns true if a worker joined, i.e. hosts
  // may move away from this one (consistent hashing moves hosts only to
  // workers that join). REQUIRES: `live` ascending, non-empty.
  bool ApplyRing(int64_t epoch, std::vector<int> live,
                 const std::vector<int>& gone);
  [[nodiscard]] int64_t ring_epoch() const { return ring_epoch_; }
  [[nodiscard]] size_t ring_size() const { return ring_workers_.size(); }
  // Calls `fn` once the inbox holds everything sent before this call.
  void WhenCaughtUp(std::function<void()> fn);

  // Flushes batches, and closes the exchange once the loop runs again (a
  // close may be called from inside an exchange callback). The outbox as
  // it was is kept for the exit checkpoint.
  void Close(uv_loop_t* loop);

  [[nodiscard]] cluster::ExchangeStats stats() const;

 private:
  void OnInbox(std::vector<cluster::UrlMessage>&& batch, cluster::AckFn ack);
  // False when `admit` could not keep the message now.
  bool Admit(const cluster::UrlMessage& m);
  void Drain(int to);

  Options options_;
  std::unique_ptr<cluster::Ring> ring_;
  std::vector<int> ring_workers_;  // the ring's workers, ascending
  int64_t ring_epoch_ = 0;         // of the ring in force (0: the config's)
  std::unique_ptr<cluster::Exchange> exchange_;
  CrawlStats* stats_;
  EventLog* log_;
  std::function<bool(const cluster::UrlMessage&)> admit_;
  std::function<void()> wake_;
  std::vector<std::deque<cluster::UrlMessage>> overflow_;
  size_t overflow_urls_ = 0;
  bool go_ = true;
  // URLs received before go: admitted at go, after every handover's
  // seen-marks, so that none of those pages is queued again.
  std::vector<cluster::UrlMessage> pre_go_;
  // Received batches not acknowledged because part of them could not be
  // kept: that part, and the batch's ack.
  struct Held {
    std::vector<cluster::UrlMessage> failed;
    cluster::AckFn ack;
  };
  std::vector<Held> held_;
  int64_t next_retry_us_ = 0;
  FILE* inbox_log_ = nullptr;
  std::vector<checkpoint::RoutedUrl> final_outbox_;  // as the exchange closed
  cluster::ExchangeStats final_stats_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_PEERS_H_
