// The local exchange: a mesh of Unix-domain stream sockets (docs/CLUSTER.md).
//
// Each worker listens at <run_dir>/worker-<self>.sock. A sender opens one
// outbound connection per destination, says HELLO (worker id, incarnation),
// then writes BATCH frames; the receiver answers ACK frames on the same
// connection once its inbox acknowledged a batch. The sender keeps every
// unacknowledged batch and writes them all again, in order, on each new
// connection; the receiver drops a batch whose id it already delivered to
// the current incarnation of that sender (ids grow by one per batch).
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
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

using wire::FrameType;

class LocalExchange;

struct Conn {
  uv_pipe_t pipe;
  LocalExchange* owner = nullptr;
  bool outbound = false;
  bool connected = false;
  bool closing = false;
  int peer = -1;  // outbound: destination; inbound: sender (after HELLO)
  std::string rbuf;
  size_t rpos = 0;
  char scratch[64 * 1024];
};

struct WriteReq {
  uv_write_t req;
  Conn* conn;
  std::string head;  // the frame header (and a small frame's body)
  // Keeps a batch alive until libuv is done with it, even if the batch is
  // acknowledged (and dropped from the queue) before the callback runs.
  std::shared_ptr<const std::string> body;
};

// The outbound connection to one destination.
struct Peer {
  Conn* conn = nullptr;  // outbound connection, if any
  uint64_t next_connect_ms = 0;
  int backoff_ms = 0;
  bool had_connection = false;
};

struct Sender {
  uint64_t incarnation = 0;
  uint64_t delivered_upto = 0;
  std::unordered_set<uint64_t> unacked;  // delivered, inbox not acked yet
  Conn* conn = nullptr;                  // latest inbound connection
};

template <typename H>
void DeleteHandle(uv_handle_t* h) {
  delete reinterpret_cast<H*>(h);
}

class LocalExchange final : public Exchange {
 public:
  LocalExchange(uv_loop_t* loop, const LocalOptions& o)
      : loop_(loop),
        opt_(o),
        incarnation_(wire::NewIncarnation()),
        peers_(static_cast<size_t>(o.exchange.workers)),
        batcher_(opt_.exchange, incarnation_, &stats_,
                 [this](int to, internal::SealedBatch& b) { OnSealed(to, b); }),
        alive_(std::make_shared<int>(0)) {}

  ~LocalExchange() override {
    alive_.reset();
    for (Conn* c : conns_) {
      c->owner = nullptr;
      c->closing = true;
      uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe),
               [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
    }
    if (listener_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(listener_),
               DeleteHandle<uv_pipe_t>);
      unlink(SockPath(ex_.self).c_str());
    }
    if (timer_ != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(timer_),
               DeleteHandle<uv_timer_t>);
    }
  }

  Status Start() {
    if (opt_.run_dir.empty()) {
      return Status::InvalidArgument("local exchange: run_dir is empty");
    }
    if (opt_.max_frame_bytes < 64) opt_.max_frame_bytes = 64;
    const std::string path = SockPath(ex_.self);
    for (int w = 0; w < ex_.workers; ++w) {
      if (SockPath(w).size() >= sizeof(sockaddr_un{}.sun_path)) {
        return Status::InvalidArgument(
            "local exchange: socket path too long: " + SockPath(w));
      }
    }
    if (mkdir(opt_.run_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IOError("local exchange: mkdir " + opt_.run_dir + ": " +
                             std::strerror(errno));
    }
    // A socket file left by a crashed predecessor would make bind fail.
    unlink(path.c_str());
    listener_ = new uv_pipe_t;
    uv_pipe_init(loop_, listener_, 0);
    listener_->data = this;
    int rc = uv_pipe_bind(listener_, path.c_str());
    if (rc == 0)
      rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 128,
                     OnConnection);
    if (rc != 0) {
      return Status::IOError("local exchange: listen " + path + ": " +
                             uv_strerror(rc));
    }
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    uv_timer_start(timer_, OnTimer,
                   static_cast<uint64_t>(ex_.flush_interval_ms),
                   static_cast<uint64_t>(ex_.flush_interval_ms));
    return Status::Ok();
  }

  Status Send(int to, const UrlMessage& m) override {
    return batcher_.Send(to, m, false);
  }

  void SetInbox(InboxFn inbox) override { inbox_ = std::move(inbox); }
  void SetOnWritable(WritableFn fn) override { writable_ = std::move(fn); }

  bool Backpressured(int to) const override { return batcher_.AtBound(to); }

  size_t Pending(int to) const override { return batcher_.Pending(to); }

  void Flush() override { batcher_.SealAll(); }

  void ForEachUnacked(
      const std::function<void(int, const UrlMessage&)>& fn) const override {
    batcher_.ForEachUnacked(fn);
  }

  // One machine has no membership: no worker leaves without handing over.
  void Adopt(const std::vector<int>&) override {}

  // A batch reaches the inbox as soon as it arrives: nothing waits in a
  // store between the two.
  void WhenCaughtUp(std::function<void()> fn) override { fn(); }

  ExchangeStats stats() const override { return stats_; }

  void TEST_DropConnections() override {
    std::vector<Conn*> all(conns_.begin(), conns_.end());
    for (Conn* c : all) CloseConn(c);
  }

 private:
  std::string SockPath(int w) const {
    return opt_.run_dir + "/worker-" + std::to_string(w) + ".sock";
  }

  // A new batch goes out at once on a live connection; otherwise the next
  // connection sends it with the others.
  void OnSealed(int to, internal::SealedBatch& b) {
    Peer& p = peers_[static_cast<size_t>(to)];
    if (p.conn != nullptr && p.conn->connected) {
      b.transmitted = true;
      ++stats_.batches_sent;
      WriteBatch(p.conn, b);
    }
  }

  void WriteBatch(Conn* c, const internal::SealedBatch& b) {
    std::string head;
    wire::AppendFrameHeader(FrameType::kBatch, b.blob->size(), &head);
    Write(c, std::move(head), b.blob);
  }

  // Writes `head` then `body` (may be null) as one write.
  void Write(Conn* c, std::string head,
             std::shared_ptr<const std::string> body) {
    auto* w = new WriteReq;
    w->conn = c;
    w->head = std::move(head);
    w->body = std::move(body);
    uv_buf_t bufs[2];
    bufs[0] =
        uv_buf_init(w->head.data(), static_cast<unsigned>(w->head.size()));
    unsigned n = 1;
    if (w->body != nullptr) {
      bufs[1] = uv_buf_init(const_cast<char*>(w->body->data()),
                            static_cast<unsigned>(w->body->size()));
      n = 2;
    }
    const int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->pipe),
                            bufs, n, OnWrite);
    if (rc != 0) {
      delete w;
      CloseConn(c);
    }
  }

  void WriteSmall(Conn* c, FrameType t, const std::string& body) {
    std::string frame;
    wire::AppendFrameHeader(t, body.size(), &frame);
    frame.append(body);
    Write(c, std::move(frame), nullptr);
  }

  void Connect(int to) {
    Peer& p = peers_[static_cast<size_t>(to)];
    auto* c = new Conn;
    c->owner = this;
    c->outbound = true;
    c->peer = to;
    uv_pipe_init(loop_, &c->pipe, 0);
    c->pipe.data = c;
    conns_.insert(c);
    p.conn = c;
    auto* req = new uv_connect_t;
    req->data = c;
    uv_pipe_connect(req, &c->pipe, SockPath(to).c_str(), OnConnect);
  }

  // Forgets `c` and closes it; an outbound connection is retried later.
  void CloseConn(Conn* c) {
    if (c->closing) return;
    c->closing = true;
    conns_.erase(c);
    if (c->outbound) {
      Peer& p = peers_[static_cast<size_t>(c->peer)];
      if (p.conn == c) {
        p.conn = nullptr;
        p.backoff_ms = p.backoff_ms == 0
                           ? ex_.reconnect_min_ms
                           : std::min(p.backoff_ms * 2, ex_.reconnect_max_ms);
        p.next_connect_ms = wire::NowMs() + static_cast<uint64_t>(p.backoff_ms);
      }
    } else if (c->peer >= 0) {
      auto it = senders_.find(c->peer);
      if (it != senders_.end() && it->second.conn == c)
        it->second.conn = nullptr;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe),
             [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
  }

  void Connected(Conn* c) {
    Peer& p = peers_[static_cast<size_t>(c->peer)];
    c->connected = true;
    if (p.had_connection) ++stats_.reconnects;
    p.had_connection = true;
    p.backoff_ms = 0;
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe), OnAlloc, OnRead);
    std::string hello;
    wire::PutU32(static_cast<uint32_t>(ex_.self), &hello);
    wire::PutU64(incarnation_, &hello);
    WriteSmall(c, FrameType::kHello, hello);
    // Everything unacknowledged goes again, in order: the receiver may have
    // lost it (restart) or dedupes it by id.
    std::deque<internal::SealedBatch>* queue = batcher_.Queue(c->peer);
    for (size_t i = 0; queue != nullptr && i < queue->size(); ++i) {
      if (c->closing) return;
      internal::SealedBatch& b = (*queue)[i];
      if (b.transmitted) {
        ++stats_.batches_resent;
      } else {
        ++stats_.batches_sent;
      }
      b.transmitted = true;
      WriteBatch(c, b);
    }
  }

  void OnTick() {
    const uint64_t now = wire::NowMs();
    batcher_.SealDue(now);
    for (int w : batcher_.Destinations()) {
      Peer& p = peers_[static_cast<size_t>(w)];
      const std::deque<internal::SealedBatch>* queue = batcher_.Queue(w);
      if (p.conn == nullptr && queue != nullptr && !queue->empty() &&
          now >= p.next_connect_ms) {
        Connect(w);
      }
    }
  }

  // Parses every complete frame in c->rbuf.
  void HandleInput(Conn* c) {
    while (!c->closing && c->rbuf.size() - c->rpos >= 4) {
      const uint32_t len = wire::GetU32(c->rbuf.data() + c->rpos);
      if (len == 0 || len > opt_.max_frame_bytes) {
        ++stats_.protocol_errors;
        CloseConn(c);
        return;
      }
      if (c->rbuf.size() - c->rpos - 4 < len) break;
      const auto type = static_cast<uint8_t>(c->rbuf[c->rpos + 4]);
      const std::string_view body(c->rbuf.data() + c->rpos + 5, len - 1);
      if (!HandleFrame(c, type, body)) {
        ++stats_.protocol_errors;
        CloseConn(c);
        return;
      }
      c->rpos += 4 + static_cast<size_t>(len);
    }
    if (c->rpos == c->rbuf.size()) {
      c->rbuf.clear();
      c->rpos = 0;
    } else if (c->rpos > (1u << 20)) {
      c->rbuf.erase(0, c->rpos);
      c->rpos = 0;
    }
  }

  // False on a protocol violation (the connection is then closed).
  bool HandleFrame(Conn* c, uint8_t type, std::string_view body) {
    if (c->outbound) {
      if (type != static_cast<uint8_t>(FrameType::kAck) || body.size() != 8) {
        return false;
      }
      OnAckFrame(c->peer, wire::GetU64(body.data()));
      return true;
    }
    if (type == static_cast<uint8_t>(FrameType::kHello)) {
      if (body.size() != 12 || c->peer >= 0) return false;
      const uint32_t from = wire::GetU32(body.data());
      const uint64_t inc = wire::GetU64(body.data() + 4);
      if (from >= static_cast<uint32_t>(ex_.workers) ||
          from == static_cast<uint32_t>(ex_.self)) {
        return false;
      }
      Sender& s = senders_[static_cast<int>(from)];
      if (s.incarnation != inc) s = Sender{inc, 0, {}, nullptr};
      if (s.conn != nullptr && s.conn != c) CloseConn(s.conn);
      s.conn = c;
      c->peer = static_cast<int>(from);
      return true;
    }
    if (type != static_cast<uint8_t>(FrameType::kBatch) || c->peer < 0) {
      return false;
    }
    wire::BatchHeader h;
    std::vector<UrlMessage> urls;
    if (!wire::DecodeBatch(body, &h, &urls,
                           static_cast<uint32_t>(ex_.max_url_bytes))
             .ok()) {
      return false;
    }
    Sender& s = senders_[c->peer];
    if (h.from != static_cast<uint32_t>(c->peer) ||
        h.incarnation != s.incarnation) {
      return false;
    }
    if (h.id <= s.delivered_upto) {
      ++stats_.duplicates_dropped;
      // Already acknowledged: say so again, the first ACK may have been lost
      // with the old connection. Still pending: the inbox's ack will answer.
      if (s.unacked.count(h.id) == 0) SendAck(c, h.id);
      return true;
    }
    s.delivered_upto = h.id;
    s.unacked.insert(h.id);
    ++stats_.batches_received;
    stats_.urls_received += urls.size();
    if (inbox_) {
      std::weak_ptr<int> alive = alive_;
      const int from = c->peer;
      const uint64_t inc = h.incarnation;
      const uint64_t id = h.id;
      inbox_(from, std::move(urls), [this, alive, from, inc, id] {
        if (alive.lock() != nullptr) Ack(from, inc, id);
      });
    }
    return true;
  }

  void SendAck(Conn* c, uint64_t id) {
    std::string body;
    wire::PutU64(id, &body);
    WriteSmall(c, FrameType::kAck, body);
  }

  void Ack(int from, uint64_t inc, uint64_t id) {
    auto it = senders_.find(from);
    if (it == senders_.end() || it->second.incarnation != inc) return;
    if (it->second.unacked.erase(id) == 0) return;
    // Without a connection the sender resends on reconnect and gets its ACK
    // as a duplicate.
    if (it->second.conn != nullptr && !it->second.conn->closing) {
      SendAck(it->second.conn, id);
    }
  }

  void OnAckFrame(int to, uint64_t id) {
    if (!batcher_.Acknowledge(to, id)) return;  // a repeated ACK
    if (batcher_.TakeWritable(to, false) && writable_) writable_(to);
  }

  static void OnConnection(uv_stream_t* server, int status) {
    auto* self = static_cast<LocalExchange*>(server->data);
    if (status < 0) return;
    auto* c = new Conn;
    c->owner = self;
    uv_pipe_init(self->loop_, &c->pipe, 0);
    c->pipe.data = c;
    if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->pipe)) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&c->pipe),
               [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
      return;
    }
    c->connected = true;
    self->conns_.insert(c);
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->pipe), OnAlloc, OnRead);
  }

  static void OnConnect(uv_connect_t* req, int status) {
    auto* c = static_cast<Conn*>(req->data);
    delete req;
    if (c->owner == nullptr || c->closing) return;
    if (status < 0) {
      c->owner->CloseConn(c);
      return;
    }
    c->owner->Connected(c);
  }

  static void OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(h->data);
    *buf = uv_buf_init(c->scratch, sizeof(c->scratch));
  }

  static void OnRead(uv_stream_t* s, ssize_t n, const uv_buf_t*) {
    auto* c = static_cast<Conn*>(s->data);
    if (c->owner == nullptr || c->closing) return;
    if (n < 0) {
      c->owner->CloseConn(c);
      return;
    }
    c->rbuf.append(c->scratch, static_cast<size_t>(n));
    c->owner->HandleInput(c);
  }

  static void OnWrite(uv_write_t* req, int status) {
    auto* w = reinterpret_cast<WriteReq*>(req);
    Conn* c = w->conn;
    delete w;
    if (status < 0 && c->owner != nullptr && !c->closing) {
      c->owner->CloseConn(c);
    }
  }

  static void OnTimer(uv_timer_t* t) {
    static_cast<LocalExchange*>(t->data)->OnTick();
  }

  uv_loop_t* loop_;
  LocalOptions opt_;
  ExchangeOptions& ex_ = opt_.exchange;
  uint64_t incarnation_;
  uv_pipe_t* listener_ = nullptr;
  uv_timer_t* timer_ = nullptr;
  std::vector<Peer> peers_;
  ExchangeStats stats_;
  internal::Batcher batcher_;
  std::unordered_map<int, Sender> senders_;
  std::unordered_set<Conn*> conns_;
  InboxFn inbox_;
  WritableFn writable_;
  // Acks handed to the inbox hold a weak reference: calling one after the
  // exchange is gone does nothing.
  std::shared_ptr<int> alive_;
};

}  // namespace

Result<std::unique_ptr<Exchange>> NewLocalExchange(
    uv_loop_t* loop, const LocalOptions& options) {
  if (loop == nullptr)
    return Status::InvalidArgument("local exchange: no loop");
  LocalOptions o = options;
  if (Status s = wire::SanitizeExchangeOptions(&o.exchange); !s.ok()) return s;
  auto ex = std::make_unique<LocalExchange>(loop, o);
  if (Status s = ex->Start(); !s.ok()) return s;
  return std::unique_ptr<Exchange>(std::move(ex));
}

}  // namespace crawld::cluster
