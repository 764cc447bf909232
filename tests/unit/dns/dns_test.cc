// Tests of dns::Resolver against a real dnsmasq on a loopback port.
#include "dns/dns.h"

#include <ares.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

namespace crawld::dns {
namespace {

class AresEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(ares_library_init(ARES_LIB_INIT_ALL), 0); }
  void TearDown() override { ares_library_cleanup(); }
};
[[maybe_unused]] ::testing::Environment* const kAresEnv =
    ::testing::AddGlobalTestEnvironment(new AresEnvironment);

// A UDP socket bound to 127.0.0.1:0; its port is free for dnsmasq once closed
// (or serves as a black hole while open: it never answers).
struct UdpSocket {
  int fd = -1;
  int port = 0;
  UdpSocket() {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~UdpSocket() {
    if (fd >= 0) close(fd);
  }
};

// dnsmasq serving `hosts` for the "test" domain only (anything else under
// .test is NXDOMAIN), with query logging to a file we can count in.
class Dnsmasq {
 public:
  explicit Dnsmasq(const std::string& hosts,
                   std::vector<std::string> extra = {}) {
    char tmpl[] = "/tmp/crawld-dns-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::ofstream(dir_ + "/hosts") << hosts;
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      int port;
      {
        UdpSocket probe;
        port = probe.port;
      }
      std::vector<std::string> args = {
          "/usr/sbin/dnsmasq",
          "--no-daemon",
          "--conf-file=/dev/null",
          "--no-hosts",
          "--no-resolv",
          "--addn-hosts=" + dir_ + "/hosts",
          "--listen-address=127.0.0.1",
          "--bind-interfaces",
          "--port=" + std::to_string(port),
          "--user=root",
          "--pid-file=",
          "--local=/test/",
          "--log-queries",
          "--log-facility=" + dir_ + "/log",
          "--txt-record=noaddr.test,no address here"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
      pid_t pid;
      int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) break;
      if (WaitReady(pid)) {
        pid_ = pid;
        port_ = port;
      } else {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  }
  ~Dnsmasq() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  bool ok() const { return pid_ > 0; }
  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  // Lines of the query log containing `needle`.
  int CountLog(const std::string& needle) const {
    std::ifstream in(dir_ + "/log");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
    return n;
  }

 private:
  // Ready when the log says the hosts file was read and the process lives
  // (bounded: 10 s).
  bool WaitReady(pid_t pid) {
    for (int i = 0; i < 1000; ++i) {
      int status;
      if (waitpid(pid, &status, WNOHANG) == pid) return false;  // bind failed
      if (CountLog("read " + dir_ + "/hosts") > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

constexpr char kHosts[] =
    "127.1.0.1 a.test\n"
    "127.1.0.2 b.test\n"
    "127.1.0.3 c.test\n"
    "127.1.0.4 coalesce.test\n"
    "127.1.0.5 mixed.test\n"
    "93.184.216.34 mixed.test\n"
    "93.184.216.34 public.test\n"
    "2001:db8::6 dual.test\n"
    "127.1.0.6 dual.test\n";

// A loop with a ticking timer so that RunUntil can check its predicate and
// its (generous) bound; the loop must end with no handles left.
class DnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(
        &tick_, [](uv_timer_t*) {}, 10, 10);
  }
  void TearDown() override {
    resolver_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    // Every handle the Resolver opened must be closed by now.
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Bound in wall time so a hung test fails instead of hanging; not a
  // timing assertion.
  bool RunUntil(const std::function<bool()>& pred, int seconds = 30) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }

  Resolver& Make(Options o) {
    auto r = Resolver::Create(&loop_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    resolver_ = std::move(r).value();
    return *resolver_;
  }

  Result<Answer> ResolveOne(const std::string& host) {
    std::optional<Result<Answer>> out;
    resolver_->Resolve(host, [&](Result<Answer> r) { out = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    if (!out) return Status::Internal("test: no callback");
    return std::move(*out);
  }

  uv_loop_t loop_;
  uv_timer_t tick_;
  std::unique_ptr<Resolver> resolver_;
};

Options ServerOptions(const Dnsmasq& d, bool allow_private = true) {
  Options o;
  o.servers = {d.server()};
  o.allow_private = allow_private;
  o.timeout_ms = 2000;
  return o;
}

// RFC 1035 4.3.1: a stub resolver asks the configured server and returns
// the answer section's addresses.
TEST_F(DnsTest, Rfc1035_ResolvesNameThroughServer) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  auto r = ResolveOne("a.test");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->addresses, std::vector<std::string>{"127.1.0.1"});
  EXPECT_FALSE(r->from_cache);
  EXPECT_EQ(resolver_->stats().queries, 1u);
}

TEST_F(DnsTest, Crawld_SecondLookupIsCacheHit) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  ASSERT_TRUE(ResolveOne("b.test").ok());
  auto r = ResolveOne("B.Test.");  // case and trailing dot do not matter
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->from_cache);
  EXPECT_EQ(r->addresses, std::vector<std::string>{"127.1.0.2"});
  EXPECT_EQ(resolver_->stats().queries, 1u);
  EXPECT_EQ(resolver_->stats().cache_hits, 1u);
  EXPECT_EQ(resolver_->cache_size(), 1u);
  EXPECT_EQ(d.CountLog("query[A] b.test"), 1);
}

// RFC 2308 (negative caching): NXDOMAIN is remembered.
TEST_F(DnsTest, Rfc2308_NxdomainIsNotFoundAndCachedNegatively) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  auto r = ResolveOne("nx.test");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("NXDOMAIN"), std::string::npos)
      << r.status().ToString();
  auto again = ResolveOne("nx.test");
  EXPECT_EQ(again.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(resolver_->stats().queries, 1u);
  EXPECT_EQ(resolver_->stats().cache_hits, 1u);
  EXPECT_EQ(d.CountLog("query[A] nx.test"), 1);
}

// RFC 2308 2.2: NODATA (the name exists without an address) is negative too.
TEST_F(DnsTest, Rfc2308_NoDataIsNotFoundAndCached) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  auto r = ResolveOne("noaddr.test");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound)
      << r.status().ToString();
  EXPECT_EQ(ResolveOne("noaddr.test").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(resolver_->stats().queries, 1u);
}

TEST_F(DnsTest, Crawld_PrivateGuardBlocksLoopbackByDefault) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d, /*allow_private=*/false));
  auto r = ResolveOne("a.test");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("private address blocked"),
            std::string::npos);
  // The cached answer is guarded as well.
  EXPECT_EQ(ResolveOne("a.test").status().code(),
            Status::Code::kFailedPrecondition);
}

TEST_F(DnsTest, Crawld_PrivateGuardFiltersEachAddress) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d, /*allow_private=*/false));
  auto r = ResolveOne("mixed.test");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->addresses, std::vector<std::string>{"93.184.216.34"});
  auto p = ResolveOne("public.test");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->addresses, std::vector<std::string>{"93.184.216.34"});
}

TEST_F(DnsTest, Crawld_AllowPrivatePassesEverything) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d, /*allow_private=*/true));
  auto r = ResolveOne("mixed.test");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->addresses,
            (std::vector<std::string>{"127.1.0.5", "93.184.216.34"}));
}

TEST_F(DnsTest, Crawld_Ipv4AddressesComeFirst) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  auto r = ResolveOne("dual.test");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->addresses,
            (std::vector<std::string>{"127.1.0.6", "2001:db8::6"}));
}

TEST_F(DnsTest, Crawld_IpLiteralsNeedNoQueryButAreGuarded) {
  // A black-hole server: any query would time out.
  UdpSocket hole;
  Options o;
  o.servers = {"127.0.0.1:" + std::to_string(hole.port)};
  Make(o);
  auto v4 = ResolveOne("93.184.216.34");
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(v4->addresses, std::vector<std::string>{"93.184.216.34"});
  auto v6 = ResolveOne("[2001:DB8:0::2]");
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->addresses, std::vector<std::string>{"2001:db8::2"});
  EXPECT_EQ(ResolveOne("127.0.0.1").status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ(ResolveOne("[::1]").status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ(resolver_->stats().queries, 0u);
  EXPECT_EQ(resolver_->stats().literals, 4u);

  o.allow_private = true;
  Make(o);
  auto lo = ResolveOne("127.0.0.1");
  ASSERT_TRUE(lo.ok());
  EXPECT_EQ(lo->addresses, std::vector<std::string>{"127.0.0.1"});
}

TEST_F(DnsTest, Crawld_CallbackNeverRunsInsideResolve) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  ASSERT_TRUE(ResolveOne("a.test").ok());
  for (std::string host : {"a.test", "10.0.0.1", "bad..name", "nx.test"}) {
    bool returned = false, called = false, inline_call = false;
    resolver_->Resolve(host, [&](Result<Answer>) {
      called = true;
      inline_call = !returned;
    });
    returned = true;
    ASSERT_TRUE(RunUntil([&] { return called; })) << host;
    EXPECT_FALSE(inline_call) << host;
  }
}

TEST_F(DnsTest, Crawld_InvalidNamesAreInvalidArgument) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  for (const std::string& host : std::vector<std::string>{
           "", "a..test", "bad host.test", "x/y.test",
           std::string(64, 'a') + ".test", std::string(300, 'a')}) {
    EXPECT_EQ(ResolveOne(host).status().code(), Status::Code::kInvalidArgument)
        << host;
  }
  EXPECT_EQ(resolver_->stats().queries, 0u);
}

TEST_F(DnsTest, Crawld_ConcurrentLookupsOfOneNameShareOneQuery) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  constexpr int kN = 25;
  int done = 0, good = 0;
  for (int i = 0; i < kN; ++i) {
    resolver_->Resolve("coalesce.test", [&](Result<Answer> r) {
      ++done;
      good += r.ok() && r->addresses == std::vector<std::string>{"127.1.0.4"} &&
              !r->from_cache;
    });
  }
  ASSERT_TRUE(RunUntil([&] { return done == kN; }));
  EXPECT_EQ(good, kN);
  EXPECT_EQ(resolver_->stats().queries, 1u);
  EXPECT_EQ(resolver_->stats().coalesced, uint64_t{kN - 1});
  EXPECT_EQ(d.CountLog("query[A] coalesce.test"), 1);
  EXPECT_EQ(d.CountLog("query[AAAA] coalesce.test"), 1);
}

// Hosts "n0.test" .. "n<count-1>.test" on 127.2.x.y.
std::string ManyHosts(int count) {
  std::string hosts;
  for (int i = 0; i < count; ++i) {
    hosts += "127.2." + std::to_string(i / 250) + "." +
             std::to_string(i % 250 + 1) + " n" + std::to_string(i) + ".test\n";
  }
  return hosts;
}

// At most max_queries_in_flight names are asked at once; the rest wait
// their turn and are answered all the same.
TEST_F(DnsTest, Crawld_QueriesInFlightAreCapped) {
  constexpr int kNames = 40;
  Dnsmasq d(ManyHosts(kNames));
  ASSERT_TRUE(d.ok());
  Options o = ServerOptions(d);
  o.max_queries_in_flight = 3;
  Make(o);
  int done = 0, good = 0;
  for (int i = 0; i < kNames; ++i) {
    resolver_->Resolve(
        "n" + std::to_string(i) + ".test", [&, i](Result<Answer> r) {
          ++done;
          good += r.ok() &&
                  r->addresses[0] == "127.2.0." + std::to_string(i % 250 + 1);
        });
  }
  EXPECT_EQ(resolver_->stats().queries, 3u);  // sent before the loop runs
  EXPECT_EQ(resolver_->stats().queued, uint64_t{kNames - 3});
  ASSERT_TRUE(RunUntil([&] { return done == kNames; }));
  EXPECT_EQ(good, kNames);
  EXPECT_EQ(resolver_->stats().queries, uint64_t{kNames});
  EXPECT_EQ(resolver_->stats().timeouts, 0u);
}

// A crawl starting on a thousand hosts while its loop is busy with
// start-up work: with the default cap every name is answered on the first
// try (dnsmasq saw each query once), none waits for a retry timeout. Sent
// all at once, most answers overflowed the socket's receive buffer.
TEST_F(DnsTest, Crawld_BurstOfLookupsNeedsNoRetry) {
  constexpr int kNames = 1000;
  Dnsmasq d(ManyHosts(kNames));
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  int done = 0, good = 0;
  for (int i = 0; i < kNames; ++i) {
    resolver_->Resolve("n" + std::to_string(i) + ".test",
                       [&](Result<Answer> r) {
                         ++done;
                         good += r.ok();
                       });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(RunUntil([&] { return done == kNames; }));
  EXPECT_EQ(good, kNames);
  EXPECT_EQ(resolver_->stats().timeouts, 0u);
  int asked_twice = 0;
  for (int i = 0; i < kNames; ++i) {
    asked_twice +=
        d.CountLog("query[A] n" + std::to_string(i) + ".test from") > 1;
  }
  EXPECT_EQ(asked_twice, 0);
}

// dnsmasq answers hosts-file names with --local-ttl; clamp it both ways.
TEST_F(DnsTest, Crawld_TtlIsClampedAndExpires) {
  Dnsmasq d(kHosts, {"--local-ttl=7200"});
  ASSERT_TRUE(d.ok());
  uint64_t now = 1000000;
  Options o = ServerOptions(d);
  o.max_ttl_s = 100;  // 7200 clamped down to 100
  o.now_ms = [&] { return now; };
  Make(o);
  ASSERT_TRUE(ResolveOne("a.test").ok());
  now += 99 * 1000;
  EXPECT_TRUE(ResolveOne("a.test")->from_cache);
  now += 2 * 1000;
  EXPECT_FALSE(ResolveOne("a.test")->from_cache);
  EXPECT_EQ(resolver_->stats().queries, 2u);

  o.min_ttl_s = 10000;  // 7200 clamped up to 10000 (max follows min)
  o.max_ttl_s = 20000;
  Make(o);
  ASSERT_TRUE(ResolveOne("a.test").ok());
  now += 9999 * 1000;
  EXPECT_TRUE(ResolveOne("a.test")->from_cache);
  now += 2 * 1000;
  EXPECT_FALSE(ResolveOne("a.test")->from_cache);
}

TEST_F(DnsTest, Crawld_ZeroTtlIsRaisedToMinTtl) {
  Dnsmasq d(kHosts);  // local-ttl 0
  ASSERT_TRUE(d.ok());
  uint64_t now = 5000;
  Options o = ServerOptions(d);
  o.min_ttl_s = 60;
  o.now_ms = [&] { return now; };
  Make(o);
  ASSERT_TRUE(ResolveOne("a.test").ok());
  now += 59 * 1000;
  EXPECT_TRUE(ResolveOne("a.test")->from_cache);
  now += 2 * 1000;
  EXPECT_FALSE(ResolveOne("a.test")->from_cache);
}

TEST_F(DnsTest, Crawld_NegativeEntriesExpireAfterNegativeTtl) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  uint64_t now = 0;
  Options o = ServerOptions(d);
  o.negative_ttl_s = 5;
  o.now_ms = [&] { return now; };
  Make(o);
  ASSERT_FALSE(ResolveOne("nx.test").ok());
  now += 4000;
  ASSERT_FALSE(ResolveOne("nx.test").ok());
  EXPECT_EQ(resolver_->stats().queries, 1u);
  now += 2000;
  ASSERT_FALSE(ResolveOne("nx.test").ok());
  EXPECT_EQ(resolver_->stats().queries, 2u);
  EXPECT_EQ(d.CountLog("query[A] nx.test"), 2);
}

TEST_F(DnsTest, Crawld_CacheIsBoundedLeastRecentlyUsedFirst) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Options o = ServerOptions(d);
  o.max_cache_entries = 2;
  Make(o);
  ASSERT_TRUE(ResolveOne("a.test").ok());
  ASSERT_TRUE(ResolveOne("b.test").ok());
  ASSERT_TRUE(ResolveOne("a.test")->from_cache);  // a is now the newest
  ASSERT_TRUE(ResolveOne("c.test").ok());         // evicts b
  EXPECT_EQ(resolver_->cache_size(), 2u);
  EXPECT_EQ(resolver_->stats().evictions, 1u);
  EXPECT_TRUE(ResolveOne("a.test")->from_cache);
  EXPECT_FALSE(ResolveOne("b.test")->from_cache);
}

TEST_F(DnsTest, Crawld_SilentServerGivesUnavailable) {
  UdpSocket hole;  // reads nothing, answers nothing
  Options o;
  o.servers = {"127.0.0.1:" + std::to_string(hole.port)};
  o.timeout_ms = 200;
  o.tries = 2;
  Make(o);
  auto start = std::chrono::steady_clock::now();
  auto r = ResolveOne("a.test");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - start)
                .count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable)
      << r.status().ToString();
  RecordProperty("elapsed_ms", std::to_string(ms));
  // A failure is not cached: the next lookup asks again.
  auto again = ResolveOne("a.test");
  EXPECT_EQ(again.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(resolver_->stats().queries, 2u);
}

TEST_F(DnsTest, Crawld_ShutdownCancelsPendingLookups) {
  UdpSocket hole;
  Options o;
  o.servers = {"127.0.0.1:" + std::to_string(hole.port)};
  Make(o);
  std::vector<Status> got;
  for (const char* h : {"a.test", "b.test", "a.test"}) {
    resolver_->Resolve(h, [&](Result<Answer> r) { got.push_back(r.status()); });
  }
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_TRUE(got.empty());
  resolver_->Shutdown();
  ASSERT_EQ(got.size(), 3u);  // before Shutdown returned
  for (const Status& s : got) {
    EXPECT_EQ(s.code(), Status::Code::kUnavailable);
    EXPECT_EQ(s.message(), "shutdown");
  }
  bool late = false, returned = false, inline_call = false;
  resolver_->Resolve("a.test", [&](Result<Answer> r) {
    late = true;
    inline_call = !returned;
    EXPECT_EQ(r.status().message(), "shutdown");
  });
  returned = true;
  ASSERT_TRUE(RunUntil([&] { return late; }));
  EXPECT_FALSE(inline_call);
}

TEST_F(DnsTest, Crawld_ResolverMayBeDestroyedInsideCallback) {
  Dnsmasq d(kHosts);
  ASSERT_TRUE(d.ok());
  Make(ServerOptions(d));
  int calls = 0;
  for (int i = 0; i < 3; ++i) {
    resolver_->Resolve("a.test", [&](Result<Answer>) {
      ++calls;
      resolver_.reset();
    });
  }
  ASSERT_TRUE(RunUntil([&] { return calls == 3; }));
}

TEST(DnsOptions, Crawld_BadServerAddressIsInvalidArgument) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  for (std::string bad : {"nonsense", "1.2.3.4:0", "1.2.3.4:70000", "[::1",
                          "1.2.3.4:x", "example.com:53"}) {
    Options o;
    o.servers = {bad};
    auto r = Resolver::Create(&loop, o);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    }
  }
  for (std::string good : {"127.0.0.1", "127.0.0.1:5353", "[::1]:53", "::1"}) {
    Options o;
    o.servers = {good};
    auto r = Resolver::Create(&loop, o);
    EXPECT_TRUE(r.ok()) << good << " " << r.status().ToString();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(PrivateGuard, Crawld_BlocksNonPublicRanges) {
  for (const char* ip : {"0.0.0.0",
                         "0.1.2.3",
                         "10.0.0.1",
                         "10.255.255.255",
                         "100.64.0.1",
                         "100.127.255.254",
                         "127.0.0.1",
                         "127.1.0.1",
                         "169.254.169.254",
                         "172.16.0.1",
                         "172.31.255.255",
                         "192.0.0.8",
                         "192.168.1.1",
                         "198.18.0.1",
                         "224.0.0.1",
                         "239.255.255.250",
                         "240.0.0.1",
                         "255.255.255.255",
                         "::",
                         "::1",
                         "[::1]",
                         "fc00::1",
                         "fd12:3456::1",
                         "fe80::1",
                         "febf::1",
                         "fec0::1",
                         "ff02::1",
                         "::ffff:127.0.0.1",
                         "::ffff:10.1.2.3",
                         "::127.0.0.1",
                         "64:ff9b::a9fe:a9fe",
                         "",
                         "not-an-ip",
                         "1.2.3",
                         "1.2.3.4.5",
                         "[1.2.3.4]x"}) {
    EXPECT_TRUE(IsPrivateAddress(ip)) << ip;
  }
}

TEST(PrivateGuard, Crawld_PassesPublicAddresses) {
  for (const char* ip :
       {"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.0",
        "172.15.255.255", "172.32.0.0", "192.169.0.1", "198.20.0.1",
        "223.255.255.255", "2001:db8::1", "2606:4700::1111",
        "[2606:4700::1111]", "::ffff:8.8.8.8", "64:ff9b::808:808", "fe00::1"}) {
    EXPECT_FALSE(IsPrivateAddress(ip)) << ip;
  }
}

}  // namespace
}  // namespace crawld::dns
