#include "daemon/peers.h"

#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "conf/read_file.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

namespace {

checkpoint::RoutedUrl ToRouted(int to, const cluster::UrlMessage& m) {
  checkpoint::RoutedUrl r;
  r.to_worker = to;
  // A recrawl hand-off is kept in the outbox and the inbox log as what it
  // also says, a page fetched already: its capture is durable elsewhere,
  // in the receiver's schedule before the ack, and in the sender's until
  // the ack (which hands it over again after a crash).
  r.seen_mark = m.seen_mark || !m.capture.empty();
  r.url = m.url;
  r.seed_host = m.seed_host;
  r.depth = m.depth;
  r.credit = m.credit;
  r.sitemap_kind = m.sitemap_kind;
  r.sitemap_of = m.sitemap_of;
  r.changefreq = m.changefreq;
  r.lastmod_s = m.lastmod_s;
  return r;
}

cluster::UrlMessage FromRouted(checkpoint::RoutedUrl&& r) {
  cluster::UrlMessage m;
  m.url = std::move(r.url);
  m.depth = r.depth;
  m.credit = r.credit;
  m.seed_host = std::move(r.seed_host);
  m.seen_mark = r.seen_mark;
  m.sitemap_kind = r.sitemap_kind;
  m.sitemap_of = std::move(r.sitemap_of);
  m.changefreq = r.changefreq;
  m.lastmod_s = r.lastmod_s;
  return m;
}

}  // namespace

Peers::Peers(const Options& options,
             std::unique_ptr<cluster::Exchange> exchange, CrawlStats* stats,
             EventLog* log)
    : options_(options),
      ring_(std::make_unique<cluster::Ring>(options.workers, options.ring)),
      exchange_(std::move(exchange)),
      stats_(stats),
      log_(log) {
  overflow_.resize(static_cast<size_t>(options_.exchange_workers));
  for (int w = 0; w < options_.workers; ++w) ring_workers_.push_back(w);
  exchange_->SetInbox([this](int, std::vector<cluster::UrlMessage>&& batch,
                             cluster::AckFn ack) {
    OnInbox(std::move(batch), std::move(ack));
  });
  exchange_->SetOnWritable([this](int to) {
    Drain(to);
    if (wake_) wake_();
  });
}

Peers::~Peers() {
  if (inbox_log_ != nullptr) fclose(inbox_log_);
}

int Peers::Owner(std::string_view host) const { return ring_->Owner(host); }

// --- out
// ----------------------------------------------------------------------

bool Peers::Send(int to, cluster::UrlMessage m) {
  stats_->Count("routed_out");
  auto& waiting = overflow_[static_cast<size_t>(to)];
  if (exchange_ != nullptr && waiting.empty()) {
    Status s = exchange_->Send(to, m);
    if (s.ok()) return true;
    if (s.code() != Status::Code::kResourceExhausted) {
      stats_->Count("route_refused");
      log_->Write(Level::kWarn, "route_refused",
                  {{"url", m.url}, {"error", s.ToString()}});
      return false;
    }
  }
  // Back-pressure (or the exchange is closing): kept, saved by the next
  // checkpoint, and no new fetch starts until it drained.
  waiting.push_back(std::move(m));
  ++overflow_urls_;
  return true;
}

bool Peers::ForEachUnackedCapture(
    const std::function<void(const std::string& url)>& fn) const {
  if (exchange_ == nullptr) return false;
  exchange_->ForEachUnacked([&fn](int, const cluster::UrlMessage& m) {
    if (!m.capture.empty()) fn(m.url);
  });
  for (const auto& waiting : overflow_) {
    for (const auto& m : waiting) {
      if (!m.capture.empty()) fn(m.url);
    }
  }
  return true;
}

void Peers::Drain(int to) {
  auto& waiting = overflow_[static_cast<size_t>(to)];
  while (exchange_ != nullptr && !waiting.empty()) {
    Status s = exchange_->Send(to, waiting.front());
    if (s.code() == Status::Code::kResourceExhausted) return;
    if (!s.ok()) stats_->Count("route_refused");
    waiting.pop_front();
    --overflow_urls_;
  }
}

bool Peers::Drained() const {
  if (overflow_urls_ > 0 || !held_.empty()) return false;
  for (int w = 0; exchange_ != nullptr && w < options_.exchange_workers; ++w) {
    if (exchange_->Pending(w) > 0) return false;
  }
  return true;
}

std::vector<checkpoint::RoutedUrl> Peers::Outbox() const {
  if (exchange_ == nullptr) return final_outbox_;
  std::vector<checkpoint::RoutedUrl> out;
  exchange_->ForEachUnacked([&out](int to, const cluster::UrlMessage& m) {
    out.push_back(ToRouted(to, m));
  });
  for (size_t to = 0; to < overflow_.size(); ++to) {
    for (const auto& m : overflow_[to]) {
      out.push_back(ToRouted(static_cast<int>(to), m));
    }
  }
  for (const auto& m : pre_go_) out.push_back(ToRouted(options_.self, m));
  return out;
}

void Peers::Resend(const std::vector<checkpoint::RoutedUrl>& outbox) {
  for (checkpoint::RoutedUrl r : outbox) {
    // The owner may have changed with the worker count.
    const int owner = Owner(url::HostOf(r.url));
    cluster::UrlMessage m = FromRouted(std::move(r));
    if (owner == options_.self) {
      (void)Admit(m);  // (no capture: see ToRouted)
    } else {
      Send(owner, std::move(m));
    }
  }
  if (!outbox.empty()) stats_->Count("outbox_resent", outbox.size());
}

// --- in
// -----------------------------------------------------------------------

void Peers::OnInbox(std::vector<cluster::UrlMessage>&& batch,
                    cluster::AckFn ack) {
  if (inbox_log_ != nullptr) {
    // Durable before the ack: a kill after it replays the log.
    std::vector<checkpoint::RoutedUrl> routed;
    routed.reserve(batch.size());
    for (const auto& m : batch) routed.push_back(ToRouted(options_.self, m));
    const std::string frame = checkpoint::EncodeInboxFrame(routed);
    if (fwrite(frame.data(), 1, frame.size(), inbox_log_) != frame.size() ||
        fflush(inbox_log_) != 0) {
      stats_->Count("inbox_log_failed");
      log_->Write(Level::kError, "inbox_log_failed",
                  {{"error", strerror(errno)}});
      clearerr(inbox_log_);
      return;  // unacknowledged: resent after a reconnect
    }
  }
  stats_->Count("routed_in", batch.size());
  std::vector<cluster::UrlMessage> failed;
  for (cluster::UrlMessage& m : batch) {
    if (!Admit(m)) failed.push_back(std::move(m));
  }
  if (failed.empty()) {
    ack();
  } else {
    // Not kept (a schedule store error): unacknowledged, its sender keeps
    // it; RetryHeld admits what failed again. What was kept is not
    // admitted twice.
    stats_->Count("inbox_batches_held");
    held_.push_back({std::move(failed), std::move(ack)});
  }
  if (wake_) wake_();
}

size_t Peers::RetryHeld(int64_t now_us) {
  if (held_.empty() || now_us < next_retry_us_) return held_.size();
  next_retry_us_ = now_us + 1'000'000;
  for (auto it = held_.begin(); it != held_.end();) {
    std::vector<cluster::UrlMessage> still;
    for (cluster::UrlMessage& m : it->failed) {
      if (!Admit(m)) still.push_back(std::move(m));
    }
    if (!still.empty()) {
      it->failed = std::move(still);
      ++it;
      continue;
    }
    cluster::AckFn ack = std::move(it->ack);
    it = held_.erase(it);
    stats_->Count("inbox_batches_released");
    ack();
  }
  return held_.size();
}

bool Peers::Admit(const cluster::UrlMessage& m) {
  // A capture only goes into the schedule (nothing is queued): stored at
  // once, before the ack, so that its sender may forget it.
  if (!go_ && !m.seen_mark && m.capture.empty()) {
    pre_go_.push_back(m);
    return true;
  }
  if (m.seen_mark) {
    const std::string host = url::HostOf(m.url);
    if (!host.empty() && Owner(host) != options_.self) {
      // Read from a gone worker's inbox (Adopt), or sent before the ring
      // changed: the mark belongs to the host's owner now.
      Send(Owner(host), m);
      return true;
    }
  }
  return admit_ ? admit_(m) : true;
}

void Peers::Go() {
  go_ = true;
  log_->Write(Level::kInfo, "go",
              {{"waiting_urls", std::to_string(pre_go_.size())}});
  std::vector<cluster::UrlMessage> waiting;
  waiting.swap(pre_go_);
  // (No capture waits for go: each of these is kept.)
  for (const auto& m : waiting) (void)Admit(m);
}

Status Peers::OpenInboxLog() {
  if (options_.inbox_log_path.empty()) return Status::Ok();
  inbox_log_ = fopen(options_.inbox_log_path.c_str(), "a");
  if (inbox_log_ == nullptr) {
    return Status::IOError(options_.inbox_log_path + ": " + strerror(errno));
  }
  return Status::Ok();
}

void Peers::ReplayInboxLog() {
  if (options_.inbox_log_path.empty()) return;
  auto text =
      conf::internal::ReadSmallFile(options_.inbox_log_path, 1ull << 40);
  if (!text.ok()) return;  // none yet
  uint64_t n = 0;
  checkpoint::DecodeInboxLog(*text, [&](checkpoint::RoutedUrl&& r) {
    // (The log holds no capture, which was durable before its ack.)
    (void)Admit(FromRouted(std::move(r)));
    ++n;
  });
  if (n > 0) stats_->Count("inbox_replayed", n);
}

void Peers::TruncateInboxLog() {
  if (inbox_log_ == nullptr) return;
  // O_APPEND writes go to the new end.
  fflush(inbox_log_);
  if (ftruncate(fileno(inbox_log_), 0) != 0) stats_->Count("inbox_log_failed");
}

// --- handover
// -----------------------------------------------------------------

void Peers::Rebalance(frontier::Frontier* frontier,
                      const std::vector<std::string>& own_warc_paths,
                      int previous_workers) {
  uint64_t hosts = 0, urls = 0, marks = 0;
  for (const std::string& key : frontier->QueuedHosts()) {
    const std::string host = url::HostOf(key);
    if (host.empty() || Owner(host) == options_.self) continue;
    const int to = Owner(host);
    ++hosts;
    Status s = frontier->TakeQueue(key, [&](frontier::Item&& item) {
      cluster::UrlMessage m;
      m.url = std::move(item.url);
      m.depth = item.depth;
      m.credit = item.credit;
      m.seed_host = std::move(item.seed_host);
      m.sitemap_kind = static_cast<uint8_t>(item.kind);
      m.sitemap_of = std::move(item.sitemap_of);
      m.changefreq = item.changefreq;
      Send(to, std::move(m));
      ++urls;
    });
    if (!s.ok()) {
      log_->Write(Level::kError, "rebalance_queue_lost",
                  {{"host", key}, {"error", s.ToString()}});
    }
  }
  // The pages this worker fetched of hosts it gave away: their new owner
  // must not fetch them again when links to them turn up.
  store::Record rec;
  for (const std::string& path : own_warc_paths) {
    auto reader = store::WarcReader::Open(path);
    if (!reader.ok()) continue;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      const std::string type = rec.type();
      if (type != "response" && type != "revisit") continue;
      cluster::UrlMessage m;
      m.url = rec.Header("WARC-Target-URI");
      const std::string host = url::HostOf(m.url);
      if (host.empty() || Owner(host) == options_.self) continue;
      m.seen_mark = true;
      Send(Owner(host), std::move(m));
      ++marks;
    }
  }
  stats_->Count("rebalance_hosts_moved", hosts);
  log_->Write(Level::kInfo, "rebalanced",
              {{"from_workers", std::to_string(previous_workers)},
               {"workers", std::to_string(ring_workers_.size())},
               {"epoch", std::to_string(ring_epoch_)},
               {"hosts_moved", std::to_string(hosts)},
               {"urls_moved", std::to_string(urls)},
               {"fetched_urls_sent", std::to_string(marks)}});
}

bool Peers::ApplyRing(int64_t epoch, std::vector<int> live,
                      const std::vector<int>& gone) {
  int top = live.back() + 1;
  if (!gone.empty()) top = std::max(top, gone.back() + 1);
  if (top > options_.exchange_workers) {
    options_.exchange_workers = top;
    overflow_.resize(static_cast<size_t>(top));
  }
  const bool joined = !std::includes(ring_workers_.begin(), ring_workers_.end(),
                                     live.begin(), live.end());
  ring_ = std::make_unique<cluster::Ring>(live, options_.ring);
  ring_workers_ = std::move(live);
  ring_epoch_ = epoch;
  // The inboxes of the workers that left: everything ever sent to them is
  // read again and routed to the hosts' new owners (their frontiers died
  // with them); each is read by one worker of the ring.
  std::vector<int> adopted;
  std::string adopted_text;
  for (int w : gone) {
    if (cluster::AdopterOf(*ring_, w) != options_.self) continue;
    adopted.push_back(w);
    adopted_text += (adopted_text.empty() ? "" : ",") + std::to_string(w);
  }
  if (exchange_ != nullptr) exchange_->Adopt(adopted);
  log_->Write(Level::kInfo, "ring",
              {{"epoch", std::to_string(ring_epoch_)},
               {"workers", std::to_string(ring_workers_.size())},
               {"adopted", adopted_text}});
  return joined;
}

void Peers::WhenCaughtUp(std::function<void()> fn) {
  if (exchange_ == nullptr) {
    fn();
    return;
  }
  exchange_->WhenCaughtUp(std::move(fn));
}

// --- end
// ----------------------------------------------------------------------

cluster::ExchangeStats Peers::stats() const {
  return exchange_ != nullptr ? exchange_->stats() : final_stats_;
}

void Peers::Close(uv_loop_t* loop) {
  if (exchange_ == nullptr) return;
  // What is still unacknowledged goes into the exit checkpoint. Destroyed
  // on the next loop turn: Close can run inside an exchange callback.
  exchange_->Flush();
  final_outbox_ = Outbox();
  final_stats_ = exchange_->stats();
  auto* t = new uv_timer_t;
  uv_timer_init(loop, t);
  t->data = exchange_.release();
  uv_timer_start(
      t,
      [](uv_timer_t* timer) {
        delete static_cast<cluster::Exchange*>(timer->data);
        uv_close(reinterpret_cast<uv_handle_t*>(timer), [](uv_handle_t* h) {
          delete reinterpret_cast<uv_timer_t*>(h);
        });
      },
      1, 0);
}

}  // namespace crawld::daemon
