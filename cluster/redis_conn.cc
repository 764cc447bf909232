// cluster/redis_conn.cc: see redis_conn.h.
#include "cluster/redis_conn.h"

#include <sys/socket.h>
#include <uv.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

#include "cluster/wire.h"

namespace crawld::cluster::internal {
namespace {

// --- The libuv adapter for hiredis async.
//
// hiredis/adapters/libuv.h with one fix: hiredis 0.14's adapter (Debian 12
// ships 0.14.1) ignores a poll callback with status < 0, which libuv reports
// on POLLERR (e.g. a reset connection after redis-server was killed), so the
// context would never learn that its socket died and its owner would wait
// forever. hiredis 1.x fixed it the same way: on an error, run the handlers
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

}  // namespace

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

struct RedisConn::Call {
  RedisConn* conn;
  ReplyFn fn;
};

RedisConn::RedisConn(uv_loop_t* loop, const Options& options,
                     std::function<void()> on_connect,
                     std::function<void()> on_disconnect)
    : loop_(loop),
      options_(options),
      on_connect_(std::move(on_connect)),
      on_disconnect_(std::move(on_disconnect)) {}

RedisConn::~RedisConn() {
  closing_ = true;
  // Pending replies are called back with nullptr; Trampoline drops them.
  if (ctx_ != nullptr) {
    redisAsyncContext* ctx = ctx_;
    ctx_ = nullptr;
    redisAsyncFree(ctx);
  }
}

void RedisConn::Start() { Connect(); }

void RedisConn::Tick(uint64_t now_ms) {
  if (ctx_ == nullptr && !closing_ && now_ms >= next_connect_ms_) Connect();
}

void RedisConn::Connect() {
  redisAsyncContext* ac =
      redisAsyncConnect(options_.host.c_str(), options_.port);
  if (ac == nullptr || ac->err != 0 || !AttachUv(ac, loop_)) {
    if (ac != nullptr) redisAsyncFree(ac);
    ScheduleReconnect();
    return;
  }
  ac->data = this;
  redisAsyncSetConnectCallback(ac, OnConnect);
  redisAsyncSetDisconnectCallback(ac, OnDisconnect);
  ctx_ = ac;
}

void RedisConn::ScheduleReconnect() {
  ctx_ = nullptr;  // hiredis frees the context after the callback
  connected_ = false;
  backoff_ms_ = backoff_ms_ == 0
                    ? options_.reconnect_min_ms
                    : std::min(backoff_ms_ * 2, options_.reconnect_max_ms);
  next_connect_ms_ = wire::NowMs() + static_cast<uint64_t>(backoff_ms_);
}

void RedisConn::OnConnect(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisConn*>(ac->data);
  if (self->closing_) return;
  if (status != REDIS_OK) {
    self->ScheduleReconnect();
    return;
  }
  self->connected_ = true;
  self->backoff_ms_ = 0;
  if (self->had_connection_) ++self->reconnects_;
  self->had_connection_ = true;
  if (self->on_connect_) self->on_connect_();
}

void RedisConn::OnDisconnect(const redisAsyncContext* ac, int) {
  auto* self = static_cast<RedisConn*>(ac->data);
  if (self->closing_) return;
  self->ScheduleReconnect();
  if (self->on_disconnect_) self->on_disconnect_();
}

bool RedisConn::Command(const std::vector<std::string>& args, ReplyFn fn) {
  if (ctx_ == nullptr || !connected_) return false;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* call = new Call{this, std::move(fn)};
  if (redisAsyncCommandArgv(ctx_, Trampoline, call,
                            static_cast<int>(args.size()), argv.data(),
                            lens.data()) != REDIS_OK) {
    delete call;
    return false;
  }
  return true;
}

void RedisConn::Trampoline(redisAsyncContext*, void* reply, void* priv) {
  std::unique_ptr<Call> call(static_cast<Call*>(priv));
  if (call->conn->closing_) return;
  call->fn(static_cast<redisReply*>(reply));
}

void RedisConn::DropForTest() {
  if (ctx_ != nullptr) shutdown(ctx_->c.fd, SHUT_RDWR);
}

}  // namespace crawld::cluster::internal
