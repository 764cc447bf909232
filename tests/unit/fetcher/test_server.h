// A small threaded HTTP/1.1 test server on loopback: one accept thread, one
// thread per connection, keep-alive, handlers by path. Every wait polls with
// a short timeout and checks the stop flag, so Stop() always returns.
#ifndef CRAWLD_TESTS_UNIT_FETCHER_TEST_SERVER_H_
#define CRAWLD_TESTS_UNIT_FETCHER_TEST_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace crawld::fetcher::testing {

class TestServer;

// What a handler sees and can do on its connection.
struct Exchange {
  std::string method, path, head;  // head: raw request head
  std::string Header(const std::string& name) const {
    std::string lower_head;
    for (char c : head) lower_head += static_cast<char>(tolower(c));
    std::string needle = "\r\n";
    for (char c : name) needle += static_cast<char>(tolower(c));
    needle += ":";
    size_t p = lower_head.find(needle);
    if (p == std::string::npos) return "";
    p += needle.size();
    size_t e = head.find("\r\n", p);
    std::string v = head.substr(p, e - p);
    while (!v.empty() && v.front() == ' ') v.erase(0, 1);
    return v;
  }
  TestServer* server;
  int fd;
  // Writes all bytes; false if the peer went away or the server stops.
  bool Send(std::string_view data) const;
  // Waits up to `ms` or until the peer closes or the server stops; true if
  // the full time passed.
  bool Sleep(int ms) const;
  bool close_after = false;  // close the connection after the handler
};

using Handler = std::function<void(Exchange&)>;

class TestServer {
 public:
  // Listens on 127.0.0.1:0 (or [::1]:0 when ipv6).
  explicit TestServer(bool ipv6 = false) {
    fd_ = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ipv6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_loopback;
      ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      socklen_t len = sizeof(a);
      getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin6_port);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      socklen_t len = sizeof(a);
      getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin_port);
    }
    ok_ = ok_ && listen(fd_, 256) == 0;
    if (ok_) accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TestServer() { Stop(); }

  void Handle(const std::string& path, Handler h) {
    std::lock_guard<std::mutex> l(mu_);
    handlers_[path] = std::move(h);
  }
  void Stop() {
    if (stop_.exchange(true)) return;
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> l(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
    close(fd_);
  }
  bool ok() const { return ok_; }
  int port() const { return port_; }
  bool stopping() const { return stop_.load(); }
  int Hits(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    return hits_[path];
  }
  int requests() const { return requests_.load(); }
  int connections() const { return connections_.load(); }
  int max_concurrent_connections() const { return max_open_.load(); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      int now = ++open_;
      int prev = max_open_.load();
      while (now > prev && !max_open_.compare_exchange_weak(prev, now)) {
      }
      std::lock_guard<std::mutex> l(mu_);
      threads_.emplace_back([this, c] {
        Serve(c);
        --open_;
        close(c);
      });
    }
  }

  void Serve(int c) {
    std::string buf;
    while (!stop_) {
      // Like a real server, answer a first byte that cannot start a method
      // (a TLS ClientHello, for one) at once instead of waiting for a head.
      if (!buf.empty() && !(buf[0] >= 'A' && buf[0] <= 'Z')) {
        Exchange bad;
        bad.server = this;
        bad.fd = c;
        bad.Send(
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
            "Connection: close\r\n\r\n");
        return;
      }
      size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        pollfd p{c, POLLIN, 0};
        int r = poll(&p, 1, 50);
        if (r <= 0) continue;
        char tmp[8192];
        ssize_t n = recv(c, tmp, sizeof(tmp), 0);
        if (n <= 0) return;
        buf.append(tmp, static_cast<size_t>(n));
        if (buf.size() > 1 << 20) return;
        continue;
      }
      Exchange ex;
      ex.server = this;
      ex.fd = c;
      ex.head = buf.substr(0, end + 4);
      buf.erase(0, end + 4);
      size_t sp1 = ex.head.find(' ');
      size_t sp2 = ex.head.find(' ', sp1 + 1);
      if (sp1 == std::string::npos || sp2 == std::string::npos) {
        ex.Send(
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
            "Connection: close\r\n\r\n");
        return;
      }
      ex.method = ex.head.substr(0, sp1);
      ex.path = ex.head.substr(sp1 + 1, sp2 - sp1 - 1);
      ++requests_;
      Handler h;
      {
        std::lock_guard<std::mutex> l(mu_);
        ++hits_[ex.path];
        auto it = handlers_.find(ex.path);
        if (it != handlers_.end()) h = it->second;
      }
      if (h) {
        h(ex);
      } else {
        ex.Send("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
      }
      if (ex.close_after) return;
    }
  }

  int fd_ = -1;
  int port_ = 0;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0}, connections_{0}, open_{0}, max_open_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  std::map<std::string, Handler> handlers_;
  std::map<std::string, int> hits_;
};

inline bool Exchange::Send(std::string_view data) const {
  while (!data.empty()) {
    if (server->stopping()) return false;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

inline bool Exchange::Sleep(int ms) const {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (server->stopping()) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      char c;
      if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;  // EOF
    }
  }
  return true;
}

}  // namespace crawld::fetcher::testing

#endif  // CRAWLD_TESTS_UNIT_FETCHER_TEST_SERVER_H_
