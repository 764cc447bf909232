// daemon/crawl_path.h: the way of one URL through a worker, top to bottom,
// in the order of ARCHITECTURE.md ("The way of one URL"). crawl_path.cc
// holds steps 1-14 in this order, one function each, crawl_path_links.cc
// steps 15-16:
//
//    1. enter          Enter()          a seed, an API call, a link, a
//                                       redirect, a URL from another worker
//    2. canonicalize   Enter()          url::Canonicalizer (WHATWG + crawler
//                                       normalization); invalid: counted
//    3. filter         Filter()         conf::RuleSet, first match decides
//    4. traps          Enter()          conf::TrapGuard's shape checks
//    5. route          Route()          the ring's owner; another worker's
//                                       host goes to it through the Router
//    6. seen           Admit()          the seen-set; then the trap budgets
//    7. enqueue        Admit()          frontier::Frontier::TryPush
//    8. schedule       Pump()           frontier::Frontier::Pop, the host
//                                       with the most credit whose time came
//    9. robots gate    Dispatch()       HostTable::CheckPage: robots.txt is
//                                       fetched first (a job of its own),
//                                       disallowed pages are released
//   10. resolve        Resolve()        dns (c-ares), private-address guard
//   11. IP gate        EnterIpGate()    frontier::IpGate, one per address
//   12. fetch          Fetch()          fetcher (curl multi); OnFetched()
//                                       frees the host and address slots
//                                       and sorts the outcome
//   13. parse          Process()        off the loop (WorkPool), a PageTask
//                                       (page_task.h): decode, sniff, parse,
//                                       SimHash; the body's digest claimed
//                                       crawl-wide (documents.h)
//   14. record         Record()         Recorder (recorder.h): the WARC
//                                       response (under the claimed record
//                                       id) or revisit, metadata; off the
//                                       loop, one fetch at a time, in
//                                       order; the claim settled
//   15. credit         FollowLinks()    AOPIC: the page's credit shared
//   16. links          FollowLinks()    each outlink back to step 1
//
// A sitemap (docs/SITEMAPS.md) takes the same way as a page, as a job of
// another kind (frontier::ItemKind): entered from the Sitemap: lines of a
// robots.txt (after step 12 of the robots.txt job) or from an index's
// children, read at step 13 by sitemap::Reader with the protocol's scope;
// its entries are its links (crawl_path_sitemaps.cc).
// A continuous crawl ([recrawl], Parts::schedule) adds four steps, in
// crawl_path_recrawl.cc: due URLs back into the frontier before step 8,
// the URL's last capture at step 9, its validators at step 12 (a 304 is a
// revisit of that capture), and its next visit once step 14 wrote it (the
// interval within the URL's recrawl rule, from a sitemap's changefreq at
// first); and at step 6, a known URL a sitemap says changed (lastmod)
// since its capture is made due.
// Steps 15-16 run right after 13, before 14 ends: the next page of a site
// does not wait for this one's records, which queue behind other writes.
// A job (a page or a robots.txt fetch) carries an explicit Stage, changed
// only by SetStage(), which can trace every transition (curl's mstate()).
// A host's slot in the frontier is held from step 8 until the response
// arrived (step 12); the job lives on until its record is written, and is
// in flight for the checkpoint until then.
#ifndef CRAWLD_DAEMON_CRAWL_PATH_H_
#define CRAWLD_DAEMON_CRAWL_PATH_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cluster/cluster.h"
#include "conf/rules.h"
#include "conf/traps.h"
#include "daemon/console_api.h"
#include "daemon/crawl_stats.h"
#include "daemon/documents.h"
#include "daemon/event_log.h"
#include "daemon/hosts.h"
#include "daemon/page_task.h"
#include "daemon/ports.h"
#include "daemon/processors.h"
#include "daemon/recorder.h"
#include "frontier/frontier.h"
#include "frontier/ip_gate.h"
#include "recrawl/recrawl.h"
#include "sitemap/sitemap.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::daemon {

// A URL on its way in (step 1). Views need to live during Enter() only.
struct Candidate {
  enum class Source : uint8_t { kSeed, kApi, kLink, kRedirect, kPeer, kReplay };
  std::string_view url;  // absolute; canonicalized in step 2
  Source source = Source::kLink;
  uint16_t depth = 0;     // links from the seed
  uint8_t redirects = 0;  // redirect hops that led here
  double credit = 0;      // AOPIC credit it carries to its host
  // Host of the seed it descends from (the filter's scope rules); empty:
  // the URL's own host (a seed).
  std::string_view seed_host;
  // Host key of the page it was found on; empty for seeds, the API and
  // other workers (credit from outside the host raises its page budget).
  std::string_view from_host_key;
  // Fingerprint of the URL whose redirect led here (0: none).
  uint64_t redirect_from = 0;
  // A page, or a sitemap to read (docs/SITEMAPS.md), and then the host
  // whose robots.txt named it (frontier::Item::sitemap_of).
  frontier::ItemKind kind = frontier::ItemKind::kPage;
  std::string_view sitemap_of;
  // What a sitemap said of the page (parser::Link): its <changefreq> (the
  // first recrawl interval of a new URL) and <lastmod> (Unix seconds; a
  // known URL captured before it is due again now). 0: none.
  uint8_t changefreq = 0;
  uint32_t lastmod_s = 0;
};

enum class EnterResult : uint8_t {
  kQueued,    // new, in this worker's frontier
  kRouted,    // another worker owns the host: sent there
  kKnown,     // seen before (its host still got the credit)
  kRejected,  // invalid, filtered, a trap, or refused by the frontier
};

// Where a URL goes when another worker owns its host (daemon/peers.h).
class Router {
 public:
  virtual ~Router() = default;
  // The ring's owner of `host` ( == self: this worker).
  [[nodiscard]] virtual int Owner(std::string_view host) const = 0;
  [[nodiscard]] virtual int self() const = 0;
  // False when the message was refused for good (invalid, counted); true
  // when it is on its way or waits for room (and is then unacknowledged).
  virtual bool Send(int to, cluster::UrlMessage message) = 0;
  // Calls `fn` with the URL of every message carrying a capture (a recrawl
  // hand-off) that is not acknowledged yet. False when that cannot be told
  // (the exchange is closing): no hand-off may then be taken as done.
  [[nodiscard]] virtual bool ForEachUnackedCapture(
      const std::function<void(const std::string& url)>& fn) const = 0;
};

// The URL-seen test (step 6): the in-memory set, or the checkpointed store.
class SeenTest {
 public:
  virtual ~SeenTest() = default;
  // True when `fingerprint` was new (and is remembered now).
  virtual bool InsertIfNew(std::string_view host_key, uint64_t fingerprint) = 0;
};

enum class Stage : uint8_t {
  kResolving,   // step 10: waiting for the resolver
  kIpWait,      // step 11: waiting for the address to be free and due
  kFetching,    // step 12: the transfer is running
  kProcessing,  // step 13: the body (or robots.txt) is parsed off the loop
  kRecording,   // step 14: its records are written, off the loop, in order
  kDone,
};
std::string_view StageName(Stage stage);

// Owned by the worker; everything on the worker's loop.
class CrawlPath {
 public:
  struct Options {
    size_t max_connections = 64;  // transfers at once (fetch.max_connections)
    uint64_t max_pages = 0;       // 0: no limit
    int max_depth = 0;            // 0: no limit
    int max_redirects = 5;        // for pages (robots.txt: fetch_policy)
    int max_retries = 3;          // transient failures per URL
    bool follow_rel_nofollow = false;
    // Also follow Page::other_links (canonical, next, refresh, frames).
    bool follow_other_links = true;
    bool path_ascending = false;
    bool write_metadata = true;
    bool conversion_records = false;
    std::string robots_token;
    // Decoded bytes handed to the parser (pages) and to the robots.txt
    // parser (its max_bytes + 1: the parser must see that a file was cut).
    size_t max_decoded_page_bytes = 8u << 20;
    size_t max_decoded_robots_bytes = 500 * 1024 + 1;
    // Parses at once off the loop (count); >= 1.
    size_t parse_slots = 2;
    // A body over this may take seconds to parse: such bodies use at most
    // parse_slots - 1 slots at once (ParseSlots, page_task.h).
    uint64_t big_body_bytes = 1u << 20;
    parser::Options parser;
    // Sitemaps (docs/SITEMAPS.md): those robots.txt names, and /sitemap.xml
    // of every host (probe); at most sitemaps_per_host entered per host.
    bool sitemaps_from_robots = true;
    bool sitemaps_probe = false;
    size_t sitemaps_per_host = 100;
    sitemap::Options sitemap;
    // Recrawl (Parts::schedule set): while new URLs wait, due URLs are at
    // most this share of the frontier's queue (0..1], and never more than
    // recrawl_max_queued at once (count).
    double recrawl_share = 0.5;
    size_t recrawl_max_queued = 1000;
  };

  // What the path needs, none of it owned. `router` is null with one
  // worker. Every pointer must outlive the path.
  struct Parts {
    const Clock* clock = nullptr;
    FetchPort* fetch = nullptr;
    ResolvePort* resolve = nullptr;
    WorkPool* pool = nullptr;
    Waker* waker = nullptr;
    const url::Canonicalizer* canonicalizer = nullptr;
    conf::TrapGuard* traps = nullptr;
    frontier::Frontier* frontier = nullptr;
    frontier::IpGate* ip_gate = nullptr;
    HostTable* hosts = nullptr;
    Documents* documents = nullptr;
    store::WarcWriter* warc = nullptr;
    SeenTest* seen = nullptr;
    // The recrawl schedule (crawl_path_recrawl.cc); null: one pass.
    recrawl::Schedule* schedule = nullptr;
    Router* router = nullptr;
    CrawlStats* stats = nullptr;
    EventLog* log = nullptr;
    // A fetch's duration (seconds), for the metrics histogram; may be empty.
    std::function<void(double)> on_fetch_seconds;
    // Every fetch that ended (page or robots.txt), for the admin API's
    // host page; may be null.
    RecentFetches* recent = nullptr;
    // A fatal error (a WARC write failed): the worker stops the crawl.
    std::function<void(const std::string& reason)> on_fatal;
    // After every Pump(): the worker checks its stop conditions.
    std::function<void()> on_pumped;
    // false: no new fetch starts (paused, stopping, waiting for the
    // supervisor's go, or URLs waiting for the exchange); jobs under way
    // go on. Asked before each fetch Pump() starts. Empty: always true.
    std::function<bool()> accepting;
  };

  CrawlPath(const Options& options, const Parts& parts);
  ~CrawlPath();
  CrawlPath(const CrawlPath&) = delete;
  CrawlPath& operator=(const CrawlPath&) = delete;

  // Step 1. Counts and logs every drop.
  EnterResult Enter(const Candidate& candidate);

  // Steps 8-12 for every fetch that may start now; arms the waker for the
  // next one. Call after anything that may free a slot or a host.
  void Pump();

  // The filter rules in force (not owned; kept until the next call).
  void SetRules(const conf::RuleSet* rules) { rules_ = rules; }

  // Recrawl hand-off (crawl_path_handoff.cc; docs/CHECKPOINT.md, "Recrawl
  // schedule"): looks through the whole schedule, a step per Pump(), for
  // URLs whose host another worker owns now, and hands each over with its
  // capture. At start and when the ring changed: hosts moved.
  void SweepSchedule();
  // A capture handed over by a host's previous owner: kept in the schedule
  // (the newest of the URL's), due when it was due there. Before the
  // message is acknowledged. Returns false when the schedule's store failed:
  // the message must stay unacknowledged, so that its sender keeps it.
  [[nodiscard]] bool ReceiveCapture(const cluster::UrlMessage& message);
  // Hand-offs sent and not yet acknowledged (count).
  [[nodiscard]] size_t handoffs_pending() const { return handoffs_.size(); }
  // The sweep still runs, or hand-offs wait for their acknowledgement.
  [[nodiscard]] bool handing_off() const {
    return sweeping_ || !handoffs_.empty();
  }

  // Recovery: a response or revisit record of `uri` written after the
  // last checkpoint. Its URL is not fetched again (SkipOnce), and its links
  // (or its redirect) are followed again: from `metadata` (its metadata
  // record) when given, else from `response` (rebuilt from a response
  // record; parsed again). With neither (a revisit without metadata) the
  // URL is fetched again instead: its body is elsewhere.
  void Replay(const std::string& uri, fetcher::Response* response,
              const store::PageMetadata* metadata);
  // Around a whole replay: while it lasts, Pump() dispatches nothing. A
  // replayed page's links are followed (and that pumps); a queue head
  // dispatched then could be a page whose record comes later in the WARC,
  // not yet replayed and so not yet marked to skip: fetched again
  // (recovery.KillNine, one page in sixty after eight kills).
  void BeginReplay() { replaying_ = true; }
  void EndReplay() { replaying_ = false; }
  // The URL with this fingerprint was recorded after the checkpoint: when
  // it comes out of its queue it is skipped, once.
  void SkipOnce(uint64_t fingerprint) { skip_.insert(fingerprint); }
  [[nodiscard]] const std::unordered_set<uint64_t>& skip_set() const {
    return skip_;
  }

  // Jobs between dispatch and their end (count); ip_waiting() of them wait
  // at the IP gate, holding no connection.
  [[nodiscard]] size_t active() const { return jobs_.size(); }
  [[nodiscard]] size_t ip_waiting() const { return ip_gate_->waiting(); }
  // Nothing in flight, nothing the frontier could schedule, and (recrawl)
  // nothing scheduled to come back.
  [[nodiscard]] bool Idle() const {
    return jobs_.empty() && frontier_->Idle() && !Scheduled() && !handing_off();
  }
  // Recrawl: URLs are scheduled for another visit (the crawl goes on).
  [[nodiscard]] bool Scheduled() const { return next_due_us_ != INT64_MAX; }
  // Runs `then` when no record write is in progress (at once, or after the
  // current one): the checkpoint reads and syncs the store's writer there.
  void WhenStoreIdle(std::function<void()> then) {
    recorder_.WhenIdle(std::move(then));
  }
  // Fetches whose records are being written or wait to be.
  [[nodiscard]] size_t records_pending() const { return recorder_.pending(); }
  // Every page job not yet recorded, for the checkpoint.
  void ForEachInFlight(
      const std::function<void(const std::string& host_key,
                               const frontier::Item& item)>& visit) const;

 private:
  struct Job;

  // Steps, in order (crawl_path.cc).
  EnterResult Route(const url::Url& canon, const Candidate& c);
  bool Filter(const url::Url& canon, const Candidate& c);
  EnterResult Admit(const url::Url& canon, const Candidate& c);
  void Dispatch(frontier::Frontier::Ready ready);
  void Resolve(Job* job);
  void OnResolved(Job* job, Result<dns::Answer> answer);
  void EnterIpGate(Job* job, const std::string& ip);
  void Fetch(Job* job, const std::string& ip);
  void OnFetched(Job* job, fetcher::Response&& response);
  void OnRobotsFetched(Job* job);
  void OnPageFetched(Job* job);
  void Process(Job* job);
  void OnProcessed(Job* job);
  void DecideRobots(Job* job);
  // Step 14, off the loop; then `then` on the loop, unless the store
  // failed (StoreFailed).
  void Record(Job* job, std::function<void(Job*)> then);
  // Steps 15-16 (crawl_path_links.cc).
  void FollowRedirect(Job* job);
  // all_now: in one go (recovery); else a slice per loop turn.
  void FollowLinks(Job* job, bool all_now);
  void FollowSomeLinks(Job* job, bool all_now);
  void EnterParents(Candidate c);
  // Sitemaps (crawl_path_sitemaps.cc): those a robots.txt names (and the
  // probe), the children of an index, entered like links (step 1) with
  // their kind; a read sitemap counted.
  void EnterSitemaps(Job* robots_job);
  void EnterChildSitemap(Job* index, std::string_view url);
  void EnterSitemap(Job* from, std::string_view url, frontier::ItemKind kind,
                    std::string_view sitemap_of);
  void CountSitemap(Job* job, const sitemap::Report& report);
  // Recrawl (crawl_path_recrawl.cc): due URLs back into the frontier
  // (step 7 again, within the share); at dispatch, the capture a revisit
  // refers to (false: a copy already revisited, dropped); the validators
  // on the request; a 304 sorted; the next visit planned once recorded.
  void ReleaseDue();
  bool FindCapture(const frontier::Frontier::Ready& ready,
                   std::optional<recrawl::Capture>* capture);
  void AddValidators(Job* job, fetcher::Request* request);
  void OnNotModified(Job* job);
  void Reschedule(Job* job);
  // A known URL a sitemap says changed (lastmod) after its last capture:
  // due now (crawl_path_recrawl.cc).
  void DueByLastmod(uint64_t fingerprint, uint32_t lastmod_s);
  // A known URL a sitemap gives a changefreq: kept for its first capture
  // when it has none yet, or its first interval planned again when that
  // is still running (crawl_path_recrawl.cc).
  void LateChangefreq(uint64_t fingerprint, uint8_t changefreq);
  // What steers a URL's interval: the recrawl rule in force, the
  // sitemap's changefreq.
  recrawl::Steer SteerOf(std::string_view url, int depth,
                         std::string_view seed_host, uint8_t changefreq) const;
  // A copy of a revisit is one visited within this of its last visit.
  [[nodiscard]] int64_t DuplicateWindowUs(const recrawl::Capture& c) const;
  // What the recorder may write instead of a response (recorder.h).
  RecrawlWrite RecrawlWriteOf(Job* job);
  // Hand-off (crawl_path_handoff.cc): sends the capture of a URL whose
  // host `to` owns (false: not sent, it stays here); then, once
  // acknowledged, deletes it here (SettleHandOffs, at most every
  // kSettleEveryUs); SweepStep hands over a slice of the sweep.
  bool HandOff(uint64_t fingerprint, const recrawl::Capture& capture, int to);
  void SettleHandOffs(int64_t now);
  void SweepStep();
  void RefreshNextDue();
  // The loop's time of the next due URL; INT64_MAX: none.
  [[nodiscard]] int64_t NextDueMonotonicUs(int64_t now) const;

  // Job lifecycle.
  Job* NewJob(bool robots, std::string host_key, std::string url);
  void SetStage(Job* job, Stage stage);
  void ArmWaker(int64_t now, bool may_start);
  void ReleaseSlots(Job* job, const frontier::Completion& completion);
  void RetryLater(Job* job);
  void Finish(Job* job);
  void StoreFailed(Job* job, const Status& status);

  Options options_;
  Parts parts_;
  Recorder recorder_;
  ParseSlots parse_slots_;
  frontier::Frontier* frontier_;
  frontier::IpGate* ip_gate_;
  HostTable* hosts_;
  CrawlStats* stats_;
  EventLog* log_;
  const conf::RuleSet* rules_ = nullptr;
  uint64_t next_job_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Job>> jobs_;
  std::unordered_set<uint64_t> skip_;
  bool replaying_ = false;  // BeginReplay() .. EndReplay()
  std::unique_ptr<ProcessorRegistry> replay_parsers_;  // made at first use
  // Sitemaps entered per host key (sitemaps_per_host); for this run.
  std::unordered_map<std::string, size_t> sitemaps_entered_;
  // Recrawl: the earliest due time on disk (wall clock; INT64_MAX: none)
  // and the released URLs not dispatched yet (count, approximate).
  int64_t next_due_us_ = INT64_MAX;
  size_t recrawl_queued_ = 0;
  // Due URLs wait for room in the frontier: no wake-up for them.
  bool release_blocked_ = false;
  // Recrawl hand-off: captures sent and not yet acknowledged, by
  // fingerprint: the URL, and the visit they are of (deleted here only
  // while the schedule still holds that visit).
  struct PendingHandOff {
    std::string url;
    int64_t fetched_us = 0;
  };
  std::unordered_map<uint64_t, PendingHandOff> handoffs_;
  // The sweep keeps at most this many hand-offs unacknowledged (count):
  // memory and the exchange's queue stay bounded.
  static constexpr size_t kMaxSweepPending = 512;
  // Due URLs of moved hosts are handed over while fewer than this are
  // unacknowledged (count); past it (the exchange stalls) they stay leased
  // here and come due again: memory stays bounded, the revisit late.
  static constexpr size_t kMaxPendingHandOffs = 4 * kMaxSweepPending;
  // Acknowledgements are looked for at most this often (monotonic us):
  // each look walks the exchange's unacknowledged messages.
  static constexpr int64_t kSettleEveryUs = 100'000;
  int64_t next_settle_us_ = 0;  // monotonic
  // The sweep: running, and the last fingerprint looked at (none yet).
  bool sweeping_ = false;
  std::optional<uint64_t> sweep_after_;
  // Recrawl: the sitemap changefreq of known URLs not captured yet (met
  // first by a link, queued before the sitemap was read), for their first
  // interval; at most kMaxLateHints (then counted, dropped), for this run.
  static constexpr size_t kMaxLateHints = 100000;
  std::unordered_map<uint64_t, uint8_t> late_changefreq_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_CRAWL_PATH_H_
