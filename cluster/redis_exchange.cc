// The Redis Streams exchange and membership (docs/CLUSTER.md).
//
// Keys (one Redis instance per crawl; the membership script touches keys of
// every worker, so Redis Cluster slotting is not supported):
//   crawld:<crawl>:inbox:<w>   stream, one entry per batch: field "b" = the
//                              encoded batch (cluster/wire.h)
//   crawld:<crawl>:node:<w>    heartbeat, SET PX ttl, value = incarnation
//   crawld:<crawl>:view        live-worker bitmap last seen ("0110...")
//   crawld:<crawl>:epoch       ring epoch, INCR on every view change
//
// Two connections: `read_` only ever carries the blocking XREADGROUP (a
// blocked command would hold up everything queued behind it), `cmd_` carries
// the rest. Either one is reconnected with backoff when it fails or drops.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cluster/batcher.h"
#include "cluster/cluster.h"
#include "cluster/wire.h"

namespace crawld::cluster {
namespace {

// --- A libuv adapter for hiredis async.
//
// Same as hiredis/adapters/libuv.h except for one fix: hiredis 0.14's
// adapter ignores a poll callback with status < 0, which libuv reports on
// POLLERR (e.g. a reset connection after redis-server was killed), so the
// context would never learn that its socket died and the worker would wait
// forever. hiredis 1.x fixed this the same way: on an error, run the handlers
// of the events we asked for, and the failing read tells hiredis.
struct UvEvents {
  redisAsyncContext* context;
  uv_poll_t handle;
  int events;
};

void UvPoll(uv_poll_t* handle, int status, int events) {
  auto* p = static_cast<UvEvents*>(handle->data);
  const int ev = status != 0 ? p->events : events;
  if (p->context != nullptr && (ev & UV_READABLE)) {
    redisAsyncHandleRead(p->context);
  }
  if (p->context != nullptr && (ev & UV_WRITABLE)) {
    redisAsyncHandleWrite(p->context);
  }
}

void UvUpdate(UvEvents* p) {
  if (p->events != 0) {
    uv_poll_start(&p->handle, p->events, UvPoll);
  } else {
    uv_poll_stop(&p->handle);
  }
}

void UvAddRead(void* d) {
  auto* p = static_cast<UvEvents*>(d);
  p->events |= UV_READABLE;
  UvUpdate(p);
}
void UvDelRead(void* d) {
  auto* p = static_cast<UvEvents*>(d);
  p->events &= ~UV_READABLE;
  UvUpdate(p);
}
void UvAddWrite(void* d) {
  auto* p = static_cast<UvEvents*>(d);
  p->events |= UV_WRITABLE;
  UvUpdate(p);
}
void UvDelWrite(void* d) {
  auto* p = static_cast<UvEvents*>(d);
  p->events &= ~UV_WRITABLE;
  UvUpdate(p);
}
void UvCleanup(void* d) {
  auto* p = static_cast<UvEvents*>(d);
  p->context = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&p->handle),
           [](uv_handle_t* h) { delete static_cast<UvEvents*>(h->data); });
}

bool AttachUv(redisAsyncContext* ac, uv_loop_t* loop) {
  if (ac->ev.data != nullptr) return false;
  auto* p = new UvEvents{ac, {}, 0};
  if (uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
    delete p;
    return false;
  }
  p->handle.data = p;
  ac->ev.addRead = UvAddRead;
  ac->ev.delRead = UvDelRead;
  ac->ev.addWrite = UvAddWrite;
  ac->ev.delWrite = UvDelWrite;
  ac->ev.cleanup = UvCleanup;
  ac->ev.data = p;
  return true;
}

// --- Reply helpers.

bool IsError(const redisReply* r) {
  return r == nullptr || r->type == REDIS_REPLY_ERROR;
}

std::string_view Str(const redisReply* r) {
  if (r == nullptr ||
      (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
       r->type != REDIS_REPLY_ERROR)) {
    return {};
  }
  return std::string_view(r->str, r->len);
}

int64_t Int(const redisReply* r) {
  if (r == nullptr) return -1;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_STRING) return std::strtoll(r->str, nullptr, 10);
  return -1;
}

// The Lua script of the membership check: computes the live bitmap from the
// heartbeat keys and bumps the epoch if it differs from the last view, in
// one atomic step, so W workers seeing one change bump the epoch once.
constexpr const char* kViewScript = R"lua(
local v = ''
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then v = v .. '1' else v = v .. '0' end
end
if redis.call('GET', KEYS[1]) ~= v then
  redis.call('SET', KEYS[1], v)
  redis.call('INCR', KEYS[2])
end
return {tonumber(redis.call('GET', KEYS[2]) or '0'), v}
)lua";

class RedisExchange;

struct RConn {
  RedisExchange* owner = nullptr;
  redisAsyncContext* ctx = nullptr;
  bool connected = false;
  bool had_connection = false;
  uint64_t next_connect_ms = 0;
  int backoff_ms = 0;
};

struct Call {
  RedisExchange* self;
  std::function<void(redisReply*)> fn;
};

class RedisExchange final : public Exchange {
 public:
  RedisExchange(uv_loop_t* loop, const RedisOptions& o)
      : loop_(loop),
        opt_(o),
        incarnation_(wire::NewIncarnation()),
        batcher_(opt_.exchange, incarnation_, &stats_,
                 [this](int to, internal::SealedBatch&) { PumpXadds(to); }),
        alive_(std::make_shared<int>(0)) {
    cmd_.owner = this;
    read_.owner = this;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "w%d-%016llx", ex_.self,
                  static_cast<unsigned long long>(incarnation_));
    consumer_ = buf;
    inbox_key_ = InboxKey(ex_.self);
  }

  ~RedisExchange() override {
    closing_ = true;
    alive_.reset();
    // Pending replies are called back with nullptr; Trampoline ignores them.
    for (RConn* c : {&cmd_, &read_}) {
      if (c->ctx != nullptr) {
        redisAsyncContext* ctx = c->ctx;
        c->ctx = nullptr;
        redisAsyncFree(ctx);
      }
    }
    if (timer_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(timer_),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
  }

  Status Start() {
    if (opt_.host.empty() || opt_.port <= 0 || opt_.port > 65535) {
      return Status::InvalidArgument("redis exchange: bad host or port");
    }
    if (opt_.crawl.empty() || opt_.group.empty()) {
      return Status::InvalidArgument("redis exchange: empty crawl or group");
    }
    opt_.heartbeat_ttl_ms = std::clamp(opt_.heartbeat_ttl_ms, 30, 3600000);
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
    Connect(&cmd_);
    Connect(&read_);
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

  ExchangeStats stats() const override { return stats_; }

  void TEST_DropConnections() override {
    // redisAsyncDisconnect waits for pending replies; a hard drop is what a
    // network failure looks like, so shut the sockets down under hiredis.
    for (RConn* c : {&cmd_, &read_}) {
      if (c->ctx != nullptr) shutdown(c->ctx->c.fd, SHUT_RDWR);
    }
  }

 private:
  std::string Key(const char* kind, int w) const {
    return "crawld:" + opt_.crawl + ":" + kind + ":" + std::to_string(w);
  }
  std::string InboxKey(int w) const { return Key("inbox", w); }

  // --- Connections.

  void Connect(RConn* c) {
    redisAsyncContext* ac = redisAsyncConnect(opt_.host.c_str(), opt_.port);
    if (ac == nullptr || ac->err != 0 || !AttachUv(ac, loop_)) {
      if (ac != nullptr) redisAsyncFree(ac);
      ScheduleReconnect(c);
      return;
    }
    ac->data = c;
    redisAsyncSetConnectCallback(ac, OnConnect);
    redisAsyncSetDisconnectCallback(ac, OnDisconnect);
    c->ctx = ac;
  }

  void ScheduleReconnect(RConn* c) {
    c->ctx = nullptr;
    c->connected = false;
    c->backoff_ms = c->backoff_ms == 0
                        ? ex_.reconnect_min_ms
                        : std::min(c->backoff_ms * 2, ex_.reconnect_max_ms);
    c->next_connect_ms = wire::NowMs() + static_cast<uint64_t>(c->backoff_ms);
  }

  static void OnConnect(const redisAsyncContext* ac, int status) {
    auto* c = static_cast<RConn*>(ac->data);
    RedisExchange* self = c->owner;
    if (self->closing_) return;
    if (status != REDIS_OK) {
      self->ScheduleReconnect(c);  // hiredis frees the context after this
      return;
    }
    c->connected = true;
    c->backoff_ms = 0;
    if (c->had_connection) ++self->stats_.reconnects;
    c->had_connection = true;
    if (c == &self->read_) {
      self->EnsureGroup();
    } else {
      self->OnCmdConnected();
    }
  }

  static void OnDisconnect(const redisAsyncContext* ac, int) {
    auto* c = static_cast<RConn*>(ac->data);
    RedisExchange* self = c->owner;
    if (self->closing_) return;
    self->ScheduleReconnect(c);
    if (c == &self->read_) {
      self->group_ready_ = false;
      self->reading_ = false;
    }
  }

  // Issues a command; `fn` gets the reply, or nullptr if the connection
  // failed before one came. False if it could not even be queued.
  bool Command(RConn* c, const std::vector<std::string>& args,
               std::function<void(redisReply*)> fn) {
    if (c->ctx == nullptr || !c->connected) return false;
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    argv.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* call = new Call{this, std::move(fn)};
    if (redisAsyncCommandArgv(c->ctx, Trampoline, call,
                              static_cast<int>(args.size()), argv.data(),
                              lens.data()) != REDIS_OK) {
      delete call;
      return false;
    }
    return true;
  }

  static void Trampoline(redisAsyncContext*, void* reply, void* priv) {
    std::unique_ptr<Call> call(static_cast<Call*>(priv));
    if (call->self->closing_) return;
    call->fn(static_cast<redisReply*>(reply));
  }

  // --- Sending.

  // The destination's inbox stream holds max_backlog_batches entries or
  // more (as last polled).
  bool BacklogFull(int to) const {
    auto it = backlog_.find(to);
    return it != backlog_.end() && it->second >= opt_.max_backlog_batches;
  }

  void PumpXadds(int to) {
    std::deque<internal::SealedBatch>* queue = batcher_.Queue(to);
    for (size_t i = 0; queue != nullptr && i < queue->size(); ++i) {
      internal::SealedBatch& b = (*queue)[i];
      if (b.in_flight) continue;
      const uint64_t id = b.id;
      if (!Command(&cmd_, {"XADD", InboxKey(to), "*", "b", *b.blob},
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
      Command(&cmd_, {"XLEN", InboxKey(w)}, [this, w](redisReply* r) {
        if (IsError(r) || r->type != REDIS_REPLY_INTEGER) return;
        backlog_[w] = r->integer;
        MaybeWritable(w);
      });
    }
  }

  // --- Receiving.

  void EnsureGroup() {
    if (group_pending_) return;
    // "0": entries added before the group existed (the first run, or after
    // a Redis restart) are read too.
    group_pending_ = Command(
        &read_, {"XGROUP", "CREATE", inbox_key_, opt_.group, "0", "MKSTREAM"},
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

  void ReadMore() {
    if (reading_ || !group_ready_ || !read_.connected ||
        unacked_.size() >= static_cast<size_t>(opt_.max_unacked_batches)) {
      return;
    }
    const bool queued = Command(
        &read_,
        {"XREADGROUP", "GROUP", opt_.group, consumer_, "COUNT",
         std::to_string(ReadCount()), "BLOCK",
         std::to_string(opt_.read_block_ms), "STREAMS", inbox_key_, ">"},
        [this](redisReply* r) {
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
          if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              r->element[0]->type == REDIS_REPLY_ARRAY &&
              r->element[0]->elements == 2) {
            DeliverEntries(r->element[0]->element[1]);
          }
          ReadMore();
        });
    reading_ = queued;
  }

  // `entries`: an array of [id, [field, value, ...]] (nil for deleted).
  void DeliverEntries(const redisReply* entries) {
    if (entries == nullptr || entries->type != REDIS_REPLY_ARRAY) return;
    for (size_t i = 0; i < entries->elements; ++i) {
      const redisReply* e = entries->element[i];
      if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements != 2) {
        continue;
      }
      const std::string id(Str(e->element[0]));
      const redisReply* fields = e->element[1];
      if (id.empty() || unacked_.count(id) != 0) continue;
      std::string_view blob;
      if (fields != nullptr && fields->type == REDIS_REPLY_ARRAY) {
        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
          if (Str(fields->element[f]) == "b")
            blob = Str(fields->element[f + 1]);
        }
      }
      wire::BatchHeader h;
      std::vector<UrlMessage> urls;
      if (!wire::DecodeBatch(blob, &h, &urls,
                             static_cast<uint32_t>(ex_.max_url_bytes))
               .ok() ||
          h.from >= static_cast<uint32_t>(ex_.workers)) {
        // A foreign or corrupt entry is counted and removed, so that it
        // cannot wedge the inbox by being claimed forever.
        ++stats_.protocol_errors;
        acks_to_send_.push_back(id);
        continue;
      }
      unacked_.insert(id);
      ++stats_.batches_received;
      stats_.urls_received += urls.size();
      if (!inbox_) continue;
      std::weak_ptr<int> alive = alive_;
      inbox_(static_cast<int>(h.from), std::move(urls), [this, alive, id] {
        if (alive.lock() != nullptr) AckEntry(id);
      });
    }
    FlushAcks();
  }

  void AckEntry(const std::string& id) {
    if (unacked_.erase(id) == 0) return;
    acks_to_send_.push_back(id);
    FlushAcks();
    ReadMore();
  }

  void FlushAcks() {
    if (acks_to_send_.empty() || !cmd_.connected) return;
    std::vector<std::string> ids = std::move(acks_to_send_);
    acks_to_send_.clear();
    std::vector<std::string> xack{"XACK", inbox_key_, opt_.group};
    std::vector<std::string> xdel{"XDEL", inbox_key_};
    xack.insert(xack.end(), ids.begin(), ids.end());
    xdel.insert(xdel.end(), ids.begin(), ids.end());
    // XDEL keeps the stream length equal to the unprocessed backlog, which
    // is what the senders' back-pressure polls. Both are idempotent, so a
    // failure just queues the ids again.
    auto retry = [this, ids](redisReply* r) {
      if (IsError(r)) {
        acks_to_send_.insert(acks_to_send_.end(), ids.begin(), ids.end());
      }
    };
    if (!Command(&cmd_, xack, retry) ||
        !Command(&cmd_, xdel, [](redisReply*) {})) {
      acks_to_send_.insert(acks_to_send_.end(), ids.begin(), ids.end());
    }
  }

  void Claim() {
    if (claiming_ || !group_ready_ ||
        unacked_.size() >= static_cast<size_t>(opt_.max_unacked_batches)) {
      return;
    }
    claiming_ = Command(
        &cmd_,
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
          DeliverEntries(r->element[1]);
        });
  }

  // --- Membership.

  void Heartbeat() {
    Command(&cmd_,
            {"SET", Key("node", ex_.self), std::to_string(incarnation_), "PX",
             std::to_string(opt_.heartbeat_ttl_ms)},
            [](redisReply*) {});
    std::vector<std::string> args{
        "EVAL", kViewScript, std::to_string(2 + ex_.workers),
        "crawld:" + opt_.crawl + ":view", "crawld:" + opt_.crawl + ":epoch"};
    for (int w = 0; w < ex_.workers; ++w) args.push_back(Key("node", w));
    Command(&cmd_, args, [this](redisReply* r) {
      if (IsError(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        return;
      }
      const int64_t epoch = Int(r->element[0]);
      const std::string_view view = Str(r->element[1]);
      if (epoch == epoch_) return;
      epoch_ = epoch;
      std::vector<int> live;
      for (size_t i = 0; i < view.size(); ++i) {
        if (view[i] == '1') live.push_back(static_cast<int>(i));
      }
      if (opt_.on_epoch) opt_.on_epoch(epoch, live);
    });
  }

  void OnCmdConnected() {
    last_heartbeat_ms_ = 0;  // at once: a restarted Redis lost our key
    for (int w : batcher_.Destinations()) PumpXadds(w);
    FlushAcks();
  }

  void OnTick() {
    const uint64_t now = wire::NowMs();
    for (RConn* c : {&cmd_, &read_}) {
      if (c->ctx == nullptr && now >= c->next_connect_ms) Connect(c);
    }
    batcher_.SealDue(now);
    if (!cmd_.connected) return;
    if (now - last_heartbeat_ms_ >=
        static_cast<uint64_t>(opt_.heartbeat_ttl_ms / 3)) {
      last_heartbeat_ms_ = now;
      Heartbeat();
    }
    if (now - last_backlog_ms_ >= static_cast<uint64_t>(opt_.backlog_poll_ms)) {
      last_backlog_ms_ = now;
      PollBacklog();
    }
    if (now - last_claim_ms_ >= static_cast<uint64_t>(opt_.claim_interval_ms)) {
      last_claim_ms_ = now;
      Claim();
    }
    for (int w : batcher_.Destinations()) PumpXadds(w);
    FlushAcks();
    if (read_.connected && !group_ready_ && !reading_) EnsureGroup();
    ReadMore();
  }

  static void OnTimer(uv_timer_t* t) {
    static_cast<RedisExchange*>(t->data)->OnTick();
  }

  uv_loop_t* loop_;
  RedisOptions opt_;
  ExchangeOptions& ex_ = opt_.exchange;
  uint64_t incarnation_;
  std::string consumer_;
  std::string inbox_key_;
  uv_timer_t* timer_ = nullptr;
  RConn cmd_;
  RConn read_;
  bool closing_ = false;
  bool group_ready_ = false;
  bool group_pending_ = false;  // XGROUP CREATE sent, no reply yet
  bool reading_ = false;
  bool claiming_ = false;
  std::string claim_cursor_ = "0-0";
  ExchangeStats stats_;
  internal::Batcher batcher_;
  // Entries in each destination's inbox stream, as last polled.
  std::unordered_map<int, int64_t> backlog_;
  std::unordered_set<std::string> unacked_;  // entry ids at the inbox
  std::vector<std::string> acks_to_send_;
  int64_t epoch_ = -1;
  uint64_t last_heartbeat_ms_ = 0;
  uint64_t last_backlog_ms_ = 0;
  uint64_t last_claim_ms_ = 0;
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
