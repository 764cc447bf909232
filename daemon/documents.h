// daemon/documents.h: document dedupe for one worker (ARCHITECTURE.md,
// step 11; docs/STORE.md, "Document dedupe").
//
// Exact duplicates are crawl-wide: a page's body digest (xxh3-128) is
// claimed in the crawl's claim store (dedupe::DocumentClaims: the
// machine's shared table, or Redis across nodes) before its record is
// written. The first claim names the record that stores the body in full;
// every later fetch of the same bytes, by any worker of any node, becomes
// a revisit record referring to it. A body archived by an earlier crawl
// (dedupe.earlier) is a revisit of that capture instead, and claims
// nothing. The claim and everything else that
// can block run off the loop, in the page task (Check); the loop only
// prepares the task (Prepare) and, after the write, hands the settle
// (stored, or released when the record was refused) to the thread pool in
// batches (Recorded).
//
// Near-duplicates (SimHash within the configured bits) are per worker
// process: the reference is the first page with that text this process
// checked since it started; the index is in memory, so a restart starts
// it afresh, and pages of other workers are not compared. The reference's
// URL is read back from its record (off the loop) when a near-duplicate
// names it, or taken from memory while that record is being written.
#ifndef CRAWLD_DAEMON_DOCUMENTS_H_
#define CRAWLD_DAEMON_DOCUMENTS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "daemon/ports.h"
#include "dedupe/dedupe.h"
#include "store/store.h"

namespace crawld::daemon {

struct PageTask;

// What dedupe decided for one page, filled off the loop by
// Documents::Check and read on the loop by the recorder.
struct DocumentVerdict {
  enum class Kind : uint8_t {
    kUnchecked,  // no digest (body cut, too big, unreadable) or no store:
                 // stored in full under the writer's own record id
    kNew,        // claimed: stored in full under record_id
    kOwn,        // this URI's earlier claim: stored in full under record_id
    kDuplicate,  // a revisit of `original`
    kUnclaimed,  // the store was full or failed: stored in full
    kEarlier,    // a revisit of `earlier`, a capture of an earlier crawl
  };
  Kind kind = Kind::kUnchecked;
  std::optional<dedupe::Digest128> digest;
  // kNew, kOwn (and kUnclaimed: a fresh one): the response's record id.
  std::string record_id;
  // kDuplicate: the record with the body, and this body's payload digest
  // ("sha1:<BASE32>"; the same bytes, so the original's too).
  dedupe::DocumentClaim original;
  std::string payload_digest;
  // kEarlier: the capture of an earlier crawl with this payload.
  std::optional<store::RevisitOf> earlier;
  // An earlier crawl has the payload but its line no longer describes its
  // record (a stale index): stored as if it had not; why, for the log.
  std::string earlier_error;
  // kUnclaimed: the store's answer, and why (for the log).
  dedupe::ClaimOutcome outcome = dedupe::ClaimOutcome::kUnavailable;
  std::string error;

  // Near-duplicates (not checked for kDuplicate): the URL of the page it
  // resembles ("?" when that page's record cannot be read back), or "".
  std::string near_duplicate_of;
  bool near_unreadable = false;
  // A new text: remembered as a reference once its record is written.
  std::optional<uint64_t> new_simhash;
};

// Prepare and Recorded on the worker's loop; Check on any thread (several
// at once).
class Documents {
 public:
  struct Options {
    std::string warc_dir;  // where the writer's files are
    // Bodies up to this size (complete ones) get a digest (bytes).
    uint64_t max_body_bytes = 8u << 20;
    // SimHash bits two near-duplicates may differ in; 0: no near-dup check.
    int near_duplicate_bits = 0;
    size_t near_max_entries = 1 << 20;
  };

  // `claims`: the crawl's claim store (null: no exact dedupe, every body
  // is stored in full); `warc`: the writer, for record ids; `pool`: where
  // settles run. None owned; all must outlive this.
  Documents(const Options& options, dedupe::DocumentClaims* claims,
            store::WarcWriter* warc, WorkPool* pool, CrawlStats* stats,
            EventLog* log);
  // Settles, on this thread, what was recorded but not settled yet (the
  // pool has stopped by then).
  ~Documents();
  Documents(const Documents&) = delete;
  Documents& operator=(const Documents&) = delete;

  // The captures of earlier crawls (dedupe.earlier): a payload found there
  // is a revisit of it, checked before the claim store (so nothing is
  // claimed for it). Not owned; must outlive this. On the loop, before the
  // first Prepare.
  void SetEarlier(const store::EarlierCaptures* earlier) { earlier_ = earlier; }

  [[nodiscard]] bool earlier_enabled() const { return earlier_ != nullptr; }
  // Off the loop, for a response no page task checks (robots.txt): the
  // earlier crawl's capture of its body, if any (NotFound when none or
  // when the body is cut or too big; other errors as EarlierCaptures::Find).
  [[nodiscard]] Result<store::RevisitOf> EarlierOf(
      const fetcher::Response& response) const;

  // On the loop, before `task` goes to the pool: it will call Check, with
  // a record id ready for a body it claims.
  void Prepare(PageTask* task);

  // Off the loop, in the task, after the parse: the body's digest and
  // claim, and the near-duplicate check, into task->document. May block
  // (the claim store, a WARC read); touches no loop state.
  void Check(PageTask* task) const;

  // On the loop, after the records of a page checked by Check were
  // written (or not): `written` is the response's write unless the
  // verdict was a revisit. Counts the verdict, and queues the settle of
  // its claim (stored; released when the record was refused, so that
  // nobody refers to it; left pending after a disk error, as the page is
  // fetched again and reuses the claim) and the near-duplicate reference.
  void Recorded(const DocumentVerdict& verdict,
                const Result<store::WrittenExchange>* written);

  // Recovery (on the loop, at start): `record` was written after the last
  // checkpoint, maybe by a process killed before it settled the record's
  // claim. Settles it as stored, before returning (so before any fetch of
  // this run is checked), so that a later fetch of
  // the same URL (another worker's, after a rebalance) is a revisit and
  // not a second full copy under the same record id. Any record may be
  // passed: only a complete 2xx response's own claim is touched.
  void Replayed(const store::Record& record);

  // Where the oldest record written with a claim that is not settled yet
  // begins (WARC basename and offset), if any. A checkpoint keeps it: the
  // records from there to the checkpoint's WARC position are behind that
  // position and so not replayed, yet a kill before their settles leaves
  // their claims pending, and the next fetch of such a URL would be told
  // kOwn and write a second record under the same id (recovery.KillNine,
  // seed 92667). Recovery passes them to Replayed, and only to it.
  [[nodiscard]] std::optional<std::pair<std::string, uint64_t>>
  OldestUnsettled() const;

  [[nodiscard]] bool exact_enabled() const { return claims_ != nullptr; }
  [[nodiscard]] bool near_enabled() const { return near_ != nullptr; }

 private:
  struct Settle {
    dedupe::Digest128 digest;
    std::string record_id;
    bool claimed = false;  // a claim to settle
    bool stored = false;
    std::optional<uint64_t> simhash;  // a near reference to remember
    dedupe::DocumentCopy copy;
    std::string file;
    // claimed && stored: where the record is (unsettled_).
    std::pair<std::string, uint64_t> position;
  };
  // Runs the queued settles on the pool, one batch at a time.
  void StartSettling();
  // Off the loop: applies `batch`; returns the settles that failed.
  size_t ApplySettles(const std::vector<Settle>& batch);
  void CheckNear(uint64_t simhash, const std::string& url,
                 DocumentVerdict* v) const;
  uint32_t FileNumber(const std::string& file);  // REQUIRES: near_mu_ held

  // Off the loop: true when an earlier crawl holds `body` (v->kind is then
  // kEarlier); fills v->payload_digest either way.
  bool CheckEarlier(std::string_view body, DocumentVerdict* v) const;

  Options options_;
  dedupe::DocumentClaims* claims_;
  const store::EarlierCaptures* earlier_ = nullptr;
  store::WarcWriter* warc_;
  WorkPool* pool_;
  CrawlStats* stats_;
  EventLog* log_;

  // Record ids this process writes (or wrote) a body under and whose claim
  // is not settled yet: claimed (kNew), or told kOwn (a pending claim of
  // the same URI). The table answers kOwn to a second fetch of that URI
  // until the settle reaches it, and one URL can be queued twice (after a
  // restart, an in-flight item and its re-queued copy): the second write
  // would reuse the record id (recovery.KillNine, seed 33157). A kOwn of
  // an id here is a revisit of the first. An id leaves once its settle is
  // applied (the table then answers kDuplicate, or a fresh claim), or
  // when its record was not written (the next fetch writes it): the set
  // holds the pages between their check and their settle.
  mutable std::mutex own_mu_;
  mutable std::unordered_set<std::string> own_ids_;  // guarded by own_mu_

  // Loop side.
  // Positions of the records whose stored-settle is queued or running.
  std::multiset<std::pair<std::string, uint64_t>> unsettled_;
  std::vector<Settle> queued_;
  bool settling_ = false;
  uint64_t unavailable_ = 0;    // pages the store failed, for the log's pace
  uint64_t earlier_stale_ = 0;  // pages a stale earlier index failed

  // Near-duplicates, shared by the tasks and the settle batches (pool
  // threads; the loop never takes near_mu_).
  mutable std::mutex near_mu_;
  std::unique_ptr<dedupe::NearDupIndex> near_;  // guarded by near_mu_
  // By the index's slot: where the page of the simhash in that slot is
  // (length 0: not written, or not yet). A slot the index reuses is
  // cleared with it, so a copy never outlives its simhash. Reserved at
  // the index's capacity (address space only) and grown as the ring
  // fills: 24 bytes a simhash, no rehash.
  mutable std::vector<dedupe::DocumentCopy>
      near_copies_;  // guarded by near_mu_
  // WARC basenames by the number a DocumentCopy holds.
  std::vector<std::string> files_;  // guarded by near_mu_
  // References checked but not yet in near_copies_ (their record is being
  // written): their URLs, so that a page checked meanwhile names them,
  // and their slots. A reference the index forgets leaves here too; its
  // settle then finds nothing to fill.
  struct NearPending {
    std::string url;
    uint32_t slot = 0;
  };
  mutable std::unordered_map<uint64_t, NearPending>
      near_pending_;  // guarded by near_mu_
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_DOCUMENTS_H_
