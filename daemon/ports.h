// daemon/ports.h: the worker's seams (STYLE.md 7, LevelDB's Env): the clock,
// the fetcher, the resolver, the timer that wakes the crawl path, and the
// pool that runs CPU-heavy steps off the loop. The crawl path (crawl_path.h)
// sees the world only through these; the worker plugs in the real ones
// (libuv, curl multi, c-ares), and tests/unit/daemon/worker_test.cc plugs
// in a fake clock and a scripted web, so that the robots policy, politeness
// gaps, Retry-After, retirement, redirects and recovery run in
// milliseconds, deterministically.
//
// Every port is used from the worker's loop thread only (WorkPool::Run's
// `work` is the one exception, by design). A callback a port is given runs
// later, never inside the call that handed it over.
#ifndef CRAWLD_DAEMON_PORTS_H_
#define CRAWLD_DAEMON_PORTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "dns/dns.h"
#include "fetcher/fetcher.h"

typedef struct uv_loop_s uv_loop_t;

namespace crawld::daemon {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds: every schedule (politeness, TTLs, backoff).
  [[nodiscard]] virtual int64_t MonotonicUs() const = 0;
  // Unix epoch microseconds: what records and checkpoints carry.
  [[nodiscard]] virtual int64_t WallUs() const = 0;
};

class FetchPort {
 public:
  virtual ~FetchPort() = default;
  // fetcher::Fetcher::Submit's contract: `done` runs exactly once, later.
  virtual void Submit(fetcher::Request request,
                      std::function<void(fetcher::Response&&)> done) = 0;
  // Aborts every transfer (each `done` runs with kAborted).
  virtual void Shutdown() = 0;
  // Connections opened so far (count), for keep-alive metrics.
  [[nodiscard]] virtual uint64_t connections_opened() const = 0;
  // Connections closed after their page for want of idle slots (count):
  // fetcher::Stats::connections_not_kept.
  [[nodiscard]] virtual uint64_t connections_not_kept() const = 0;
};

class ResolvePort {
 public:
  virtual ~ResolvePort() = default;
  // dns::Resolver::Resolve's contract: `done` runs exactly once, later.
  virtual void Resolve(const std::string& host,
                       std::function<void(Result<dns::Answer>)> done) = 0;
  virtual void Shutdown() = 0;
};

// One timer: the crawl path asks to be woken at a monotonic time.
class Waker {
 public:
  virtual ~Waker() = default;
  // Replaces the previous request. INT64_MAX: no wake-up wanted.
  virtual void WakeAt(int64_t monotonic_us) = 0;
};

// Runs `work` off the loop (a thread pool) and then `done` on the loop.
// `work` must not touch anything the loop touches meanwhile.
class WorkPool {
 public:
  virtual ~WorkPool() = default;
  virtual void Run(std::function<void()> work, std::function<void()> done) = 0;
};

// --- the real ports ---------------------------------------------------------

// CLOCK_MONOTONIC (libuv's hrtime) and CLOCK_REALTIME.
class SystemClock final : public Clock {
 public:
  int64_t MonotonicUs() const override;
  int64_t WallUs() const override;
};

class FetcherPort final : public FetchPort {
 public:
  explicit FetcherPort(std::unique_ptr<fetcher::Fetcher> fetcher)
      : fetcher_(std::move(fetcher)) {}
  void Submit(fetcher::Request request,
              std::function<void(fetcher::Response&&)> done) override {
    fetcher_->Submit(std::move(request), std::move(done));
  }
  void Shutdown() override { fetcher_->Shutdown(); }
  uint64_t connections_opened() const override {
    return fetcher_->stats().connections;
  }
  uint64_t connections_not_kept() const override {
    return fetcher_->stats().connections_not_kept;
  }

 private:
  std::unique_ptr<fetcher::Fetcher> fetcher_;
};

class ResolverPort final : public ResolvePort {
 public:
  explicit ResolverPort(std::unique_ptr<dns::Resolver> resolver)
      : resolver_(std::move(resolver)) {}
  void Resolve(const std::string& host,
               std::function<void(Result<dns::Answer>)> done) override {
    resolver_->Resolve(host, std::move(done));
  }
  void Shutdown() override { resolver_->Shutdown(); }

 private:
  std::unique_ptr<dns::Resolver> resolver_;
};

// A uv timer on the worker's loop calling `wake` at the requested time.
class UvWaker final : public Waker {
 public:
  // REQUIRES: the loop outlives Close() plus one loop iteration.
  UvWaker(uv_loop_t* loop, std::function<void()> wake);
  ~UvWaker() override;
  UvWaker(const UvWaker&) = delete;
  UvWaker& operator=(const UvWaker&) = delete;
  void WakeAt(int64_t monotonic_us) override;
  // Stops and closes the timer; later WakeAt calls are ignored.
  void Close();

 private:
  struct Timer;
  Timer* timer_;  // freed by its close callback
};

// libuv's thread pool (uv_queue_work): `done` runs on the loop.
class UvWorkPool final : public WorkPool {
 public:
  explicit UvWorkPool(uv_loop_t* loop) : loop_(loop) {}
  void Run(std::function<void()> work, std::function<void()> done) override;

 private:
  uv_loop_t* loop_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_PORTS_H_
