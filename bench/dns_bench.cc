// Benchmarks of the resolver: the private-network guard, the cost of one
// Resolve answered without a query (literal, cache hit) through the loop,
// and uncached lookups against a local dnsmasq (see docs/bench/dns.md).
#include <ares.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "dns/dns.h"

extern char** environ;

namespace {

using crawld::Result;
using crawld::dns::Answer;
using crawld::dns::IsPrivateAddress;
using crawld::dns::Options;
using crawld::dns::Resolver;

void BM_IsPrivateAddress(benchmark::State& state) {
  const char* ips[] = {"93.184.216.34",    "10.1.2.3",   "2606:4700::1111",
                       "::ffff:127.0.0.1", "172.20.0.1", "8.8.8.8"};
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(IsPrivateAddress(ips[i++ % 6]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IsPrivateAddress);

// dnsmasq on 127.0.0.1:port answering names n0.test .. n{count-1}.test.
struct Dnsmasq {
  pid_t pid = -1;
  std::string dir;
  int port = 0;
  explicit Dnsmasq(int count) {
    char tmpl[] = "/tmp/crawld-dns-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    std::ofstream hosts(dir + "/hosts");
    for (int i = 0; i < count; ++i) {
      hosts << "93.184." << (i / 250) % 250 << "." << i % 250 + 1 << " n" << i
            << ".test\n";
    }
    hosts.close();
    port = 20000 + static_cast<int>(getpid() % 20000);
    std::vector<std::string> args = {"/usr/sbin/dnsmasq",
                                     "--no-daemon",
                                     "--conf-file=/dev/null",
                                     "--no-hosts",
                                     "--no-resolv",
                                     "--addn-hosts=" + dir + "/hosts",
                                     "--listen-address=127.0.0.1",
                                     "--bind-interfaces",
                                     "--port=" + std::to_string(port),
                                     "--user=root",
                                     "--pid-file=",
                                     "--local=/test/",
                                     "--cache-size=0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~Dnsmasq() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    std::system(("rm -rf " + dir).c_str());
  }
};

// Resolves `names` (all answered by callbacks) and returns how many failed.
int ResolveAll(uv_loop_t* loop, Resolver* r,
               const std::vector<std::string>& names) {
  size_t done = 0;
  int failed = 0;
  for (const std::string& n : names) {
    r->Resolve(n, [&](Result<Answer> a) {
      ++done;
      failed += !a.ok();
    });
  }
  while (done < names.size()) uv_run(loop, UV_RUN_ONCE);
  return failed;
}

// mode 0: IP literals; 1: cache hits; 2: uncached lookups (fresh names).
void BM_Resolve(benchmark::State& state) {
  const int mode = static_cast<int>(state.range(0));
  const int batch = 100;
  const int kNames = 20000;
  std::unique_ptr<Dnsmasq> dnsmasq;
  Options o;
  o.max_cache_entries = 1000000;
  if (mode > 0) {
    dnsmasq = std::make_unique<Dnsmasq>(kNames);
    o.servers = {"127.0.0.1:" + std::to_string(dnsmasq->port)};
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto r = std::move(Resolver::Create(&loop, o)).value();
  std::vector<std::string> names;
  for (int i = 0; i < batch; ++i) {
    names.push_back(mode == 0 ? "93.184.216." + std::to_string(i + 1)
                              : "n" + std::to_string(i) + ".test");
  }
  if (mode == 1 && ResolveAll(&loop, r.get(), names) != 0) {
    state.SkipWithError("warm-up failed");
  }
  int next = batch, failed = 0;
  for (auto _ : state) {
    if (mode == 2) {
      state.PauseTiming();
      if (next + batch > kNames) {
        state.ResumeTiming();
        break;
      }
      for (int i = 0; i < batch; ++i) {
        names[static_cast<size_t>(i)] = "n" + std::to_string(next++) + ".test";
      }
      state.ResumeTiming();
    }
    failed += ResolveAll(&loop, r.get(), names);
  }
  r.reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (failed > 0) state.SkipWithError("lookups failed");
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_Resolve)->Arg(0)->Arg(1)->UseRealTime();
BENCHMARK(BM_Resolve)->Arg(2)->UseRealTime()->Iterations(150);

}  // namespace

int main(int argc, char** argv) {
  ares_library_init(ARES_LIB_INIT_ALL);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ares_library_cleanup();
  return 0;
}
