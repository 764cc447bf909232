// cluster/redis_conn.h (private to cluster/): one hiredis async connection
// on a libuv loop that reconnects with backoff, and the names of every Redis
// key of a crawl. Shared by the Redis exchange and the membership client, so
// that both speak to Redis the same way and agree on the keys.
#ifndef CRAWLD_CLUSTER_REDIS_CONN_H_
#define CRAWLD_CLUSTER_REDIS_CONN_H_

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

typedef struct uv_loop_s uv_loop_t;

namespace crawld::cluster::internal {

// Keys of crawl `crawl` (docs/CLUSTER.md, "Keys"). One Redis instance (or
// one database) per crawl name; the scripts touch keys of several nodes at
// once, so Redis Cluster slotting is not supported.
class Keys {
 public:
  explicit Keys(std::string_view crawl)
      : prefix_("crawld:" + std::string(crawl) + ":") {}
  // The key prefix, "crawld:<crawl>:".
  const std::string& prefix() const { return prefix_; }
  // Worker w's inbox stream.
  std::string Inbox(int w) const { return Indexed("inbox:", w); }
  // Entries of Inbox(w) acknowledged so far (a counter; with retained
  // entries the backlog is the stream length minus this).
  std::string InboxAcked(int w) const { return Indexed("inbox-acked:", w); }
  // Node n's heartbeat and report (expires).
  std::string Node(int n) const { return Indexed("node:", n); }
  // The set of node ids that ever joined.
  std::string Members() const { return prefix_ + "members"; }
  // The live node ids of the current epoch, "0,1,3".
  std::string View() const { return prefix_ + "view"; }
  // The ring epoch: INCR on each change of View().
  std::string Epoch() const { return prefix_ + "epoch"; }
  // The crawl-wide stop reason, once the crawl ended.
  std::string Done() const { return prefix_ + "done"; }

 private:
  std::string Indexed(const char* kind, int i) const {
    return prefix_ + kind + std::to_string(i);
  }
  std::string prefix_;
};

// Reply helpers: an error reply, or nullptr (the connection died before an
// answer), is IsError.
bool IsError(const redisReply* r);
// A string, status or error reply's text; "" for other types.
std::string_view Str(const redisReply* r);
// An integer reply, or a string holding one; -1 otherwise.
int64_t Int(const redisReply* r);

// Lives on one loop and is used from that loop's thread only. Connects at
// once; a connection that fails or drops is retried from Tick() with a delay
// that doubles from reconnect_min_ms to reconnect_max_ms.
class RedisConn {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 6379;
    int reconnect_min_ms = 50;
    int reconnect_max_ms = 2000;
  };
  using ReplyFn = std::function<void(redisReply* reply)>;

  // `on_connect` runs after each successful (re)connection, `on_disconnect`
  // after each loss; both may be empty. REQUIRES: `loop` outlives this.
  RedisConn(uv_loop_t* loop, const Options& options,
            std::function<void()> on_connect,
            std::function<void()> on_disconnect);
  // Frees the connection; replies still pending are dropped (their ReplyFn
  // is not called).
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // Starts the first connection.
  void Start();
  // Reconnects when a retry is due. Call it from a periodic timer.
  void Tick(uint64_t now_ms);
  bool connected() const { return connected_; }
  // Successful connections after the first (count).
  uint64_t reconnects() const { return reconnects_; }

  // Queues a command; `fn` gets the reply, or nullptr if the connection
  // failed before one came. False (and `fn` is not called) when not
  // connected.
  bool Command(const std::vector<std::string>& args, ReplyFn fn);

  // Test hook: shuts the socket down under hiredis, as a network failure
  // would (redisAsyncDisconnect would wait for pending replies).
  void DropForTest();

 private:
  struct Call;
  static void OnConnect(const redisAsyncContext* ac, int status);
  static void OnDisconnect(const redisAsyncContext* ac, int status);
  static void Trampoline(redisAsyncContext* ac, void* reply, void* priv);
  void Connect();
  void ScheduleReconnect();

  uv_loop_t* loop_;
  Options options_;
  std::function<void()> on_connect_;
  std::function<void()> on_disconnect_;
  redisAsyncContext* ctx_ = nullptr;
  bool connected_ = false;
  bool had_connection_ = false;
  bool closing_ = false;
  uint64_t next_connect_ms_ = 0;
  int backoff_ms_ = 0;
  uint64_t reconnects_ = 0;
};

}  // namespace crawld::cluster::internal

#endif  // CRAWLD_CLUSTER_REDIS_CONN_H_
