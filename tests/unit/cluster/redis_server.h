// Test helper: a real redis-server child process on a free 127.0.0.1 port
// in a temporary directory, without persistence, killed (by PID) when the
// object goes, and dying with the test process in any case.
#ifndef CRAWLD_TESTS_UNIT_CLUSTER_REDIS_SERVER_H_
#define CRAWLD_TESTS_UNIT_CLUSTER_REDIS_SERVER_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace crawld::cluster::testing {

inline std::string FindRedisServer() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server",
                        "/usr/sbin/redis-server"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return {};
}

inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A redis-server child process on 127.0.0.1, no persistence.
class RedisServer {
 public:
  explicit RedisServer(std::string binary) : binary_(std::move(binary)) {
    char tmpl[] = "/tmp/crawld-redis-XXXXXX";
    dir_ = mkdtemp(tmpl);
    port_ = FreeLoopbackPort();
  }
  ~RedisServer() {
    Kill();
    std::filesystem::remove_all(dir_);
  }

  // Starts the server and waits (at most 10 s) until it answers PING.
  bool Start() {
    const std::string port = std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      // Not the test's stdout: a pipe reader would wait for the server.
      // And it dies with us, even if we are killed by a timeout.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int null_fd = open("/dev/null", O_RDWR);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      execl(binary_.c_str(), binary_.c_str(), "--port", port.c_str(), "--bind",
            "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
            dir_.c_str(), "--logfile", (dir_ + "/redis.log").c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto r = Query({"PING"}); r == "PONG") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }

  // A blocking query on a fresh connection: the reply as text (integers in
  // decimal, status and strings verbatim), "" on failure.
  std::string Query(const std::vector<std::string>& args) const {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c == nullptr || c->err != 0) {
      if (c != nullptr) redisFree(c);
      return {};
    }
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(
        c, static_cast<int>(args.size()), argv.data(), lens.data()));
    std::string out;
    if (r != nullptr) {
      if (r->type == REDIS_REPLY_INTEGER) {
        out = std::to_string(r->integer);
      } else if (r->str != nullptr) {
        out.assign(r->str, r->len);
      }
      freeReplyObject(r);
    }
    redisFree(c);
    return out;
  }

 private:
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace crawld::cluster::testing

#endif  // CRAWLD_TESTS_UNIT_CLUSTER_REDIS_SERVER_H_
