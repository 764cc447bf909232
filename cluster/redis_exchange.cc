// The Redis Streams exchange (docs/CLUSTER.md, "redis").
//
// Keys (cluster/redis_conn.h, Keys):
//   crawld:<crawl>:inbox:<w>        stream, one entry per batch: field "b" =
//                                   the encoded batch (cluster/wire.h)
//   crawld:<crawl>:inbox-acked:<w>  entries of inbox:<w> acknowledged so far
//                                   (with RedisOptions::retain_acked)
//
// Two connections: `read_` only ever carries the blocking XREADGROUP (a
// blocked command would hold up everything queued behind it), `cmd_` carries
// the rest. Either one is reconnected with backoff when it fails or drops.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cluster/batcher.h"
#include "cluster/cluster.h"
#include "cluster/redis_conn.h"
#include "cluster/wire.h"

namespace crawld::cluster {
namespace {

using internal::IsError;
using internal::RedisConn;
using internal::Str;

// Acknowledges entries and counts them, atomically: the counter makes the
// backlog (stream length minus acknowledged) exact however often an ack is
// retried, since XACK returns only the entries it newly acknowledged.
// KEYS: inbox, counter; ARGV: group, ids...
constexpr const char* kAckScript = R"lua(
local n = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
if n > 0 then redis.call('INCRBY', KEYS[2], n) end
return n
)lua";

// KEYS: inbox, counter. The entries not acknowledged yet.
constexpr const char* kBacklogScript = R"lua(
return redis.call('XLEN', KEYS[1]) - tonumber(redis.call('GET', KEYS[2]) or '0')
)lua";

// Stream entry ids "ms-seq", compared as numbers.
int CompareIds(std::string_view a, std::string_view b) {
  auto split = [](std::string_view id) {
    const size_t dash = id.find('-');
    const std::string ms(id.substr(0, dash));
    const std::string seq(dash == std::string_view::npos ? "0"
                                                         : id.substr(dash + 1));
    return std::make_pair(std::strtoull(ms.c_str(), nullptr, 10),
                          std::strtoull(seq.c_str(), nullptr, 10));
  };
  const auto x = split(a), y = split(b);
  return x < y ? -1 : (y < x ? 1 : 0);
}

// Another worker's inbox read on its behalf (Adopt).
struct Adopted {
  std::string key;
  std::string cursor;  // last entry id read; "" = from the start
  bool reading = false;
};

// A WhenCaughtUp() caller waiting for the reader.
struct Barrier {
  std::function<void()> fn;
  bool armed = false;     // the stream's last id is known
  bool querying = false;  // XREVRANGE sent
  std::string last_id;    // "" = the stream was empty
  uint64_t read_gen = 0;  // reads issued when it was armed
};

class RedisExchange final : public Exchange {
 public:
  RedisExchange(uv_loop_t* loop, const RedisOptions& o)
      : loop_(loop),
        opt_(o),
        keys_(o.crawl),
        incarnation_(wire::NewIncarnation()),
        cmd_(
            loop, ConnOptions(o), [this] { OnCmdConnected(); }, nullptr),
        read_(
            loop, ConnOptions(o), [this] { EnsureGroup(); },
            [this] {
              group_ready_ = false;
              reading_ = false;
            }),
        batcher_(opt_.exchange, incarnation_, &stats_,
                 [this](int to, internal::SealedBatch&) { PumpXadds(to); }),
        alive_(std::make_shared<int>(0)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "w%d-%016llx", ex_.self,
                  static_cast<unsigned long long>(incarnation_));
    consumer_ = buf;
    inbox_key_ = keys_.Inbox(ex_.self);
  }

  ~RedisExchange() override {
    alive_.reset();
    if (timer_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(timer_),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
    // The connections (members) free their contexts; pending replies are
    // dropped without calling back.
  }

  Status Start() {
    if (opt_.host.empty() || opt_.port <= 0 || opt_.port > 65535) {
      return Status::InvalidArgument("redis exchange: bad host or port");
    }
    if (opt_.crawl.empty() || opt_.group.empty()) {
      return Status::InvalidArgument("redis exchange: empty crawl or group");
    }
    opt_.claim_min_idle_ms = std::max(opt_.claim_min_idle_ms, 1);
    opt_.read_count = std::clamp(opt_.read_count, 1, 10000);
    opt_.read_block_ms = std::clamp(opt_.read_block_ms, 1, 60000);
    opt_.max_unacked_batches = std::max(opt_.max_unacked_batches, 1);
    opt_.max_backlog_batches = std::max(opt_.max_backlog_batches, 1);
    opt_.backlog_poll_ms = std::max(opt_.backlog_poll_ms, 1);
    opt_.claim_interval_ms = std::max(opt_.claim_interval_ms, 1);
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    const auto period = static_cast<uint64_t>(
        std::min(ex_.flush_interval_ms, ex_.reconnect_min_ms));
    uv_timer_start(timer_, OnTimer, period, period);
    cmd_.Start();
    read_.Start();
    return Status::Ok();
  }

  Status Send(int to, const UrlMessage& m) override {
    return batcher_.Send(to, m, BacklogFull(to));
  }

  void SetInbox(InboxFn inbox) override { inbox_ = std::move(inbox); }
  void SetOnWritable(WritableFn fn) override { writable_ = std::move(fn); }

  bool Backpressured(int to) const override {
    return batcher_.AtBound(to) || BacklogFull(to);
  }

  size_t Pending(int to) const override { return batcher_.Pending(to); }

  void Flush() override { batcher_.SealAll(); }

  void ForEachUnacked(
      const std::function<void(int, const UrlMessage&)>& fn) const override {
    batcher_.ForEachUnacked(fn);
  }

  void Adopt(const std::vector<int>& workers) override {
    std::map<int, Adopted> next;
    for (int w : workers) {
      if (w < 0 || w >= ex_.workers || w == ex_.self) continue;
      auto it = adopted_.find(w);
      if (it != adopted_.end()) {
        next.emplace(w, std::move(it->second));  // keeps its cursor
      } else {
        next.emplace(w, Adopted{keys_.Inbox(w), "", false});
      }
    }
    adopted_ = std::move(next);
    ReadAdopted();
  }

  void WhenCaughtUp(std::function<void()> fn) override {
    Barrier b;
    b.fn = std::move(fn);
    barriers_.push_back(std::move(b));
    ArmBarriers();
  }

  ExchangeStats stats() const override {
    ExchangeStats s = stats_;
    s.reconnects = cmd_.reconnects() + read_.reconnects();
    return s;
  }

  void TEST_DropConnections() override {
    cmd_.DropForTest();
    read_.DropForTest();
  }

 private:
  static RedisConn::Options ConnOptions(const RedisOptions& o) {
    return {o.host, o.port, o.exchange.reconnect_min_ms,
            o.exchange.reconnect_max_ms};
  }

  // The destination's inbox stream holds max_backlog_batches unprocessed
  // entries or more (as last polled).
  bool BacklogFull(int to) const {
    auto it = backlog_.find(to);
    return it != backlog_.end() && it->second >= opt_.max_backlog_batches;
  }

  // --- Sending.

  void PumpXadds(int to) {
    std::deque<internal::SealedBatch>* queue = batcher_.Queue(to);
    for (size_t i = 0; queue != nullptr && i < queue->size(); ++i) {
      internal::SealedBatch& b = (*queue)[i];
      if (b.in_flight) continue;
      const uint64_t id = b.id;
      if (!cmd_.Command({"XADD", keys_.Inbox(to), "*", "b", *b.blob},
                        [this, to, id](redisReply* r) { OnXadd(to, id, r); })) {
        return;  // not connected: the queue waits for the reconnect
      }
      b.in_flight = true;
      if (b.transmitted) {
        ++stats_.batches_resent;
      } else {
        ++stats_.batches_sent;
      }
      b.transmitted = true;
    }
  }

  void OnXadd(int to, uint64_t id, redisReply* r) {
    if (IsError(r)) {
      // Lost connection or a refusal (e.g. OOM): keep it, resend later. A
      // lost reply to an applied XADD makes a duplicate entry, which the
      // receiver's seen-set absorbs.
      std::deque<internal::SealedBatch>* queue = batcher_.Queue(to);
      for (size_t i = 0; queue != nullptr && i < queue->size(); ++i) {
        if ((*queue)[i].id == id) (*queue)[i].in_flight = false;
      }
      return;
    }
    if (batcher_.Acknowledge(to, id)) MaybeWritable(to);
  }

  void MaybeWritable(int to) {
    if (batcher_.TakeWritable(to, BacklogFull(to)) && writable_) writable_(to);
  }

  void PollBacklog() {
    for (int w : batcher_.Destinations()) {
      auto on_reply = [this, w](redisReply* r) {
        if (IsError(r) || r->type != REDIS_REPLY_INTEGER) return;
        backlog_[w] = std::max<int64_t>(0, r->integer);
        MaybeWritable(w);
      };
      if (opt_.retain_acked) {
        cmd_.Command(
            {"EVAL", kBacklogScript, "2", keys_.Inbox(w), keys_.InboxAcked(w)},
            on_reply);
      } else {
        cmd_.Command({"XLEN", keys_.Inbox(w)}, on_reply);
      }
    }
  }

  // --- Receiving.

  void EnsureGroup() {
    if (group_pending_) return;
    // "0": entries added before the group existed (the first run, or after
    // a Redis restart) are read too.
    group_pending_ = read_.Command(
        {"XGROUP", "CREATE", inbox_key_, opt_.group, "0", "MKSTREAM"},
        [this](redisReply* r) {
          group_pending_ = false;
          if (r == nullptr) return;
          if (IsError(r) && Str(r).find("BUSYGROUP") == std::string::npos) {
            ++stats_.protocol_errors;
            return;  // retried from the timer
          }
          group_ready_ = true;
          ReadMore();
        });
  }

  // Entries to ask for: no more than the unacknowledged-batch window has
  // room for, so a slow inbox stops the reads.
  int ReadCount() const {
    return std::max(
        1, std::min(opt_.read_count, opt_.max_unacked_batches -
                                         static_cast<int>(unacked_.size())));
  }

  bool WindowFull() const {
    return unacked_.size() >= static_cast<size_t>(opt_.max_unacked_batches);
  }

  void ReadMore() {
    if (reading_ || !group_ready_ || !read_.connected() || WindowFull()) {
      return;
    }
    const uint64_t gen = ++reads_issued_;
    const bool queued = read_.Command(
        {"XREADGROUP", "GROUP", opt_.group, consumer_, "COUNT",
         std::to_string(ReadCount()), "BLOCK",
         std::to_string(opt_.read_block_ms), "STREAMS", inbox_key_, ">"},
        [this, gen](redisReply* r) { OnRead(r, gen); });
    reading_ = queued;
  }

  void OnRead(redisReply* r, uint64_t gen) {
    reading_ = false;
    if (r == nullptr) return;
    if (IsError(r)) {
      // The group vanishes with a Redis restart without persistence.
      if (Str(r).find("NOGROUP") != std::string::npos) {
        group_ready_ = false;
        EnsureGroup();
      }
      return;
    }
    std::string last;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_ARRAY &&
        r->element[0]->elements == 2) {
      last = DeliverEntries(inbox_key_, r->element[0]->element[1], true);
    }
    if (!last.empty()) {
      if (last_read_id_.empty() || CompareIds(last, last_read_id_) > 0) {
        last_read_id_ = last;
      }
    } else {
      empty_read_gen_ = std::max(empty_read_gen_, gen);
    }
    CheckBarriers();
    ReadMore();
  }

  // `entries`: an array of [id, [field, value, ...]] (nil for deleted), of
  // stream `key`; `own`: this worker's inbox (acknowledged with XACK).
  // Returns the last entry id seen ("" if none).
  std::string DeliverEntries(const std::string& key, const redisReply* entries,
                             bool own) {
    std::string last;
    if (entries == nullptr || entries->type != REDIS_REPLY_ARRAY) return last;
    for (size_t i = 0; i < entries->elements; ++i) {
      const redisReply* e = entries->element[i];
      if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements != 2) {
        continue;
      }
      const std::string id(Str(e->element[0]));
      if (id.empty()) continue;
      last = id;
      const std::string tag = key + ' ' + id;
      if (unacked_.count(tag) != 0) continue;
      std::string_view blob;
      const redisReply* fields = e->element[1];
      if (fields != nullptr && fields->type == REDIS_REPLY_ARRAY) {
        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
          if (Str(fields->element[f]) == "b") {
            blob = Str(fields->element[f + 1]);
          }
        }
      }
      wire::BatchHeader h;
      std::vector<UrlMessage> urls;
      if (!wire::DecodeBatch(blob, &h, &urls,
                             static_cast<uint32_t>(ex_.max_url_bytes))
               .ok() ||
          h.from >= static_cast<uint32_t>(ex_.workers)) {
        // A foreign or corrupt entry is counted and, in our own inbox,
        // removed, so that it cannot wedge it by being claimed forever.
        ++stats_.protocol_errors;
        if (own) acks_to_send_.push_back(id);
        continue;
      }
      unacked_.insert(tag);
      ++stats_.batches_received;
      stats_.urls_received += urls.size();
      if (!inbox_) continue;
      std::weak_ptr<int> alive = alive_;
      inbox_(static_cast<int>(h.from), std::move(urls),
             [this, alive, tag, id, own] {
               if (alive.lock() != nullptr) AckEntry(tag, id, own);
             });
    }
    FlushAcks();
    return last;
  }

  void AckEntry(const std::string& tag, const std::string& id, bool own) {
    if (unacked_.erase(tag) == 0) return;
    // An adopted entry is done once delivered: its reader is this worker's
    // inbox log and checkpoint, the stream keeps it for the next adopter.
    if (own) acks_to_send_.push_back(id);
    FlushAcks();
    ReadMore();
    ReadAdopted();
  }

  void FlushAcks() {
    if (acks_to_send_.empty() || !cmd_.connected()) return;
    std::vector<std::string> ids = std::move(acks_to_send_);
    acks_to_send_.clear();
    // Both forms are idempotent, so a failure just queues the ids again.
    auto retry = [this, ids](redisReply* r) {
      if (IsError(r)) {
        acks_to_send_.insert(acks_to_send_.end(), ids.begin(), ids.end());
      }
    };
    bool queued;
    if (opt_.retain_acked) {
      // The entries stay for an adopter (Adopt); the counter keeps the
      // backlog the senders poll exact.
      std::vector<std::string> args{
          "EVAL",    kAckScript, "2", inbox_key_, keys_.InboxAcked(ex_.self),
          opt_.group};
      args.insert(args.end(), ids.begin(), ids.end());
      queued = cmd_.Command(args, retry);
    } else {
      // XDEL keeps the stream length equal to the unprocessed backlog,
      // which is what the senders' back-pressure polls.
      std::vector<std::string> xack{"XACK", inbox_key_, opt_.group};
      std::vector<std::string> xdel{"XDEL", inbox_key_};
      xack.insert(xack.end(), ids.begin(), ids.end());
      xdel.insert(xdel.end(), ids.begin(), ids.end());
      queued =
          cmd_.Command(xack, retry) && cmd_.Command(xdel, [](redisReply*) {});
    }
    if (!queued) {
      acks_to_send_.insert(acks_to_send_.end(), ids.begin(), ids.end());
    }
  }

  void Claim() {
    if (claiming_ || !group_ready_ || WindowFull()) return;
    claiming_ = cmd_.Command(
        {"XAUTOCLAIM", inbox_key_, opt_.group, consumer_,
         std::to_string(opt_.claim_min_idle_ms), claim_cursor_, "COUNT",
         std::to_string(ReadCount())},
        [this](redisReply* r) {
          claiming_ = false;
          if (IsError(r) || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
            return;
          }
          const std::string_view next = Str(r->element[0]);
          claim_cursor_ = next.empty() ? "0-0" : std::string(next);
          DeliverEntries(inbox_key_, r->element[1], true);
        });
  }

  // Reads every entry of each adopted inbox, from the start, in pages; the
  // entries go to this worker's inbox like its own. Polled from the timer:
  // senders that still route to a gone worker keep appending to its inbox.
  void ReadAdopted() {
    for (auto& [w, a] : adopted_) {
      if (a.reading || WindowFull()) continue;
      const std::string start = a.cursor.empty() ? "-" : "(" + a.cursor;
      const int worker = w;
      a.reading = cmd_.Command(
          {"XRANGE", a.key, start, "+", "COUNT", std::to_string(ReadCount())},
          [this, worker](redisReply* r) { OnAdoptedRead(worker, r); });
    }
  }

  void OnAdoptedRead(int worker, redisReply* r) {
    auto it = adopted_.find(worker);
    if (it == adopted_.end()) return;  // no longer adopted
    if (IsError(r) || r->type != REDIS_REPLY_ARRAY) {
      it->second.reading = false;
      return;
    }
    // The cursor moves before the entries are delivered: the inbox acks
    // them at once, and an ack reads on.
    const std::string key = it->second.key;
    if (r->elements > 0) {
      const redisReply* e = r->element[r->elements - 1];
      if (e != nullptr && e->type == REDIS_REPLY_ARRAY && e->elements == 2) {
        it->second.cursor = std::string(Str(e->element[0]));
      }
    }
    it->second.reading = false;
    DeliverEntries(key, r, false);
    if (r->elements > 0) ReadAdopted();  // more pages, at once
  }

  // --- Barriers (WhenCaughtUp).

  void ArmBarriers() {
    for (Barrier& b : barriers_) {
      if (b.armed || b.querying) continue;
      b.querying =
          cmd_.Command({"XREVRANGE", inbox_key_, "+", "-", "COUNT", "1"},
                       [this](redisReply* r) { OnLastId(r); });
    }
  }

  void OnLastId(redisReply* r) {
    // Replies come in order: the first querying barrier is this one.
    for (Barrier& b : barriers_) {
      if (!b.querying) continue;
      b.querying = false;
      if (IsError(r) || r->type != REDIS_REPLY_ARRAY) return;  // asked again
      b.armed = true;
      b.read_gen = reads_issued_;
      if (r->elements > 0 && r->element[0]->type == REDIS_REPLY_ARRAY &&
          r->element[0]->elements == 2) {
        b.last_id = std::string(Str(r->element[0]->element[0]));
      }
      break;
    }
    CheckBarriers();
  }

  // A barrier is passed when the reader delivered an entry at or after the
  // stream's last id when it was armed, or when a read sent after that came
  // back empty (everything up to that id had been delivered to the group).
  void CheckBarriers() {
    std::vector<std::function<void()>> ready;
    for (auto it = barriers_.begin(); it != barriers_.end();) {
      const bool passed =
          it->armed && (it->last_id.empty() || empty_read_gen_ > it->read_gen ||
                        (!last_read_id_.empty() &&
                         CompareIds(last_read_id_, it->last_id) >= 0));
      if (passed) {
        ready.push_back(std::move(it->fn));
        it = barriers_.erase(it);
      } else {
        ++it;
      }
    }
    std::weak_ptr<int> alive = alive_;
    for (auto& fn : ready) {
      if (alive.lock() == nullptr) return;
      fn();
    }
  }

  void OnCmdConnected() {
    for (int w : batcher_.Destinations()) PumpXadds(w);
    FlushAcks();
    for (Barrier& b : barriers_) b.querying = false;
    ArmBarriers();
  }

  void OnTick() {
    const uint64_t now = wire::NowMs();
    cmd_.Tick(now);
    read_.Tick(now);
    batcher_.SealDue(now);
    if (!cmd_.connected()) return;
    if (now - last_backlog_ms_ >= static_cast<uint64_t>(opt_.backlog_poll_ms)) {
      last_backlog_ms_ = now;
      PollBacklog();
    }
    if (now - last_claim_ms_ >= static_cast<uint64_t>(opt_.claim_interval_ms)) {
      last_claim_ms_ = now;
      Claim();
    }
    if (now - last_adopted_ms_ >= static_cast<uint64_t>(opt_.read_block_ms)) {
      last_adopted_ms_ = now;
      ReadAdopted();
    }
    for (int w : batcher_.Destinations()) PumpXadds(w);
    FlushAcks();
    ArmBarriers();
    if (read_.connected() && !group_ready_ && !reading_) EnsureGroup();
    ReadMore();
  }

  static void OnTimer(uv_timer_t* t) {
    static_cast<RedisExchange*>(t->data)->OnTick();
  }

  uv_loop_t* loop_;
  RedisOptions opt_;
  ExchangeOptions& ex_ = opt_.exchange;
  internal::Keys keys_;
  uint64_t incarnation_;
  std::string consumer_;
  std::string inbox_key_;
  uv_timer_t* timer_ = nullptr;
  ExchangeStats stats_;
  RedisConn cmd_;
  RedisConn read_;
  bool group_ready_ = false;
  bool group_pending_ = false;  // XGROUP CREATE sent, no reply yet
  bool reading_ = false;
  bool claiming_ = false;
  std::string claim_cursor_ = "0-0";
  internal::Batcher batcher_;
  // Unprocessed entries in each destination's inbox stream, as last polled.
  std::unordered_map<int, int64_t> backlog_;
  // Delivered and not yet acknowledged by the inbox: "<stream key> <id>".
  std::unordered_set<std::string> unacked_;
  std::vector<std::string> acks_to_send_;  // ids in our own inbox
  std::map<int, Adopted> adopted_;
  std::deque<Barrier> barriers_;
  uint64_t reads_issued_ = 0;    // XREADGROUP commands sent
  uint64_t empty_read_gen_ = 0;  // the newest read that came back empty
  std::string last_read_id_;     // the newest own entry delivered by a read
  uint64_t last_backlog_ms_ = 0;
  uint64_t last_claim_ms_ = 0;
  uint64_t last_adopted_ms_ = 0;
  InboxFn inbox_;
  WritableFn writable_;
  std::shared_ptr<int> alive_;
};

}  // namespace

Result<std::unique_ptr<Exchange>> NewRedisExchange(
    uv_loop_t* loop, const RedisOptions& options) {
  if (loop == nullptr)
    return Status::InvalidArgument("redis exchange: no loop");
  RedisOptions o = options;
  if (Status s = wire::SanitizeExchangeOptions(&o.exchange); !s.ok()) return s;
  auto ex = std::make_unique<RedisExchange>(loop, o);
  if (Status s = ex->Start(); !s.ok()) return s;
  return std::unique_ptr<Exchange>(std::move(ex));
}

}  // namespace crawld::cluster
