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
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include "conf/conf.h"
#include "conf/overrides.h"
#include "conf/rules.h"
#include "conf/seeds.h"
#include "daemon/control.h"
#include "daemon/supervisor.h"
#include "daemon/worker.h"

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

// Takes <data>/run/lock (flock, exclusive, not waiting) for this process and
// the workers it starts: they inherit the descriptor, so the lock holds until
// the last process of the crawl has exited (a worker that outlives a killed
// supervisor still writes to the directory). Returns false, with *holder set
// to the pid written in the file, when another crawl holds it. The
// descriptor stays open for the life of the process, on purpose.
bool LockDataDir(const std::string& data, std::string* holder,
                 std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(data + "/run", ec);
  const std::string path = data + "/run/lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    if (pread(fd, buf, sizeof(buf) - 1, 0) > 0) {
      *holder = std::string(buf, strcspn(buf, "\n"));
    }
    close(fd);
    if (err != EWOULDBLOCK) *error = path + ": " + strerror(err);
    return false;
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                   static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message would lack it.
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, seeds_path, data_dir;
  std::vector<std::string> extra_seeds;
  long long max_pages = -1;
  bool print_config = false, quiet = false;
  // Worker mode (started by the supervisor): -1 = not a worker.
  int worker_id = -1, workers = -1, control_fd = -1;
  int node_id = -1, nodes = -1;
  std::string cluster_url;
  bool cluster_set = false;
  auto to_int = [](const std::string& v, const char* what, int min) {
    char* end = nullptr;
    long n = strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < min || n > 65535) {
      fprintf(stderr, "crawld: %s: not a valid number: %s\n", what, v.c_str());
      exit(2);
    }
    return static_cast<int>(n);
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto need_value = [&](std::string* out) {
      if (i + 1 >= argc) {
        fprintf(stderr, "crawld: %s needs a value\n%s", argv[i], kUsage);
        exit(2);
      }
      *out = argv[++i];
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      fputs(kUsage, stdout);
      return 0;
    } else if (a == "--config") {
      need_value(&config_path);
    } else if (a == "--seeds") {
      need_value(&seeds_path);
    } else if (a == "--seed") {
      need_value(&v);
      extra_seeds.push_back(v);
    } else if (a == "--data") {
      need_value(&data_dir);
    } else if (a == "--max-pages") {
      need_value(&v);
      char* end = nullptr;
      max_pages = strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || max_pages < 0) {
        fprintf(stderr, "crawld: --max-pages: not a count: %s\n", v.c_str());
        return 2;
      }
    } else if (a == "--workers") {
      need_value(&v);
      workers = to_int(v, "--workers", 1);
    } else if (a == "--cluster") {
      need_value(&cluster_url);
      cluster_set = true;
    } else if (a == "--node-id") {
      need_value(&v);
      node_id = to_int(v, "--node-id", 0);
    } else if (a == "--nodes") {
      need_value(&v);
      nodes = to_int(v, "--nodes", 1);
    } else if (a == "--worker") {
      need_value(&v);
      worker_id = to_int(v, "--worker", 0);
    } else if (a == "--control-fd") {
      need_value(&v);
      control_fd = to_int(v, "--control-fd", 0);
    } else if (a == "--print-config") {
      print_config = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else {
      fprintf(stderr, "crawld: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }

  crawld::Result<crawld::conf::Config> config =
      config_path.empty()
          ? crawld::Result<crawld::conf::Config>(crawld::conf::Defaults())
          : crawld::conf::LoadConfigFile(config_path);
  if (!config.ok()) {
    fprintf(stderr, "crawld: %s\n", config.status().message().c_str());
    return 2;
  }
  if (!data_dir.empty()) config->crawl.data_dir = data_dir;
  if (max_pages >= 0)
    config->crawl.max_pages = static_cast<uint64_t>(max_pages);
  if (workers > 0) config->workers.count = workers;
  if (cluster_set) config->cluster.redis = cluster_url;
  if (node_id >= 0) config->cluster.node_id = node_id;
  if (nodes > 0) config->cluster.nodes = nodes;
  // 0 means one worker per core. A worker is started with the ring's size
  // (all nodes' workers) as --workers.
  const int worker_count =
      config->workers.count > 0
          ? config->workers.count
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                       256);
  const bool clustered = !config->cluster.redis.empty();
  if (crawld::Status s = crawld::conf::Validate(*config); !s.ok()) {
    fprintf(stderr, "crawld: %s\n", s.message().c_str());
    return 2;
  }
  // A node id at or past the node count is a node leaving the crawl: it
  // only hands its hosts over (checked against its data below).
  const bool leaving =
      worker_id < 0 && config->cluster.node_id >= config->cluster.nodes;
  if (config->cluster.nodes > 1 && config->cluster.redis.empty()) {
    fprintf(stderr,
            "crawld: cluster.nodes %d needs cluster.redis (or --cluster "
            "redis://HOST:PORT)\n",
            config->cluster.nodes);
    return 2;
  }
  if (print_config) {
    fputs(crawld::conf::ToToml(*config).c_str(), stdout);
    return 0;
  }

  crawld::daemon::WorkerOptions wo;
  std::string seed_text;
  for (const std::string& s : extra_seeds) seed_text += s + "\n";
  crawld::conf::SeedList seeds = crawld::conf::ParseSeeds(seed_text, "--seed");
  if (!seeds_path.empty()) {
    auto file_seeds = crawld::conf::LoadSeeds(seeds_path);
    if (!file_seeds.ok()) {
      fprintf(stderr, "crawld: %s\n", file_seeds.status().message().c_str());
      return 2;
    }
    for (auto& u : file_seeds->urls) seeds.urls.push_back(std::move(u));
    for (auto& e : file_seeds->errors) seeds.errors.push_back(std::move(e));
  }
  for (const std::string& e : seeds.errors) {
    fprintf(stderr, "crawld: skipped seed: %s\n", e.c_str());
  }
  if (seeds.urls.empty()) {
    fprintf(stderr,
            "crawld: no valid seed URLs (use --seeds FILE or --seed URL)\n");
    return 2;
  }

  // Rule files are checked before anything starts, like the config: a bad
  // line is a usage error naming file:line.
  if (!config->crawl.rules_file.empty()) {
    auto rules = crawld::conf::RuleSet::Load(config->crawl.rules_file);
    if (!rules.ok()) {
      fprintf(stderr, "crawld: %s\n", rules.status().message().c_str());
      return 2;
    }
  }
  if (!config->politeness.overrides_file.empty()) {
    auto ov = crawld::conf::Overrides::Load(config->politeness.overrides_file);
    if (!ov.ok()) {
      fprintf(stderr, "crawld: %s\n", ov.status().message().c_str());
      return 2;
    }
  }

  const std::string& data = config->crawl.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) {
    fprintf(stderr, "crawld: data directory %s: %s\n", data.c_str(),
            ec.message().c_str());
    return 1;
  }
  // One crawld per data directory, checked before anything in it is
  // written (crawl.toml, run/): a second one must not disturb the first.
  // Workers run under their supervisor's lock.
  if (worker_id < 0) {
    std::string holder, error;
    if (!LockDataDir(data, &holder, &error)) {
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
  }
  // The frozen copy of the config the crawl ran with (a worker was started
  // with it).
  if (worker_id < 0 &&
      !WriteFile(data + "/crawl.toml", crawld::conf::ToToml(*config))) {
    fprintf(stderr, "crawld: cannot write %s/crawl.toml: %s\n", data.c_str(),
            strerror(errno));
    return 1;
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

  // Fewer workers than the data directory was crawled with: the missing
  // ones run once more as drainers, handing their hosts to the others.
  int drainers = 0;
  if (worker_id < 0 && !clustered && config->checkpoint.resume) {
    for (int k = worker_count; k < 65536; ++k) {
      const std::string state =
          data + "/worker-" + std::to_string(k) + "/state/CURRENT";
      if (!std::filesystem::exists(state, ec)) break;
      drainers = k + 1 - worker_count;
    }
  }
  if (leaving) {
    const std::string state =
        data + "/worker-" +
        std::to_string(config->cluster.node_id * worker_count) +
        "/state/CURRENT";
    if (!config->checkpoint.resume || !std::filesystem::exists(state, ec)) {
      fprintf(stderr,
              "crawld: cluster.node_id %d: must be < cluster.nodes (%d), "
              "unless %s holds that node's state to hand over (a node "
              "leaving the crawl)\n",
              config->cluster.node_id, config->cluster.nodes, data.c_str());
      return 2;
    }
    drainers = worker_count;
  }

  int rc = 0;
  if (worker_id < 0 && (worker_count > 1 || clustered || drainers > 0)) {
    crawld::daemon::SupervisorOptions so;
    so.config = *config;
    so.workers = leaving ? 0 : worker_count;
    so.drainers = drainers;
    so.first_worker = config->cluster.node_id * worker_count;
    so.total_workers = config->cluster.nodes * worker_count;
    so.config_file = data + "/crawl.toml";
    so.seeds_file = data + "/run/seeds.txt";
    std::filesystem::create_directories(data + "/run", ec);
    std::string seed_lines;
    for (const std::string& u : seeds.urls) seed_lines += u + "\n";
    if (!WriteFile(so.seeds_file, seed_lines)) {
      fprintf(stderr, "crawld: cannot write %s: %s\n", so.seeds_file.c_str(),
              strerror(errno));
      return 1;
    }
    std::error_code self_ec;
    so.crawld_path = std::filesystem::read_symlink("/proc/self/exe", self_ec);
    if (self_ec) so.crawld_path = argv[0];
    so.progress = quiet ? nullptr : stderr;
    so.progress_tty = !quiet && isatty(fileno(stderr));
    auto summary = crawld::daemon::RunSupervisor(so);
    if (!summary.ok()) {
      fprintf(stderr, "crawld: %s\n", summary.status().ToString().c_str());
      rc = 1;
    } else {
      fputs(summary->ToText().c_str(), stdout);
      WriteFile(data + "/summary.json", summary->ToJson());
      const std::string& why = summary->stop_reason;
      if (why == "worker_failed" || why == "store_error" ||
          why == "node_id_in_use") {
        rc = 1;
      }
    }
    ares_library_cleanup();
    curl_global_cleanup();
    return rc;
  }

  wo.config = *config;
  wo.seeds = std::move(seeds.urls);
  wo.progress = quiet ? nullptr : stderr;
  wo.progress_tty = !quiet && isatty(fileno(stderr));
  if (worker_id >= 0) {
    wo.worker_id = worker_id;
    wo.workers = worker_count;
    wo.control_fd = control_fd;
  }
  namespace control = crawld::daemon::control;
  const bool supervised = worker_id >= 0;
  {
    auto worker = crawld::daemon::Worker::Create(wo);
    if (!worker.ok()) {
      fprintf(stderr, "crawld: %s\n", worker.status().ToString().c_str());
      rc = supervised ? control::kExitStartFailed : 1;
    } else {
      auto summary = (*worker)->Run();
      if (!summary.ok()) {
        fprintf(stderr, "crawld: %s\n", summary.status().ToString().c_str());
        rc = supervised ? control::kExitStartFailed : 1;
      } else {
        if (worker_id < 0) {
          fputs(summary->ToText().c_str(), stdout);
          WriteFile(data + "/summary.json", summary->ToJson());
        } else {
          // The supervisor sums these.
          WriteFile(
              data + "/worker-" + std::to_string(worker_id) + "/summary.json",
              summary->ToJson());
        }
        if (summary->stop_reason == "store_error") {
          rc = supervised ? control::kExitStoreError : 1;
        } else if (supervised &&
                   summary->stop_reason == control::kStopLeaseExpired) {
          rc = control::kExitFenced;
        }
      }
    }
  }
  ares_library_cleanup();
  curl_global_cleanup();
  return rc;
}
