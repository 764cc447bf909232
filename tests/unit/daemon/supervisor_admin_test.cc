// Tests of daemon/supervisor_admin.h: the status merge as a pure function,
// then the supervisor's API over real sockets on 127.0.0.1 against fake
// workers (http::Servers on their own loop in a helper thread), with the
// test client in a third thread. Every call has a curl timeout and every
// loop a watchdog, so no test can hang.
#include "daemon/supervisor_admin.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <re2/re2.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "cluster/cluster.h"
#include "http/http.h"
#include "metrics/metrics.h"

namespace crawld::daemon {
namespace {

using http::Request;
using http::Responder;
using http::Response;

// The value at a path of object members, or null.
Json At(const Json& j, std::initializer_list<const char*> path) {
  const Json* v = &j;
  for (const char* k : path) {
    v = json::Find(*v, k);
    if (v == nullptr) return Json();
  }
  return *v;
}
double N(const Json& j, std::initializer_list<const char*> path) {
  const Json v = At(j, path);
  return v.is_number() ? v.get<double>() : std::nan("");
}
std::string S(const Json& j, std::initializer_list<const char*> path) {
  const Json v = At(j, path);
  return v.is_string() ? v.get<std::string>() : std::string("<not a string>");
}

// ---------------------------------------------------------------------------
// A strict reader of the text format 0.0.4, independent of the registry: every
// line is HELP, TYPE or a sample; a family's HELP and TYPE come at most once
// and before its samples; the samples of one family are contiguous.

struct Exposition {
  std::map<std::string, std::string> type;
  std::map<std::string, int> help_lines, type_lines;
  // name{labels sorted} -> value text
  std::map<std::string, std::string> samples;
  std::vector<std::string> family_order;  // family of each sample run
  std::string error;
};

std::string FamilyName(const std::string& sample,
                       const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (sample.size() > s.size() &&
        sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
      const std::string base = sample.substr(0, sample.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return sample;
}

Exposition Parse(const std::string& text) {
  // RE2, as everywhere in crawld (linear time).
  static const RE2 kSample(
      R"re(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (-?[0-9.eE+-]+|NaN|[+-]Inf))re");
  static const RE2 kLabel(
      R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  Exposition e;
  std::istringstream in(text);
  std::string line;
  std::set<std::string> closed;  // families whose sample run ended
  std::string current;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name, kind;
      f >> name >> kind;
      if (line[2] == 'H') {
        ++e.help_lines[name];
      } else {
        ++e.type_lines[name];
        e.type[name] = kind;
      }
      if (e.samples.count(name) > 0 || closed.count(name) > 0) {
        e.error = "HELP/TYPE after samples: " + line;
      }
      continue;
    }
    std::string name, braces, ls, value;
    if (!RE2::FullMatch(line, kSample, &name, &braces, &ls, &value)) {
      e.error = "bad line: " + line;
      continue;
    }
    std::map<std::string, std::string> labels;
    re2::StringPiece rest(ls);
    std::string lk, lv;
    while (RE2::FindAndConsume(&rest, kLabel, &lk, &lv)) {
      if (!labels.emplace(lk, lv).second) {
        e.error = "repeated label: " + line;
      }
    }
    std::string key = name + "{";
    for (const auto& [k, v] : labels) key += k + "=" + v + ",";
    key += "}";
    e.samples[key] = value;
    const std::string family = FamilyName(name, e.type);
    if (family != current) {
      if (closed.count(family) > 0) {
        e.error = "samples of " + family + " are not together";
      }
      if (!current.empty()) closed.insert(current);
      current = family;
      e.family_order.push_back(family);
    }
  }
  return e;
}

// ---------------------------------------------------------------------------
// Status merge

Json Sup(const char* state, std::vector<bool> up) {
  Json ws = Json::array();
  for (size_t i = 0; i < up.size(); ++i) {
    ws.push_back({{"id", static_cast<int>(i)},
                  {"pid", 100 + static_cast<int>(i)},
                  {"up", static_cast<bool>(up[i])},
                  {"restarts", static_cast<int>(i)}});
  }
  return {{"state", state}, {"uptime_s", 3.5}, {"workers", std::move(ws)}};
}

Json WorkerJson(const char* state, int pages, int known, int http4xx) {
  return {{"state", state},
          {"pages", pages},
          {"pages_per_s", 1.5},
          {"bytes", pages * 100},
          {"queued", 3},
          {"in_flight", 1},
          {"ip_waiting", 0},
          {"hosts", {{"known", known}, {"active", 1}, {"retired", 0}}},
          {"robots_fetches", known},
          {"uptime_s", 2.0},
          {"counts", {{"http_4xx", http4xx}}},
          {"errors", {{"http_4xx", http4xx}}}};
}

TEST(MergeStatus, SumsTheWorkersAndListsEachOne) {
  std::vector<WorkerStatus> st(3);
  st[0].status = WorkerJson("running", 10, 4, 1);
  st[1].status = WorkerJson("running", 5, 2, 2);
  st[2].error = "worker 2 (http://127.0.0.1:1/api/status): refused";
  Json j = MergeStatus(Sup("running", {true, true, true}), st);
  EXPECT_EQ(S(j, {"state"}), "running");
  EXPECT_EQ(N(j, {"pages"}), 15);
  EXPECT_EQ(N(j, {"pages_per_s"}), 3.0);
  EXPECT_EQ(N(j, {"bytes"}), 1500);
  EXPECT_EQ(N(j, {"queued"}), 6);
  EXPECT_EQ(N(j, {"in_flight"}), 2);
  EXPECT_EQ(N(j, {"hosts", "known"}), 6);
  EXPECT_EQ(N(j, {"robots_fetches"}), 6);
  EXPECT_EQ(N(j, {"uptime_s"}), 3.5);
  EXPECT_EQ(N(j, {"counts", "http_4xx"}), 3);
  EXPECT_EQ(N(j, {"errors", "http_4xx"}), 3);    // issue 18: errors by class
  EXPECT_EQ(json::Find(j, "cluster"), nullptr);  // not a cluster node
  Json sup = Sup("running", {true, true, true});
  sup["cluster"] = {{"node_id", 1}, {"live_nodes", {0, 1}}};
  EXPECT_EQ(At(MergeStatus(sup, st), {"cluster"}), sup["cluster"]);
  // Counts stay integers, as a worker writes them.
  EXPECT_EQ(json::Dump(At(j, {"pages"})), "15");
  EXPECT_EQ(json::Dump(At(j, {"counts"})), "{\"http_4xx\":3}");
  const Json ws = At(j, {"workers"});
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(N(ws[1], {"id"}), 1);
  EXPECT_EQ(N(ws[1], {"pid"}), 101);
  EXPECT_TRUE(At(ws[1], {"up"}).get<bool>());
  EXPECT_EQ(N(ws[1], {"restarts"}), 1);
  EXPECT_EQ(N(ws[1], {"pages"}), 5);
  EXPECT_EQ(At(ws[1], {"status"}), st[1].status);
  EXPECT_EQ(json::Find(ws[2], "status"), nullptr);
  EXPECT_EQ(S(ws[2], {"error"}), st[2].error);
}

TEST(MergeStatus, StateIsPausedOnlyWhenEveryAnsweringWorkerIs) {
  std::vector<WorkerStatus> st(2);
  st[0].status = WorkerJson("paused", 1, 1, 0);
  st[1].status = WorkerJson("running", 1, 1, 0);
  EXPECT_EQ(S(MergeStatus(Sup("running", {true, true}), st), {"state"}),
            "running");
  st[1].status = WorkerJson("paused", 1, 1, 0);
  EXPECT_EQ(S(MergeStatus(Sup("running", {true, true}), st), {"state"}),
            "paused");
  EXPECT_EQ(S(MergeStatus(Sup("stopping", {true, true}), st), {"state"}),
            "stopping");
  st[1].status = WorkerJson("stopping", 1, 1, 0);
  EXPECT_EQ(S(MergeStatus(Sup("running", {true, true}), st), {"state"}),
            "stopping");
  // Hostile worker answers: wrong types are ignored, not trusted.
  st[0].status = {{"pages", "many"}, {"hosts", 3}};
  st[1] = WorkerStatus{};
  Json j = MergeStatus(Sup("running", {true, false}), st);
  EXPECT_EQ(N(j, {"pages"}), 0);
  EXPECT_EQ(S(j, {"state"}), "running");
  EXPECT_EQ(S(At(j, {"workers"})[1], {"error"}), "no status");
}

// ---------------------------------------------------------------------------
// The server against fake workers

constexpr char kToken[] = "tok-123";

// A port that nothing listens on (bound, then closed).
int ClosedPort() {
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

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Workers 0 and 1 as AdminServers on one loop in a thread, answering like
// a worker and recording what they were asked.
class FakeWorkers {
 public:
  explicit FakeWorkers(const std::string& data) {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &quit_, [](uv_async_t* a) {
      auto* self = static_cast<FakeWorkers*>(a->data);
      self->servers_.clear();
      uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr);
    });
    quit_.data = this;
    for (int id = 0; id < 2; ++id) {
      http::Server::Options o;
      o.token = kToken;
      auto s = http::Server::Create(&loop_, o);
      EXPECT_TRUE(s.ok());
      http::Server* srv = s->get();
      auto record = [this, id](const Request& q) {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back(std::to_string(id) + " " + q.method + " " + q.target +
                        " " + q.body);
      };
      (void)srv->Route(
          "GET", "/api/status", [record, id](const Request& q, Responder r) {
            record(q);
            r.SendJson(
                200, {{"state", "running"}, {"pages", id + 1}, {"queued", 10}});
          });
      // A worker's registry, as structured data (GET /api/metrics).
      (void)srv->Route(
          "GET", "/api/metrics", [record, id](const Request& q, Responder r) {
            record(q);
            metrics::Registry reg;
            (*reg.GetCounter("crawld_pages_fetched_total", "P."))
                ->Increment(id + 1);
            (*reg.GetGauge("crawld_hosts", "H.", {{"state", "known"}}))
                ->Set(10 * (id + 1));
            r.SendJson(200, reg.Snapshot());
          });
      for (const char* p : {"/api/pause", "/api/resume", "/api/rules/test"}) {
        (void)srv->Route("POST", p, [record](const Request& q, Responder r) {
          record(q);
          r.SendJson(200, {{"state", "paused"}});
        });
      }
      (void)srv->Route("POST", "/api/seeds",
                       [record, id](const Request& q, Responder r) {
                         record(q);
                         auto body = q.JsonBody();
                         if (!body.ok()) {
                           r.SendError(400, body.status().message());
                           return;
                         }
                         r.SendJson(200, {{"worker", id}});
                       });
      (void)srv->Route("POST", "/api/rules/reload",
                       [record, id](const Request& q, Responder r) {
                         record(q);
                         if (id == 1) {
                           r.SendError(400, "rules.txt:2: bad");
                           return;
                         }
                         r.SendJson(200, {{"reloaded", true}, {"worker", id}});
                       });
      (void)srv->Route(
          "GET", "/api/hosts/{host}",
          [record, id](const Request& q, Responder r) {
            record(q);
            r.SendJson(200, {{"worker", id}, {"host", *q.Param("host")}});
          });
      WriteFile(data + "/run/admin-" + std::to_string(id) + ".url",
                "http://127.0.0.1:" + std::to_string(srv->port()) + "\n");
      servers_.push_back(std::move(s).value());
    }
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~FakeWorkers() {
    uv_async_send(&quit_);
    thread_.join();
    uv_loop_close(&loop_);
  }
  int Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const std::string& s : seen_) n += s.rfind(prefix, 0) == 0;
    return n;
  }
  std::vector<std::string> TakeSeen() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(seen_);
  }

 private:
  uv_loop_t loop_{};
  uv_async_t quit_{};
  std::vector<std::unique_ptr<http::Server>> servers_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> seen_;
};

struct Reply {
  long status = 0;
  std::string body;
};

size_t Collect(char* d, size_t s, size_t n, void* u) {
  static_cast<std::string*>(u)->append(d, s * n);
  return s * n;
}

Reply Call(int port, const std::string& method, const std::string& target,
           const std::string& body = "", bool token = true) {
  Reply r;
  CURL* e = curl_easy_init();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + target;
  curl_slist* h = nullptr;
  if (token) h = curl_slist_append(h, "Authorization: Bearer tok-123");
  h = curl_slist_append(h, "Content-Type: application/json");
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &r.body);
  if (method == "POST") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
  }
  if (curl_easy_perform(e) == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
  }
  curl_slist_free_all(h);
  curl_easy_cleanup(e);
  return r;
}

Json J(const Reply& r) {
  auto j = json::Parse(r.body);
  return j.ok() ? *j : Json();
}

// A host name that the ring of `total` workers gives to `owner`.
std::string HostOwnedBy(int owner, int total) {
  cluster::Ring ring(total, cluster::Options());
  for (int i = 0;; ++i) {
    std::string h = "h" + std::to_string(i) + ".farm.test";
    if (ring.Owner(h) == owner) return h;
  }
}

class SupervisorAdminServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    char tmpl[] = "/tmp/crawld-supadmin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    data_ = tmpl;
    std::filesystem::create_directories(data_ + "/run");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_, ec);
    curl_global_cleanup();
  }
  std::string data_;
};

TEST_F(SupervisorAdminServer, ForwardsEachEndpointToTheRightWorkers) {
  // A stale URL file from an earlier run is removed by Start().
  WriteFile(data_ + "/run/admin-1.url", "http://127.0.0.1:1\n");
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::atomic<bool> w0_up{true}, w2_up{true};
  std::atomic<int> w1_pid{1001};
  std::string stopped;
  std::unique_ptr<SupervisorAdmin> admin;

  SupervisorAdmin::Options o;
  o.admin.token = kToken;
  o.data_dir = data_;
  o.workers = o.total_workers = 3;
  o.worker_timeout_ms = 2000;
  SupervisorAdmin::View view;
  view.supervisor_status = [&] {
    Json ws = Json::array();
    for (int i = 0; i < 3; ++i) {
      const bool up = i == 0 ? w0_up.load() : i == 2 ? w2_up.load() : true;
      ws.push_back({{"id", i},
                    {"pid", i == 1 ? w1_pid.load() : 1000 + i},
                    {"up", up},
                    {"restarts", i == 2 ? 4 : 0}});
    }
    return Json{{"state", "running"}, {"workers", ws}};
  };
  view.stop = [&](const std::string& why) {
    stopped = why;
    admin.reset();
  };
  auto started = SupervisorAdmin::Start(&loop, o, view);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  admin = std::move(started).value();
  EXPECT_FALSE(std::filesystem::exists(data_ + "/run/admin-1.url"));
  {
    std::ifstream in(data_ + "/run/admin.url");
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "http://127.0.0.1:" + std::to_string(admin->port()));
  }
  const int port = admin->port();
  FakeWorkers fakes(data_);
  // Worker 2 is "up" but nothing listens on its port.
  WriteFile(data_ + "/run/admin-2.url",
            "http://127.0.0.1:" + std::to_string(ClosedPort()) + "\n");

  // Watchdog: the loop ends within 60 s whatever the client does.
  uv_timer_t watchdog;
  uv_timer_init(&loop, &watchdog);
  watchdog.data = &admin;
  uv_timer_start(
      &watchdog,
      [](uv_timer_t* t) {
        static_cast<std::unique_ptr<SupervisorAdmin>*>(t->data)->reset();
      },
      60000, 0);
  uv_unref(reinterpret_cast<uv_handle_t*>(&watchdog));

  std::map<std::string, Reply> got;
  std::thread client([&] {
    got["noauth"] = Call(port, "GET", "/api/status", "", false);
    got["status"] = Call(port, "GET", "/api/status");
    got["metrics"] = Call(port, "GET", "/metrics");
    got["metrics_json"] = Call(port, "GET", "/api/metrics");
    got["seeds"] =
        Call(port, "POST", "/api/seeds", R"({"urls":["http://a/"]})");
    got["seeds_bad"] = Call(port, "POST", "/api/seeds", "{not json");
    got["host1"] =
        Call(port, "GET", "/api/hosts/" + HostOwnedBy(1, 3) + "%3A8080");
    got["host1_origin"] =
        Call(port, "GET",
             "/api/hosts/http%3A%2F%2F" + HostOwnedBy(1, 3) + "%3A8080");
    got["host2"] = Call(port, "GET", "/api/hosts/" + HostOwnedBy(2, 3));
    got["reload"] = Call(port, "POST", "/api/rules/reload", "");
    got["pause"] = Call(port, "POST", "/api/pause", "");
    // Worker 1 "restarts" (a new pid) while paused: it is paused again.
    w1_pid = 2001;
    for (int i = 0; i < 1200 && fakes.Count("1 POST /api/pause") < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    w2_up = false;
    got["pause_w2_down"] = Call(port, "POST", "/api/pause", "");
    got["status_w2_down"] = Call(port, "GET", "/api/status");
    got["resume"] = Call(port, "POST", "/api/resume", "");
    w0_up = false;
    got["seeds_w0_down"] = Call(port, "POST", "/api/seeds", R"({"urls":[]})");
    got["stop"] = Call(port, "POST", "/api/stop", "");
  });
  uv_run(&loop, UV_RUN_DEFAULT);
  client.join();
  admin.reset();
  uv_close(reinterpret_cast<uv_handle_t*>(&watchdog), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
  std::vector<std::string> seen = fakes.TakeSeen();

  EXPECT_EQ(got["noauth"].status, 401);

  ASSERT_EQ(got["status"].status, 200) << got["status"].body;
  Json st = J(got["status"]);
  EXPECT_EQ(N(st, {"pages"}), 3);  // 1 + 2
  EXPECT_EQ(N(st, {"queued"}), 20);
  const Json ws = At(st, {"workers"});
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(N(ws[1], {"status", "pages"}), 2);
  EXPECT_EQ(N(ws[1], {"pid"}), 1001);
  EXPECT_NE(S(ws[2], {"error"}).find("worker 2"), std::string::npos);
  EXPECT_EQ(N(ws[2], {"restarts"}), 4);

  ASSERT_EQ(got["metrics"].status, 200);
  Exposition m = Parse(got["metrics"].body);
  EXPECT_EQ(m.error, "") << got["metrics"].body;
  EXPECT_EQ(m.samples["crawld_pages_fetched_total{worker=0,}"], "1");
  EXPECT_EQ(m.samples["crawld_pages_fetched_total{worker=1,}"], "2");
  EXPECT_EQ(m.samples.count("crawld_pages_fetched_total{worker=2,}"), 0u);
  EXPECT_EQ(m.samples["crawld_worker_scrape_ok{worker=2,}"], "0");
  EXPECT_EQ(m.samples["crawld_worker_scrape_ok{worker=1,}"], "1");
  EXPECT_EQ(m.samples["crawld_worker_restarts_total{worker=2,}"], "4");
  EXPECT_EQ(m.samples["crawld_workers_up{}"], "3");
  EXPECT_EQ(m.samples["crawld_hosts{state=known,worker=1,}"], "20");
  EXPECT_EQ(m.type["crawld_pages_fetched_total"], "counter");
  for (const auto& [name, n] : m.type_lines) EXPECT_EQ(n, 1) << name;
  for (const auto& [name, n] : m.help_lines) EXPECT_EQ(n, 1) << name;
  // The same registry as data.
  ASSERT_EQ(got["metrics_json"].status, 200);
  metrics::Registry again;
  EXPECT_EQ(again.Import(J(got["metrics_json"])), 0u);
  EXPECT_EQ(again.Render(), got["metrics"].body);

  EXPECT_EQ(got["seeds"].status, 200);
  EXPECT_EQ(N(J(got["seeds"]), {"worker"}), 0);
  EXPECT_EQ(got["seeds_bad"].status, 400);
  EXPECT_EQ(N(J(got["seeds_bad"]), {"status"}), 400);

  EXPECT_EQ(got["host1"].status, 200);
  EXPECT_EQ(N(J(got["host1"]), {"worker"}), 1);
  EXPECT_EQ(S(J(got["host1"]), {"host"}), HostOwnedBy(1, 3) + ":8080");
  EXPECT_EQ(N(J(got["host1_origin"]), {"worker"}), 1);
  EXPECT_EQ(got["host2"].status, 502);
  EXPECT_NE(S(J(got["host2"]), {"error"}).find("worker 2"), std::string::npos);

  EXPECT_EQ(got["reload"].status, 400);
  EXPECT_EQ(S(J(got["reload"]), {"error"}), "rules.txt:2: bad");

  EXPECT_EQ(got["pause"].status, 502);
  EXPECT_NE(got["pause"].body.find("worker 2"), std::string::npos);
  EXPECT_EQ(got["pause_w2_down"].status, 502);
  EXPECT_NE(got["pause_w2_down"].body.find("worker 2 is not running"),
            std::string::npos);
  Json st2 = J(got["status_w2_down"]);
  EXPECT_EQ(S(At(st2, {"workers"})[2], {"error"}), "worker 2 is not running");
  EXPECT_EQ(got["resume"].status, 502);

  EXPECT_EQ(got["seeds_w0_down"].status, 200);
  EXPECT_EQ(N(J(got["seeds_w0_down"]), {"worker"}), 1);

  EXPECT_EQ(got["stop"].status, 200);
  EXPECT_EQ(S(J(got["stop"]), {"state"}), "stopping");
  EXPECT_EQ(stopped, "api stop");
  EXPECT_FALSE(std::filesystem::exists(data_ + "/run/admin.url"));

  // Who was asked what: pause to both reachable workers, rules reload to
  // both, seeds to worker 0 while it was up, the host to its owner only.
  auto count = [&](const std::string& prefix) {
    int n = 0;
    for (const std::string& s : seen) n += s.rfind(prefix, 0) == 0;
    return n;
  };
  EXPECT_EQ(count("0 POST /api/pause"), 2);
  EXPECT_EQ(count("1 POST /api/pause"), 3);
  EXPECT_EQ(count("0 POST /api/rules/reload"), 1);
  EXPECT_EQ(count("1 POST /api/rules/reload"), 1);
  EXPECT_EQ(count("0 POST /api/seeds {\"urls\":[\"http://a/\"]}"), 1);
  EXPECT_EQ(count("1 POST /api/seeds {\"urls\":[]}"), 1);
  EXPECT_EQ(count("0 GET /api/hosts"), 0);
  EXPECT_EQ(count("0 GET /api/metrics"), 2);
  EXPECT_EQ(count("1 GET /api/hosts"), 2);
  EXPECT_EQ(count("0 POST /api/stop"), 0);
}

// Issue 13: the supervisor's handlers asked the workers with blocking
// libcurl calls, so one hung worker froze the whole API (and the
// supervisor's loop) for the call's timeout. Now a call that waits for a
// hung worker delays nothing else.
TEST_F(SupervisorAdminServer, AHungWorkerDelaysOnlyTheCallsThatNeedIt) {
  // The worker: /api/status never answers, /api/hosts at once.
  uv_loop_t wloop;
  uv_loop_init(&wloop);
  std::atomic<int> status_calls{0};
  std::vector<Responder> hung;
  std::unique_ptr<http::Server> worker;
  {
    http::Server::Options o;
    auto w = http::Server::Create(&wloop, o);
    ASSERT_TRUE(w.ok());
    worker = std::move(w).value();
    ASSERT_TRUE(worker
                    ->Route("GET", "/api/status",
                            [&](const Request&, Responder r) {
                              hung.push_back(std::move(r));
                              ++status_calls;
                            })
                    .ok());
    ASSERT_TRUE(worker
                    ->Route("GET", "/api/hosts/{host}",
                            [](const Request&, Responder r) {
                              r.SendJson(200, {{"worker", 0}});
                            })
                    .ok());
    WriteFile(data_ + "/run/admin-0.url",
              "http://127.0.0.1:" + std::to_string(worker->port()) + "\n");
  }
  // Stops the worker's loop from the main thread: drops what keeps it
  // alive, on its own thread.
  struct WorkerSide {
    std::vector<Responder>* hung;
    std::unique_ptr<http::Server>* worker;
  } wside{&hung, &worker};
  uv_async_t wquit;
  wquit.data = &wside;
  uv_async_init(&wloop, &wquit, [](uv_async_t* a) {
    auto* w = static_cast<WorkerSide*>(a->data);
    w->hung->clear();
    w->worker->reset();
    uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr);
  });
  const uint16_t worker_port = worker->port();
  std::thread wthread([&] { uv_run(&wloop, UV_RUN_DEFAULT); });

  uv_loop_t loop;
  uv_loop_init(&loop);
  SupervisorAdmin::Options o;
  o.data_dir = data_;
  o.worker_timeout_ms = 3000;
  auto started = SupervisorAdmin::Start(&loop, o, {});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<SupervisorAdmin> admin = std::move(started).value();
  // Start() removed the worker's URL file (stale, to it): write it again.
  WriteFile(data_ + "/run/admin-0.url",
            "http://127.0.0.1:" + std::to_string(worker_port) + "\n");
  const int port = admin->port();
  // Ends the supervisor's loop: the clients are done, or 30 s passed.
  struct SupSide {
    std::unique_ptr<SupervisorAdmin>* admin;
    uv_timer_t watchdog;
    uv_async_t done;
    void End() {
      admin->reset();
      if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&watchdog))) {
        uv_close(reinterpret_cast<uv_handle_t*>(&watchdog), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&done), nullptr);
      }
    }
  } side{&admin, {}, {}};
  uv_timer_init(&loop, &side.watchdog);
  side.watchdog.data = &side;
  uv_timer_start(
      &side.watchdog,
      [](uv_timer_t* t) { static_cast<SupSide*>(t->data)->End(); }, 30000, 0);
  uv_async_init(&loop, &side.done,
                [](uv_async_t* a) { static_cast<SupSide*>(a->data)->End(); });
  side.done.data = &side;

  using Clock = std::chrono::steady_clock;
  Reply status, host;
  Clock::time_point status_done, host_done, host_start;
  std::thread clients([&] {
    std::thread slow([&] {
      status = Call(port, "GET", "/api/status", "", false);
      status_done = Clock::now();
    });
    for (int i = 0; i < 500 && status_calls == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    host_start = Clock::now();
    host = Call(port, "GET", "/api/hosts/a.test", "", false);
    host_done = Clock::now();
    slow.join();
    uv_async_send(&side.done);
  });
  uv_run(&loop, UV_RUN_DEFAULT);
  clients.join();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
  uv_async_send(&wquit);
  wthread.join();
  EXPECT_EQ(uv_loop_close(&wloop), 0);

  EXPECT_EQ(status_calls, 1);
  EXPECT_EQ(host.status, 200) << host.body;
  EXPECT_EQ(N(J(host), {"worker"}), 0);
  // The status waited for the worker's timeout and says so...
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_NE(S(At(J(status), {"workers"})[0], {"error"}).find("worker 0"),
            std::string::npos)
      << status.body;
  // ...while the host call went through in the meantime.
  EXPECT_LT(host_done, status_done);
  EXPECT_LT(host_done - host_start, std::chrono::milliseconds(2000));
}

TEST_F(SupervisorAdminServer, RefusesBadOptionsAndATakenPort) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  SupervisorAdmin::Options o;
  o.data_dir = data_;
  // No workers, or a negative first id. (More local workers than the ring
  // has is valid: drainers handing their hosts over.)
  o.workers = 0;
  o.total_workers = 2;
  EXPECT_FALSE(SupervisorAdmin::Start(&loop, o, {}).ok());
  o.workers = 2;
  o.first_worker = -1;
  EXPECT_FALSE(SupervisorAdmin::Start(&loop, o, {}).ok());
  o.first_worker = 0;
  o.admin.address = "0.0.0.0";  // not loopback, no token
  EXPECT_FALSE(SupervisorAdmin::Start(&loop, o, {}).ok());
  o.admin.address = "127.0.0.1";
  auto first = SupervisorAdmin::Start(&loop, o, {});
  ASSERT_TRUE(first.ok());
  o.admin.port = (*first)->port();
  auto second = SupervisorAdmin::Start(&loop, o, {});
  EXPECT_FALSE(second.ok());
  first->reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
}  // namespace crawld::daemon
