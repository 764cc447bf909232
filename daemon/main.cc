// crawld: the crawler daemon. With one worker (workers.count = 1) the crawl
// runs in this process; with more, this process is the supervisor
// (daemon/supervisor.h) and starts itself again in worker mode (--worker,
// internal) once per worker.
//
// Exit codes: 0 the crawl ended (done, a limit, or a signal); 1 a fatal
// runtime error (e.g. data directory not writable, a WARC write failed);
// 2 bad command line or config, or the data directory is in use by another
// crawld (nothing was started). A worker process tells its supervisor how it
// ended with the codes of daemon/control.h.
#include <ares.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "conf/conf.h"
#include "conf/overrides.h"
#include "conf/rules.h"
#include "conf/seeds.h"
#include "daemon/control.h"
#include "daemon/supervisor.h"
#include "daemon/worker.h"
#include "report/report.h"

namespace {

constexpr char kUsage[] =
    "usage: crawld [--config FILE] [--seeds FILE] [--seed URL]... [--data "
    "DIR]\n"
    "              [--max-pages N] [--print-config] [--quiet]\n"
    "\n"
    "Crawls from the seed URLs, politely, into WARC files under the data\n"
    "directory. Without --config the built-in defaults apply (see\n"
    "conf/crawler.toml). SIGINT/SIGTERM stop the crawl cleanly.\n"
    "\n"
    "  --config FILE   TOML config; errors name file:line and key (exit 2)\n"
    "  --seeds FILE    seed URLs, one per line ('#' comments)\n"
    "  --seed URL      one more seed URL (repeatable)\n"
    "  --data DIR      data directory (overrides crawl.data_dir)\n"
    "  --max-pages N   page limit (overrides crawl.max_pages)\n"
    "  --print-config  print the effective config as TOML and exit\n"
    "  --quiet         no progress line\n"
    "  --workers N     worker processes (overrides workers.count)\n"
    "  --cluster redis://HOST:PORT  crawl with other nodes over this Redis\n"
    "                  (overrides cluster.redis; docs/CLUSTER.md)\n"
    "  --node-id ID    this node's id in [0, cluster.nodes)\n"
    "  --nodes N       nodes the crawl starts with (overrides cluster.nodes)\n"
    "\n"
    "exit codes: 0 crawl ended, 1 fatal runtime error, 2 bad usage/config or\n"
    "the data directory in use by another crawld\n";

bool WriteFile(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

// Takes <data>/run/lock (flock, exclusive) for this process and the workers
// it starts: the supervisor hands the descriptor to each worker
// (SupervisorOptions::data_lock_fd), so the lock holds until the last
// process of the crawl has exited. A worker outlives a killed supervisor for
// a while (it stops at a checkpoint), and a second crawl must not start on
// the directory while it still writes there. Returns the descriptor, open
// for the life of the process on purpose; -1 when another crawl holds the
// lock (*holder: the pid written in the file) or on an error (*error set).
// When the holder's supervisor is gone (only its workers are left,
// stopping), waits up to `orphan_wait_s` for them.
int LockDataDir(const std::string& data, int orphan_wait_s, std::string* holder,
                std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(data + "/run", ec);
  const std::string path = data + "/run/lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = path + ": " + strerror(errno);
    return -1;
  }
  bool said = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(orphan_wait_s);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      *error = path + ": " + strerror(err);
      close(fd);
      return -1;
    }
    char buf[32] = {};
    if (pread(fd, buf, sizeof(buf) - 1, 0) > 0) {
      *holder = std::string(buf, strcspn(buf, "\n"));
    }
    const long pid = strtol(holder->c_str(), nullptr, 10);
    const bool orphans =
        pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    if (!orphans || std::chrono::steady_clock::now() >= deadline) {
      close(fd);
      return -1;
    }
    if (!said) {
      fprintf(stderr,
              "crawld: the workers of a crawld that ended (pid %ld) still "
              "use %s; waiting up to %d s for them to stop\n",
              pid, data.c_str(), orphan_wait_s);
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                   static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message would lack it.
  }
  return fd;
}

// The command line. Worker mode fields are set only when the supervisor
// started this process (--worker, internal); -1 means not given.
struct Args {
  std::string config_path, seeds_path, data_dir;
  std::vector<std::string> extra_seeds;
  long long max_pages = -1;
  bool print_config = false, quiet = false;
  int worker_id = -1, workers = -1, control_fd = -1;
  int node_id = -1, nodes = -1;
  std::string cluster_url;
  bool cluster_set = false;
};

// "Go on": no exit code yet.
constexpr int kGoOn = -1;

int ToInt(const std::string& v, const char* what, int min) {
  char* end = nullptr;
  long n = strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < min || n > 65535) {
    fprintf(stderr, "crawld: %s: not a valid number: %s\n", what, v.c_str());
    exit(2);
  }
  return static_cast<int>(n);
}

int ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto need_value = [&](std::string* out) {
      if (i + 1 >= argc) {
        fprintf(stderr, "crawld: %s needs a value\n%s", argv[i], kUsage);
        exit(2);
      }
      *out = argv[++i];
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--config") {
      need_value(&a->config_path);
    } else if (arg == "--seeds") {
      need_value(&a->seeds_path);
    } else if (arg == "--seed") {
      need_value(&v);
      a->extra_seeds.push_back(v);
    } else if (arg == "--data") {
      need_value(&a->data_dir);
    } else if (arg == "--max-pages") {
      need_value(&v);
      char* end = nullptr;
      a->max_pages = strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || a->max_pages < 0) {
        fprintf(stderr, "crawld: --max-pages: not a count: %s\n", v.c_str());
        return 2;
      }
    } else if (arg == "--workers") {
      need_value(&v);
      a->workers = ToInt(v, "--workers", 1);
    } else if (arg == "--cluster") {
      need_value(&a->cluster_url);
      a->cluster_set = true;
    } else if (arg == "--node-id") {
      need_value(&v);
      a->node_id = ToInt(v, "--node-id", 0);
    } else if (arg == "--nodes") {
      need_value(&v);
      a->nodes = ToInt(v, "--nodes", 1);
    } else if (arg == "--worker") {
      need_value(&v);
      a->worker_id = ToInt(v, "--worker", 0);
    } else if (arg == "--control-fd") {
      need_value(&v);
      a->control_fd = ToInt(v, "--control-fd", 0);
    } else if (arg == "--print-config") {
      a->print_config = true;
    } else if (arg == "--quiet") {
      a->quiet = true;
    } else {
      fprintf(stderr, "crawld: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  return kGoOn;
}

// The config file (or the defaults) with the command line's overrides,
// validated.
int LoadConfig(const Args& a, crawld::conf::Config* out) {
  crawld::Result<crawld::conf::Config> config =
      a.config_path.empty()
          ? crawld::Result<crawld::conf::Config>(crawld::conf::Defaults())
          : crawld::conf::LoadConfigFile(a.config_path);
  if (!config.ok()) {
    fprintf(stderr, "crawld: %s\n", config.status().message().c_str());
    return 2;
  }
  if (!a.data_dir.empty()) config->crawl.data_dir = a.data_dir;
  if (a.max_pages >= 0)
    config->crawl.max_pages = static_cast<uint64_t>(a.max_pages);
  if (a.workers > 0) config->workers.count = a.workers;
  if (a.cluster_set) config->cluster.redis = a.cluster_url;
  if (a.node_id >= 0) config->cluster.node_id = a.node_id;
  if (a.nodes > 0) config->cluster.nodes = a.nodes;
  if (crawld::Status s = crawld::conf::Validate(*config); !s.ok()) {
    fprintf(stderr, "crawld: %s\n", s.message().c_str());
    return 2;
  }
  if (config->cluster.nodes > 1 && config->cluster.redis.empty()) {
    fprintf(stderr,
            "crawld: cluster.nodes %d needs cluster.redis (or --cluster "
            "redis://HOST:PORT)\n",
            config->cluster.nodes);
    return 2;
  }
  *out = std::move(config).value();
  return kGoOn;
}

// The seeds of --seed and --seeds; the rule and override files checked
// before anything starts, like the config: a bad line is a usage error
// naming file:line.
int LoadInputs(const Args& a, const crawld::conf::Config& config,
               crawld::conf::SeedList* seeds) {
  std::string seed_text;
  for (const std::string& s : a.extra_seeds) seed_text += s + "\n";
  *seeds = crawld::conf::ParseSeeds(seed_text, "--seed");
  if (!a.seeds_path.empty()) {
    auto file_seeds = crawld::conf::LoadSeeds(a.seeds_path);
    if (!file_seeds.ok()) {
      fprintf(stderr, "crawld: %s\n", file_seeds.status().message().c_str());
      return 2;
    }
    for (auto& u : file_seeds->urls) seeds->urls.push_back(std::move(u));
    for (auto& e : file_seeds->errors) seeds->errors.push_back(std::move(e));
  }
  for (const std::string& e : seeds->errors) {
    fprintf(stderr, "crawld: skipped seed: %s\n", e.c_str());
  }
  if (seeds->urls.empty()) {
    fprintf(stderr,
            "crawld: no valid seed URLs (use --seeds FILE or --seed URL)\n");
    return 2;
  }
  if (!config.crawl.rules_file.empty()) {
    auto rules = crawld::conf::RuleSet::Load(config.crawl.rules_file);
    if (!rules.ok()) {
      fprintf(stderr, "crawld: %s\n", rules.status().message().c_str());
      return 2;
    }
  }
  if (!config.politeness.overrides_file.empty()) {
    auto ov = crawld::conf::Overrides::Load(config.politeness.overrides_file);
    if (!ov.ok()) {
      fprintf(stderr, "crawld: %s\n", ov.status().message().c_str());
      return 2;
    }
  }
  return kGoOn;
}

// How long a new crawl waits for the workers of a crawld that was killed
// (kill -9 of the supervisor) to finish their last checkpoint; under load
// that takes a few seconds.
constexpr int kOrphanWaitS = 60;

// The data directory: made, locked (one crawld per directory, checked
// before anything in it is written: a second one must not disturb the
// first; workers run under their supervisor's lock), and given the frozen
// copy of the config the crawl runs with.
int PrepareDataDir(const crawld::conf::Config& config, bool is_worker,
                   int* lock_fd) {
  const std::string& data = config.crawl.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) {
    fprintf(stderr, "crawld: data directory %s: %s\n", data.c_str(),
            ec.message().c_str());
    return 1;
  }
  if (is_worker) return kGoOn;
  std::string holder, error;
  *lock_fd = LockDataDir(data, kOrphanWaitS, &holder, &error);
  if (*lock_fd < 0) {
    if (!error.empty()) {
      fprintf(stderr, "crawld: cannot lock the data directory: %s\n",
              error.c_str());
      return 1;
    }
    fprintf(stderr,
            "crawld: data directory %s is in use by another crawld%s; "
            "stop it first or use another --data\n",
            data.c_str(),
            holder.empty() ? "" : (" (pid " + holder + ")").c_str());
    return 2;
  }
  if (!WriteFile(data + "/crawl.toml", crawld::conf::ToToml(config))) {
    fprintf(stderr, "crawld: cannot write %s/crawl.toml: %s\n", data.c_str(),
            strerror(errno));
    return 1;
  }
  return kGoOn;
}

// Drainers: with fewer workers than the data directory was crawled with,
// the missing ones run once more, handing their hosts to the others; a
// node leaving the cluster (node id >= node count) drains all of its own.
int CountDrainers(const crawld::conf::Config& config, int worker_count,
                  bool leaving, int* drainers) {
  const std::string& data = config.crawl.data_dir;
  std::error_code ec;
  *drainers = 0;
  if (!config.cluster.redis.empty() || !config.checkpoint.resume) {
    // Clustered: nodes hand hosts over through the ring instead.
  } else {
    for (int k = worker_count; k < 65536; ++k) {
      const std::string state =
          data + "/worker-" + std::to_string(k) + "/state/CURRENT";
      if (!std::filesystem::exists(state, ec)) break;
      *drainers = k + 1 - worker_count;
    }
  }
  if (!leaving) return kGoOn;
  const std::string state =
      data + "/worker-" +
      std::to_string(config.cluster.node_id * worker_count) + "/state/CURRENT";
  if (!config.checkpoint.resume || !std::filesystem::exists(state, ec)) {
    fprintf(stderr,
            "crawld: cluster.node_id %d: must be < cluster.nodes (%d), "
            "unless %s holds that node's state to hand over (a node "
            "leaving the crawl)\n",
            config.cluster.node_id, config.cluster.nodes, data.c_str());
    return 2;
  }
  *drainers = worker_count;
  return kGoOn;
}

// <data>/run/seeds.txt: the seed list of this run, which the supervisor
// hands its workers and the crawl reports read (report/report.h).
bool WriteSeedList(const std::string& data,
                   const crawld::conf::SeedList& seeds) {
  std::error_code ec;
  std::filesystem::create_directories(data + "/run", ec);
  std::string seed_lines;
  for (const std::string& u : seeds.urls) seed_lines += u + "\n";
  if (!WriteFile(data + "/run/seeds.txt", seed_lines)) {
    fprintf(stderr, "crawld: cannot write %s/run/seeds.txt: %s\n", data.c_str(),
            strerror(errno));
    return false;
  }
  return true;
}

// The crawl reports in <data>/reports (docs/OPERATIONS.md) when the crawl
// ended by itself, by a limit or by the operator's stop; not after a
// signal (a stop must be quick) or a failure.
void WriteCrawlReports(const std::string& data, const std::string& why) {
  if (why != "done" && why != "max_pages" && why != "max_duration" &&
      why != "api stop" && why != "drained") {
    return;
  }
  crawld::report::Options ro;
  ro.data_dir = data;
  if (crawld::Status s = crawld::report::WriteReports(ro, data + "/reports");
      !s.ok()) {
    fprintf(stderr, "crawld: crawl reports: %s\n", s.ToString().c_str());
  }
}

int RunAsSupervisor(const crawld::conf::Config& config, const Args& a,
                    const crawld::conf::SeedList& seeds, int worker_count,
                    int drainers, bool leaving, int lock_fd,
                    const char* argv0) {
  const std::string& data = config.crawl.data_dir;
  crawld::daemon::SupervisorOptions so;
  so.config = config;
  so.workers = leaving ? 0 : worker_count;
  so.drainers = drainers;
  so.data_lock_fd = lock_fd;
  so.first_worker = config.cluster.node_id * worker_count;
  so.total_workers = config.cluster.nodes * worker_count;
  so.config_file = data + "/crawl.toml";
  so.seeds_file = data + "/run/seeds.txt";
  if (!WriteSeedList(data, seeds)) return 1;
  std::error_code ec;
  so.crawld_path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) so.crawld_path = argv0;
  so.progress = a.quiet ? nullptr : stderr;
  so.progress_tty = !a.quiet && isatty(fileno(stderr));
  auto summary = crawld::daemon::RunSupervisor(so);
  if (!summary.ok()) {
    fprintf(stderr, "crawld: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  fputs(summary->ToText().c_str(), stdout);
  WriteFile(data + "/summary.json", summary->ToJson());
  WriteCrawlReports(data, summary->stop_reason);
  const std::string& why = summary->stop_reason;
  return why == "worker_failed" || why == "store_error" ||
                 why == "node_id_in_use"
             ? 1
             : 0;
}

// The crawl in this process: alone (one worker), or as a supervised worker
// that reports how it ended with the codes of daemon/control.h.
int RunAsWorker(const crawld::conf::Config& config, const Args& a,
                crawld::conf::SeedList seeds, int worker_count) {
  namespace control = crawld::daemon::control;
  const bool supervised = a.worker_id >= 0;
  if (!supervised && !WriteSeedList(config.crawl.data_dir, seeds)) return 1;
  crawld::daemon::WorkerOptions wo;
  wo.config = config;
  wo.seeds = std::move(seeds.urls);
  wo.progress = a.quiet ? nullptr : stderr;
  wo.progress_tty = !a.quiet && isatty(fileno(stderr));
  if (supervised) {
    wo.worker_id = a.worker_id;
    wo.workers = worker_count;
    wo.control_fd = a.control_fd;
  }
  auto worker = crawld::daemon::Worker::Create(wo);
  if (!worker.ok()) {
    fprintf(stderr, "crawld: %s\n", worker.status().ToString().c_str());
    return supervised ? control::kExitStartFailed : 1;
  }
  auto summary = (*worker)->Run();
  if (!summary.ok()) {
    fprintf(stderr, "crawld: %s\n", summary.status().ToString().c_str());
    return supervised ? control::kExitStartFailed : 1;
  }
  const std::string& data = config.crawl.data_dir;
  if (!supervised) {
    fputs(summary->ToText().c_str(), stdout);
    WriteFile(data + "/summary.json", summary->ToJson());
    WriteCrawlReports(data, summary->stop_reason);
  } else {
    // The supervisor sums these.
    WriteFile(data + "/worker-" + std::to_string(a.worker_id) + "/summary.json",
              summary->ToJson());
  }
  if (summary->stop_reason == "store_error") {
    return supervised ? control::kExitStoreError : 1;
  }
  if (supervised && summary->stop_reason == control::kStopLeaseExpired) {
    return control::kExitFenced;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int rc = ParseArgs(argc, argv, &args); rc != kGoOn) return rc;
  crawld::conf::Config config;
  if (int rc = LoadConfig(args, &config); rc != kGoOn) return rc;
  if (args.print_config) {
    fputs(crawld::conf::ToToml(config).c_str(), stdout);
    return 0;
  }
  crawld::conf::SeedList seeds;
  if (int rc = LoadInputs(args, config, &seeds); rc != kGoOn) return rc;
  const bool is_worker = args.worker_id >= 0;
  int lock_fd = -1;
  if (int rc = PrepareDataDir(config, is_worker, &lock_fd); rc != kGoOn) {
    return rc;
  }
  // 0 means one worker per core. A worker is started with the ring's size
  // (all nodes' workers) as --workers.
  const int worker_count =
      config.workers.count > 0
          ? config.workers.count
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                       256);
  // A node id at or past the node count is a node leaving the crawl: it
  // only hands its hosts over (checked against its data).
  const bool leaving =
      !is_worker && config.cluster.node_id >= config.cluster.nodes;
  int drainers = 0;
  if (!is_worker) {
    if (int rc = CountDrainers(config, worker_count, leaving, &drainers);
        rc != kGoOn) {
      return rc;
    }
  }

  // A peer that closes a socket we write to (an exchange socket, redis, a
  // server mid-request) must be an error code, not the end of the process;
  // neither libuv nor hiredis suppresses SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  // Process-wide library setup, once, before any other thread or handle.
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
      ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
    fprintf(stderr, "crawld: library initialisation failed\n");
    return 1;
  }
  const bool clustered = !config.cluster.redis.empty();
  const int rc =
      !is_worker && (worker_count > 1 || clustered || drainers > 0)
          ? RunAsSupervisor(config, args, seeds, worker_count, drainers,
                            leaving, lock_fd, argv[0])
          : RunAsWorker(config, args, std::move(seeds), worker_count);
  ares_library_cleanup();
  curl_global_cleanup();
  return rc;
}
