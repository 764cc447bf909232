// daemon/console_api.h: the admin API endpoints added for the web console
// (issue 18), shared by a worker's API (worker_api.h) and the
// supervisor's (supervisor_admin.h) so that both parse and answer them the
// same way (docs/API.md):
//  - GET /api/hosts?q=&state=&sort=&order=&limit=: the host table. A
//    worker lists its own hosts; the supervisor asks every worker with the
//    same query and merges the rows with the same order (MergeHostRows).
//  - hosts by state and disk usage in GET /api/status;
//  - recent fetches in GET /api/hosts/{host} (RecentFetches);
//  - GET /api/docs/record?warc=&offset=&length=: one record read back from
//    its WARC, bounded, its payload as text in JSON (never as a page).
// Query strings are untrusted input: ParseHostQuery and ParseRecordQuery
// never fail on anything but give a clear message, and
// tests/fuzz/console_query_fuzz.cc drives both.
#ifndef CRAWLD_DAEMON_CONSOLE_API_H_
#define CRAWLD_DAEMON_CONSOLE_API_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "frontier/frontier.h"

namespace crawld::daemon {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// ---------------------------------------------------------------------------
// The host table

// What a host is doing now, for the overview's "hosts by state" and the
// host table: "active" (a fetch in flight), "ready" (may be fetched now),
// "waiting" (its politeness delay or page budget holds it), "backing_off"
// (queued work after consecutive errors), "idle" (nothing queued),
// "retired". `now_us` is the frontier's monotonic clock.
[[nodiscard]] std::string_view HostStateName(const frontier::HostInfo& info,
                                             int64_t now_us);
// Every state name, in the order above.
[[nodiscard]] const std::vector<std::string_view>& HostStateNames();

struct HostQuery {
  std::string q;      // substring of the host key, lower-case; "" = all
  std::string state;  // one of HostStateNames(); "" = any
  // host, queued, fetched, errors, next_fetch, credit, delay, pages.
  std::string sort = "queued";
  bool descending = true;  // default: desc for numbers, asc for "host"
  size_t limit = 100;      // 1 .. kMaxHostRows
};
inline constexpr size_t kMaxHostRows = 1000;
inline constexpr size_t kMaxHostQueryBytes = 256;

// The query of GET /api/hosts. InvalidArgument, with a message naming the
// parameter and what it accepts, for an unknown parameter, a bad sort or
// state name, a limit outside 1..1000, a q over 256 bytes or a repeated
// parameter.
[[nodiscard]] Result<HostQuery> ParseHostQuery(const QueryParams& params);

// One row of the host table (the JSON object of docs/API.md) for a host.
// `robots` is the robots state's API name ("ready", "failing", ...).
[[nodiscard]] Json HostRow(std::string_view host_key,
                           const frontier::HostInfo& info,
                           std::string_view robots, int64_t now_us);

// Whether the row passes the query's q and state filters.
[[nodiscard]] bool HostRowMatches(const Json& row, const HostQuery& query);

// Sorts rows in the query's order (ties by host key) and keeps the first
// query.limit. The one order for a worker's rows and the supervisor's
// merge of several workers' rows.
void SortHostRows(const HostQuery& query, std::vector<Json>* rows);

// ---------------------------------------------------------------------------
// Recent fetches

// The last fetches of one worker, all hosts together, oldest dropped first:
// what a host page shows as "recent fetches". A ring of fixed size, so its
// memory does not grow with the number of hosts (a host of a broad crawl
// may have none left in it: the page says so). Loop affinity: the
// worker's loop; not thread-safe.
class RecentFetches {
 public:
  struct Entry {
    std::string host_key;
    std::string url;
    int status = 0;           // HTTP status; 0: no response
    std::string error;        // the error class when status is 0
    int64_t duration_ms = 0;  // request start to end of body
    uint64_t bytes = 0;       // body bytes
    int64_t wall_us = 0;      // when it ended (Unix time)
    bool robots = false;      // a robots.txt fetch
  };
  struct Options {
    size_t capacity = 1024;  // entries kept (count); at least 1
  };

  explicit RecentFetches(const Options& options);
  RecentFetches(const RecentFetches&) = delete;
  RecentFetches& operator=(const RecentFetches&) = delete;

  void Add(Entry entry);
  // The newest first, at most `max` of host_key's entries, as JSON
  // objects {url, status, error, duration_ms, bytes, time, robots}.
  [[nodiscard]] Json ForHost(std::string_view host_key, size_t max) const;

 private:
  size_t capacity_;
  std::deque<Entry> entries_;
};

// ---------------------------------------------------------------------------
// Disk usage

// Bytes under <data>/warc ("warc_bytes") and in the rest of the data
// directory ("state_bytes": checkpoints, frontier spill, seen-set, index,
// logs), walked at most every `cache_us` and kept in between: a status
// poll every second must not walk a big data directory every second.
class DiskUsage {
 public:
  explicit DiskUsage(std::string data_dir, int64_t cache_us = 10'000'000)
      : data_dir_(std::move(data_dir)), cache_us_(cache_us) {}
  // {"warc_bytes": N, "state_bytes": N, "measured_s_ago": S}.
  [[nodiscard]] Json Get(int64_t now_us);

 private:
  std::string data_dir_;
  int64_t cache_us_;
  int64_t measured_us_ = -1;
  uint64_t warc_bytes_ = 0;
  uint64_t state_bytes_ = 0;
};

// ---------------------------------------------------------------------------
// A record from its WARC

struct RecordQuery {
  std::string warc;     // a file name in <data>/warc, no directory
  uint64_t offset = 0;  // of the record's gzip member(s) in the file
  uint64_t length = 0;  // 1 .. kMaxRecordLength
};
inline constexpr uint64_t kMaxRecordLength = 8u << 20;
// Bytes of the decoded payload put in the answer.
inline constexpr size_t kMaxRecordText = 64u << 10;

// The query of GET /api/docs/record (the warc, offset and length of a
// feed entry). InvalidArgument for a missing or repeated parameter, a warc
// name that is not a plain *.warc.gz or *.warc file name (no '/', no
// leading '.'), a number that is not decimal, or a length over 8 MiB.
[[nodiscard]] Result<RecordQuery> ParseRecordQuery(const QueryParams& params);

// Reads the record and answers it as JSON: its WARC headers, and for a
// response record the HTTP status line and headers and the first 64 KiB of
// the body as text (invalid UTF-8 becomes U+FFFD when dumped), with
// "body_bytes" and "truncated". NotFound when the file does not exist,
// InvalidArgument when the bytes there are not one record.
[[nodiscard]] Result<Json> ReadRecordJson(const std::string& warc_dir,
                                          const RecordQuery& query);

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_CONSOLE_API_H_
