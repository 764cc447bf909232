// dedupe/dedupe.h: the URL-seen set and document checksums of one worker.
//
// SeenSet answers "was this URL fingerprint ever queued here?" A Bloom
// filter (B. H. Bloom, "Space/time trade-offs in hash coding with allowable
// errors", CACM 13(7), 1970) answers the common case, a never-seen URL, from
// memory without touching the exact set; every "maybe" is confirmed against an
// exact set of 64-bit fingerprints, so a Bloom false positive costs a lookup
// but never drops a new URL. Bloom indexes come from one 64-bit fingerprint by
// double hashing (Kirsch and Mitzenmacher, "Less Hashing, Same Performance",
// https://www.eecs.harvard.edu/~michaelm/postscripts/rsa2008.pdf).
//
// SeenSet keeps the exact set in memory (an open-addressing hash set of
// uint64, 11 to 22 bytes per URL with its load kept in (3/8, 3/4]);
// UrlSeenStore keeps it in LevelDB, survives restarts, and mirrors it in an
// exact in-memory table while that fits a memory budget.
//
// SimHash and NearDupIndex find near-duplicate pages (same text but for a
// date, a counter, an ad).
//
// DocumentDigest is the exact-duplicate body checksum: XXH3-128
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md) in the
// canonical big-endian byte order that xxh128sum prints.
#ifndef CRAWLD_DEDUPE_DEDUPE_H_
#define CRAWLD_DEDUPE_DEDUPE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::dedupe {

// Knobs of every class here. SeenSet reads only expected_urls and
// bloom_fp_rate; UrlSeenStore reads those and the "store" fields;
// NearDupIndex reads the "near-duplicate" fields.
struct Options {
  // --- Behaviour ---

  // UrlSeenStore: the directory of its LevelDB database and Bloom file
  // (path). Created when missing. One open store per directory.
  std::string dir;
  // UrlSeenStore: fsync each LevelDB write and the Bloom file. With false, a
  // process kill after Flush() loses nothing, a machine crash may lose the
  // last batches (LevelDB's own contract).
  bool sync = false;
  // NearDupIndex: the largest Hamming distance that counts as a near
  // duplicate (bits). Clamped to [0, 3]: the index splits the 64 bits into
  // max_distance + 1 blocks, and below 16-bit blocks its tables stop being
  // selective.
  int near_dup_max_distance = 3;

  // --- Performance ---

  // URLs the worker expects to see (count); sizes the Bloom filter. Going
  // past it keeps answers exact but raises the Bloom false-positive rate
  // (more exact-set lookups). Clamped to [1, 2^36].
  uint64_t expected_urls = 10'000'000;
  // Target Bloom false-positive rate at expected_urls (probability).
  // Clamped to [1e-9, 0.5].
  double bloom_fp_rate = 0.01;
  // UrlSeenStore: new fingerprints buffered in memory before one LevelDB
  // write batch (count). Clamped to [1, 1'000'000].
  size_t batch_size = 4096;
  // UrlSeenStore: fingerprints reach LevelDB only in Flush(): never in a
  // batch of their own (batch_size is then only the initial size of the
  // pending set, which grows), and Close() or the destructor without a
  // Flush() drops them, saving no Bloom or table file that would hold
  // them. For a caller whose checkpoint makes the fingerprints durable
  // together with the queues they came from: the store is never ahead of
  // the queues, so a URL is never "seen" without being queued or fetched.
  bool flush_only = false;
  // UrlSeenStore without its exact table: fingerprints known to be present
  // that are kept in memory to spare a LevelDB read (count; rounded up to a
  // power of two; 0 turns the cache off). 17 bytes each.
  size_t hot_cache_entries = 1 << 16;
  // UrlSeenStore: LevelDB block cache (bytes). Clamped to >= 1 MiB.
  size_t cache_bytes = 64 << 20;
  // UrlSeenStore: LevelDB memtable size (bytes). Clamped to
  // [64 KiB, 1 GiB].
  size_t write_buffer_bytes = 8 << 20;
  // UrlSeenStore: memory budget of the exact in-memory table of stored
  // (host_hash, fingerprint) pairs (bytes; 0 turns the table off). About
  // 15 to 17 bytes a URL at expected_urls (12-byte slots at 70% to 80%
  // load) plus 12 to 24 bytes a host: the default holds 10 M URLs (about
  // 170 MB) with room to grow to about 15 M. When the table would exceed
  // it, the store drops the table and answers from the Bloom filter and
  // LevelDB (slower, as exact); Open skips the table when the stored count
  // alone would exceed it. Growing briefly holds the old table too.
  size_t exact_table_bytes = size_t{256} << 20;
  // NearDupIndex: simhashes kept (count); the oldest is forgotten first.
  // Clamped to [1, 2^28]. About 8 + 20 x (max_distance + 1) bytes each.
  size_t near_dup_max_entries = 1 << 20;

  // --- Document claims (ClaimTable, RedisClaims) ---

  // ClaimTable: the table file (path); its directory is created when
  // missing. Every process of one crawl on one machine opens the same one.
  std::string claims_path;
  // Digests a claim store holds (count). ClaimTable: sizes the file when
  // it is created (an existing file keeps its size): about 51 bytes a
  // digest (640-byte buckets of 14 slots, filled to at most 90%), so 2 M
  // digests take about 102 MB.
  // RedisClaims: a counter in Redis refuses claims beyond it. Clamped to
  // [1024, 2^32].
  uint64_t max_documents = 2'000'000;
  // ClaimTable: bytes kept for the text of the claims, each its record id
  // and URI (about 120 bytes with a 70-byte URI); claims stop when it is
  // used up. Fixed when the file is created. Clamped to [64 KiB, 2^40].
  uint64_t claim_text_bytes = uint64_t{256} << 20;
  // RedisClaims: the server and the prefix of its keys ("<prefix>doc:<32
  // hex digits>" per digest, "<prefix>doc-count").
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::string redis_prefix = "crawld:default:";
  // RedisClaims: connect and command timeout (milliseconds). Clamped to
  // [1, 60'000].
  int redis_timeout_ms = 250;
  // RedisClaims: after a failure, calls answer kUnavailable at once for
  // this long before Redis is tried again (milliseconds), so that a dead
  // server costs each page nothing. Clamped to [0, 600'000].
  int redis_retry_ms = 1000;
};

// URL-seen set: Bloom filter in front of an exact set of 64-bit fingerprints,
// so a Bloom false positive never drops a new URL.
// Owned by one worker loop; not thread-safe. Not copyable; movable.
class SeenSet {
 public:
  // Allocates the Bloom filter (about expected_urls x 9.6 bits at 1%); the
  // exact set starts small and grows.
  explicit SeenSet(const Options& options);
  SeenSet(SeenSet&&) noexcept = default;
  SeenSet& operator=(SeenSet&&) noexcept = default;
  SeenSet(const SeenSet&) = delete;
  SeenSet& operator=(const SeenSet&) = delete;

  // Returns true if `fingerprint` was not in the set (and adds it), false if
  // it was. Every 64-bit value, 0 included, is a valid fingerprint.
  bool InsertIfNew(uint64_t fingerprint);

  // True if `fingerprint` was inserted before. Exact: no false positives.
  bool Contains(uint64_t fingerprint) const;

  // Fingerprints in the set (count).
  size_t size() const { return size_; }
  // Fraction of Bloom bits set, in [0, 1]; about 0.5 at expected_urls with
  // the optimal number of hashes.
  double bloom_fill() const;
  // Lookups (by InsertIfNew or Contains) where the Bloom filter said "maybe"
  // and the exact set said no (count).
  uint64_t bloom_false_positives() const { return bloom_false_positives_; }
  // Bloom filter geometry, chosen from Options: bits (m) and hashes (k).
  uint64_t bloom_bits() const { return bloom_bits_; }
  int bloom_hashes() const { return bloom_hashes_; }

 private:
  bool BloomMayContain(uint64_t fingerprint) const;
  void BloomAdd(uint64_t fingerprint);
  bool ExactContains(uint64_t fingerprint) const;
  void ExactInsert(uint64_t fingerprint);  // REQUIRES: not present
  void ExactGrow();

  // Bloom filter.
  std::vector<uint64_t> bloom_words_;
  uint64_t bloom_bits_ = 0;
  int bloom_hashes_ = 0;
  uint64_t bloom_set_bits_ = 0;
  mutable uint64_t bloom_false_positives_ = 0;  // a statistic, not state

  // Exact set: linear probing over a power-of-two table; slot value 0 means
  // empty, so fingerprint 0 is kept in a flag of its own.
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
  size_t used_slots_ = 0;
  bool has_zero_ = false;
  size_t size_ = 0;
};

// URL-seen store of one worker: the exact set on disk in LevelDB
// (https://github.com/google/leveldb/blob/main/doc/index.md), answered from
// memory.
//
// Lookups: while the stored pairs fit Options::exact_table_bytes, an exact
// in-memory table of them answers every lookup with no I/O (about 17 bytes
// a URL at expected_urls: host hashes interned to 32-bit ids, and per slot the
// id and a 64-bit bijection of the fingerprint, so equality is on the full pair
// and no hash collision can drop a new URL). Why: with hits spread uniformly
// over 10 M stored keys, a hit answered by LevelDB costs a 4 to 7 us Get (a
// hot cache cannot help uniform hits), so the Bloom design below stays
// under 500 k lookups/s; the table does about 5 M (docs/bench/dedupe.md).
// Beyond the budget the store falls back to the Bloom design: a Bloom
// filter answers "never seen" without I/O, every "maybe" is checked against
// LevelDB, so a Bloom false positive costs a read but never drops a new URL;
// a small cache of present keys spares reads of hot ones. LevelDB stays the
// durable log in both modes.
//
// Keys are "f" + host_hash + fingerprint, both big-endian, so one host's
// fingerprints are one contiguous key range (ForEachOfHost, EraseHost: moving
// a host to another worker). host_hash is the caller's (the ring's
// xxh3(host)); any value is valid, as is any fingerprint, 0 included.
//
// Durability: new fingerprints go to LevelDB in write batches of
// Options::batch_size and on Flush(). After Flush() returns OK, every
// fingerprint inserted before it survives a process kill (and a machine crash
// with Options::sync). A kill loses at most the unflushed tail.
//
// Restart: Flush() and Close() also save the Bloom filter to `seen.bloom` in
// the directory (header: geometry, count, write epoch, XXH3 checksum), and
// Close() the exact table to `seen.table` (same checks; ~12 bytes a slot,
// too big to write at every Flush). Open loads each when it matches the
// database exactly (and the table fits the budget), and otherwise (missing,
// damaged, stale after a kill, other geometry) rebuilds it by scanning the
// database: slower (about 5 s of CPU at 11 M keys), never wrong.
//
// Owned by one worker loop; not thread-safe. Every call may block on disk.
// Not copyable or movable (hand out the unique_ptr).
class UrlSeenStore {
 public:
  // Opens or creates the store in options.dir. Fails with kInvalidArgument
  // on an empty dir, kIOError if the directory cannot be created or written
  // or is held by another open store, kCorruption if the database is
  // damaged. The caller owns the store.
  [[nodiscard]] static Result<std::unique_ptr<UrlSeenStore>> Open(
      const Options& options);
  // Close(), its error dropped: call Close() to see it.
  ~UrlSeenStore();
  UrlSeenStore(const UrlSeenStore&) = delete;
  UrlSeenStore& operator=(const UrlSeenStore&) = delete;

  // True if (host_hash, fingerprint) was not in the store, and adds it;
  // false if it was. On error nothing was added (a full batch that cannot
  // be written refuses new fingerprints until a write succeeds).
  [[nodiscard]] Result<bool> InsertIfNew(uint64_t host_hash,
                                         uint64_t fingerprint);
  // True if (host_hash, fingerprint) was inserted before. Exact.
  [[nodiscard]] Result<bool> Contains(uint64_t host_hash, uint64_t fingerprint);

  // Writes the buffered fingerprints in one batch and saves the Bloom
  // filter (about expected_urls x 1.2 bytes at 1%: call it at checkpoints,
  // not per URL). On error the buffered fingerprints stay buffered and a
  // later Flush() retries them.
  [[nodiscard]] Status Flush();
  // For a flush_only store whose Flush() follows another component's
  // checkpoint step (the frontier's queues): marks the store "checkpoint
  // begun" on disk before that step, and the next Flush() clears the mark
  // in its batch. A process killed in between leaves the mark, and the next
  // Open() reports it (checkpoint_interrupted()): the queues may then hold
  // URLs this store does not know, which the caller should insert again
  // before it trusts InsertIfNew() to find what is queued.
  [[nodiscard]] Status BeginCheckpoint();
  // True when Open() found the mark of a checkpoint that began and did not
  // reach its Flush() (see BeginCheckpoint()).
  [[nodiscard]] bool checkpoint_interrupted() const;
  // Flush(), saves the exact table (`seen.table`), then releases the
  // database and the table's memory. Later calls fail with
  // kFailedPrecondition. Idempotent. If the batch cannot be written the
  // store stays open (retry, or destroy it and lose the unflushed tail); if
  // only the Bloom or table save fails it closes all the same (the next
  // Open rebuilds them).
  [[nodiscard]] Status Close();

  // Calls `visit` with every fingerprint of `host_hash`, in ascending order,
  // after writing the buffered ones; stops early (still OK) when `visit`
  // returns false. `visit` must not call this store.
  [[nodiscard]] Status ForEachOfHost(
      uint64_t host_hash, const std::function<bool(uint64_t)>& visit);
  // Deletes every fingerprint of `host_hash` in one atomic batch; returns
  // how many (count). The Bloom filter keeps their bits (it cannot forget):
  // later lookups of them cost a read and answer "new".
  [[nodiscard]] Result<uint64_t> EraseHost(uint64_t host_hash);

  // Fingerprints in the store, buffered ones included (count).
  uint64_t size() const;
  // Fingerprints buffered, not yet written to LevelDB (count).
  size_t pending() const;
  // True if Open loaded the saved Bloom filter, false if it rebuilt it.
  bool bloom_loaded() const;
  // Lookups where the Bloom filter said "maybe" and the store said no
  // (count); with lookups(), the measured false-positive rate.
  uint64_t bloom_false_positives() const;
  // InsertIfNew and Contains calls (count).
  uint64_t lookups() const;
  // Lookups answered by LevelDB reads (count).
  uint64_t store_reads() const;
  // Bloom filter geometry, chosen from Options: bits (m) and hashes (k).
  uint64_t bloom_bits() const;
  int bloom_hashes() const;
  // True while the exact in-memory table answers lookups; false once it
  // was dropped for the budget, or when Options::exact_table_bytes is 0.
  // Bloom statistics count only lookups made without the table.
  bool exact_table_active() const;
  // True if Open loaded the exact table from `seen.table` (saved by
  // Close), false if it scanned LevelDB for it or has no table.
  bool exact_table_loaded() const;
  // Memory held by the exact table (bytes); 0 when not active.
  size_t exact_table_bytes() const;

 private:
  struct Rep;
  explicit UrlSeenStore(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

// 64-bit SimHash of text (M. Charikar, "Similarity estimation techniques
// from rounding algorithms", STOC 2002; as used for web pages by Manku,
// Jain and Das Sarma, "Detecting near-duplicates for web crawling", WWW
// 2007). Features are shingles of `shingle_words` consecutive words, each
// hashed with XXH3-64 and weighted 1. A word is a run of ASCII letters and
// digits or bytes >= 0x80 (UTF-8), ASCII lower-cased; everything else
// separates words. A text with fewer words is one feature; no words gives 0.
// shingle_words is clamped to [1, 16]. Stable across runs and machines.
// The default 2 is a trade: on 500-word texts a one-word change stays
// within 3 bits about 90% of the time (1 word: 96%, 3 words: 78%), while
// single words would let shared common words pull unrelated pages together.
uint64_t SimHash(std::string_view text, int shingle_words = 2);

// Bits in which a and b differ, in [0, 64].
int HammingDistance(uint64_t a, uint64_t b);

// Near-duplicate index: "is any stored simhash within
// Options::near_dup_max_distance (k) bits of this one?" Split the 64 bits
// into k + 1 blocks: by pigeonhole two hashes within k bits agree exactly on
// at least one block, so each block has a hash table, and only hashes
// sharing a block with the query are compared (Manku et al. above, section
// 3, with one table per block). Memory is bounded: beyond
// near_dup_max_entries the oldest simhash is forgotten. Each stored simhash
// has a slot in [0, capacity()), its place in the insertion ring, so that a
// caller can keep what it knows about the hash (where its page is) in an
// array beside the index, forgotten with it.
// Owned by one worker loop; not thread-safe. Not copyable; movable.
class NearDupIndex {
 public:
  // A stored simhash and its slot.
  struct Match {
    uint64_t simhash = 0;
    uint32_t slot = 0;
  };
  // Where Insert put a simhash, and the simhash it forgot to make room
  // (whose slot that was), if any.
  struct Inserted {
    uint32_t slot = 0;
    std::optional<uint64_t> evicted;
  };

  // The bucket arrays, the buckets and the insertion ring all grow with
  // the contents: an empty index holds about 100 KB.
  explicit NearDupIndex(const Options& options);
  NearDupIndex(NearDupIndex&&) noexcept = default;
  NearDupIndex& operator=(NearDupIndex&&) noexcept = default;
  NearDupIndex(const NearDupIndex&) = delete;
  NearDupIndex& operator=(const NearDupIndex&) = delete;

  // A stored simhash within max_distance() of `simhash` (the first found,
  // not necessarily the nearest), or nullopt.
  std::optional<Match> FindNear(uint64_t simhash) const;
  // Stores `simhash` (duplicates too), forgetting the oldest when full:
  // slots are reused in insertion order, 0, 1, ..., capacity() - 1, 0, ...
  Inserted Insert(uint64_t simhash);

  // Simhashes stored (count), at most capacity().
  size_t size() const { return hashes_.size(); }
  size_t capacity() const { return capacity_; }
  int max_distance() const { return max_distance_; }

 private:
  // A bucket entry: the whole simhash (a query compares it without
  // leaving the bucket) and its slot. Packed: 12 bytes, not 16.
  struct __attribute__((packed)) Entry {
    uint64_t simhash;
    uint32_t slot;
  };
  // One table per block: buckets of entries, contiguous so that a query
  // scans a cache line or two per table instead of chasing pointers.
  struct Table {
    int shift = 0;      // the block's lowest bit
    uint64_t mask = 0;  // the block's bits, after the shift
    std::vector<std::vector<Entry>> buckets;
  };
  // Buckets a table starts with (fewer when the capacity needs fewer).
  static constexpr uint64_t kFirstBuckets = 1024;
  size_t BucketIndex(const Table& t, uint64_t simhash) const;
  std::vector<Entry>& BucketOf(Table& t, uint64_t simhash);
  const std::vector<Entry>& BucketOf(const Table& t, uint64_t simhash) const;
  // Doubles every table's buckets (at 8 entries a bucket on average).
  void GrowBuckets();

  int max_distance_ = 3;
  size_t capacity_ = 1;
  std::vector<uint64_t> hashes_;  // ring in insertion order, for eviction
  size_t next_slot_ = 0;
  uint64_t bucket_mask_ = 0;
  uint64_t max_buckets_ = 1;
  std::vector<Table> tables_;
};

// The body checksum for exact-duplicate detection: XXH3-128 of `body` as 32
// lower-case hex characters (canonical big-endian order, as xxh128sum prints).
// Stable across runs, machines and versions of this program.
std::string DocumentDigest(std::string_view body);

// The same checksum as two words (high = the first 16 hex characters).
struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;
  friend bool operator==(const Digest128&, const Digest128&) = default;
};
Digest128 DocumentDigest128(std::string_view body);

// Where the stored copy of a document is, in the caller's terms (a worker:
// the number of its WARC file, the record's offset and length there, and
// the fetch time). The text behind it (URL, record id) is read back from
// the WARC record when needed, which is rare.
struct DocumentCopy {
  uint64_t offset = 0;
  int64_t time_us = 0;
  uint32_t file = 0;
  uint32_t length = 0;  // 0: no copy
};

// ---------------------------------------------------------------------------
// Document claims: one full copy of each body in the whole crawl
// ---------------------------------------------------------------------------
//
// Exact-duplicate dedupe across workers, nodes and restarts (docs/STORE.md,
// "Document dedupe"). Before a body is written, the worker claims its
// digest (DocumentDigest128). The first claim of a digest names the record
// that will hold the body in full: a WARC-Record-ID made before the write,
// the URI and the fetch time. Every later fetch of the same bytes finds
// that claim and is written as a revisit of it; the claim holds everything
// the revisit's WARC-Refers-To* fields need, so nobody reads another
// worker's WARC. After its write the claimant settles the claim: stored,
// or released when nothing was written.
//
// A claim is pending from Claim() until Settle(stored). A pending claim of
// the same URI is the trace of a fetch whose record was never written (its
// worker died, or the disk failed, in between): that URI's next fetch
// stores the body in full under the claimed record id, so the revisits
// made meanwhile point at the right record. A stored claim is the target of
// every later fetch of the body, the same URI's included.

// What a revisit needs to refer to the full copy of a body.
struct DocumentClaim {
  // WARC-Record-ID of the response record with the body ("<urn:...>").
  std::string record_id;
  // Its WARC-Target-URI.
  std::string target_uri;
  // Its fetch time (epoch microseconds): WARC-Date, and the revisit's
  // WARC-Refers-To-Date.
  int64_t time_us = 0;
  // The claimant said the record is written (Settle with stored = true).
  bool stored = false;
};

enum class ClaimOutcome : uint8_t {
  kClaimed,      // the digest was free; the caller stores the body in full
                 // under its proposed record id, then settles
  kOwn,          // a pending claim of the same URI: the caller stores the
                 // body in full under claim.record_id, then settles
  kDuplicate,    // another record holds the body: write a revisit of claim
  kFull,         // the store's bound is reached: nothing claimed
  kUnavailable,  // the store failed or timed out: nothing claimed
};

struct ClaimResult {
  ClaimOutcome outcome = ClaimOutcome::kUnavailable;
  // kOwn and kDuplicate: the claim found (kOwn: with the new time_us).
  DocumentClaim claim;
  // kUnavailable: why, for the log.
  std::string error;
};

// The crawl-wide claim store. Thread-safe. Every call may block (a lock
// shared with other processes, disk, the network): never call it from an
// event loop.
class DocumentClaims {
 public:
  virtual ~DocumentClaims() = default;

  // Claims `digest` for `proposal` unless it is claimed already (see
  // ClaimOutcome). REQUIRES: proposal.record_id is 1 to 255 bytes without
  // spaces, proposal.target_uri is not empty (else kUnavailable).
  [[nodiscard]] virtual ClaimResult Claim(const Digest128& digest,
                                          const DocumentClaim& proposal) = 0;

  // Settles the claim of `digest` made for `record_id` (kClaimed or kOwn):
  // stored = true marks it written; false releases it (nothing was
  // written, the next fetch of the body claims it again). A claim that is
  // not (or no longer) record_id's is left alone; OK all the same.
  // Errors: the store failed (the claim stays pending).
  [[nodiscard]] virtual Status Settle(const Digest128& digest,
                                      std::string_view record_id,
                                      bool stored) = 0;

  // Digests held (count; ClaimTable: approximate after a process died
  // inside a claim) and the bound they are held to.
  [[nodiscard]] virtual uint64_t size() const = 0;
  [[nodiscard]] virtual uint64_t capacity() const = 0;
};

// The claim store of one machine: a file shared by every process of the
// crawl there (Options::claims_path), so all the workers of a node see one
// table, synchronously, with no server.
//
// Layout (dedupe/claim_table.cc, docs/STORE.md): a header, an array of
// buckets, and a text area. A bucket is a robust process-shared mutex, a
// tag byte per slot, and 14 slots of 40 bytes (digest, fetch time, where
// its text is, a checksum). A digest may live in either of two buckets
// (two independent hashes, the less full one gets it), so the table fills
// to about 90% before a digest finds both full. The text (record id and
// URI) is appended to the text area and never moved.
//
// Memory: the header and the buckets are mapped (MAP_SHARED; about 51
// bytes a digest of max_documents, resident from the start); the text
// area is not, and is read and written through the file, so a worker's
// resident memory does not grow with the documents claimed.
//
// Durability: buckets and text alike are in the page cache when
// Claim returns and survives the death of any process (kill -9); the kernel
// writes it back within its dirty expiry (about 30 s), so a machine crash
// may lose the last claims: those bodies are then stored in full once
// more, never lost. A process killed inside a claim leaves its buckets'
// mutexes to the next locker (EOWNERDEAD), which drops any slot whose
// checksum does not match and rebuilds the bucket's tags. After a reboot
// the first opener re-initializes every mutex and checks every slot.
//
// Bounds: the file's size is fixed when it is created (from max_documents
// and claim_text_bytes). The buckets' disk blocks are taken when it is
// created (a disk without room for them is an IOError from Open); the text
// area's are taken a MiB at a time as claims use it, and a disk without
// room makes Claim answer kFull (the body is then stored in full). When both
// buckets of a digest are full or the text area is used up, Claim answers
// kFull. Text of a released claim, or of a claim whose process died mid-way, is
// not reused.
class ClaimTable final : public DocumentClaims {
 public:
  // Opens options.claims_path, creating it when missing. Fails with
  // InvalidArgument for an empty path, IOError when the file cannot be
  // created, sized or mapped, Corruption for a file that is not a claim
  // table of this version. An existing table keeps its size whatever the
  // options say (size_from_file() then tells).
  [[nodiscard]] static Result<std::unique_ptr<ClaimTable>> Open(
      const Options& options);
  ~ClaimTable() override;
  ClaimTable(const ClaimTable&) = delete;
  ClaimTable& operator=(const ClaimTable&) = delete;

  [[nodiscard]] ClaimResult Claim(const Digest128& digest,
                                  const DocumentClaim& proposal) override;
  [[nodiscard]] Status Settle(const Digest128& digest,
                              std::string_view record_id, bool stored) override;
  [[nodiscard]] uint64_t size() const override;
  [[nodiscard]] uint64_t capacity() const override;

  // Bytes of the text area used and available.
  [[nodiscard]] uint64_t text_used() const;
  [[nodiscard]] uint64_t text_capacity() const;
  // The file's size (bytes) and whether it differs from what the options
  // asked (an existing table was opened).
  [[nodiscard]] uint64_t file_bytes() const;
  [[nodiscard]] bool size_from_file() const { return size_from_file_; }
  // Buckets this handle repaired after a process died inside them, and
  // slots it dropped for a bad checksum (counts).
  [[nodiscard]] uint64_t repaired_buckets() const;
  [[nodiscard]] uint64_t dropped_slots() const;

  // Test hook: locks the buckets of `digest`, starts writing a slot for it
  // and returns without unlocking, as a process killed there would leave
  // it; the caller then dies (kill -9 itself). `stage` 0: nothing written;
  // 1: a slot committed with a checksum that does not match (what a torn
  // write-back after a machine crash leaves); 2: fields and checksum but
  // not the state; 3: committed but its tag not set. The slot's text is
  // the record id "<urn:test:abandoned>" and URI "http://abandoned.test/".
  void TEST_AbandonClaim(const Digest128& digest, int stage);

 private:
  struct Header;
  struct Slot;
  struct Bucket;
  class Locked;
  ClaimTable(void* base, uint64_t mapped_bytes, int fd, bool size_from_file);
  Bucket& BucketAt(uint64_t i) const;
  void BucketsOf(const Digest128& digest, uint64_t* a, uint64_t* b) const;
  // Repairs `b` after its locker died: drops slots with a bad checksum,
  // rebuilds tags and the used count.
  void Repair(Bucket& b);
  bool ReadText(const Slot& s, std::string* record_id, std::string* uri) const;
  // Reads the slot's text from the file into `raw`: true when the slot
  // points inside the text area, the read succeeds and the checksum
  // matches.
  bool ValidText(const Slot& s, std::string* raw) const;
  bool SlotValid(const Slot& s) const;
  // Writes `n` bytes at `off` into the text area; false on an I/O error.
  bool WriteText(uint64_t off, const char* bytes, size_t n);
  // Takes the disk blocks of the text area up to `end` (bytes into it);
  // false when the disk has no room.
  bool TextBacked(uint64_t end);

  void* base_;             // the header and the buckets, mapped
  uint64_t mapped_bytes_;  // their size: where the text area starts
  int fd_;
  bool size_from_file_;
  std::atomic<uint64_t> repaired_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> text_backed_{0};  // text bytes known to have blocks
};

// The claim store of a crawl on several machines: one key per digest in
// the crawl's Redis, claimed with one Lua script call (GET, else SET and
// INCR of a counter under max_documents), settled with another. Each call
// uses a blocking hiredis connection of its own thread (a small pool),
// with Options::redis_timeout_ms on connect and on every reply. When Redis
// fails, calls answer kUnavailable (Settle: an error) without trying again
// for redis_retry_ms; the caller stores the body in full. Claims live as
// long as Redis keeps them (its persistence settings decide what a Redis
// restart keeps).
// Value of a claim key: "<P|S> <time_us> <record_id> <uri>".
//
// Nothing connects before the first call.
[[nodiscard]] std::unique_ptr<DocumentClaims> NewRedisClaims(
    const Options& options);

}  // namespace crawld::dedupe

#endif  // CRAWLD_DEDUPE_DEDUPE_H_
