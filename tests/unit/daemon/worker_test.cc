// The way of one URL (daemon/crawl_path.h) on a fake clock and a scripted
// web: the robots policy (RFC 9309 2.3.1), politeness gaps, Retry-After,
// retirement, redirects, duplicates and recovery, each in milliseconds and
// deterministic. The real frontier, IP gate, host table, WARC writer,
// checkpoint store and parser run; only time, DNS, HTTP and the parse
// thread are replaced (daemon/ports.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "conf/conf.h"
#include "conf/overrides.h"
#include "conf/rules.h"
#include "conf/traps.h"
#include "daemon/component_options.h"
#include "daemon/crawl_path.h"
#include "daemon/crawl_stats.h"
#include "daemon/documents.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "daemon/ports.h"
#include "daemon/recovery.h"
#include "dedupe/dedupe.h"
#include "frontier/frontier.h"
#include "frontier/ip_gate.h"
#include "recrawl/recrawl.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {
namespace {

constexpr int64_t kMs = 1000;
constexpr int64_t kS = 1000 * kMs;

// --- the fake world
// -----------------------------------------------------------

// Events at fake times, in time order (FIFO among equal times).
class EventQueue {
 public:
  void At(int64_t when, std::function<void()> fn) {
    q_.push({when, seq_++, std::move(fn)});
  }
  bool empty() const { return q_.empty(); }
  int64_t next() const { return q_.top().when; }
  std::function<void()> Pop() {
    auto fn = q_.top().fn;
    q_.pop();
    return fn;
  }

 private:
  struct Event {
    int64_t when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& o) const {
      return when != o.when ? when > o.when : seq > o.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q_;
  uint64_t seq_ = 0;
};

class FakeClock final : public Clock {
 public:
  int64_t MonotonicUs() const override { return now; }
  int64_t WallUs() const override { return 1'764'000'000 * kS + now; }
  int64_t now = 1 * kS;
};

// A scripted answer.
struct Page {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", "text/html"}};
  std::string body;
  int64_t latency_us = 10 * kMs;
  bool network_error = false;  // no response at all (connect refused)
  bool cut = false;            // the connection closed in the body
};

// One request the web saw.
struct Hit {
  std::string url;
  std::string ip;
  int64_t start_us = 0;
  int64_t end_us = 0;
  std::vector<std::string> headers;  // the request's extra headers
};

// DNS and HTTP of a scripted web. Unknown URLs answer 404; unknown hosts
// resolve to 10.0.0.1 unless `addresses` says otherwise.
class FakeWeb final : public FetchPort, public ResolvePort {
 public:
  FakeWeb(EventQueue* events, FakeClock* clock)
      : events_(events), clock_(clock) {}

  std::map<std::string, Page> pages;  // by absolute URL
  std::map<std::string, std::string> addresses;
  std::vector<Hit> hits;
  int in_flight = 0;
  int max_in_flight = 0;
  std::map<std::string, int> in_flight_by_ip;
  std::map<std::string, int> max_in_flight_by_ip;
  // Called before a page is answered, e.g. to change it on every request.
  std::function<void(const std::string& url, Page* page)> before_answer;
  // A page with an ETag header answers a request whose If-None-Match
  // names it with a 304 (RFC 9110 13.1.2), as a server that keeps
  // validators does.
  bool honor_validators = true;

  void Resolve(const std::string& host,
               std::function<void(Result<dns::Answer>)> done) override {
    dns::Answer a;
    auto it = addresses.find(host);
    a.addresses.push_back(it != addresses.end() ? it->second : "10.0.0.1");
    events_->At(clock_->now, [done, a] { done(a); });
  }

  void Submit(fetcher::Request req,
              std::function<void(fetcher::Response&&)> done) override {
    const int64_t start = clock_->now;
    std::string key = req.url;
    if (size_t p = key.find(":80/"); p != std::string::npos) key.erase(p, 3);
    auto it = pages.find(key);
    Page page = it != pages.end() ? it->second : Page{404, {}, "", 5 * kMs};
    if (before_answer && it != pages.end()) {
      before_answer(key, &it->second);
      page = it->second;
    }
    if (honor_validators) NotModified(req, &page);
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    max_in_flight_by_ip[req.ip] =
        std::max(max_in_flight_by_ip[req.ip], ++in_flight_by_ip[req.ip]);
    events_->At(start + page.latency_us, [this, req, page, start, done] {
      --in_flight;
      --in_flight_by_ip[req.ip];
      // The crawler names robots.txt by its host key (with the port).
      std::string url = req.url;
      if (size_t p = url.find(":80/"); p != std::string::npos) url.erase(p, 3);
      hits.push_back({url, req.ip, start, clock_->now, req.extra_headers});
      fetcher::Response r;
      r.start_us = clock_->WallUs();
      r.end_us = r.start_us;
      r.ip = req.ip;
      if (page.network_error) {
        r.error = fetcher::ErrorClass::kConnect;
        r.error_message = "refused";
        done(std::move(r));
        return;
      }
      r.status_code = page.status;
      auto u = url::Parse(req.url);
      r.request_head = "GET " + std::string(u->path_and_query()) +
                       " HTTP/1.1\r\nHost: " + std::string(u->host()) +
                       "\r\n\r\n";
      r.response_head = "HTTP/1.1 " + std::to_string(page.status) + " X\r\n";
      for (const auto& [k, v] : page.headers) {
        r.headers.emplace_back(k, v);
        r.response_head += k + ": " + v + "\r\n";
      }
      r.response_head += "\r\n";
      (void)r.body.Append(page.body);
      if (page.cut) {
        r.truncated = true;
        r.truncated_reason = "disconnect";
        r.error = fetcher::ErrorClass::kConnect;
      }
      done(std::move(r));
    });
  }
  void Shutdown() override {}
  uint64_t connections_opened() const override { return 0; }
  uint64_t connections_not_kept() const override { return 0; }

  static void NotModified(const fetcher::Request& req, Page* page) {
    std::string etag;
    for (const auto& [k, v] : page->headers) {
      if (k == "ETag") etag = v;
    }
    if (etag.empty() || page->status != 200) return;
    for (const std::string& h : req.extra_headers) {
      if (h == "If-None-Match: " + etag) {
        page->status = 304;
        page->headers = {{"ETag", etag}};
        page->body.clear();
      }
    }
  }

  std::vector<Hit> HitsOf(std::string_view prefix) const {
    std::vector<Hit> out;
    for (const Hit& h : hits) {
      if (h.url.rfind(prefix, 0) == 0) out.push_back(h);
    }
    return out;
  }
  int Count(const std::string& url) const {
    int n = 0;
    for (const Hit& h : hits) n += h.url == url;
    return n;
  }

 private:
  EventQueue* events_;
  FakeClock* clock_;
};

// Parses inline, hands the result back as a later event (as the real pool
// does: never inside Run()).
class InlinePool final : public WorkPool {
 public:
  InlinePool(EventQueue* events, FakeClock* clock)
      : events_(events), clock_(clock) {}
  void Run(std::function<void()> work, std::function<void()> done) override {
    ++runs;
    if (defer_work) {
      // As a pool thread would: the work has not run when Run() returns.
      events_->At(clock_->now + work_us,
                  [work = std::move(work), done = std::move(done)] {
                    work();
                    done();
                  });
      return;
    }
    work();
    events_->At(clock_->now + work_us, std::move(done));
  }
  int64_t work_us = 0;      // how long each task takes, in fake time
  bool defer_work = false;  // the work runs at its end time, not at once
  int runs = 0;

 private:
  EventQueue* events_;
  FakeClock* clock_;
};

class FakeWaker final : public Waker {
 public:
  void WakeAt(int64_t t) override { at = t; }
  int64_t at = INT64_MAX;
};

std::string TempDir() {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "crawld-worker-XXXXXX")
          .string();
  return mkdtemp(tmpl.data());
}

// Everything a worker's crawl path needs, wired as the worker wires it,
// with the fakes above. `config` is the crawl's config (data_dir: a fresh
// temporary directory per world unless given).
// A ring and an exchange for one worker (self 0) among several: hosts map
// to the worker `owner` says (0 when not named); every message sent is kept
// in `sent` and stays unacknowledged until the test clears `unacked`.
class FakeRouter : public Router {
 public:
  int Owner(std::string_view host) const override {
    auto it = owner.find(std::string(host));
    return it == owner.end() ? 0 : it->second;
  }
  int self() const override { return 0; }
  bool Send(int to, cluster::UrlMessage m) override {
    if (!m.capture.empty()) unacked.insert(m.url);
    sent.emplace_back(to, std::move(m));
    return true;
  }
  bool ForEachUnackedCapture(
      const std::function<void(const std::string&)>& fn) const override {
    for (const std::string& url : unacked) fn(url);
    return true;
  }

  std::map<std::string, int> owner;
  std::vector<std::pair<int, cluster::UrlMessage>> sent;
  std::set<std::string> unacked;
};

class World {
  conf::Config config_;
  std::string dir_;
  EventQueue events_;

 public:
  explicit World(conf::Config config, std::string dir = TempDir(),
                 bool checkpoints = false, Router* router = nullptr)
      : config_(std::move(config)),
        dir_(std::move(dir)),
        web(&events_, &clock),
        pool_(&events_, &clock) {
    config_.crawl.data_dir = dir_;
    std::filesystem::create_directories(dir_ + "/warc");
    (void)log_.Open(dir_ + "/log.jsonl");
    log_.set_min_level(Level::kDebug);
    canon_ = std::make_unique<url::Canonicalizer>(CanonOptions(config_));
    traps_ = std::make_unique<conf::TrapGuard>(TrapOptions(config_, 2026));
    ip_gate_ = std::make_unique<frontier::IpGate>(IpGateOptions(config_));
    frontier_ = frontier::Frontier::Open(
                    FrontierOptions(config_, checkpoints ? dir_ + "/frontier"
                                                         : std::string()))
                    .value();
    rules_ = conf::RuleSet::AcceptAll();
    overrides_ = conf::Overrides::None();
    hosts_ = std::make_unique<HostTable>(HostOptions(config_), frontier_.get(),
                                         &stats, &log_);
    hosts_->SetOverrides(overrides_.get());
    warc_ = store::WarcWriter::Open(StoreOptions(config_, 0)).value();
    claims_ = dedupe::ClaimTable::Open(ClaimOptions(config_)).value();
    documents_ =
        std::make_unique<Documents>(DocumentOptions(config_), claims_.get(),
                                    warc_.get(), &pool_, &stats, &log_);
    if (checkpoints) {
      state_ = checkpoint::Store::Open(dir_ + "/state", {}).value();
      seen_store_ =
          dedupe::UrlSeenStore::Open(SeenOptions(config_, dir_ + "/seen"))
              .value();
    }
    seen_ = std::make_unique<SeenAdapter>(seen_store_.get());
    if (config_.recrawl.enabled) {
      schedule_ =
          recrawl::Schedule::Open(dir_ + "/recrawl", RecrawlOptions(config_))
              .value();
    }
    CrawlPath::Parts p;
    p.schedule = schedule_.get();
    p.router = router;
    p.clock = &clock;
    p.fetch = &web;
    p.resolve = &web;
    p.pool = &pool_;
    p.waker = &waker_;
    p.canonicalizer = canon_.get();
    p.traps = traps_.get();
    p.frontier = frontier_.get();
    p.ip_gate = ip_gate_.get();
    p.hosts = hosts_.get();
    p.documents = documents_.get();
    p.warc = warc_.get();
    p.seen = seen_.get();
    p.stats = &stats;
    p.log = &log_;
    p.on_fatal = [this](const std::string& r) { fatal = r; };
    p.accepting = [this] { return accepting; };
    path = std::make_unique<CrawlPath>(PathOptions(config_), p);
    path->SetRules(rules_.get());
    if (checkpoints) {
      Recovery::Options ro;
      ro.warc_dir = dir_ + "/warc";
      ro.warc_prefix = config_.store.warc_prefix;
      Recovery::Parts rp;
      rp.state = state_.get();
      rp.seen = seen_store_.get();
      rp.frontier = frontier_.get();
      rp.warc = warc_.get();
      rp.path = path.get();
      rp.documents = documents_.get();
      rp.hosts = hosts_.get();
      rp.traps = traps_.get();
      rp.stats = &stats;
      rp.log = &log_;
      rp.clock = &clock;
      recovery = std::make_unique<Recovery>(ro, rp);
    }
  }
  ~World() {
    path.reset();
    if (remove_dir_) std::filesystem::remove_all(dir_);
  }

  void SetOverrides(std::string_view text) {
    overrides_ = conf::Overrides::Parse(text, "ov.conf").value();
    hosts_->SetOverrides(overrides_.get());
  }
  void SetRules(std::string_view text) {
    rules_ = conf::RuleSet::Parse(text, "rules.conf").value();
    path->SetRules(rules_.get());
  }

  void Seed(const std::string& url) {
    Candidate c;
    c.url = url;
    c.source = Candidate::Source::kSeed;
    c.credit = 1.0;
    path->Enter(c);
  }

  // Runs events and wake-ups in time order until nothing is left or the
  // clock passes `until` (fake microseconds from now).
  void Run(int64_t until = 3600 * kS) {
    const int64_t end = clock.now + until;
    path->Pump();
    for (int steps = 0; steps < 1'000'000; ++steps) {
      const int64_t next_event = events_.empty() ? INT64_MAX : events_.next();
      const int64_t next = std::min(next_event, waker_.at);
      if (next == INT64_MAX || next > end) return;
      clock.now = std::max(clock.now, next);
      if (next_event <= waker_.at) {
        events_.Pop()();
      } else {
        waker_.at = INT64_MAX;
        path->Pump();
      }
    }
    FAIL() << "the world did not settle";
  }

  // The WARC records written, as (type, target URI).
  std::vector<std::pair<std::string, std::string>> Records() {
    (void)warc_->Flush();
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& name :
         OwnWarcFiles(dir_ + "/warc", config_.store.warc_prefix, 0)) {
      auto reader = store::WarcReader::Open(dir_ + "/warc/" + name).value();
      store::Record rec;
      while (true) {
        auto more = reader->Next(&rec);
        if (!more.ok() || !*more) break;
        out.emplace_back(rec.type(), rec.Header("WARC-Target-URI"));
      }
    }
    return out;
  }
  int RecordsOf(const std::string& type, const std::string& uri) {
    int n = 0;
    for (const auto& [t, u] : Records()) n += t == type && u == uri;
    return n;
  }

  // Queues `url` again behind the seen check, as a restart does with a
  // page that was in flight at the kill and is also queued anew.
  void Requeue(const std::string& url) {
    frontier::Item item;
    item.url = url;
    item.fingerprint = url::Fingerprint(url);
    item.seed_host = std::string(url::Parse(url)->host());
    ASSERT_TRUE(frontier_->Push(url::Parse(url)->origin_key(), item));
  }
  dedupe::ClaimTable& claims() { return *claims_; }
  // WARC-Record-IDs of the records of `uri`, as (type, id).
  std::vector<std::pair<std::string, std::string>> RecordIdsOf(
      const std::string& uri) {
    (void)warc_->Flush();
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& name :
         OwnWarcFiles(dir_ + "/warc", config_.store.warc_prefix, 0)) {
      auto reader = store::WarcReader::Open(dir_ + "/warc/" + name).value();
      store::Record rec;
      while (true) {
        auto more = reader->Next(&rec);
        if (!more.ok() || !*more) break;
        if (rec.Header("WARC-Target-URI") == uri) {
          out.emplace_back(rec.type(), rec.Header("WARC-Record-ID"));
        }
      }
    }
    return out;
  }

  // Dedupes against the earlier crawls in `sources` (dedupe.earlier).
  void SetEarlier(const std::vector<std::string>& sources) {
    earlier_ = store::EarlierCaptures::Load(sources).value();
    documents_->SetEarlier(earlier_.get());
  }
  // Flushes the WARC (and so its CDXJ lines) for a later crawl to read.
  void Flush() { (void)warc_->Flush(); }

  void KeepDir() { remove_dir_ = false; }
  // A checkpoint killed after it wrote the queues and before the seen
  // store's flush and the crawl state (Recovery::Checkpoint's steps 2-3).
  void CheckpointKilledAfterTheQueues() {
    ASSERT_TRUE(seen_store_->BeginCheckpoint().ok());
    std::vector<std::pair<std::string, frontier::Item>> in_flight;
    path->ForEachInFlight(
        [&](const std::string& key, const frontier::Item& item) {
          in_flight.emplace_back(key, item);
        });
    ASSERT_TRUE(frontier_->Checkpoint(in_flight).ok());
  }
  recrawl::Schedule* schedule() { return schedule_.get(); }
  // Every off-loop task (parse, robots.txt parse, record write) takes this
  // long from now on.
  void SetWorkTime(int64_t us) { pool_.work_us = us; }
  // Off-loop work runs when its time is up, not when it is handed over.
  void DeferWork() { pool_.defer_work = true; }
  const std::string& dir() const { return dir_; }

  FakeClock clock;
  FakeWeb web;
  CrawlStats stats;
  std::string fatal;
  bool accepting = true;
  std::unique_ptr<CrawlPath> path;
  std::unique_ptr<Recovery> recovery;

 private:
  class SeenAdapter final : public SeenTest {
   public:
    explicit SeenAdapter(dedupe::UrlSeenStore* store) : store_(store) {}
    bool InsertIfNew(std::string_view host_key, uint64_t fp) override {
      if (store_ == nullptr) return memory_.insert(fp).second;
      Result<bool> r = store_->InsertIfNew(SeenHostHash(host_key), fp);
      return !r.ok() || *r;
    }

   private:
    dedupe::UrlSeenStore* store_;
    std::unordered_set<uint64_t> memory_;
  };

  bool remove_dir_ = true;
  InlinePool pool_;
  FakeWaker waker_;
  EventLog log_;
  std::unique_ptr<url::Canonicalizer> canon_;
  std::unique_ptr<conf::TrapGuard> traps_;
  std::unique_ptr<frontier::IpGate> ip_gate_;
  std::unique_ptr<frontier::Frontier> frontier_;
  std::unique_ptr<conf::RuleSet> rules_;
  std::unique_ptr<conf::Overrides> overrides_;
  std::unique_ptr<HostTable> hosts_;
  std::unique_ptr<dedupe::ClaimTable> claims_;
  std::unique_ptr<store::EarlierCaptures> earlier_;
  std::unique_ptr<Documents> documents_;
  std::unique_ptr<store::WarcWriter> warc_;
  std::unique_ptr<checkpoint::Store> state_;
  std::unique_ptr<dedupe::UrlSeenStore> seen_store_;
  std::unique_ptr<SeenAdapter> seen_;
  std::unique_ptr<recrawl::Schedule> schedule_;
};

conf::Config Cfg() {
  conf::Config c;
  c.politeness.min_delay_ms = 100;
  c.politeness.max_delay_ms = 60000;
  c.politeness.delay_factor = 0;
  c.politeness.ip_min_delay_ms = 0;
  c.politeness.max_host_errors = 3;
  c.store.near_duplicate_bits = 0;
  c.fetch.max_connections = 16;
  // A small claim table: the default's (2 M documents, 256 MiB of text) is
  // created with a mutex in each of its 159,000 buckets, which took most
  // of each test's time. These webs hold a few pages.
  c.dedupe.max_documents = 1024;
  c.dedupe.text_bytes = 1 << 20;
  return c;
}

Page Html(std::string body) {
  Page p;
  p.body = std::move(body);
  return p;
}

Page Robots(std::string body) {
  Page p;
  p.headers = {{"Content-Type", "text/plain"}};
  p.body = std::move(body);
  return p;
}

Page Status(int status,
            std::vector<std::pair<std::string, std::string>> h = {}) {
  Page p;
  p.status = status;
  p.headers = std::move(h);
  return p;
}

// Gaps between the end of one request and the start of the next.
std::vector<int64_t> Gaps(const std::vector<Hit>& hits) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < hits.size(); ++i) {
    gaps.push_back(hits[i].start_us - hits[i - 1].end_us);
  }
  return gaps;
}

// --- RFC 9309 section 2.3.1, as the crawl obeys it
// ----------------------------

TEST(WorkerRfc9309, Sec2_3_1_RobotsTxtComesFirstAndItsRulesApply) {
  World w(Cfg());
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nDisallow: /private\n");
  w.web.pages["http://a.test/"] =
      Html("<a href=/private/x>p</a><a href=/public>q</a>");
  w.web.pages["http://a.test/public"] = Html("ok");
  w.Seed("http://a.test/");
  w.Run();
  ASSERT_GE(w.web.hits.size(), 3u);
  EXPECT_EQ(w.web.hits[0].url, "http://a.test/robots.txt");
  EXPECT_EQ(w.web.Count("http://a.test/private/x"), 0);
  EXPECT_EQ(w.web.Count("http://a.test/public"), 1);
  EXPECT_EQ(w.stats.count("robots_disallowed"), 1u);
  EXPECT_EQ(w.stats.robots_fetches, 1u);
  EXPECT_TRUE(w.path->Idle());
}

TEST(WorkerRfc9309, Sec2_3_1_3_NotFoundMeansEverythingAllowed) {
  World w(Cfg());
  w.web.pages["http://a.test/"] = Html("<a href=/x>x</a>");
  w.web.pages["http://a.test/x"] = Html("x");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/robots.txt"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/x"), 1);
}

TEST(WorkerRfc9309, Sec2_3_1_4_ServerErrorNoPagesBackoffThenRetire) {
  World w(Cfg());
  w.web.pages["http://a.test/robots.txt"] = Status(500);
  w.web.pages["http://a.test/"] = Html("never");
  w.Seed("http://a.test/");
  w.Run();
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  // max_host_errors = 3: robots.txt asked three times, then retired.
  ASSERT_EQ(hits.size(), 3u);
  for (const Hit& h : hits) EXPECT_EQ(h.url, "http://a.test/robots.txt");
  const std::vector<int64_t> gaps = Gaps(hits);
  EXPECT_GE(gaps[0], 2 * kS);   // the error backoff's base
  EXPECT_GT(gaps[1], gaps[0]);  // and it grows
  EXPECT_EQ(w.stats.count("robots_5xx"), 3u);
  EXPECT_TRUE(w.path->Idle());
}

TEST(WorkerRfc9309, Sec2_3_1_4_UnreachableHostFetchesNoPage) {
  World w(Cfg());
  Page down;
  down.network_error = true;
  w.web.pages["http://a.test/robots.txt"] = down;
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
  EXPECT_EQ(w.stats.count("robots_unreachable"), 3u);
  EXPECT_EQ(w.stats.count("connect"), 3u);
}

// A URL whose own failure retires its host (politeness.max_host_errors)
// ends there, and its end is counted once: not silently dropped between
// "retries" and "retries_exhausted" (seen with an HTTP/2 server resetting
// every stream).
TEST(WorkerPath, AUrlWhoseFailureRetiresItsHostIsCountedOnce) {
  World w(Cfg());  // max_host_errors = 3
  Page down;
  down.network_error = true;
  w.web.pages["http://a.test/robots.txt"] = Status(404);
  w.web.pages["http://a.test/"] = down;
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 3);
  EXPECT_EQ(
      w.stats.count("retries_exhausted") + w.stats.count("retired_host_drops"),
      1u);
  EXPECT_TRUE(w.path->Idle());
}

TEST(WorkerRfc9309, Sec2_3_1_4_LongOutageUsesTheLastGoodCopy) {
  conf::Config c = Cfg();
  c.politeness.robots_ttl_s = 1;
  c.politeness.robots_outage_grace_s = 0;
  c.politeness.min_delay_ms = 400;
  World w(c);
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nDisallow: /no\n");
  std::string chain;
  for (int i = 0; i < 8; ++i) {
    w.web.pages["http://a.test/p" + std::to_string(i)] =
        Html("<a href=/p" + std::to_string(i + 1) + ">n</a><a href=/no>x</a>");
  }
  w.Seed("http://a.test/p0");
  // robots.txt answers once, then fails for good.
  w.Run(600 * kMs);
  w.web.pages["http://a.test/robots.txt"] = Status(500);
  w.Run();
  EXPECT_GT(w.web.Count("http://a.test/robots.txt"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/p7"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/no"), 0);
  EXPECT_GT(w.stats.count("robots_last_good_used"), 0u);
}

// Issue 19: redirect hops of robots.txt went out 1-3 ms apart.
TEST(WorkerRfc9309, Sec2_3_1_2_Issue19_RedirectHopsKeepThePolitenessGap) {
  World w(Cfg());
  for (int i = 0; i < 5; ++i) {
    const std::string from = i == 0 ? "http://a.test/robots.txt"
                                    : "http://a.test/r" + std::to_string(i);
    w.web.pages[from] =
        Status(301, {{"Location", "/r" + std::to_string(i + 1)}});
  }
  w.web.pages["http://a.test/r5"] = Robots("User-agent: *\nDisallow: /\n");
  w.web.pages["http://a.test/"] = Html("disallowed");
  w.Seed("http://a.test/");
  w.Run();
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  ASSERT_EQ(hits.size(), 6u);  // five hops followed, then the rules apply
  for (int64_t gap : Gaps(hits)) EXPECT_GE(gap, 100 * kMs);
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
}

TEST(WorkerRfc9309, Sec2_3_1_2_MoreThanFiveHopsIsUnavailable) {
  World w(Cfg());
  for (int i = 0; i < 6; ++i) {
    const std::string from = i == 0 ? "http://a.test/robots.txt"
                                    : "http://a.test/r" + std::to_string(i);
    w.web.pages[from] =
        Status(302, {{"Location", "/r" + std::to_string(i + 1)}});
  }
  w.web.pages["http://a.test/"] = Html("allowed");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/r6"), 0);  // not a sixth hop
  EXPECT_EQ(w.web.Count("http://a.test/"), 1);    // and no rules
  EXPECT_EQ(w.stats.count("robots_too_many_redirects"), 1u);
}

// Issue 14: an undecodable robots.txt read as empty, i.e. allow all.
TEST(WorkerRfc9309, CrawldOnly_Issue14_UndecodableRobotsTxtIsUnreachable) {
  World w(Cfg());
  Page robots = Robots("\x1f\x8b\x08 not really gzip");
  robots.headers.emplace_back("Content-Encoding", "gzip");
  w.web.pages["http://a.test/robots.txt"] = robots;
  w.web.pages["http://a.test/"] = Html("never");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
  EXPECT_EQ(w.stats.count("robots_undecodable"), 3u);
}

// Issue 19: the body was cut at 512,000 bytes before the parser, so the
// line cut in half was obeyed as a whole rule ("Allow: /pub/x" cut to
// "Allow: /" opened a site that said "Disallow: /").
TEST(WorkerRfc9309, Sec2_5_Issue19_ALineCutByTheLimitIsIgnored) {
  World w(Cfg());
  std::string body = "User-agent: *\nDisallow: /\n";
  while (body.size() < 500 * 1024 - 9) body += "# padding\n";
  body.resize(500 * 1024 - 9, '#');
  body += "\nAllow: /pub/page\n";  // "Allow: /" ends at the limit
  ASSERT_EQ(body.substr(500 * 1024 - 8, 8), "Allow: /");
  w.web.pages["http://a.test/robots.txt"] = Robots(body);
  w.web.pages["http://a.test/pub/page"] = Html("closed");
  w.Seed("http://a.test/pub/page");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/pub/page"), 0);
  EXPECT_EQ(w.stats.count("robots_disallowed"), 1u);
}

// A robots.txt whose connection closed mid-body is not a whole file: its
// half line "Allow: /" must not open a "Disallow: /" site.
TEST(WorkerRfc9309, CrawldOnly_RobotsCutByTheNetworkIsUnreachable) {
  World w(Cfg());
  Page robots = Robots("User-agent: *\nDisallow: /\nAllow: /");
  robots.cut = true;
  w.web.pages["http://a.test/robots.txt"] = robots;
  w.web.pages["http://a.test/"] = Html("closed");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
  EXPECT_EQ(w.stats.count("robots_incomplete"), 3u);
}

// A robots.txt hop that reaches the IP gate before its address is due once
// waited forever: nothing else woke the crawl (the hostile web found it).
TEST(WorkerRfc9309, CrawldOnly_ARedirectHopWaitingForItsAddressIsWoken) {
  conf::Config c = Cfg();
  c.politeness.ip_min_delay_ms = 700;
  World w(c);
  w.web.pages["http://a.test/robots.txt"] =
      Status(301, {{"Location", "/real-robots"}});
  w.web.pages["http://a.test/real-robots"] = Robots("User-agent: *\n");
  w.web.pages["http://a.test/"] = Html("page");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/real-robots"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/"), 1);
  for (int64_t gap : Gaps(w.web.HitsOf("http://a.test/"))) {
    EXPECT_GE(gap, 700 * kMs);
  }
  EXPECT_TRUE(w.path->Idle());
}

// --- politeness
// -----------------------------------------------------------------

TEST(WorkerPoliteness, MinDelayBetweenRequestsToAHost) {
  World w(Cfg());
  std::string links;
  for (int i = 0; i < 10; ++i) {
    links += "<a href=/p" + std::to_string(i) + ">x</a>";
    w.web.pages["http://a.test/p" + std::to_string(i)] = Html("leaf");
  }
  w.web.pages["http://a.test/"] = Html(links);
  w.Seed("http://a.test/");
  w.Run();
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  ASSERT_EQ(hits.size(), 12u);  // robots.txt, the page, ten links
  for (int64_t gap : Gaps(hits)) EXPECT_GE(gap, 100 * kMs);
}

TEST(WorkerPoliteness, CrawlDelayFromRobotsTxt) {
  World w(Cfg());
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nCrawl-delay: 2\n");
  w.web.pages["http://a.test/"] = Html("<a href=/a>a</a><a href=/b>b</a>");
  w.Seed("http://a.test/");
  w.Run();
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  ASSERT_EQ(hits.size(), 4u);
  for (int64_t gap : Gaps(hits)) EXPECT_GE(gap, 2 * kS);
}

// RFC 9110 section 10.2.3: Retry-After on 503 is obeyed, even above
// max_delay.
TEST(WorkerPoliteness, Rfc9110_Sec10_2_3_RetryAfterOn503) {
  conf::Config c = Cfg();
  c.politeness.max_delay_ms = 1000;
  World w(c);
  w.web.pages["http://a.test/"] = Status(503, {{"Retry-After", "7"}});
  w.Seed("http://a.test/");
  w.Run(5 * kS);
  EXPECT_EQ(w.web.Count("http://a.test/"), 1);
  w.web.pages["http://a.test/"] = Html("back");
  w.Run();
  const std::vector<Hit> pages = w.web.HitsOf("http://a.test/");
  ASSERT_EQ(w.web.Count("http://a.test/"), 2);
  EXPECT_GE(pages.back().start_us - pages[pages.size() - 2].end_us, 7 * kS);
  EXPECT_EQ(w.stats.count("http_503"), 1u);
  EXPECT_EQ(w.stats.count("retries"), 1u);
}

TEST(WorkerPoliteness, OneRequestPerAddressAcrossHosts) {
  conf::Config c = Cfg();
  c.politeness.ip_min_delay_ms = 50;
  World w(c);
  for (const char* h : {"a", "b", "c"}) {
    const std::string host = std::string("http://") + h + ".test";
    w.web.addresses[std::string(h) + ".test"] = "10.9.9.9";
    w.web.pages[host + "/"] = Html("<a href=/1>1</a><a href=/2>2</a>");
    w.Seed(host + "/");
  }
  w.Run();
  EXPECT_EQ(w.web.hits.size(), 12u);
  EXPECT_EQ(w.web.max_in_flight_by_ip["10.9.9.9"], 1);
  std::vector<Hit> all = w.web.hits;
  std::sort(all.begin(), all.end(),
            [](const Hit& a, const Hit& b) { return a.start_us < b.start_us; });
  for (int64_t gap : Gaps(all)) EXPECT_GE(gap, 50 * kMs);
}

TEST(WorkerPoliteness, RepeatedNetworkErrorsRetireTheHost) {
  World w(Cfg());
  w.web.pages["http://a.test/"] = Html("<a href=/x>x</a>");
  Page down;
  down.network_error = true;
  w.web.pages["http://a.test/x"] = down;
  w.Seed("http://a.test/");
  w.Run();
  // /x is retried (max_retries 3), and the third consecutive error
  // retires the host: no fourth attempt.
  EXPECT_EQ(w.web.Count("http://a.test/x"), 3);
  EXPECT_EQ(w.stats.count("retries"), 3u);
  EXPECT_TRUE(w.path->Idle());
}

TEST(WorkerPoliteness, OverrideDelayReplacesTheRule) {
  World w(Cfg());
  w.SetOverrides("a.test delay-ms 1500\n");
  w.web.pages["http://a.test/"] = Html("<a href=/1>1</a>");
  w.Seed("http://a.test/");
  w.Run();
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  ASSERT_EQ(hits.size(), 3u);
  for (int64_t gap : Gaps(hits)) EXPECT_GE(gap, 1500 * kMs);
}

// --- redirects, duplicates, scope
// -----------------------------------------------

TEST(WorkerPath, RedirectsAreNewUrlsAndLoopsAreCounted) {
  World w(Cfg());
  w.web.pages["http://a.test/"] = Status(301, {{"Location", "/b"}});
  w.web.pages["http://a.test/b"] = Html("<a href=/loop1>l</a>");
  w.web.pages["http://a.test/loop1"] = Status(302, {{"Location", "/loop2"}});
  w.web.pages["http://a.test/loop2"] = Status(302, {{"Location", "/loop1"}});
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/b"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/loop1"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/loop2"), 1);
  EXPECT_EQ(w.stats.count("redirect_loop"), 1u);
  EXPECT_EQ(w.RecordsOf("response", "http://a.test/"), 1);
}

// Issue 19: a body identical to one stored earlier was written as a
// revisit and never parsed, so its relative links were never followed.
TEST(WorkerPath, Issue19_DuplicateBodiesAreRevisitsAndTheirLinksFollowed) {
  World w(Cfg());
  const Page same = Html("<a href=child>c</a>");
  w.web.pages["http://a.test/"] =
      Html("<a href=/dir1/>1</a><a href=/dir2/>2</a>");
  w.web.pages["http://a.test/dir1/"] = same;
  w.web.pages["http://a.test/dir2/"] = same;
  w.web.pages["http://a.test/dir1/child"] = Html("one");
  w.web.pages["http://a.test/dir2/child"] = Html("two");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/dir1/child"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/dir2/child"), 1);
  EXPECT_EQ(w.RecordsOf("response", "http://a.test/dir1/") +
                w.RecordsOf("response", "http://a.test/dir2/"),
            1);
  EXPECT_EQ(w.RecordsOf("revisit", "http://a.test/dir1/") +
                w.RecordsOf("revisit", "http://a.test/dir2/"),
            1);
  EXPECT_EQ(w.stats.count("revisits"), 1u);
}

// Issue 17 Build 4: a crawl started with an earlier crawl's data
// directory stores only what changed: an unchanged page is an
// identical-payload-digest revisit of the earlier capture (its record id
// and date read from the earlier WARC), robots.txt included; a changed
// one a response; and two pages of this crawl with an archived body are
// both revisits of it.
TEST(WorkerPath, Issue17_AnUnchangedPageOfAnEarlierCrawlIsARevisitOfIt) {
  World first(Cfg());
  first.web.pages["http://a.test/"] =
      Html("<a href=/same>s</a><a href=/changes>c</a>");
  first.web.pages["http://a.test/same"] = Html("never changes");
  first.web.pages["http://a.test/changes"] = Html("monday");
  first.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nDisallow: /private\n");
  first.Seed("http://a.test/");
  first.Run();
  first.Flush();
  std::string first_response;
  for (const auto& [type, id] : first.RecordIdsOf("http://a.test/same")) {
    if (type == "response") first_response = id;
  }
  ASSERT_FALSE(first_response.empty());

  World second(Cfg());
  second.SetEarlier({first.dir()});
  second.web.pages = first.web.pages;
  second.web.pages["http://a.test/changes"] = Html("tuesday");
  second.web.pages["http://a.test/"] =
      Html("<a href=/same>s</a><a href=/changes>c</a><a href=/copy>copy</a>");
  second.web.pages["http://a.test/copy"] = Html("never changes");
  second.Seed("http://a.test/");
  second.Run();
  EXPECT_EQ(second.RecordsOf("revisit", "http://a.test/same"), 1);
  EXPECT_EQ(second.RecordsOf("response", "http://a.test/same"), 0);
  EXPECT_EQ(second.RecordsOf("revisit", "http://a.test/copy"), 1);
  EXPECT_EQ(second.RecordsOf("response", "http://a.test/changes"), 1);
  EXPECT_EQ(second.RecordsOf("response", "http://a.test/"), 1);  // new links
  // robots.txt too, though no page task checks it.
  EXPECT_EQ(second.RecordsOf("revisit", "http://a.test/robots.txt"), 1);
  EXPECT_EQ(second.RecordsOf("response", "http://a.test/robots.txt"), 0);
  EXPECT_EQ(second.stats.count("dedupe_earlier"), 3u);
  EXPECT_EQ(second.stats.count("revisits"), 3u);
  // The revisit names the earlier capture.
  std::string refers_to, profile;
  for (const auto& file :
       std::filesystem::directory_iterator(second.dir() + "/warc")) {
    auto reader = store::WarcReader::Open(file.path().string());
    ASSERT_TRUE(reader.ok());
    store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      if (rec.type() == "revisit" &&
          rec.Header("WARC-Target-URI") == "http://a.test/same") {
        refers_to = rec.Header("WARC-Refers-To");
        profile = rec.Header("WARC-Profile");
      }
    }
  }
  EXPECT_EQ(refers_to, first_response);
  EXPECT_EQ(profile,
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest");
}

// Issue 19: record writes run off the loop. They still run one at a time
// and in order, so two copies of one body on two hosts whose writes wait
// together are one response and one revisit, and the checkpoint's look at
// the writer waits for the write in progress.
TEST(WorkerPath, Issue19_RecordWritesOffTheLoopKeepOrderAndDedupe) {
  World w(Cfg());
  w.SetWorkTime(2 * kS);
  const Page same = Html("<p>the same body on two hosts</p>");
  w.web.pages["http://a.test/"] = same;
  w.web.pages["http://b.test/"] = same;
  w.Seed("http://a.test/");
  w.Seed("http://b.test/");
  bool checked = false;
  w.path->WhenStoreIdle([&] { checked = true; });
  EXPECT_TRUE(checked);  // nothing was being written
  checked = false;
  // Until both pages wait for their record write (fake time: 60 s at most).
  for (int step = 0; step < 600 && w.path->records_pending() < 2; ++step) {
    const int64_t end = w.clock.now + 100'000;
    w.Run(/*until=*/100'000);
    w.clock.now = std::max(w.clock.now, end);
  }
  ASSERT_EQ(w.path->records_pending(), 2u);
  w.path->WhenStoreIdle([&] { checked = true; });
  EXPECT_FALSE(checked);  // a write is in progress
  w.Run();
  EXPECT_TRUE(checked);
  EXPECT_EQ(w.RecordsOf("response", "http://a.test/") +
                w.RecordsOf("response", "http://b.test/"),
            1);
  EXPECT_EQ(w.RecordsOf("revisit", "http://a.test/") +
                w.RecordsOf("revisit", "http://b.test/"),
            1);
}

// Recovery replays the WARC from the checkpoint's position on; a page the
// checkpoint holds in flight is fetched again. So when a checkpoint runs
// (the store idle), no page in flight may have its record written already:
// it would be fetched twice, three times after two kills (recovery.KillNine
// found a page stored three times). Its links are queued before its record
// is written, so a recorded page has nothing left to lose.
TEST(WorkerPath, Issue13_CheckpointNeverHoldsARecordedPageInFlight) {
  World w(Cfg());
  w.SetWorkTime(kS / 2);
  std::string links;
  for (int i = 0; i < 300; ++i) {  // more than one slice of links
    links += "<a href=/p" + std::to_string(i) + ">x</a>";
  }
  for (const char* host : {"http://a.test/", "http://b.test/", "http://c.test/",
                           "http://d.test/"}) {
    w.web.pages[host] = Html(links);
    w.Seed(host);
  }
  int checks = 0;
  int in_flight_seen = 0;
  std::function<void()> check = [&] {
    ++checks;
    w.path->ForEachInFlight([&](const std::string&, const frontier::Item& it) {
      ++in_flight_seen;
      EXPECT_EQ(w.RecordsOf("response", it.url), 0) << it.url;
    });
  };
  for (int step = 0; step < 2000 && w.stats.pages < 16; ++step) {
    w.path->WhenStoreIdle(check);
    const int64_t end = w.clock.now + 50'000;
    w.Run(/*until=*/50'000);
    w.clock.now = std::max(w.clock.now, end);
  }
  EXPECT_GE(w.stats.pages, 16u);
  EXPECT_GT(checks, 10);
  EXPECT_GT(in_flight_seen, 0);  // the check saw pages in flight
}

// Issue 13: `scope same-host` compares with the seed's host, carried with
// every URL, not with the host of the page the link was found on.
TEST(WorkerPath, Issue13_ScopeComparesWithTheSeedHost) {
  World w(Cfg());
  w.SetRules(
      "accept host b.test\n"
      "accept scope same-host\n"
      "default reject\n");
  w.web.pages["http://a.test/"] = Html("<a href=http://b.test/>b</a>");
  // From b.test (admitted by its own rule), links back to a.test are in
  // the seed's scope; links to b.test's own pages are not (b is not the
  // seed), except that the host rule admits them.
  w.web.pages["http://b.test/"] =
      Html("<a href=http://a.test/from-b>a</a><a href=http://c.test/>c</a>");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://b.test/"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/from-b"), 1);
  EXPECT_EQ(w.web.Count("http://c.test/"), 0);
}

// --- Sitemaps (docs/SITEMAPS.md) ------------------------------------------

Page Xml(std::string body) {
  Page p;
  p.headers = {{"Content-Type", "application/xml"}};
  p.body = std::move(body);
  return p;
}

std::string Urlset(const std::vector<std::string>& locs) {
  std::string x =
      "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">";
  for (const std::string& l : locs) x += "<url><loc>" + l + "</loc></url>";
  return x + "</urlset>";
}

std::string Index(const std::vector<std::string>& locs) {
  std::string x =
      "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">";
  for (const std::string& l : locs) {
    x += "<sitemap><loc>" + l + "</loc></sitemap>";
  }
  return x + "</sitemapindex>";
}

// A sitemap robots.txt names is fetched after robots.txt, on the host's
// politeness, and admits only what the protocol's scope allows: its host
// (anywhere on it, since its own robots.txt named it), not another host.
TEST(WorkerSitemaps, ARobotsTxtSitemapLeadsToPagesNoLinkReaches) {
  World w(Cfg());
  w.web.pages["http://a.test/robots.txt"] = Robots(
      "User-agent: *\nDisallow: /private\n"
      "Sitemap: http://a.test/maps/s.xml\n");
  w.web.pages["http://a.test/"] = Html("front");
  w.web.pages["http://a.test/maps/s.xml"] =
      Xml(Urlset({"http://a.test/maps/only", "http://a.test/maps/private",
                  "http://a.test/beside", "http://b.test/maps/x"}));
  w.web.pages["http://a.test/maps/only"] = Html("only in the sitemap");
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.hits[0].url, "http://a.test/robots.txt");
  EXPECT_EQ(w.web.Count("http://a.test/maps/s.xml"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/maps/only"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/maps/private"), 1);  // not /private
  EXPECT_EQ(w.web.Count("http://a.test/beside"), 1);
  EXPECT_EQ(w.web.Count("http://b.test/maps/x"), 0);
  EXPECT_EQ(w.stats.count("sitemap_reads"), 1u);
  EXPECT_EQ(w.stats.count("sitemap_urls_admitted"), 3u);
  EXPECT_EQ(w.stats.count("sitemap_urls_other_origin"), 1u);
  // One request at a time on the host, the gap kept, sitemap included.
  EXPECT_EQ(w.web.max_in_flight, 1);
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  for (size_t i = 1; i < hits.size(); ++i) {
    EXPECT_GE(hits[i].start_us - hits[i - 1].end_us, 100 * kMs) << i;
  }
  EXPECT_TRUE(w.path->Idle());
}

// "Sitemaps & Cross Submits": a.test's robots.txt names a sitemap on
// b.test, which may then list a.test's URLs; b.test's own URLs only under
// the sitemap's directory (b.test's robots.txt does not name it). An index
// passes that to its children; a child that is an index is not read.
TEST(WorkerSitemaps, CrossSubmittedSitemapsAndOneLevelOfIndex) {
  World w(Cfg());
  w.web.pages["http://a.test/robots.txt"] =
      Robots("Sitemap: http://b.test/maps/index.xml\n");
  w.web.pages["http://a.test/"] = Html("front");
  w.web.pages["http://b.test/maps/index.xml"] = Xml(
      Index({"http://b.test/maps/child.xml", "http://b.test/maps/deep.xml"}));
  w.web.pages["http://b.test/maps/child.xml"] =
      Xml(Urlset({"http://a.test/cross", "http://b.test/maps/own",
                  "http://b.test/elsewhere", "http://c.test/no"}));
  w.web.pages["http://b.test/maps/deep.xml"] =
      Xml(Index({"http://b.test/maps/never.xml"}));
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.web.Count("http://b.test/maps/index.xml"), 1);
  EXPECT_EQ(w.web.Count("http://b.test/maps/child.xml"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/cross"), 1);
  EXPECT_EQ(w.web.Count("http://b.test/maps/own"), 1);
  EXPECT_EQ(w.web.Count("http://c.test/no"), 0);
  EXPECT_EQ(w.web.Count("http://b.test/elsewhere"), 0);
  EXPECT_EQ(w.stats.count("sitemap_urls_outside_path"), 1u);
  EXPECT_EQ(w.stats.count("sitemap_urls_other_origin"), 1u);
  EXPECT_EQ(w.web.Count("http://b.test/maps/deep.xml"), 1);
  EXPECT_EQ(w.web.Count("http://b.test/maps/never.xml"), 0);
  EXPECT_EQ(w.stats.count("sitemap_nested_index"), 1u);
  // b.test's robots.txt came before its sitemap.
  const std::vector<Hit> b = w.web.HitsOf("http://b.test/");
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b[0].url, "http://b.test/robots.txt");
}

// A host naming more sitemaps than sitemaps.max_per_host gets that many
// read; the rest are counted. Off, none is read.
TEST(WorkerSitemaps, APerHostCapAndTheSwitch) {
  for (const bool on : {true, false}) {
    conf::Config c = Cfg();
    c.sitemaps.max_per_host = 2;
    c.sitemaps.from_robots = on;
    World w(c);
    std::string robots;
    for (int i = 0; i < 5; ++i) {
      const std::string u = "http://a.test/s" + std::to_string(i) + ".xml";
      robots += "Sitemap: " + u + "\n";
      w.web.pages[u] = Xml(Urlset({"http://a.test/p" + std::to_string(i)}));
    }
    w.web.pages["http://a.test/robots.txt"] = Robots(robots);
    w.web.pages["http://a.test/"] = Html("front");
    w.Seed("http://a.test/");
    w.Run();
    EXPECT_EQ(w.stats.count("sitemap_reads"), on ? 2u : 0u);
    EXPECT_EQ(w.stats.count("sitemap_cap"), on ? 3u : 0u);
    EXPECT_EQ(w.web.Count("http://a.test/p0"), on ? 1 : 0);
    EXPECT_EQ(w.web.Count("http://a.test/p2"), 0);
  }
}

TEST(WorkerPath, MaxPagesStopsStartingFetches) {
  conf::Config c = Cfg();
  c.crawl.max_pages = 3;
  World w(c);
  std::string links;
  for (int i = 0; i < 10; ++i)
    links += "<a href=/p" + std::to_string(i) + ">x</a>";
  w.web.pages["http://a.test/"] = Html(links);
  w.Seed("http://a.test/");
  w.Run();
  EXPECT_EQ(w.stats.pages, 3u);
}

TEST(WorkerPath, NotAcceptingStartsNothingNew) {
  World w(Cfg());
  w.web.pages["http://a.test/"] = Html("x");
  w.accepting = false;
  w.Seed("http://a.test/");
  w.Run(10 * kS);
  EXPECT_TRUE(w.web.hits.empty());
  w.accepting = true;
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 1);
}

// --- store failures and recovery
// ------------------------------------------------

// Issue 13 (recovery.KillNine, seed 33157): after a restart one URL can be
// queued twice, and a claim its killed fetcher left pending answers "yours"
// (kOwn) to both fetches; the second must be a revisit, not a second
// response record under the same WARC-Record-ID.
TEST(WorkerRecovery, Issue13_AClaimLeftByADeadProcessIsWrittenOnce) {
  World w(Cfg());
  w.SetWorkTime(2 * kS);  // the first write is still under way at the second
  const std::string uri = "http://a.test/p";
  w.web.pages[uri] = Html("<p>one body</p>");
  const std::string dead_id = "<urn:uuid:00000000-0000-4000-8000-00000000dead>";
  dedupe::DocumentClaim dead;
  dead.record_id = dead_id;
  dead.target_uri = uri;
  dead.time_us = 1;
  ASSERT_EQ(w.claims()
                .Claim(dedupe::DocumentDigest128(w.web.pages[uri].body), dead)
                .outcome,
            dedupe::ClaimOutcome::kClaimed);
  w.Seed(uri);
  w.Requeue(uri);
  w.Run();
  ASSERT_EQ(w.web.Count(uri), 2);
  const auto records = w.RecordIdsOf(uri);
  std::set<std::string> ids;
  int responses = 0, revisits = 0;
  for (const auto& [type, id] : records) {
    if (type == "request") continue;
    EXPECT_TRUE(ids.insert(id).second) << "WARC-Record-ID twice: " << id;
    responses += type == "response";
    revisits += type == "revisit";
    if (type == "response") {
      EXPECT_EQ(id, dead_id);
    }
  }
  EXPECT_EQ(responses, 1);
  EXPECT_EQ(revisits, 1);
}

// Issue 13 (recovery.KillNine, seed 2357): a record written after the last
// checkpoint by a process killed before it settled its claim is settled by
// the replay, before Recover() returns and so before the first fetch of
// the next run is checked; a copy of the same URL queued twice is then a
// revisit, not a second response under the record's id.
TEST(WorkerRecovery, Issue13_ReplaySettlesClaimsBeforeTheFirstFetch) {
  const std::string dir = TempDir();
  const std::string uri = "http://a.test/p";
  const Page page = Html("<p>the body</p>");
  const dedupe::Digest128 digest = dedupe::DocumentDigest128(page.body);
  std::string written_id;
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    w.web.pages[uri] = page;
    ASSERT_TRUE(w.recovery->Checkpoint("start").ok());
    w.Seed(uri);
    w.Run();
    for (const auto& [type, id] : w.RecordIdsOf(uri)) {
      if (type == "response") written_id = id;
    }
    ASSERT_FALSE(written_id.empty());
    // The kill came between the write and the settle: the claim is still
    // pending under the record's id.
    ASSERT_TRUE(w.claims().Settle(digest, written_id, false).ok());
    dedupe::DocumentClaim pending;
    pending.record_id = written_id;
    pending.target_uri = uri;
    pending.time_us = 1;
    ASSERT_EQ(w.claims().Claim(digest, pending).outcome,
              dedupe::ClaimOutcome::kClaimed);
  }
  World w(Cfg(), dir, /*checkpoints=*/true);
  w.web.pages[uri] = page;
  w.DeferWork();
  ASSERT_TRUE(w.recovery->Recover().ok());
  dedupe::DocumentClaim other;
  other.record_id = "<urn:uuid:00000000-0000-4000-8000-0000000000aa>";
  other.target_uri = "http://b.test/same-body";
  other.time_us = 2;
  const dedupe::ClaimResult now = w.claims().Claim(digest, other);
  EXPECT_EQ(now.outcome, dedupe::ClaimOutcome::kDuplicate);
  EXPECT_TRUE(now.claim.stored) << "the replayed record's claim is pending";
  w.Requeue(uri);
  w.Requeue(uri);  // one skipped as recorded, one fetched again
  w.Run();
  std::set<std::string> ids;
  int responses = 0;
  for (const auto& [type, id] : w.RecordIdsOf(uri)) {
    if (type == "request") continue;
    EXPECT_TRUE(ids.insert(id).second) << "WARC-Record-ID twice: " << id;
    responses += type == "response";
  }
  EXPECT_EQ(responses, 1);
}

// recovery.KillNine (5,000 pages, eight kills): about one recorded page in
// sixty came out fetched twice. Replaying a record follows its links, and
// following links pumped the frontier: the queue heads were dispatched in
// the middle of the replay, before the records after that one were
// replayed, so a page recorded later in the WARC (still queued as of the
// checkpoint) was fetched again. Nothing may be dispatched until the
// replay is over.
TEST(WorkerRecovery, NothingIsDispatchedBeforeTheReplayIsOver) {
  const std::string dir = TempDir();
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    w.web.pages["http://a.test/"] = Html("<a href=/next>next</a>");
    w.web.pages["http://a.test/next"] = Html("<p>end</p>");
    w.web.pages["http://b.test/"] = Html("<p>b</p>");
    w.web.pages["http://a.test/first"] = Html("<p>a first</p>");
    w.web.pages["http://b.test/first"] = Html("<p>b first</p>");
    // First both robots.txt, so that the next start has them.
    w.Seed("http://a.test/first");
    w.Seed("http://b.test/first");
    w.Run();
    w.Seed("http://a.test/");
    w.Seed("http://b.test/");
    // The checkpoint holds both pages queued; both are then recorded (a.test
    // first: its record, with a link, comes before b.test's in the WARC) and
    // the process dies before the next checkpoint.
    ASSERT_TRUE(w.recovery->Checkpoint("start").ok());
    w.Run();
    ASSERT_EQ(w.web.Count("http://b.test/"), 1);
  }
  World w(Cfg(), dir, /*checkpoints=*/true);
  w.web.pages["http://a.test/"] = Html("<a href=/next>next</a>");
  w.web.pages["http://a.test/next"] = Html("<p>end</p>");
  w.web.pages["http://b.test/"] = Html("<p>b</p>");
  ASSERT_TRUE(w.recovery->Recover().ok());
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
  EXPECT_EQ(w.web.Count("http://b.test/"), 0) << "fetched again";
  EXPECT_EQ(w.web.Count("http://a.test/next"), 0);
  EXPECT_EQ(w.RecordsOf("response", "http://b.test/"), 1);
}

// recovery.KillNine (one run in twelve of eight kills: 177 pages stored
// twice in one run): a kill between a checkpoint's queues and its seen
// store left queued URLs the seen store did not know; the replay of the
// page that linked them queued them again, and both copies were fetched.
// Recovery now puts the queued URLs into the seen store first.
TEST(WorkerRecovery, AKillBetweenTheQueuesAndTheSeenStoreFetchesNothingTwice) {
  const std::string dir = TempDir();
  auto web = [](World& w) {
    w.web.pages["http://a.test/first"] = Html("<p>warm-up</p>");
    w.web.pages["http://a.test/"] =
        Html("<a href=/l1>1</a><a href=/l2>2</a><a href=/l3>3</a>");
    for (const char* p : {"/l1", "/l2", "/l3"}) {
      w.web.pages[std::string("http://a.test") + p] = Html(p);
    }
  };
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    web(w);
    w.Seed("http://a.test/first");  // robots.txt first, for the next start
    w.Run();
    w.clock.now += kS;  // past the host's delay
    w.Seed("http://a.test/");
    ASSERT_TRUE(w.recovery->Checkpoint("interval").ok());
    // a.test/ is fetched and recorded, its links queued; the next fetch of
    // the host waits 100 ms.
    w.Run(50 * kMs);
    ASSERT_EQ(w.web.Count("http://a.test/"), 1);
    ASSERT_EQ(w.web.Count("http://a.test/l1"), 0);
    w.CheckpointKilledAfterTheQueues();
  }
  World w(Cfg(), dir, /*checkpoints=*/true);
  web(w);
  ASSERT_TRUE(w.recovery->Recover().ok());
  EXPECT_EQ(w.stats.count("seen_repaired"), 3);
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/"), 0);
  for (const char* p : {"/l1", "/l2", "/l3"}) {
    EXPECT_EQ(w.web.Count(std::string("http://a.test") + p), 1) << p;
  }
}

// Issue 16: an idle host's record leaves memory after a checkpoint and
// comes back at its next page: the same rules, the same Crawl-delay, no
// second robots.txt fetch; and the checkpoint keeps its copy for a restart.
TEST(WorkerRecovery, Issue16_AnIdleHostsRecordLeavesMemoryAndComesBackTheSame) {
  const std::string dir = TempDir();
  conf::Config c = Cfg();
  c.politeness.host_record_idle_s = 1;
  auto web = [](World& w) {
    w.web.pages["http://a.test/robots.txt"] =
        Robots("User-agent: *\nDisallow: /no\nCrawl-delay: 3\n");
    for (int i = 0; i < 6; ++i) {
      w.web.pages["http://a.test/p" + std::to_string(i)] = Html(
          "<a href=/no>x</a><a href=/p" + std::to_string(i + 1) + ">n</a>");
    }
    w.web.pages["http://a.test/no"] = Html("never");
    w.web.pages["http://a.test/new"] = Html("after the restart");
  };
  {
    World w(c, dir, /*checkpoints=*/true);
    w.KeepDir();
    web(w);
    w.Seed("http://a.test/p0");
    // A checkpoint every half second, as the worker's timer takes them.
    for (int step = 0; step < 400 && w.web.Count("http://a.test/p6") == 0;
         ++step) {
      const int64_t end = w.clock.now + kS / 2;
      w.Run(kS / 2);
      w.clock.now = std::max(w.clock.now, end);
      ASSERT_TRUE(w.recovery->Checkpoint("interval").ok());
    }
    EXPECT_EQ(w.web.Count("http://a.test/p6"), 1);
    EXPECT_EQ(w.web.Count("http://a.test/robots.txt"), 1);
    EXPECT_EQ(w.web.Count("http://a.test/no"), 0);
    // Between each two pages, 3 s apart, the record left and came back.
    EXPECT_GE(w.stats.count("host_records_evicted"), 6u);
    EXPECT_GE(w.stats.count("host_records_loaded"), 6u);
    for (int64_t gap : Gaps(w.web.HitsOf("http://a.test/"))) {
      EXPECT_GE(gap, 3 * kS);
    }
  }
  World w(c, dir, /*checkpoints=*/true);
  web(w);
  ASSERT_TRUE(w.recovery->Recover().ok());
  w.Seed("http://a.test/new");
  w.Run();
  EXPECT_EQ(w.web.Count("http://a.test/new"), 1);
  EXPECT_EQ(w.web.Count("http://a.test/robots.txt"), 0);
}

// Issue 13 (recovery.KillNine, seed 77643): a worker killed right after it
// created a WARC file, before the file's warcinfo reached the disk, left an
// empty file, which is no WARC. Recovery removes it (and only such files:
// the live writer's own new file stays).
TEST(WorkerRecovery, Issue13_AnEmptyWarcLeftByAKillIsRemoved) {
  const std::string dir = TempDir();
  const std::string uri = "http://a.test/p";
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    w.web.pages[uri] = Html("<p>x</p>");
    ASSERT_TRUE(w.recovery->Checkpoint("start").ok());
    w.Seed(uri);
    w.Run();
  }
  const std::string empty = dir + "/warc/" + Cfg().store.warc_prefix +
                            "-29991231235959-00000-00000.warc.gz";
  { std::ofstream(empty).flush(); }
  ASSERT_TRUE(std::filesystem::exists(empty));
  World w(Cfg(), dir, /*checkpoints=*/true);
  ASSERT_TRUE(w.recovery->Recover().ok());
  EXPECT_FALSE(std::filesystem::exists(empty));
  // What was recorded before is still there, and the live file too.
  EXPECT_EQ(w.RecordsOf("response", uri), 1);
  EXPECT_GE(std::distance(std::filesystem::directory_iterator(dir + "/warc"),
                          std::filesystem::directory_iterator{}),
            2);
}

// Issue 13: a URL queued twice in one process whose first fetch claimed
// the body (kNew) and is still being written when the second is checked:
// the table answers kOwn (the claim is pending under the same URI), and
// the second must become a revisit, not a second response under the
// first's record id.
TEST(WorkerRecovery, Issue13_ASecondFetchBeforeTheFirstSettledIsARevisit) {
  World w(Cfg());
  w.SetWorkTime(2 * kS);  // the first write is still under way at the second
  const std::string uri = "http://a.test/p";
  w.web.pages[uri] = Html("<p>one body</p>");
  w.Seed(uri);
  w.Requeue(uri);
  w.Run();
  ASSERT_EQ(w.web.Count(uri), 2);
  std::set<std::string> ids;
  int responses = 0, revisits = 0;
  for (const auto& [type, id] : w.RecordIdsOf(uri)) {
    if (type == "request") continue;
    EXPECT_TRUE(ids.insert(id).second) << "WARC-Record-ID twice: " << id;
    responses += type == "response";
    revisits += type == "revisit";
  }
  EXPECT_EQ(responses, 1);
  EXPECT_EQ(revisits, 1);
}

// Issue 13 (recovery.KillNine, seed 92667): a checkpoint taken after a
// record was written and before its claim's settle reached the table puts
// the record behind the checkpoint's WARC position, so the replay never
// sees it; a kill then leaves the claim pending. A fetch of that URL after
// the restart (it was queued twice) must be a revisit, not a second
// response under the same record id: the checkpoint says where the
// unsettled records begin and recovery settles them.
TEST(WorkerRecovery, Issue13_ACheckpointBeforeASettleKeepsTheClaimForRecovery) {
  const std::string dir = TempDir();
  const std::string uri = "http://a.test/p";
  const Page page = Html("<p>the body</p>");
  const dedupe::Digest128 digest = dedupe::DocumentDigest128(page.body);
  dedupe::DocumentClaim probe;
  probe.record_id = "<urn:uuid:00000000-0000-4000-8000-0000000000bb>";
  probe.target_uri = "http://b.test/probe";
  probe.time_us = 3;
  std::string written_id;
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    w.web.pages[uri] = page;
    w.DeferWork();
    w.SetWorkTime(1 * kS);
    ASSERT_TRUE(w.recovery->Checkpoint("start").ok());
    w.Seed(uri);
    // Step until the response is in the WARC and its claim still pending.
    for (int step = 0; step < 200 && written_id.empty(); ++step) {
      w.Run(50 * kMs);
      w.clock.now += 50 * kMs;  // Run stops at the last event before it
      for (const auto& [type, id] : w.RecordIdsOf(uri)) {
        if (type == "response") written_id = id;
      }
    }
    ASSERT_FALSE(written_id.empty());
    const dedupe::ClaimResult now = w.claims().Claim(digest, probe);
    ASSERT_EQ(now.outcome, dedupe::ClaimOutcome::kDuplicate);
    ASSERT_FALSE(now.claim.stored) << "settled before the checkpoint";
    ASSERT_TRUE(w.recovery->Checkpoint("interval").ok());
    // Killed here: the settle queued on the pool never runs.
  }
  World w(Cfg(), dir, /*checkpoints=*/true);
  w.web.pages[uri] = page;
  ASSERT_TRUE(w.recovery->Recover().ok());
  const dedupe::ClaimResult now = w.claims().Claim(digest, probe);
  EXPECT_EQ(now.outcome, dedupe::ClaimOutcome::kDuplicate);
  EXPECT_TRUE(now.claim.stored) << "the claim is still pending";
  w.Requeue(uri);
  w.Run();
  std::set<std::string> ids;
  int responses = 0;
  for (const auto& [type, id] : w.RecordIdsOf(uri)) {
    if (type == "request") continue;
    EXPECT_TRUE(ids.insert(id).second) << "WARC-Record-ID twice: " << id;
    responses += type == "response";
  }
  EXPECT_EQ(responses, 1);
}

TEST(WorkerRecovery, ReplayFollowsLinksOfRecordsAfterTheCheckpoint) {
  const std::string dir = TempDir();
  std::map<std::string, Page> web;
  web["http://a.test/"] =
      Html("<a href=/1>1</a><a href=/2>2</a><a href=/3>3</a>");
  for (int i = 1; i <= 3; ++i) {
    web["http://a.test/" + std::to_string(i)] =
        Html("<a href=/leaf" + std::to_string(i) + ">l</a>");
    web["http://a.test/leaf" + std::to_string(i)] = Html("leaf");
  }
  std::map<std::string, int> fetched;
  {
    World w(Cfg(), dir, /*checkpoints=*/true);
    w.KeepDir();
    w.web.pages = web;
    w.Seed("http://a.test/");
    ASSERT_TRUE(w.recovery->Checkpoint("start").ok());
    // Crawl a while, then "crash": no exit checkpoint.
    w.Run(450 * kMs);
    for (const Hit& h : w.web.hits) ++fetched[h.url];
    ASSERT_LT(fetched.size(), web.size() + 1);  // not finished
  }
  World w(Cfg(), dir, /*checkpoints=*/true);
  w.web.pages = web;
  auto previous = w.recovery->Recover();
  ASSERT_TRUE(previous.ok()) << previous.status().ToString();
  w.Run();
  for (const Hit& h : w.web.hits) ++fetched[h.url];
  for (const auto& [url, page] : web) {
    EXPECT_GE(fetched[url], 1) << url << " lost";
    // Recorded before the crash: not fetched again.
    EXPECT_LE(fetched[url], 1) << url << " fetched twice";
  }
}

}  // namespace
}  // namespace crawld::daemon

// --- Issue 17: recrawl and conditional GET
// ------------------------------------------------------------

namespace crawld::daemon {
namespace {

// A continuous crawl on the fake clock: one simulated day a fake second
// is not needed here; intervals are in fake seconds (time_scale 1).
conf::Config RecrawlCfg() {
  conf::Config c = Cfg();
  c.recrawl.enabled = true;
  c.recrawl.initial_interval_s = 20;
  c.recrawl.min_interval_s = 5;
  c.recrawl.max_interval_s = 160;
  c.recrawl.shrink = 0.5;
  c.recrawl.grow = 2;
  c.recrawl.time_scale = 1;
  return c;
}

Page Validated(std::string body, std::string etag) {
  Page p = Html(std::move(body));
  p.headers.emplace_back("ETag", std::move(etag));
  p.headers.emplace_back("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT");
  return p;
}

bool HasHeader(const Hit& h, const std::string& line) {
  return std::find(h.headers.begin(), h.headers.end(), line) != h.headers.end();
}

// Every record of `uri`, in order: type and the named WARC fields.
std::vector<std::map<std::string, std::string>> RecordFields(
    const std::string& dir, const std::string& uri) {
  std::vector<std::map<std::string, std::string>> out;
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/warc")) {
    files.push_back(f.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    auto reader = store::WarcReader::Open(file);
    if (!reader.ok()) continue;
    store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      if (rec.Header("WARC-Target-URI") != uri) continue;
      std::map<std::string, std::string> m;
      m["type"] = rec.type();
      for (const char* k : {"WARC-Record-ID", "WARC-Date", "WARC-Profile",
                            "WARC-Refers-To", "WARC-Refers-To-Target-URI",
                            "WARC-Refers-To-Date", "WARC-Payload-Digest"}) {
        m[k] = std::string(rec.Header(k));
      }
      out.push_back(std::move(m));
    }
  }
  return out;
}

// Issue 17 Build 2: an unchanged page is revisited with its validators;
// the 304 is a server-not-modified revisit (WARC 1.1 6.7.3) referring to
// the first capture, and the interval grows.
TEST(WorkerRecrawl, Issue17_AnUnchangedPageIsAsked304AndRecordedAsNotModified) {
  World w(RecrawlCfg());
  w.web.pages["http://a.test/"] = Validated("<p>still</p>", "\"v1\"");
  w.Seed("http://a.test/");
  w.Run(200 * kS);
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  std::vector<Hit> page;
  for (const Hit& h : hits) {
    if (h.url == "http://a.test/") page.push_back(h);
  }
  // 0, 20, 60, 140: the interval doubles, 20 -> 40 -> 80.
  ASSERT_EQ(page.size(), 4u);
  EXPECT_FALSE(HasHeader(page[0], "If-None-Match: \"v1\""));
  for (size_t i = 1; i < page.size(); ++i) {
    EXPECT_TRUE(HasHeader(page[i], "If-None-Match: \"v1\"")) << i;
    EXPECT_TRUE(
        HasHeader(page[i], "If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT"))
        << i;
  }
  const int64_t g1 = page[2].start_us - page[1].start_us;
  const int64_t g2 = page[3].start_us - page[2].start_us;
  EXPECT_NEAR(static_cast<double>(g1), 40.0 * kS, 1.0 * kS);
  EXPECT_NEAR(static_cast<double>(g2), 80.0 * kS, 1.0 * kS);
  auto records = RecordFields(w.dir(), "http://a.test/");
  std::vector<std::map<std::string, std::string>> main;
  for (auto& r : records) {
    if (r["type"] == "response" || r["type"] == "revisit") main.push_back(r);
  }
  ASSERT_EQ(main.size(), 4u);
  EXPECT_EQ(main[0]["type"], "response");
  for (size_t i = 1; i < main.size(); ++i) {
    EXPECT_EQ(main[i]["type"], "revisit") << i;
    EXPECT_EQ(main[i]["WARC-Profile"],
              "http://netpreserve.org/warc/1.1/revisit/server-not-modified");
    EXPECT_EQ(main[i]["WARC-Refers-To"], main[0]["WARC-Record-ID"]);
    EXPECT_EQ(main[i]["WARC-Refers-To-Target-URI"], "http://a.test/");
    EXPECT_EQ(main[i]["WARC-Refers-To-Date"], main[0]["WARC-Date"]);
    EXPECT_EQ(main[i]["WARC-Payload-Digest"], main[0]["WARC-Payload-Digest"]);
  }
  EXPECT_EQ(w.stats.count("recrawl_not_modified"), 3u);
  EXPECT_EQ(w.stats.count("recrawl_unchanged"), 3u);
  EXPECT_EQ(w.stats.count("recrawl_changed"), 0u);
  EXPECT_FALSE(w.path->Idle());  // the crawl goes on: it is scheduled
}

// A page that changes on every visit is revisited at the shortest interval
// and each change is a response; an unchanged page beside it backs off.
// Politeness holds for the revisits as for new URLs.
TEST(WorkerRecrawl, Issue17_ChangingPagesComeBackMoreOftenThanStaticOnes) {
  World w(RecrawlCfg());
  w.web.pages["http://a.test/"] =
      Validated("<a href=/c>c</a><a href=/s>s</a>", "\"root\"");
  w.web.pages["http://a.test/c"] = Validated("version 0", "\"c0\"");
  w.web.pages["http://a.test/s"] = Validated("static", "\"s\"");
  int version = 0;
  w.web.before_answer = [&](const std::string& url, Page* p) {
    if (url != "http://a.test/c") return;
    ++version;
    *p = Validated("version " + std::to_string(version),
                   "\"c" + std::to_string(version) + "\"");
  };
  w.Seed("http://a.test/");
  w.Run(300 * kS);
  const int changing = w.web.Count("http://a.test/c");
  const int still = w.web.Count("http://a.test/s");
  // /c: 20, then 10, then 5 s on (about 60 visits); /s: 20, 40, 80, 160.
  EXPECT_GE(changing, 40);
  EXPECT_LE(still, 5);
  EXPECT_GT(changing, 5 * still);
  int responses = 0;
  for (auto& r : RecordFields(w.dir(), "http://a.test/c")) {
    responses += r["type"] == "response";
  }
  EXPECT_EQ(responses, changing);
  for (int64_t gap : Gaps(w.web.HitsOf("http://a.test/"))) {
    EXPECT_GE(gap, 100 * kMs);
  }
}

// Lying servers get a counted, harmless outcome: a 304 to a request with
// no validators is recorded as what it is; an ETag that changes on every
// request never matches, so each visit is a 200, written as an
// identical-payload-digest revisit of the first capture.
TEST(WorkerRecrawl, Issue17_LyingValidatorsAreCountedAndHarmless) {
  World w(RecrawlCfg());
  w.web.pages["http://a.test/"] =
      Html("<a href=/liar>l</a><a href=/etag>e</a>");
  w.web.pages["http://a.test/liar"] = Status(304);
  w.web.pages["http://a.test/etag"] = Validated("same bytes", "\"e0\"");
  int n = 0;
  w.web.before_answer = [&](const std::string& url, Page* p) {
    if (url == "http://a.test/etag") {
      *p = Validated("same bytes", "\"e" + std::to_string(++n) + "\"");
    }
  };
  w.Seed("http://a.test/");
  w.Run(100 * kS);
  EXPECT_GE(w.stats.count("recrawl_304_unconditional"), 2u);
  EXPECT_EQ(w.stats.count("recrawl_not_modified"), 0u);
  EXPECT_GE(w.stats.count("recrawl_validator_miss"), 2u);
  auto etag = RecordFields(w.dir(), "http://a.test/etag");
  int responses = 0, revisits = 0;
  for (auto& r : etag) {
    if (r["type"] == "response") ++responses;
    if (r["type"] != "revisit") continue;
    ++revisits;
    EXPECT_EQ(r["WARC-Profile"],
              "http://netpreserve.org/warc/1.1/revisit/"
              "identical-payload-digest");
  }
  EXPECT_EQ(responses, 1);
  EXPECT_GE(revisits, 2);
  EXPECT_TRUE(w.fatal.empty());
}

// A validator is the server's text that crawld sends back: one with a
// control character (a bare CR ends a header line for some servers) is
// never sent, and the revisit is then an unconditional request; a clean
// Last-Modified beside it still is.
TEST(WorkerRecrawl, Issue17_AValidatorWithAControlCharacterIsNotSentBack) {
  World w(RecrawlCfg());
  Page p = Html("<p>x</p>");
  p.headers.emplace_back("ETag", "\"a\"\rX-Injected: 1");
  w.web.pages["http://a.test/"] = p;
  Page q = Validated("<p>y</p>", "\"b\"\x01");
  w.web.pages["http://a.test/lm"] = q;
  w.web.pages["http://a.test/robots.txt"] = Status(404);
  w.Seed("http://a.test/");
  w.Seed("http://a.test/lm");
  w.Run(50 * kS);
  int revisits = 0;
  for (const Hit& h : w.web.HitsOf("http://a.test/")) {
    for (const std::string& line : h.headers) {
      EXPECT_EQ(line.find('\r'), std::string::npos) << line;
      EXPECT_EQ(line.find('\x01'), std::string::npos) << line;
      EXPECT_NE(line.rfind("If-None-Match", 0), 0u) << line;
    }
    if (h.url == "http://a.test/lm" && !h.headers.empty()) {
      ++revisits;
      EXPECT_TRUE(
          HasHeader(h, "If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT"));
    }
  }
  EXPECT_GE(revisits, 1);
  EXPECT_GE(w.web.Count("http://a.test/"), 2);
}

// Without document dedupe (dedupe.documents = "off") an unchanged 200 is
// still an identical-payload-digest revisit of the URL's last capture: the
// schedule keeps its digest. A server without validators is asked
// unconditionally.
TEST(WorkerRecrawl, Issue17_AnUnchanged200IsARevisitEvenWithoutDedupe) {
  conf::Config c = RecrawlCfg();
  c.dedupe.documents = "off";
  World w(c);
  w.web.pages["http://a.test/"] = Html("<p>no validators</p>");
  w.Seed("http://a.test/");
  w.Run(100 * kS);
  const std::vector<Hit> hits = w.web.HitsOf("http://a.test/");
  int page = 0;
  for (const Hit& h : hits) {
    if (h.url != "http://a.test/") continue;
    ++page;
    EXPECT_TRUE(h.headers.empty()) << "nothing to be conditional on";
  }
  EXPECT_EQ(page, 3);  // 0, 20, 60
  auto records = RecordFields(w.dir(), "http://a.test/");
  std::string first_id;
  int responses = 0, revisits = 0;
  for (auto& r : records) {
    if (r["type"] == "response") {
      ++responses;
      first_id = r["WARC-Record-ID"];
    } else if (r["type"] == "revisit") {
      ++revisits;
      EXPECT_EQ(r["WARC-Refers-To"], first_id);
      EXPECT_EQ(r["WARC-Profile"],
                "http://netpreserve.org/warc/1.1/revisit/"
                "identical-payload-digest");
    }
  }
  EXPECT_EQ(responses, 1);
  EXPECT_EQ(revisits, 2);
  EXPECT_EQ(w.stats.count("recrawl_unchanged"), 2u);
  // Each revisit still has its metadata record (recovery reads links there).
  int metadata = 0;
  for (auto& r : records) metadata += r["type"] == "metadata";
  EXPECT_EQ(metadata, 3);
}

// The schedule is on disk: a worker started again on the same data
// directory (nothing seeded, nothing queued) revisits the page when it is
// due, conditionally, and the 304 refers to the record of the first run.
TEST(WorkerRecrawl, Issue17_TheScheduleAndValidatorsSurviveARestart) {
  const std::string dir = TempDir();
  int64_t stopped_at = 0;
  std::string first_id;
  {
    World w(RecrawlCfg(), dir);
    w.KeepDir();
    w.web.pages["http://a.test/"] = Validated("<p>still</p>", "\"v1\"");
    w.Seed("http://a.test/");
    w.Run(10 * kS);  // the first capture, not yet due again
    ASSERT_EQ(w.web.Count("http://a.test/"), 1);
    stopped_at = w.clock.now;
    for (auto& r : RecordFields(dir, "http://a.test/")) {
      if (r["type"] == "response") first_id = r["WARC-Record-ID"];
    }
  }
  ASSERT_FALSE(first_id.empty());
  World w(RecrawlCfg(), dir);
  w.clock.now = stopped_at;  // the wall clock goes on
  w.web.pages["http://a.test/"] = Validated("<p>still</p>", "\"v1\"");
  w.Run(30 * kS);
  std::vector<Hit> page;
  for (const Hit& h : w.web.hits) {
    if (h.url == "http://a.test/") page.push_back(h);
  }
  ASSERT_EQ(page.size(), 1u);  // due 20 s after the first capture
  EXPECT_TRUE(HasHeader(page[0], "If-None-Match: \"v1\""));
  int revisits = 0;
  for (auto& r : RecordFields(dir, "http://a.test/")) {
    if (r["type"] != "revisit") continue;
    ++revisits;
    EXPECT_EQ(r["WARC-Refers-To"], first_id);
  }
  EXPECT_EQ(revisits, 1);
}

// Issue 17, "survives rebalances": the schedule of a host that moved to
// another worker goes there with its capture. The sender keeps it until the
// exchange acknowledged it (a kill before that loses nothing: the next
// start sends it again), then deletes it and never visits the URL again.
// The new owner keeps the newest copy of a capture (a copy twice, an older
// one, change nothing), and its first visit is conditional, the 304 a
// revisit of the old owner's record.
TEST(WorkerRecrawl, Issue17_AMovedHostsScheduleGoesToItsNewOwnerSafely) {
  const std::string dir = TempDir();
  const uint64_t fp = url::Fingerprint("http://b.test/");
  FakeRouter ring;
  int64_t wall = 0;
  {
    World w(RecrawlCfg(), dir, false, &ring);
    w.KeepDir();
    w.web.pages["http://b.test/"] = Validated("<p>still</p>", "\"v1\"");
    w.Seed("http://b.test/");
    w.Run(10 * kS);  // fetched here, due again 20 s after
    ASSERT_EQ(w.web.Count("http://b.test/"), 1);
    ring.owner["b.test"] = 1;  // the ring changed
    w.path->SweepSchedule();
    w.Run(1 * kS);
    ASSERT_EQ(ring.sent.size(), 1u);
    EXPECT_EQ(ring.sent[0].first, 1);
    EXPECT_EQ(ring.sent[0].second.url, "http://b.test/");
    auto kept = w.schedule()->Get(fp);
    ASSERT_TRUE(kept.ok());
    EXPECT_TRUE(kept->has_value()) << "deleted before the ack";
    EXPECT_FALSE(w.path->Idle());
    wall = w.clock.now;
  }  // killed before the ack: what it sent died with it
  std::string first_id;
  for (auto& r : RecordFields(dir, "http://b.test/")) {
    if (r["type"] == "response") first_id = r["WARC-Record-ID"];
  }
  ASSERT_FALSE(first_id.empty());
  ring.unacked.clear();
  {
    World w(RecrawlCfg(), dir, false, &ring);
    w.clock.now = wall;
    w.web.pages["http://b.test/"] = Validated("<p>still</p>", "\"v1\"");
    w.path->SweepSchedule();
    w.Run(1 * kS);
    ASSERT_EQ(ring.sent.size(), 2u);  // handed over again
    EXPECT_EQ(ring.sent[1].second.capture, ring.sent[0].second.capture);
    ASSERT_TRUE(w.schedule()->Get(fp).value().has_value());
    ring.unacked.clear();  // acknowledged now
    w.Run(1 * kS);
    EXPECT_FALSE(w.schedule()->Get(fp).value().has_value());
    EXPECT_EQ(w.stats.count("recrawl_handed_off"), 1u);
    w.Run(100 * kS);  // past every due time: not visited here any more
    EXPECT_EQ(w.web.Count("http://b.test/"), 0);
    EXPECT_EQ(ring.sent.size(), 2u);
    EXPECT_TRUE(w.path->Idle());
  }

  // The new owner.
  const cluster::UrlMessage handed = ring.sent[1].second;
  auto capture = recrawl::DecodeCapture(handed.capture);
  ASSERT_TRUE(capture.ok());
  EXPECT_EQ(capture->etag, "\"v1\"");
  EXPECT_EQ(capture->record_id, first_id);
  recrawl::Capture older = *capture;
  older.fetched_us -= 5 * kS;
  older.etag = "\"v0\"";
  cluster::UrlMessage stale = handed;
  stale.capture = recrawl::EncodeCapture(older);
  cluster::UrlMessage junk = handed;
  junk.capture = "not a capture";
  World owner(RecrawlCfg());
  owner.clock.now = wall;
  owner.web.pages["http://b.test/"] = Validated("<p>still</p>", "\"v1\"");
  // Each is done with (kept, or dropped loudly): acknowledged.
  EXPECT_TRUE(owner.path->ReceiveCapture(handed));
  EXPECT_TRUE(owner.path->ReceiveCapture(handed));  // at-least-once: a copy
  EXPECT_TRUE(owner.path->ReceiveCapture(stale));
  EXPECT_TRUE(owner.path->ReceiveCapture(junk));
  EXPECT_EQ(owner.stats.count("recrawl_received"), 1u);
  EXPECT_EQ(owner.stats.count("recrawl_received_stale"), 2u);
  EXPECT_EQ(owner.stats.count("recrawl_handoff_malformed"), 1u);
  owner.Run(30 * kS);  // due 20 s after the first visit
  std::vector<Hit> page;
  for (const Hit& h : owner.web.hits) {
    if (h.url == "http://b.test/") page.push_back(h);
  }
  ASSERT_EQ(page.size(), 1u);
  EXPECT_TRUE(HasHeader(page[0], "If-None-Match: \"v1\""));
  // When the old owner would have come back, not before (wall clock).
  const int64_t wall_minus_now = owner.clock.WallUs() - owner.clock.now;
  EXPECT_GE(page[0].start_us + wall_minus_now, capture->due_us);
  int revisits = 0;
  for (auto& r : RecordFields(owner.dir(), "http://b.test/")) {
    EXPECT_NE(r["type"], "response");
    if (r["type"] != "revisit") continue;
    ++revisits;
    EXPECT_EQ(r["WARC-Profile"],
              "http://netpreserve.org/warc/1.1/revisit/server-not-modified");
    EXPECT_EQ(r["WARC-Refers-To"], first_id);
  }
  EXPECT_EQ(revisits, 1);
}

// New URLs are not starved by a pile of due revisits: at most
// recrawl.max_queued of them are in the frontier at once, so a new link a
// revisit finds waits behind those few, not behind everything due.
TEST(WorkerRecrawl, Issue17_NewUrlsWaitBehindAtMostMaxQueuedRevisits) {
  conf::Config c = RecrawlCfg();
  c.recrawl.max_queued = 2;
  World w(c);
  std::string links;
  for (int i = 0; i < 10; ++i) {
    const std::string p = "/p" + std::to_string(i);
    links += "<a href=" + p + ">x</a>";
    w.web.pages["http://a.test" + p] = Validated("page " + p, "\"" + p + "\"");
  }
  w.web.pages["http://a.test/"] = Validated(links, "\"r1\"");
  w.Seed("http://a.test/");
  w.Run(15 * kS);                     // the first pass, nothing due yet
  ASSERT_EQ(w.web.hits.size(), 12u);  // robots.txt, /, p0..p9
  // Paused past the first interval: every page is due at once.
  w.accepting = false;
  w.clock.now += 30 * kS;
  w.web.pages["http://a.test/"] =
      Validated(links + "<a href=/new>new</a>", "\"r2\"");
  w.web.pages["http://a.test/new"] = Html("new");
  w.accepting = true;
  w.Run(10 * kS);
  size_t root = 0, fresh = 0;
  for (size_t i = 12; i < w.web.hits.size(); ++i) {
    if (w.web.hits[i].url == "http://a.test/" && root == 0) root = i;
    if (w.web.hits[i].url == "http://a.test/new") fresh = i;
  }
  ASSERT_GT(root, 0u);
  ASSERT_GT(fresh, root);
  // Behind the at most two revisits queued when it was found (the root's
  // own slot among them), not behind the ten that were due.
  EXPECT_LE(fresh - root, 3u);
  EXPECT_EQ(w.web.Count("http://a.test/p9"), 2);  // and they all come
}

// The default configuration is a one pass: nothing is scheduled, no
// validators are sent, and the crawl ends when the frontier is empty.
TEST(WorkerRecrawl, Issue17_OffByDefaultOnePassAsBefore) {
  World w(Cfg());
  w.web.pages["http://a.test/"] = Validated("<p>once</p>", "\"v1\"");
  w.Seed("http://a.test/");
  w.Run(200 * kS);
  EXPECT_EQ(w.web.Count("http://a.test/"), 1);
  EXPECT_TRUE(w.path->Idle());
  EXPECT_EQ(w.stats.count("recrawl_released"), 0u);
}

// --- Issue 17: what steers an interval (recrawl rules, sitemap hints) ---

// Visit times (fake seconds since the first) of one URL.
std::vector<double> VisitsOf(const World& w, const std::string& url) {
  std::vector<double> out;
  for (const Hit& h : w.web.hits) {
    if (h.url == url) out.push_back(static_cast<double>(h.start_us) / kS);
  }
  for (size_t i = out.size(); i-- > 0;) out[i] -= out[0];
  return out;
}

// A recrawl rule fixes /news at 10 s whatever it finds, a range keeps the
// rest within 50..60 s (the initial 20 s clamped up); after a reload the
// new rule applies from each URL's next visit on.
TEST(WorkerRecrawl, Issue17_RecrawlRulesSetIntervalsAndAReloadAppliesNext) {
  World w(RecrawlCfg());
  w.SetRules(
      "recrawl 10s   prefix http://a.test/news\n"
      "recrawl 50s..60s any\n");
  w.web.pages["http://a.test/"] = Html("<a href=/news>n</a>");
  w.web.pages["http://a.test/news"] = Validated("same news", "\"n\"");
  w.Seed("http://a.test/");
  w.Run(125 * kS);
  const std::vector<double> news = VisitsOf(w, "http://a.test/news");
  const std::vector<double> front = VisitsOf(w, "http://a.test/");
  // /news: every 10 s though it never changes (12 or 13 visits);
  // /: 0, 50, 110 (50, then 100 clamped to 60).
  ASSERT_GE(news.size(), 12u);
  for (size_t i = 1; i < news.size(); ++i) {
    EXPECT_NEAR(news[i] - news[i - 1], 10.0, 0.5) << i;
  }
  ASSERT_EQ(front.size(), 3u);
  EXPECT_NEAR(front[1], 50.0, 0.5);
  EXPECT_NEAR(front[2], 110.0, 0.5);
  // Reload: every URL weekly-ish (30 s) from its next visit on.
  w.SetRules("recrawl 30s any\n");
  const size_t before = news.size();
  w.Run(100 * kS);
  const std::vector<double> after = VisitsOf(w, "http://a.test/news");
  ASSERT_GE(after.size(), before + 3);
  // The visit planned under the old rule comes 10 s on, then 30 s gaps.
  EXPECT_NEAR(after[before] - after[before - 1], 10.0, 0.5);
  for (size_t i = before + 1; i < after.size(); ++i) {
    EXPECT_NEAR(after[i] - after[i - 1], 30.0, 0.5) << i;
  }
}

conf::Config HintCfg() {
  conf::Config c = RecrawlCfg();
  // An hour is 10 fake seconds: min 5 s, initial 20 s, max 160 s.
  c.recrawl.time_scale = 360;
  c.recrawl.min_interval_s = 1800;
  c.recrawl.initial_interval_s = 7200;
  c.recrawl.max_interval_s = 57600;
  return c;
}

std::string HintedUrlset(
    const std::vector<std::pair<std::string, std::string>>& locs) {
  std::string x =
      "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">";
  for (const auto& [loc, extra] : locs) {
    x += "<url><loc>" + loc + "</loc>" + extra + "</url>";
  }
  return x + "</urlset>";
}

// A sitemap's changefreq is the first interval of the pages it lists
// (clamped to the bounds), unless a recrawl rule says otherwise.
TEST(WorkerRecrawl, Issue17_SitemapChangefreqIsTheFirstIntervalRulesWin) {
  World w(HintCfg());
  w.SetRules("recrawl 12h prefix http://a.test/ruled\n");  // 120 s
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nSitemap: http://a.test/s.xml\n");
  w.web.pages["http://a.test/"] = Html("front");
  w.web.pages["http://a.test/s.xml"] = Xml(HintedUrlset({
      {"http://a.test/always", "<changefreq>always</changefreq>"},
      {"http://a.test/hourly", "<changefreq>hourly</changefreq>"},
      {"http://a.test/plain", ""},
      {"http://a.test/daily", "<changefreq>daily</changefreq>"},
      {"http://a.test/never", "<changefreq>never</changefreq>"},
      {"http://a.test/ruled", "<changefreq>hourly</changefreq>"},
  }));
  for (const char* p :
       {"always", "hourly", "plain", "daily", "never", "ruled"}) {
    w.web.pages[std::string("http://a.test/") + p] = Html(p);
  }
  w.Seed("http://a.test/");
  w.Run(150 * kS);
  auto second = [&](const char* p) {
    const std::vector<double> v =
        VisitsOf(w, std::string("http://a.test/") + p);
    return v.size() < 2 ? -1.0 : v[1];
  };
  EXPECT_NEAR(second("always"), 5.0, 1.0);   // the minimum
  EXPECT_NEAR(second("hourly"), 10.0, 1.0);  // an hour
  EXPECT_NEAR(second("plain"), 20.0, 1.0);   // initial_interval_s
  EXPECT_NEAR(second("ruled"), 120.0, 1.0);  // the rule, not hourly
  // A day and "never" are past the 160 s maximum: not yet back.
  EXPECT_EQ(second("daily"), -1.0);
  EXPECT_EQ(second("never"), -1.0);
}

// A sitemap listing a captured page with a lastmod after its capture
// makes it due now; an older lastmod changes nothing.
TEST(WorkerRecrawl, Issue17_ALaterSitemapLastmodMakesACapturedPageDue) {
  World w(HintCfg());
  // The fake wall clock starts at 1764000000 s (2025-11-24T16:00:00Z).
  for (const char* host : {"a", "b"}) {
    const std::string origin = std::string("http://") + host + ".test";
    w.web.pages[origin + "/robots.txt"] =
        Robots("User-agent: *\nSitemap: " + origin + "/s.xml\n");
    w.web.pages[origin + "/"] = Html("front");
    // a.test's lastmod falls between the front page's capture (about
    // 1 s in) and the sitemap's arrival (its answer takes 3 s); b.test's
    // is an hour before the crawl.
    const std::string lastmod =
        host[0] == 'a' ? "2025-11-24T16:00:02Z" : "2025-11-24T15:00:00Z";
    Page sitemap = Xml(
        HintedUrlset({{origin + "/", "<lastmod>" + lastmod + "</lastmod>"}}));
    sitemap.latency_us = 3 * kS;
    w.web.pages[origin + "/s.xml"] = std::move(sitemap);
    w.Seed(origin + "/");
  }
  w.Run(30 * kS);
  const std::vector<double> a = VisitsOf(w, "http://a.test/");
  const std::vector<double> b = VisitsOf(w, "http://b.test/");
  ASSERT_GE(a.size(), 2u);
  ASSERT_GE(b.size(), 2u);
  // a.test/: changed after its capture, says the sitemap: back as soon
  // as the sitemap is read (about 4 s in; 6 s with politeness), not
  // after 20 s.
  EXPECT_LT(a[1], 8.0);
  EXPECT_NEAR(b[1], 20.0, 1.0);
  EXPECT_EQ(w.stats.count("recrawl_lastmod_due"), 1u);
}

// The page budget bounds the distinct pages a host may take (a trap), not
// how often its pages are kept fresh: a host whose two pages have used its
// budget of three is still revisited. (Before, revisits counted, and every
// host of a continuous crawl stopped being revisited at its budget.)
TEST(WorkerRecrawl, Issue17_RevisitsDoNotSpendTheHostsPageBudget) {
  conf::Config cfg = RecrawlCfg();
  cfg.frontier.base_page_budget = 3;
  cfg.frontier.budget_pages_per_credit = 0;  // the seed's credit adds none
  World w(cfg);
  w.web.pages["http://a.test/"] = Html("<a href=/b>b</a><a href=/c>c</a>");
  w.web.pages["http://a.test/b"] = Html("b");
  w.web.pages["http://a.test/c"] = Html("c");
  w.Seed("http://a.test/");
  w.Run(200 * kS);
  // Three pages fetched once each: the budget is spent on new pages...
  // ...and each comes back at 20, 60 and 140 s all the same.
  for (const char* p :
       {"http://a.test/", "http://a.test/b", "http://a.test/c"}) {
    EXPECT_EQ(VisitsOf(w, p).size(), 4u) << p;
  }
  EXPECT_GE(w.stats.count("recrawl_visits"), 9u);
}

// In a continuous crawl a sitemap is revisited like a page, and each read
// admits its entries again: a lastmod that moved past a page's capture
// makes the page due at once, long before its own interval. (Before, a
// sitemap was read once per crawl, so lastmod only counted on that read.)
TEST(WorkerRecrawl, Issue17_ASitemapIsReadAgainAndItsNewLastmodMakesAPageDue) {
  World w(HintCfg());
  // Pages under /p come back every 16 h (160 fake s); the sitemap at the
  // initial 2 h (20 fake s).
  w.SetRules("recrawl 16h prefix http://a.test/p\ndefault accept\n");
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nSitemap: http://a.test/s.xml\n");
  w.web.pages["http://a.test/"] = Html("front");
  w.web.pages["http://a.test/p"] = Html("listed");
  // The fake wall clock starts at 2025-11-24T16:00:00Z.
  w.web.pages["http://a.test/s.xml"] = Xml(HintedUrlset(
      {{"http://a.test/p", "<lastmod>2025-11-24T15:00:00Z</lastmod>"}}));
  w.Seed("http://a.test/");
  w.Run(8 * kS);
  ASSERT_EQ(VisitsOf(w, "http://a.test/s.xml").size(), 1u);
  ASSERT_EQ(VisitsOf(w, "http://a.test/p").size(), 1u);
  // The page changed after its capture (about 2 s in), says the sitemap.
  w.web.pages["http://a.test/s.xml"] = Xml(HintedUrlset(
      {{"http://a.test/p", "<lastmod>2025-11-24T16:00:06Z</lastmod>"}}));
  w.Run(60 * kS);
  const std::vector<double> sitemap = VisitsOf(w, "http://a.test/s.xml");
  const std::vector<double> page = VisitsOf(w, "http://a.test/p");
  ASSERT_GE(sitemap.size(), 2u);
  EXPECT_NEAR(sitemap[1], 20.0, 2.0);  // its own interval
  ASSERT_GE(page.size(), 2u);
  // Back right after the sitemap's second read, not at 160 s.
  EXPECT_LT(page[1], 30.0);
  EXPECT_GE(w.stats.count("recrawl_lastmod_due"), 1u);
  // The sitemap's revisit is in the schedule as a sitemap: its capture
  // says so (it is released as one, its entries read again).
  auto capture =
      w.schedule()->Get(url::Fingerprint("http://a.test/s.xml")).value();
  ASSERT_TRUE(capture.has_value());
  EXPECT_EQ(capture->kind, static_cast<uint8_t>(frontier::ItemKind::kSitemap));
}

// A sitemap read after its URLs were met by links (the usual order: the
// front page is fetched before the sitemap) still gives them their first
// interval: the captured front page's is planned again, the queued link's
// is taken at its first capture.
TEST(WorkerRecrawl, Issue17_ChangefreqCountsForUrlsMetBeforeTheSitemap) {
  World w(HintCfg());
  w.web.pages["http://a.test/robots.txt"] =
      Robots("User-agent: *\nSitemap: http://a.test/s.xml\n");
  w.web.pages["http://a.test/"] = Html("<a href=/x>x</a><a href=/y>y</a>");
  w.web.pages["http://a.test/s.xml"] = Xml(HintedUrlset({
      {"http://a.test/", "<changefreq>hourly</changefreq>"},
      {"http://a.test/x", "<changefreq>always</changefreq>"},
  }));
  w.web.pages["http://a.test/x"] = Html("x");
  w.web.pages["http://a.test/y"] = Html("y");
  w.Seed("http://a.test/");
  w.Run(40 * kS);
  const std::vector<double> front = VisitsOf(w, "http://a.test/");
  const std::vector<double> x = VisitsOf(w, "http://a.test/x");
  const std::vector<double> y = VisitsOf(w, "http://a.test/y");
  ASSERT_GE(front.size(), 2u);
  ASSERT_GE(x.size(), 2u);
  ASSERT_GE(y.size(), 2u);
  EXPECT_NEAR(front[1], 10.0, 1.0);  // hourly, not the initial 20 s
  EXPECT_NEAR(x[1], 5.0, 1.0);       // always: the minimum
  EXPECT_NEAR(y[1], 20.0, 1.0);      // no hint: initial_interval_s
  EXPECT_EQ(w.stats.count("recrawl_changefreq_replanned"), 1u);
}

}  // namespace
}  // namespace crawld::daemon
