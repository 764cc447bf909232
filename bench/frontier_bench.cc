// Micro-benchmarks of the frontier (frontier/frontier.h): the scheduler in
// memory over 10,000 hosts with a fake clock, and the disk spill at 10
// million URLs over 10,000 hosts (peak RSS reported from getrusage).
// Built with -DCRAWLD_BENCH_LEVELDB (and -lleveldb) it also compares the two
// spill stores considered, segment files and LevelDB key ranges, on the
// same chunked workload. Results and command lines: docs/bench/frontier.md.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontier/frontier.h"

#ifdef CRAWLD_BENCH_LEVELDB
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#endif

namespace crawld::frontier {
namespace {

constexpr int kHosts = 10'000;

std::vector<std::string> HostKeys(int hosts = kHosts) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(hosts));
  for (int i = 0; i < hosts; ++i) {
    keys.push_back("https://host-" + std::to_string(i) + ".example:443");
  }
  return keys;
}

Item MakeItem(const std::string& host, int64_t i) {
  Item item;
  item.url = host + "/page/" + std::to_string(i);
  item.fingerprint = static_cast<uint64_t>(i);
  item.credit = 1.0 + static_cast<double>(i % 7);
  return item;
}

double PeakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

// The process's resident set now (statm), unlike PeakRssMiB's high mark.
double RssMiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(::getpagesize()) /
         (1 << 20);
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string ScratchDir(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("crawld-bench-") + name + "-" +
           std::to_string(::getpid())))
      .string();
}

// Push only: URLs/s appended, 10 per host, memory frontier.
// Arg: credit scheduling off (0) or on (1).
void BM_Push(benchmark::State& state) {
  const auto keys = HostKeys();
  Options o;
  o.credit_scheduling = state.range(0) != 0;
  std::vector<Item> items;
  for (int i = 0; i < kHosts * 10; ++i)
    items.push_back(MakeItem(keys[i % kHosts], i));
  for (auto _ : state) {
    state.PauseTiming();
    auto f = std::make_unique<Frontier>(o);
    std::vector<Item> copy = items;
    state.ResumeTiming();
    for (size_t i = 0; i < copy.size(); ++i) {
      f->Push(keys[i % kHosts], std::move(copy[i]));
    }
    benchmark::DoNotOptimize(f->queued());
    state.PauseTiming();
    f.reset();  // destroy outside the timed region
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kHosts * 10);
}

// Steady state: every iteration is one Pop, one Complete and one Push of the
// same URL back, over 10,000 hosts with 10 URLs each, the clock jumping to
// NextReadyUs() whenever nothing is ready. Arg: credit scheduling off/on.
void BM_PopCompletePush(benchmark::State& state) {
  const auto keys = HostKeys();
  Options o;
  o.credit_scheduling = state.range(0) != 0;
  Frontier f(o);
  for (int i = 0; i < kHosts * 10; ++i)
    f.Push(keys[i % kHosts], MakeItem(keys[i % kHosts], i));
  int64_t now = 0;
  Completion done;
  done.response_time_us = 200'000;
  for (auto _ : state) {
    auto ready = f.Pop(now);
    if (!ready) {
      now = f.NextReadyUs();
      ready = f.Pop(now);
    }
    f.Complete(ready->host_key, now, done);
    f.Push(ready->host_key, std::move(ready->item));
    now += 10;  // 10 us between fetch starts, 100k fetches/s
  }
  state.SetItemsProcessed(state.iterations());
}

// Drain: a full frontier of 100,000 URLs emptied by Pop + Complete.
void BM_Drain(benchmark::State& state) {
  const auto keys = HostKeys();
  Options o;
  o.credit_scheduling = state.range(0) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto f = std::make_unique<Frontier>(o);
    for (int i = 0; i < kHosts * 10; ++i)
      f->Push(keys[i % kHosts], MakeItem(keys[i % kHosts], i));
    state.ResumeTiming();
    int64_t now = 0;
    while (!f->Idle()) {
      auto ready = f->Pop(now);
      if (!ready) {
        now = f->NextReadyUs();
        continue;
      }
      f->Complete(ready->host_key, now, Completion{});
    }
    state.PauseTiming();
    f.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kHosts * 10);
}

// The target: 10 M queued URLs over 10,000 hosts with spill on
// (issue 5), and over 100,000 hosts (issue 16),
// enqueued round-robin (every host's tail grows at once: the worst case for
// the memory budget), then dequeued to the end with Pop + Complete under
// default politeness on a fake clock. One iteration; the counters are the
// figures (URLs/s from CPU time and from wall time, peak RSS of the whole
// process: run this benchmark alone for a clean RSS figure).
// Args: URLs in millions, hosts.
void BM_Spill10M(benchmark::State& state) {
  const int64_t total = state.range(0) * 1'000'000;
  const int hosts = static_cast<int>(state.range(1));
  const auto keys = HostKeys(hosts);
  const std::string dir = ScratchDir("spill");
  std::filesystem::remove_all(dir);
  Options o;
  o.spill_dir = dir;
  double enq_cpu = 0, enq_wall = 0, deq_cpu = 0, deq_wall = 0, ckpt_wall = 0;
  uint64_t spilled = 0, errors = 0;
  size_t mem = 0;
  double rss_full = 0;
  for (auto _ : state) {
    auto opened = Frontier::Open(o);
    if (!opened.ok()) {
      state.SkipWithError(opened.status().ToString().c_str());
      return;
    }
    Frontier& f = **opened;
    double c0 = CpuSeconds(), w0 = WallSeconds();
    for (int64_t i = 0; i < total; ++i) {
      const std::string& host = keys[static_cast<size_t>(i % hosts)];
      f.Push(host, MakeItem(host, i));
    }
    enq_cpu = CpuSeconds() - c0;
    enq_wall = WallSeconds() - w0;
    mem = f.memory_bytes();
    spilled = f.spilled_items();
    rss_full = RssMiB();
    w0 = WallSeconds();
    Status s = f.Checkpoint();
    ckpt_wall = WallSeconds() - w0;
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());

    c0 = CpuSeconds();
    w0 = WallSeconds();
    int64_t now = 0;
    int64_t popped = 0;
    Completion done;
    while (popped < total) {
      auto r = f.Pop(now);
      if (!r) {
        now = f.NextReadyUs();
        if (now == INT64_MAX) break;
        continue;
      }
      ++popped;
      f.Complete(r->host_key, now, done);
    }
    deq_cpu = CpuSeconds() - c0;
    deq_wall = WallSeconds() - w0;
    errors = f.spill_errors() + (popped == total ? 0 : 1);
  }
  std::filesystem::remove_all(dir);
  const double n = static_cast<double>(total);
  state.counters["enqueue_per_s_cpu"] = n / enq_cpu;
  state.counters["enqueue_per_s_wall"] = n / enq_wall;
  state.counters["dequeue_per_s_cpu"] = n / deq_cpu;
  state.counters["dequeue_per_s_wall"] = n / deq_wall;
  state.counters["checkpoint_s"] = ckpt_wall;
  state.counters["peak_rss_MiB"] = PeakRssMiB();
  state.counters["rss_full_MiB"] = rss_full;  // all 10 M queued
  state.counters["queue_mem_MiB"] = static_cast<double>(mem) / (1 << 20);
  state.counters["spilled_frac"] = static_cast<double>(spilled) / n;
  state.counters["errors"] = static_cast<double>(errors);
}

// Steady state with spill: 10,000 hosts with 200 URLs each (2 M, most of
// them on disk), one Pop + Complete + Push of a new URL per iteration.
void BM_SpillSteady(benchmark::State& state) {
  const auto keys = HostKeys();
  const std::string dir = ScratchDir("steady");
  std::filesystem::remove_all(dir);
  Options o;
  o.spill_dir = dir;
  auto opened = Frontier::Open(o);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().ToString().c_str());
    return;
  }
  Frontier& f = **opened;
  int64_t serial = 0;
  for (; serial < int64_t{kHosts} * 200; ++serial) {
    const std::string& host = keys[static_cast<size_t>(serial % kHosts)];
    f.Push(host, MakeItem(host, serial));
  }
  int64_t now = 0;
  Completion done;
  for (auto _ : state) {
    auto r = f.Pop(now);
    if (!r) {
      now = f.NextReadyUs();
      r = f.Pop(now);
    }
    f.Complete(r->host_key, now, done);
    f.Push(r->host_key, MakeItem(r->host_key, serial++));
    now += 10;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["spill_errors"] = static_cast<double>(f.spill_errors());
  opened = Status::Internal("closed");
  std::filesystem::remove_all(dir);
}

#ifdef CRAWLD_BENCH_LEVELDB
// The two spill stores on the frontier's own access pattern: chunks of
// `kChunk` encoded URLs appended round-robin over 10,000 hosts, then read
// back per host in FIFO order and discarded. 1 M URLs per iteration.
constexpr int kChunk = 32;
constexpr int64_t kStoreUrls = 1'000'000;

std::string EncodeChunk(const std::string& host, int64_t first) {
  std::string out;
  for (int i = 0; i < kChunk; ++i) {
    Item item = MakeItem(host, first + i);
    uint32_t len = static_cast<uint32_t>(item.url.size());
    out.append(reinterpret_cast<const char*>(&len), 4);
    out.append(item.url);
    out.append(reinterpret_cast<const char*>(&item.fingerprint), 8);
    out.append(11, '\0');  // depth, redirects, credit
  }
  return out;
}

void BM_StoreSegmentFiles(benchmark::State& state) {
  const auto keys = HostKeys();
  const std::string dir = ScratchDir("seg");
  struct Ref {
    uint64_t off;
    uint32_t len;
  };
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/seg-1.log";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    std::vector<std::vector<Ref>> refs(kHosts);
    uint64_t off = 0;
    for (int64_t i = 0; i < kStoreUrls / kChunk; ++i) {
      const int h = static_cast<int>(i % kHosts);
      std::string c = EncodeChunk(keys[h], i * kChunk);
      if (::write(fd, c.data(), c.size()) != static_cast<ssize_t>(c.size())) {
        state.SkipWithError("write");
      }
      refs[h].push_back({off, static_cast<uint32_t>(c.size())});
      off += c.size();
    }
    std::string buf;
    uint64_t bytes = 0;
    for (int h = 0; h < kHosts; ++h) {
      for (const Ref& r : refs[h]) {
        buf.resize(r.len);
        bytes += static_cast<uint64_t>(
            ::pread(fd, buf.data(), r.len, static_cast<off_t>(r.off)));
      }
    }
    benchmark::DoNotOptimize(bytes);
    ::close(fd);
    ::unlink(path.c_str());
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(state.iterations() * kStoreUrls);
}

void BM_StoreLevelDbRanges(benchmark::State& state) {
  const auto keys = HostKeys();
  const std::string dir = ScratchDir("ldb");
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    leveldb::DB* raw = nullptr;
    leveldb::Options lo;
    lo.create_if_missing = true;
    lo.write_buffer_size = 16 << 20;
    if (!leveldb::DB::Open(lo, dir, &raw).ok()) {
      state.SkipWithError("leveldb open");
      return;
    }
    std::unique_ptr<leveldb::DB> db(raw);
    std::vector<uint64_t> next(kHosts, 0);
    // Key: host id then chunk sequence, big-endian, so a host is one range.
    auto key = [](int h, uint64_t seq) {
      std::string k(12, '\0');
      for (int b = 0; b < 4; ++b) k[b] = static_cast<char>(h >> (24 - 8 * b));
      for (int b = 0; b < 8; ++b)
        k[4 + b] = static_cast<char>(seq >> (56 - 8 * b));
      return k;
    };
    for (int64_t i = 0; i < kStoreUrls / kChunk; ++i) {
      const int h = static_cast<int>(i % kHosts);
      db->Put(leveldb::WriteOptions(), key(h, next[h]++),
              EncodeChunk(keys[h], i * kChunk));
    }
    uint64_t bytes = 0;
    std::string value;
    for (int h = 0; h < kHosts; ++h) {
      for (uint64_t s = 0; s < next[h]; ++s) {
        const std::string k = key(h, s);
        if (db->Get(leveldb::ReadOptions(), k, &value).ok()) {
          bytes += value.size();
        }
        db->Delete(leveldb::WriteOptions(), k);  // consumed
      }
    }
    benchmark::DoNotOptimize(bytes);
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(state.iterations() * kStoreUrls);
}

BENCHMARK(BM_StoreSegmentFiles)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreLevelDbRanges)->Unit(benchmark::kMillisecond);
#endif  // CRAWLD_BENCH_LEVELDB

BENCHMARK(BM_Push)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PopCompletePush)->Arg(0)->Arg(1);
BENCHMARK(BM_Drain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SpillSteady);
BENCHMARK(BM_Spill10M)
    ->Args({10, 10'000})
    ->Args({10, 100'000})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace crawld::frontier

BENCHMARK_MAIN();
