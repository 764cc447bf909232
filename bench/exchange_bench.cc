// Throughput of the exchange (cluster/cluster.h): URLs/s from one worker to
// another over the local Unix-socket mesh and over Redis Streams, both
// endpoints on one libuv loop, the receiver acking each batch at once. The
// Redis case starts its own redis-server on a free 127.0.0.1 port. Results
// and the command line: docs/bench/exchange.md.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "tests/unit/cluster/loop_util.h"

namespace crawld::cluster {
namespace {

using testing::TestLoop;

std::vector<std::string> Urls(int n) {
  std::vector<std::string> urls;
  urls.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    // About 60 bytes, a typical extracted link.
    urls.push_back("https://host-" + std::to_string(i % 1000) +
                   ".example.com/articles/2026/page-" + std::to_string(i));
  }
  return urls;
}

// Sends all of `urls` from a to worker 1 (b) and runs the loop until b's
// inbox has them all and a has nothing pending.
bool Transfer(TestLoop& loop, Exchange* a, const std::vector<std::string>& urls,
              size_t* received) {
  size_t next = 0;
  auto pump = [&] {
    while (next < urls.size() &&
           a->Send(1, UrlMessage{urls[next], 2, 0.5}).ok()) {
      ++next;
    }
    a->Flush();
  };
  a->SetOnWritable([&](int) { pump(); });
  const size_t start = *received;
  pump();
  return loop.RunUntil([&] {
    if (next < urls.size() && !a->Backpressured(1)) pump();
    return *received - start >= urls.size() && a->Pending(1) == 0;
  });
}

void Run(benchmark::State& state, TestLoop& loop, Exchange* a, Exchange* b,
         int n) {
  const auto urls = Urls(n);
  size_t received = 0, bytes = 0;
  for (const auto& u : urls) bytes += u.size();
  b->SetInbox([&](int, std::vector<UrlMessage>&& batch, AckFn ack) {
    received += batch.size();
    ack();
  });
  for (auto _ : state) {
    if (!Transfer(loop, a, urls, &received)) {
      state.SkipWithError("transfer did not finish in 60 s");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

// Local: Unix-domain sockets in a temporary directory. Arg: batch size.
void BM_LocalExchange(benchmark::State& state) {
  char tmpl[] = "/tmp/crawld-exbench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    TestLoop loop;
    LocalOptions o;
    o.run_dir = dir + "/run";
    o.exchange.workers = 2;
    o.exchange.batch_urls = static_cast<int>(state.range(0));
    o.exchange.self = 0;
    auto a = NewLocalExchange(loop.get(), o);
    o.exchange.self = 1;
    auto b = NewLocalExchange(loop.get(), o);
    if (!a.ok() || !b.ok()) {
      state.SkipWithError("cannot create local exchanges");
    } else {
      Run(state, loop, a->get(), b->get(), 100'000);
    }
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_LocalExchange)
    ->Arg(64)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool CanConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// Redis: a private redis-server (no persistence). Arg: batch size.
void BM_RedisExchange(benchmark::State& state) {
  if (access("/usr/bin/redis-server", X_OK) != 0) {
    state.SkipWithError("redis-server not installed");
    return;
  }
  char tmpl[] = "/tmp/crawld-exbench-redis-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const int port = FreeLoopbackPort();
  const std::string port_s = std::to_string(port);
  const pid_t pid = fork();
  if (pid == 0) {
    // Not our stdout: a pipe reader would wait for the server.
    // And it dies with us, even if we are killed by a timeout.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    execl("/usr/bin/redis-server", "redis-server", "--port", port_s.c_str(),
          "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
          dir.c_str(), "--logfile", (dir + "/redis.log").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 500 && !CanConnect(port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    TestLoop loop;
    RedisOptions o;
    o.port = port;
    o.crawl = "bench";
    o.exchange.workers = 2;
    o.exchange.batch_urls = static_cast<int>(state.range(0));
    o.exchange.self = 0;
    auto a = NewRedisExchange(loop.get(), o);
    o.exchange.self = 1;
    auto b = NewRedisExchange(loop.get(), o);
    if (!a.ok() || !b.ok()) {
      state.SkipWithError("cannot create redis exchanges");
    } else {
      Run(state, loop, a->get(), b->get(), 100'000);
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_RedisExchange)
    ->Arg(64)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace crawld::cluster

BENCHMARK_MAIN();
