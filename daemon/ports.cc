#include "daemon/ports.h"

#include <uv.h>

#include "base/time.h"

namespace crawld::daemon {

int64_t SystemClock::MonotonicUs() const {
  return static_cast<int64_t>(uv_hrtime() / 1000);
}

int64_t SystemClock::WallUs() const { return crawld::WallMicros(); }

struct UvWaker::Timer {
  uv_timer_t handle{};
  std::function<void()> wake;
  bool closed = false;
};

UvWaker::UvWaker(uv_loop_t* loop, std::function<void()> wake)
    : timer_(new Timer) {
  timer_->wake = std::move(wake);
  uv_timer_init(loop, &timer_->handle);
  timer_->handle.data = timer_;
}

UvWaker::~UvWaker() { Close(); }

void UvWaker::Close() {
  if (timer_ == nullptr) return;
  timer_->closed = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_->handle),
           [](uv_handle_t* h) { delete static_cast<Timer*>(h->data); });
  timer_ = nullptr;
}

void UvWaker::WakeAt(int64_t monotonic_us) {
  if (timer_ == nullptr) return;
  if (monotonic_us == INT64_MAX) {
    uv_timer_stop(&timer_->handle);
    return;
  }
  const int64_t now = static_cast<int64_t>(uv_hrtime() / 1000);
  // Round up to the next millisecond, and never 0: libuv runs a timer that
  // is re-armed with 0 inside its own callback again in the same pass,
  // which would starve all I/O.
  const int64_t wait_ms =
      monotonic_us > now ? (monotonic_us - now + 999) / 1000 : 1;
  uv_timer_start(
      &timer_->handle,
      [](uv_timer_t* t) {
        Timer* self = static_cast<Timer*>(t->data);
        if (!self->closed) self->wake();
      },
      static_cast<uint64_t>(wait_ms), 0);
}

namespace {

struct Work {
  uv_work_t req{};
  std::function<void()> work;
  std::function<void()> done;
};

}  // namespace

void UvWorkPool::Run(std::function<void()> work, std::function<void()> done) {
  auto* w = new Work;
  w->req.data = w;
  w->work = std::move(work);
  w->done = std::move(done);
  const int rc = uv_queue_work(
      loop_, &w->req, [](uv_work_t* r) { static_cast<Work*>(r->data)->work(); },
      [](uv_work_t* r, int) {
        // Also after uv_cancel (status UV_ECANCELED): `done` still runs, so
        // the job it finishes is never left behind.
        Work* self = static_cast<Work*>(r->data);
        self->done();
        delete self;
      });
  if (rc != 0) {
    // Cannot happen with a live loop; run inline rather than lose the job.
    w->work();
    w->done();
    delete w;
  }
}

}  // namespace crawld::daemon
