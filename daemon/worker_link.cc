// The supervisor's side of a worker (docs/CLUSTER.md, "Worker processes"
// and "Membership"; the protocol is daemon/control.h): the control socket,
// go, stop, rings of membership epochs, leases, reloads, and the status
// report every 200 ms.
#include <uv.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "base/json.h"
#include "daemon/worker_impl.h"

namespace crawld::daemon {

// --- the supervisor's socket
// --------------------------------------------------

Status Worker::Impl::StartControl() {
  uv_pipe_init(&loop_, &control_, 0);
  if (int rc = uv_pipe_open(&control_, options_.control_fd); rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&control_), nullptr);
    return Status::Internal(std::string("control socket: ") + uv_strerror(rc));
  }
  control_.data = this;
  uv_timer_init(&loop_, &report_timer_);
  report_timer_.data = this;
  control_open_ = true;
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&control_),
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        // One read at a time per handle: the chunk is free.
        Impl* self = static_cast<Impl*>(h->data);
        buf->base = self->control_chunk_;
        buf->len = sizeof(self->control_chunk_);
      },
      [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
        Impl* self = static_cast<Impl*>(stream->data);
        if (n < 0) {
          // The supervisor is gone: stop cleanly, checkpointed.
          uv_read_stop(stream);
          self->RequestStop("signal (supervisor gone)");
          return;
        }
        self->control_buf_.append(buf->base, static_cast<size_t>(n));
        size_t nl;
        while ((nl = self->control_buf_.find('\n')) != std::string::npos) {
          std::string line = self->control_buf_.substr(0, nl);
          self->control_buf_.erase(0, nl + 1);
          self->OnControlLine(line);
          if (!self->control_open_) return;
        }
      });
  uv_timer_start(
      &report_timer_,
      [](uv_timer_t* t) { static_cast<Impl*>(t->data)->Report(); }, 200, 200);
  return Status::Ok();
}

void Worker::Impl::OnControlLine(std::string_view line) {
  control::Command cmd = control::ParseCommand(line);
  switch (cmd.kind) {
    case control::Command::Kind::kGo:
      if (peers_ == nullptr || peers_->go() || go_wanted_) break;
      go_wanted_ = true;
      {
        // What the other workers handed over before they reported ready is
        // in this worker's inbox: take it all in first, so that no moved
        // page is fetched before its seen mark arrives.
        const int64_t epoch = peers_->ring_epoch();
        peers_->WhenCaughtUp([this, epoch] {
          if (epoch == peers_->ring_epoch() && !pending_ring_) {
            Go();
          } else {
            go_wanted_ = false;  // a newer ring came: wait for its go
          }
        });
      }
      break;
    case control::Command::Kind::kStop:
      RequestStop(cmd.reason);
      break;
    case control::Command::Kind::kRing:
      OnRing(std::move(cmd));
      break;
    case control::Command::Kind::kLease:
      lease_until_ms_ = cmd.until_ms;
      break;
    case control::Command::Kind::kReload:
      ReloadFromSupervisor(cmd.seq);
      break;
    case control::Command::Kind::kUnknown:
      break;
  }
}

void Worker::Impl::Go() {
  go_wanted_ = false;
  if (peers_->go() || stopping_) return;
  peers_->Go();
  EnqueueSeeds();
  Pump();
}

void Worker::Impl::OnRing(control::Command&& ring) {
  if (stopping_ || peers_ == nullptr) return;
  if (ring.epoch == peers_->ring_epoch() && !pending_ring_) return;
  if (ring.live.empty() ||
      !std::binary_search(ring.live.begin(), ring.live.end(),
                          options_.worker_id)) {
    return;  // the supervisor sends only rings its node is on
  }
  // No new fetch until every node uses this ring: the old owner of a host
  // stops before the new one starts.
  peers_->set_go(false);
  go_wanted_ = false;
  ready_ = false;
  pending_ring_ =
      PendingRing{ring.epoch, std::move(ring.live), std::move(ring.gone)};
  ApplyPendingRing();
}

void Worker::Impl::ApplyPendingRing() {
  // Jobs in flight finish under the old ring (Report() calls again).
  if (!pending_ring_ || path_->active() > 0) return;
  PendingRing next = std::move(*pending_ring_);
  pending_ring_.reset();
  const int previous = static_cast<int>(peers_->ring_size());
  if (peers_->ApplyRing(next.epoch, std::move(next.live), next.gone)) {
    std::vector<std::string> paths;
    const std::string dir = config_.crawl.data_dir + "/warc";
    for (const std::string& name :
         OwnWarcFiles(dir, config_.store.warc_prefix, options_.worker_id)) {
      paths.push_back(dir + "/" + name);
    }
    peers_->Rebalance(frontier_.get(), paths, previous);
    path_->SweepSchedule();  // the recrawl schedule of the hosts that left
    // Nothing is in flight now; the new owners start after everyone is
    // ready, so this keeps the per-host minimum gap across the move.
    handover_ready_ms_ = control::MonotonicMs() +
                         static_cast<uint64_t>(config_.politeness.min_delay_ms);
  }
}

void Worker::Impl::CheckLease() {
  if (lease_until_ms_ == 0 || stopping_ ||
      control::MonotonicMs() < lease_until_ms_) {
    return;
  }
  // The node's membership may have lapsed and another node may own these
  // hosts by now: stop at once, transfers aborted.
  log_.Write(Level::kError, "lease_expired", {});
  RequestStop(std::string(control::kStopLeaseExpired));
}

void Worker::Impl::ReloadFromSupervisor(uint64_t seq) {
  // The supervisor checked both files before it sent this; a file edited
  // again in between fails here and is reported (the old rules stay).
  reload_ok_ = LoadRules(false).ok();
  reload_seq_ = seq;
  Pump();
}

void Worker::Impl::Report() {
  if (!control_open_) return;
  CheckLease();
  ApplyPendingRing();
  if (!ready_ && !pending_ring_ &&
      control::MonotonicMs() >= handover_ready_ms_) {
    // A worker leaving the ring is told to stop once ready: its recrawl
    // schedule must be with the others by then too.
    ready_ = (peers_ == nullptr || peers_->Drained()) &&
             !(drainer_ && path_->handing_off());
  }
  const cluster::ExchangeStats ex =
      peers_ != nullptr ? peers_->stats() : cluster::ExchangeStats();
  std::string line =
      json::Dump({{"worker", options_.worker_id},
                  {"ready", ready_},
                  {"idle", Idle()},
                  {"pages", stats_.pages},
                  {"bytes", stats_.bytes},
                  {"queued", frontier_->queued()},
                  {"active", path_->active()},
                  {"hosts", frontier_->hosts()},
                  {"sent", ex.urls_sent},
                  {"received", ex.urls_received},
                  {"overflow", peers_ != nullptr ? peers_->overflow_urls() : 0},
                  {"epoch", peers_ != nullptr ? peers_->ring_epoch() : 0},
                  {"reload", reload_seq_},
                  {"reload_ok", reload_ok_}}) +
      "\n";
  uv_buf_t buf = uv_buf_init(line.data(), static_cast<unsigned>(line.size()));
  // A report that does not fit now is skipped: the next one is 200 ms away.
  (void)uv_try_write(reinterpret_cast<uv_stream_t*>(&control_), &buf, 1);
}

}  // namespace crawld::daemon
