// daemon/documents.h: the bodies this worker stored, for document dedupe:
// exact duplicates (xxh3-128 of the body) become WARC revisit records that
// refer to the first copy, and near-duplicates (SimHash within k bits) are
// flagged with the first page of their kind (ARCHITECTURE.md, step 11).
//
// The tables hold where each first copy is (WARC file number, offset,
// length, time), 40 bytes a body; the URL, record id and payload digest a
// revisit needs are read back from that record on a hit, which is rare.
// A copy that cannot be read back (its file moved away) is counted and
// logged, and the new body is stored in full and becomes the original.
#ifndef CRAWLD_DAEMON_DOCUMENTS_H_
#define CRAWLD_DAEMON_DOCUMENTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/crawl_stats.h"
#include "daemon/event_log.h"
#include "dedupe/dedupe.h"
#include "store/store.h"

namespace crawld::daemon {

// Owned by one worker loop; not thread-safe.
class Documents {
 public:
  struct Options {
    std::string warc_dir;  // where the writer's files are
    // Exact digests remembered (count): 70% of 2^22 slots, at most 168 MB.
    size_t max_exact = 2'900'000;
    // SimHash bits two near-duplicates may differ in; 0: no near-dup check.
    int near_duplicate_bits = 0;
    size_t near_max_entries = 1 << 20;
  };

  Documents(const Options& options, CrawlStats* stats, EventLog* log);

  // The first stored copy of a body, as a revisit record refers to it.
  struct Original {
    std::string uri;
    std::string record_id;
    std::string payload_digest;
    int64_t time_us = 0;
  };
  // The original of an exact duplicate, or nullopt when the body is new or
  // its original cannot be read back.
  [[nodiscard]] std::optional<Original> FindExact(
      const dedupe::Digest128& digest);

  // Near-duplicates: the URL of an earlier page whose text is within the
  // configured bits of `simhash` ("?" when that page cannot be read back),
  // or "" when the text is new (and then remembered as a reference).
  struct Near {
    std::string duplicate_of;
    bool is_new = false;
  };
  [[nodiscard]] Near CheckNear(uint64_t simhash);
  [[nodiscard]] bool near_enabled() const { return near_ != nullptr; }

  // A response record was written for a body: remember where, for later
  // exact duplicates (`digest`) and near-duplicates (`new_simhash`, from a
  // CheckNear that said is_new).
  void Remember(const std::optional<dedupe::Digest128>& digest,
                const std::optional<uint64_t>& new_simhash,
                const store::RecordRef& response, int64_t time_us);

 private:
  std::optional<store::Record> Read(const dedupe::DocumentCopy& copy);
  uint32_t FileNumber(const std::string& file);

  Options options_;
  CrawlStats* stats_;
  EventLog* log_;
  dedupe::DocumentTable exact_;
  std::unique_ptr<dedupe::NearDupIndex> near_;
  // SimHash (high word; low = 0) -> the first page with that text.
  dedupe::DocumentTable near_copies_{1};
  // WARC basenames by the number a DocumentCopy holds.
  std::vector<std::string> files_;
};

}  // namespace crawld::daemon

#endif  // CRAWLD_DAEMON_DOCUMENTS_H_
