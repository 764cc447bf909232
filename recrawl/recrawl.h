// recrawl/recrawl.h: the recrawl schedule of one worker (issue 17;
// docs/OPERATIONS.md, "A continuous crawl"; docs/CHECKPOINT.md,
// "Recrawl schedule").
//
// For every URL the worker fetched in recrawl mode it keeps its last
// capture (the validators of RFC 9110 section 8.8, ETag and Last-Modified,
// the payload digest and where the WARC record is) and the time it is due
// again. Both live on disk, in a LevelDB of their own
// (<data>/worker-<id>/recrawl/), not in memory: millions of scheduled URLs
// cost a bounded block cache, and only the due ones are read.
//
// The interval adapts (AIMD-like, as StormCrawler's AdaptiveScheduler and
// Nutch's AdaptiveFetchSchedule do): a visit that found the page changed
// (its payload digest differs) multiplies the interval by `shrink`, one that
// found it unchanged (a 304, or the same digest) by `grow`, clamped to
// [min_interval_s, max_interval_s]. Intervals are in simulated seconds;
// `time_scale` simulated seconds pass per real second, so that tests can
// run a week in seconds.
//
// Two things steer a URL's interval besides the adaptation (Steer): the
// operator's "recrawl" rule (conf/rules.h; docs/RULES.md) replaces the
// bounds for the URLs it matches (a fixed interval is a range of one),
// and a sitemap's <changefreq> gives the first interval instead of
// initial_interval_s. The rule wins: the first interval is clamped into
// the rule's bounds, so a fixed rule ignores changefreq.
//
// Writes are not synced (Options::sync): a killed process loses nothing
// (LevelDB's log is in the OS), a machine crash may lose the last updates,
// which then only makes those URLs due earlier than planned.
#ifndef CRAWLD_RECRAWL_RECRAWL_H_
#define CRAWLD_RECRAWL_RECRAWL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "sitemap/sitemap.h"

namespace crawld::checkpoint {
class Store;
}

namespace crawld::recrawl {

struct Options {
  // --- Behaviour ---

  // The first interval after a URL's first capture (simulated seconds).
  double initial_interval_s = 86400;
  // Bounds of the adaptive interval (simulated seconds); min <= max.
  double min_interval_s = 3600;
  double max_interval_s = 30 * 86400;
  // Factor on the interval after a visit that found the page changed, in
  // (0, 1]; after one that found it unchanged, >= 1.
  double shrink = 0.5;
  double grow = 1.5;
  // Simulated seconds per real second (>= 1e-3): 1 in production; a
  // test runs a week (604800 s) in 20 s with 30240.
  double time_scale = 1;

  // --- Performance ---

  // fsync every update (false: a machine crash may lose the last ones).
  bool sync = false;
  // LevelDB block cache (bytes).
  size_t cache_bytes = 4u << 20;
};

// What is kept of a URL's last capture, and when it is due.
struct Capture {
  std::string url;
  std::string host_key;   // the frontier's politeness key
  std::string seed_host;  // scope rules, as frontier::Item::seed_host
  uint16_t depth = 0;
  // Validators of the last 200 (RFC 9110 8.8.3, 8.8.2), as sent; "" none.
  std::string etag;
  std::string last_modified;
  // The last capture's WARC record: payload digest ("sha1:<BASE32>"),
  // WARC-Record-ID ("<urn:uuid:...>"), WARC-Date as written. A 304 is
  // recorded as a revisit of it. Empty record_id: no record to refer to
  // (never fetched with a 200).
  std::string payload_digest;
  std::string record_id;
  std::string record_date;
  // Its WARC-Target-URI: this URL, or another URL whose record held the
  // same payload first (document dedupe).
  std::string record_uri;
  int64_t fetched_us = 0;   // wall clock of the last visit (epoch us)
  int64_t interval_us = 0;  // the current interval, real microseconds
  int64_t due_us = 0;       // wall clock when it is due again (epoch us)
  uint32_t visits = 0;      // visits, the first included
  uint32_t changes = 0;     // visits that found it changed
  // What the URL is fetched as (frontier::ItemKind's value: 0 a page, 1 a
  // sitemap, 2 a child of a sitemap index), and for a sitemap the host whose
  // robots.txt named it (frontier::Item::sitemap_of). A sitemap is revisited
  // like a page, and each read admits its entries again (their lastmod
  // makes changed pages due).
  uint8_t kind = 0;
  std::string sitemap_of;
};

// The longest validator (Capture::etag, Capture::last_modified) a worker
// sends back or hands over, in bytes. Real ones are tens of bytes, but each
// is the server's own text, as long as its response headers may be. A
// longer one is never sent in a conditional request (our request would be
// as large as the server likes), and is dropped from a capture handed to
// another worker: it would never be sent from there either, and the
// exchange's message holds the validators and the rest of a capture in
// 64 KiB (cluster::MaxCaptureBytes), past which the hand-off is refused.
inline constexpr size_t kMaxValidatorBytes = 1024;

// What steers one URL's interval besides the adaptation.
struct Steer {
  // A matching "recrawl" rule's bounds (simulated seconds, min <= max;
  // equal: a fixed interval); unset: the Options' bounds.
  bool has_rule = false;
  double rule_min_s = 0;
  double rule_max_s = 0;
  // The sitemap's hint for the first interval (its <changefreq>).
  sitemap::ChangeFreq changefreq = sitemap::ChangeFreq::kUnset;
};

// The first interval a changefreq asks for (simulated seconds) within the
// bounds [min_s, max_s]: always the minimum, never the maximum, hourly
// 1 h, daily 1 d, weekly 7 d, monthly 30 d, yearly 365 d; 0 for kUnset.
[[nodiscard]] double ChangeFreqSeconds(sitemap::ChangeFreq freq, double min_s,
                                       double max_s);

// The interval after a visit, in real microseconds: `current_us` (0: the
// first capture, giving the changefreq's interval, else
// initial_interval_s) shrunk when `changed`, else grown, clamped to the
// bounds (the rule's when it has one, else the Options'). Options as
// sanitized by Sanitize().
[[nodiscard]] int64_t NextIntervalUs(const Options& options, int64_t current_us,
                                     bool changed, const Steer& steer = {});

// Clamps the options to their documented ranges (min <= max, factors,
// time_scale).
[[nodiscard]] Options Sanitize(Options options);

// A Capture as bytes (docs/CHECKPOINT.md, "Recrawl schedule") and back;
// Decode fails with Corruption on anything it did not write.
[[nodiscard]] std::string EncodeCapture(const Capture& capture);
[[nodiscard]] Result<Capture> DecodeCapture(std::string_view bytes);

// The on-disk schedule of one worker. On the worker's loop; not
// thread-safe; every call blocks on LevelDB (a cached point read or a short
// scan). Not copyable.
class Schedule {
 public:
  // Opens (creating) the schedule in `dir`. IOError when the directory
  // cannot be created or is locked, Corruption when it is damaged.
  [[nodiscard]] static Result<std::unique_ptr<Schedule>> Open(
      const std::string& dir, const Options& options);
  ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  [[nodiscard]] const Options& options() const { return options_; }

  // The capture of the URL with this fingerprint; nullopt when the URL was
  // never recorded here.
  [[nodiscard]] Result<std::optional<Capture>> Get(uint64_t fingerprint) const;

  // Stores `capture` as the URL's, due at capture.due_us, replacing the
  // previous one and its place in the due order in one atomic batch.
  [[nodiscard]] Status Put(uint64_t fingerprint, const Capture& capture);

  // Calls `visit` for the captures due at or before `now_us`, earliest
  // first (ties by fingerprint), until it returns false. The capture is the
  // caller's to change and Put() back (after the scan returns).
  [[nodiscard]] Status ForEachDue(
      int64_t now_us,
      const std::function<bool(uint64_t fingerprint, Capture capture)>& visit)
      const;

  // The earliest due time (epoch us); nullopt when nothing is scheduled.
  [[nodiscard]] Result<std::optional<int64_t>> NextDueUs() const;

  // --- Hand-off between workers (a host moved; docs/CHECKPOINT.md) ---

  // Removes the URL's capture and its place in the due order in one batch;
  // OK (nothing done) when there is none.
  [[nodiscard]] Status Delete(uint64_t fingerprint);

  // Delete(), only while the stored capture is still the one of the visit
  // at `fetched_us` (the one handed to another worker): a capture replaced
  // since by a newer visit here is kept. True when deleted.
  [[nodiscard]] Result<bool> DeleteIfFetchedAt(uint64_t fingerprint,
                                               int64_t fetched_us);

  // Stores a capture handed over by another worker unless the schedule
  // holds one of the same URL as recent or more (fetched_us >=): a
  // hand-off can arrive twice (at-least-once delivery) or after this
  // worker visited the URL itself. True when stored.
  [[nodiscard]] Result<bool> Merge(uint64_t fingerprint,
                                   const Capture& capture);

  // Calls `visit` for every capture whose fingerprint is greater than
  // `after` (every capture when nullopt), ascending by fingerprint, until
  // it returns false: a sweep of the whole schedule in resumable steps.
  [[nodiscard]] Status ForEachCapture(
      std::optional<uint64_t> after,
      const std::function<bool(uint64_t fingerprint, Capture capture)>& visit)
      const;

 private:
  Schedule(const Options& options, std::unique_ptr<checkpoint::Store> db);
  Options options_;
  std::unique_ptr<checkpoint::Store> db_;
};

}  // namespace crawld::recrawl

#endif  // CRAWLD_RECRAWL_RECRAWL_H_
