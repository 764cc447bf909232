// Test helpers: a uv loop run until a condition holds, bounded in time.
#ifndef CRAWLD_TESTS_UNIT_CLUSTER_LOOP_UTIL_H_
#define CRAWLD_TESTS_UNIT_CLUSTER_LOOP_UTIL_H_

#include <signal.h>
#include <uv.h>

#include <chrono>
#include <functional>

namespace crawld::cluster::testing {

// Owns a loop with a 5 ms heartbeat timer, so uv_run(ONCE) always returns
// soon enough to check a deadline.
class TestLoop {
 public:
  TestLoop() {
    // What crawld's main() must do too (see cluster/cluster.h): a write to a
    // peer that just went away raises SIGPIPE, which would kill the process.
    signal(SIGPIPE, SIG_IGN);
    uv_loop_init(&loop_);
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(
        &tick_, [](uv_timer_t*) {}, 5, 5);
  }
  ~TestLoop() {
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    // Let closed handles (ours and the exchanges') run their close callbacks.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (uv_loop_close(&loop_) == UV_EBUSY &&
           std::chrono::steady_clock::now() < deadline) {
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
  }
  uv_loop_t* get() { return &loop_; }

  // Runs the loop until pred() is true or `ms` milliseconds passed; returns
  // pred().
  bool RunUntil(const std::function<bool()>& pred, int ms = 60000) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= deadline) return pred();
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }

  // Runs the loop for `ms` milliseconds.
  void RunFor(int ms) {
    RunUntil([] { return false; }, ms);
  }

  // Runs pending close callbacks (after an exchange was destroyed).
  void Drain() {
    for (int i = 0; i < 10; ++i) uv_run(&loop_, UV_RUN_NOWAIT);
  }

 private:
  uv_loop_t loop_;
  uv_timer_t tick_;
};

}  // namespace crawld::cluster::testing

#endif  // CRAWLD_TESTS_UNIT_CLUSTER_LOOP_UTIL_H_
