// store/store.h: the document store. Writes what the crawler fetched as
// WARC/1.1 records (ISO 28500:2017), one gzip member per record, in files
// rotated by size; reads and verifies such files. Alongside the WARCs it
// keeps a CDXJ index per WARC file and an append-only document feed
// (cursor-addressed log of stored records) for indexers.
//
// Spec: WARC/1.1,
// https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/
// On-disk layout, record types and headers we write: docs/STORE.md.
//
// Deliberate choices and deviations:
// - Record-at-a-time compression (WARC 1.1 annex D.2): each record is its own
//   gzip member, so an index can point at (file, offset, length) and a reader
//   can decompress one record alone. libdeflate compresses in one shot, so a
//   record (headers + block) is assembled in one reusable memory buffer
//   before compression, also when the body was spilled to disk by DocBuffer.
//   Memory per writer is therefore about 2x the largest record; the fetcher
//   caps bodies and Options::max_record_bytes rejects anything larger.
// - WARC-Date carries microseconds (WARC 1.1 allows a fraction of a second).
// - The payload of a response is the bytes after the HTTP header block as
//   received (transfer coding already removed by the fetcher, content coding
//   intact).
// - A record never misdescribes what arrived (issue 19): a response or
//   revisit whose head is not an HTTP response head, or whose framing is
//   invalid (differing or malformed Content-Length without a
//   Transfer-Encoding to override it), is refused; a body shorter than its
//   Content-Length is
//   written with WARC-Truncated (the caller's reason, else "unspecified").
//   docs/STORE.md, "Failed transfers", says what is recorded for each
//   failure of a fetch.
// - A request and its response are always written to the same file, so
//   WARC-Concurrent-To never points into another file.
// - CDXJ (pywb/OutbackCDX form, https://specs.webrecorder.net/cdxj/0.1.0/)
//   is appended unsorted as records are written; SortCdxj() makes the
//   sorted copy lookups need. SURT keys follow the python `surt` package
//   defaults, except that path session ids (ASP.NET "(S(...))") are kept.
// - Index and feed lines are written only after the WARC record they name
//   is complete, so they never point at bytes that are not there.
#ifndef CRAWLD_STORE_STORE_H_
#define CRAWLD_STORE_STORE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/doc_buffer.h"
#include "base/status.h"

namespace crawld::store {

class FeedClock;  // below, with the document feed

// The file operations the WARC, index and feed writers perform, so that a
// test can make them fail (LevelDB's Env and its ErrorEnv are the model):
// a disk that fills up part-way through a record, a read-only directory.
// POSIX semantics: a failing call returns -1 and sets errno; Pwrite may
// write fewer bytes than asked. Readers (WarcReader, FeedReader, recovery)
// use the file system directly. An Env must outlive the writers using it.
class Env {
 public:
  virtual ~Env() = default;
  // open(2).
  virtual int Open(const std::string& path, int flags, int mode) = 0;
  // pwrite(2).
  virtual ssize_t Pwrite(int fd, const void* data, size_t size,
                         uint64_t offset) = 0;
  // ftruncate(2).
  virtual int Ftruncate(int fd, uint64_t size) = 0;
  // fsync(2) or, with data_only, fdatasync(2).
  virtual int Sync(int fd, bool data_only) = 0;
  // close(2).
  virtual int Close(int fd) = 0;
  // mkdir -p with mode 0755: 0, or -1 with errno.
  virtual int CreateDirs(const std::string& path) = 0;

  // The POSIX implementation. Never destroyed; safe from any thread.
  static Env* Default();
};

struct Options {
  // --- Behaviour ---

  // Directory for WARC files; created (with parents) if missing.
  std::string dir;
  // File name: <prefix>-<YYYYMMDDhhmmss>-<worker 5 digits>-<serial 5 digits>
  // .warc.gz, the time being the UTC second the file was opened. Also the
  // warcinfo "isPartOf" value. Must not contain '/'.
  std::string prefix = "crawld";
  // Worker number in file names; clamped to 0..99999.
  int worker_id = 0;
  // Start a new file before the next write once the current one has reached
  // this size (bytes). Clamped to >= 1; records are never split.
  uint64_t rotate_bytes = 1ull << 30;
  // warcinfo "software".
  std::string software = "crawld/0.1";
  // warcinfo "http-header-user-agent" (omitted when empty).
  std::string user_agent;
  // warcinfo "operator" (omitted when empty).
  std::string operator_contact;
  // Largest record (WARC header + block, uncompressed) the writer accepts
  // (bytes); larger ones fail with ResourceExhausted. Bounds the writer's
  // buffers. Clamped to 1 MiB .. 4 GiB.
  uint64_t max_record_bytes = 1ull << 30;

  // --- Durability and performance ---

  // libdeflate compression level; clamped to 1..12.
  int gzip_level = 6;
  // fsync a file before closing it at rotation (and at Close()).
  bool fsync_on_rotate = true;
  // Flush() also fdatasyncs the current file (records are handed to the OS
  // as they are written; this decides whether Flush() waits for the disk).
  bool fsync_on_flush = true;

  // --- Index, feed, conversion records ---

  // Directory for the CDXJ index (<index_dir>/<warc-basename>.cdxj) and,
  // with write_feed, the document feed (<index_dir>/feed/); normally
  // <data>/index. Empty: neither is written (the WARCs alone).
  std::string index_dir;
  // Append an entry to the document feed for every response and revisit.
  bool write_feed = true;
  // Start a new feed segment once the current one reaches this size (bytes).
  // Clamped to >= 4096.
  uint64_t feed_segment_bytes = 64ull << 20;
  // cluster.node_id: goes into the feed IDs with worker_id. 0..1023, else
  // Open fails with InvalidArgument (when the feed is written).
  int node_id = 0;
  // WriteConversion() writes `conversion` records only when this is true
  // (the extracted text roughly doubles the text share of the archive).
  bool conversion_records = false;

  // --- Seams ---

  // File operations of the WARC, CDXJ and feed writers; nullptr =
  // Env::Default(). Not owned; must outlive the writer.
  Env* env = nullptr;
  // Clocks of the feed IDs; nullptr = FeedClock::Default(). Not owned.
  const FeedClock* feed_clock = nullptr;
};

// Index facts the writer cannot see in the bytes it stores. They go into
// the CDXJ line and the feed entry of the record.
struct IndexFlags {
  // The page asked not to be indexed (meta robots / X-Robots-Tag noindex).
  bool noindex = false;
  // URL of an earlier document this one is a near-duplicate of ("" = none).
  std::string near_duplicate_of;
};

// Where a record lives: `file` is the basename, `offset` and `length` the
// byte range of its gzip member in that file (exact for files we write).
struct RecordRef {
  std::string file;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string record_id;  // "<urn:uuid:...>", as in WARC-Record-ID
  // The feed ID of a response or revisit record (also its Crawld-Feed-ID
  // field); 0 for other records and when no feed is written.
  uint64_t feed_id = 0;
};

// One HTTP exchange as the fetcher saw it. The writer does not take
// ownership of anything; `body` must stay valid during the call.
//
// REQUIRES (else InvalidArgument, nothing written): response_head is an
// HTTP response head (status line, fields, blank line) whose framing is
// valid: Content-Length values all equal and 1*DIGIT unless a
// Transfer-Encoding overrides them (RFC 9112 6.3; statuses without a body,
// 1xx 204 304, are not judged); no CR, LF or NUL in target_uri, ip or
// truncated.
struct FetchRecord {
  std::string target_uri;
  // WARC-IP-Address (empty: header omitted).
  std::string ip;
  // Epoch microseconds of the fetch; becomes WARC-Date.
  int64_t fetch_time_us = 0;
  // Raw HTTP request bytes as sent (request line + headers + CRLF CRLF).
  std::string request_head;
  // "" for an exchange stored as it went over the wire (HTTP/1.x); else
  // the protocol it used, as an ALPN id ("h2"), written as a
  // `WARC-Protocol` field (iipc warc-specifications #42) on the response
  // (or revisit) and request records: their heads are then that exchange
  // in HTTP/1.1 syntax (docs/STORE.md, "HTTP/2"). A token (letters,
  // digits, "/", ".", "-"), else InvalidArgument.
  std::string protocol;
  // Raw HTTP status line + headers + CRLF CRLF as received.
  std::string response_head;
  // Raw payload bytes as received (content coding intact); null = empty.
  const DocBuffer* body = nullptr;
  // "" or the WARC-Truncated reason: "length", "time", "disconnect",
  // "unspecified". A body shorter than the head's Content-Length is
  // written with "unspecified" when this is empty: a cut body never goes
  // out as complete.
  std::string truncated;
  // WriteExchange: the WARC-Record-ID of the response record, chosen before
  // the write (a document claim names it, dedupe.h); "" = a new one. A
  // record id ("<scheme:...>", no whitespace) or InvalidArgument. Ids must
  // be unique in a crawl: the caller passes one no written record has
  // (WarcWriter::NewRecordId makes such ids). Ignored by WriteRevisit.
  std::string record_id;

  // For the CDXJ index and the feed only (the WARC keeps the raw head).
  // MIME type without parameters; "" = taken from the Content-Type of
  // response_head ("unk" when there is none).
  std::string mime;
  // HTTP status; -1 = taken from response_head (0 when unparseable).
  int status = -1;
  IndexFlags flags;
};

struct WrittenExchange {
  RecordRef request;
  RecordRef response;
  // "sha1:<BASE32>" of the payload.
  std::string payload_digest;
};

// Where a revisit and its request went.
struct WrittenRevisit {
  RecordRef revisit;
  // The request record; empty (record_id "") when there was no request
  // head to write.
  RecordRef request;
};

// The two revisit profiles of WARC 1.1 section 6.7.
enum class RevisitProfile {
  // 6.7.2: the payload's digest equals an earlier capture's. The block is
  // the response head only, with WARC-Truncated: length.
  kIdenticalPayloadDigest,
  // 6.7.3: the server said the content did not change (a 304 Not
  // Modified). The block is the 304 response (a head, no body).
  kServerNotModified,
};

// The earlier capture a revisit refers to.
//
// From a record of this crawl (a RecordRef and the record read back) all
// fields are known. From the CDXJ index of an earlier crawl a line gives
// the URL, the 14-digit timestamp (seconds only), the payload digest and
// the WARC file, offset and length, but not the record id or the exact
// WARC-Date: OriginalFromCdxj() reads them from the WARC when the file is
// at hand, and otherwise leaves record_id empty and `date` to the second.
struct RevisitOf {
  RevisitProfile profile = RevisitProfile::kIdenticalPayloadDigest;
  // WARC-Refers-To: the original's WARC-Record-ID ("<urn:...>"); "" when
  // unknown (the field is then left out: WARC 1.1 only recommends it).
  std::string record_id;
  // WARC-Refers-To-Target-URI: the original's WARC-Target-URI. Required.
  std::string target_uri;
  // WARC-Refers-To-Date: the original's WARC-Date as it was written
  // (W3C-ISO8601, e.g. Iso8601Micros(time) from base/time.h); "" when
  // unknown (left out).
  std::string date;
  // WARC-Payload-Digest: the original's payload digest ("sha1:<BASE32>").
  // Required for kIdenticalPayloadDigest; for kServerNotModified the last
  // capture's digest when known (indexers find the original by it).
  std::string payload_digest;
};

// Appends WARC records to size-rotated files. Owned by one worker loop; not
// thread-safe. Every write is synchronous (one write loop per gzip member).
//
// Failure model: when a write fails (disk full, EFBIG, EIO) the file is
// truncated back to where the failed call started, so it still ends at its
// last complete record, and IOError is returned (the message names the
// file and the cause, e.g. "No space left on device"); the writer stays
// usable, and once space is freed the next write succeeds (in the same
// file, or in the next if a rotation was due). With Options::index_dir,
// the CDXJ line and the feed entry of a response or revisit are written
// after its record and cut back with it on failure, so the WARC, the index
// and the feed always agree. If even that truncation fails, the writer
// refuses further writes with FailedPrecondition.
//
// What a caller does with each Status of a write:
//   InvalidArgument     this record was refused (bad input, e.g. a head
//                       that is not HTTP); nothing was written; go on
//   ResourceExhausted   over max_record_bytes; nothing written; go on
//   IOError             nothing of this record was kept; the disk is full
//                       or failing: stop fetching, keep the URL for later
//   FailedPrecondition  closed, or broken after a failed rollback: stop
class WarcWriter {
 public:
  // Creates `options.dir`, opens the first file and writes its warcinfo
  // record. Options are clamped (see their comments).
  // Returns InvalidArgument for an empty dir or a prefix with '/', IOError
  // when the directory or file cannot be created or written (a read-only
  // directory or file system, a full disk: the message names the path and
  // the cause), FailedPrecondition when another writer holds the feed of
  // this worker.
  [[nodiscard]] static Result<std::unique_ptr<WarcWriter>> Open(
      const Options& options);

  // Closes the file without fsync (call Close() for a durable end).
  ~WarcWriter();
  WarcWriter(const WarcWriter&) = delete;
  WarcWriter& operator=(const WarcWriter&) = delete;

  // Writes a `response` record (block: response_head + body) and then its
  // `request` record (block: request_head), each naming the other in
  // WARC-Concurrent-To, both in the same file. Rotates first if due.
  // Returns where both went and the payload digest; IOError on a write
  // failure (neither record is kept), ResourceExhausted when a record
  // exceeds max_record_bytes, FailedPrecondition after Close().
  // REQUIRES: record.target_uri is not empty.
  [[nodiscard]] Result<WrittenExchange> WriteExchange(
      const FetchRecord& record);

  // Writes a `revisit` record (WARC 1.1 section 6.7) about the fetch
  // `record` referring to `original`, then, when record.request_head is
  // not empty, its `request` record (each naming the other in
  // WARC-Concurrent-To, both in one file, as for WriteExchange). The block
  // is record.response_head; record.body is ignored. Profile:
  // - kIdenticalPayloadDigest: WARC-Truncated: length (the payload left
  //   out, 6.7.2 "shall"), WARC-Payload-Digest = original.payload_digest.
  // - kServerNotModified: the head must be a 304's; WARC-Payload-Digest
  //   when original.payload_digest is given.
  // Then WARC-Refers-To (when known), WARC-Refers-To-Target-URI and
  // WARC-Refers-To-Date (when known). The CDXJ line (mime warc/revisit,
  // digest = the original's) and the feed entry follow as for a response.
  // Errors as for WriteExchange; InvalidArgument also for a missing
  // target_uri or (identical-payload-digest) payload_digest, a record_id
  // that is not "<scheme:...>", a date that is not a WARC-Date, or a
  // not-modified head that is not a 304.
  [[nodiscard]] Result<WrittenRevisit> WriteRevisit(const FetchRecord& record,
                                                    const RevisitOf& original);

  // Shorthand: the identical-payload-digest revisit of a record of this
  // crawl, refers_to_time_us being its WARC-Date (epoch microseconds).
  // Returns where the revisit went (its request, if any, follows it).
  [[nodiscard]] Result<RecordRef> WriteRevisit(
      const FetchRecord& record, const std::string& refers_to_record_id,
      const std::string& refers_to_uri, int64_t refers_to_time_us,
      const std::string& payload_digest);

  // Writes a `metadata` record about `target_uri` with the given content
  // type and block; `concurrent_to` (a record id, may be empty) becomes
  // WARC-Concurrent-To. For outlinks use content type
  // "application/warc-fields" and OutlinksMetadataBlock(). Errors as for
  // WriteExchange.
  [[nodiscard]] Result<RecordRef> WriteMetadata(
      const std::string& target_uri, const std::string& concurrent_to,
      int64_t time_us, std::string_view content_type, std::string_view block);

  // Writes a `conversion` record (WARC 1.1 section 6.8) holding `text`, the
  // text extracted from the response `refers_to_record_id`, as
  // "text/plain; charset=utf-8", with WARC-Refers-To. Returns nullopt and
  // writes nothing unless Options::conversion_records. Errors as for
  // WriteMetadata.
  [[nodiscard]] Result<std::optional<RecordRef>> WriteConversion(
      const std::string& target_uri, const std::string& refers_to_record_id,
      int64_t time_us, std::string_view text);

  // Every record written so far is with the OS already; with fsync_on_flush
  // this also waits until it is on disk (the WARC first, then the index
  // and the feed, so that after a power loss the feed is never ahead of
  // the WARC as of the last Flush). IOError if fdatasync fails.
  [[nodiscard]] Status Flush();

  // fsync (if fsync_on_rotate) and close; later writes fail with
  // FailedPrecondition. Idempotent; IOError if fsync or close fails.
  [[nodiscard]] Status Close();

  // A fresh WARC-Record-ID, "<urn:uuid:...>" (RFC 4122 version 4), the
  // kind the writer gives its own records, for a caller that must name a
  // record before writing it (FetchRecord::record_id). Unlike the other
  // methods, safe to call from one thread while another writes.
  [[nodiscard]] std::string NewRecordId();

  // Basename of the file the last record went to (or, before any record,
  // the file holding the first warcinfo). Rotation happens lazily at the
  // next write, so this may name a file already past rotate_bytes.
  [[nodiscard]] std::string current_file() const;
  // Bytes in the current file; the offset the next record would get.
  [[nodiscard]] uint64_t current_offset() const;
  // Path of the CDXJ file of current_file() ("" without index_dir).
  [[nodiscard]] std::string current_index_path() const;
  // Options after clamping.
  [[nodiscard]] const Options& options() const;

 private:
  class Impl;
  explicit WarcWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Case-insensitive ordering for WARC field names (WARC 1.1 section 4: field
// names are case-insensitive).
struct FieldNameLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const;
};

// One record as read back.
struct Record {
  // "WARC/1.1" or "WARC/1.0" (whatever the version line said).
  std::string version;
  // Named fields; the key keeps the case of its first occurrence, lookups
  // are case-insensitive. A repeated field keeps its first value here.
  std::map<std::string, std::string, FieldNameLess> headers;
  // All fields in file order, repeats included.
  std::vector<std::pair<std::string, std::string>> fields;
  // Exactly Content-Length bytes.
  std::string block;
  // Byte range in the file: of the gzip member(s) holding the record in a
  // .warc.gz (exact for record-at-a-time files), of the record itself
  // (header to the trailing CRLF CRLF) in an uncompressed .warc.
  uint64_t offset = 0;
  uint64_t length = 0;

  // Value of the first field `name` (case-insensitive), "" if absent.
  [[nodiscard]] std::string Header(std::string_view name) const;
  // WARC-Type, e.g. "response".
  [[nodiscard]] std::string type() const;
};

struct ReaderOptions {
  // A record whose Content-Length exceeds this fails with ResourceExhausted
  // (bytes): the guard against decompression bombs and absurd lengths.
  uint64_t max_block_bytes = 1ull << 30;
  // Longest WARC header block accepted (bytes).
  uint64_t max_header_bytes = 1ull << 20;
};

// Sequential reader of a .warc.gz (concatenated gzip members, as written by
// any record-at-a-time or whole-file compressor) or an uncompressed .warc,
// detected from the first bytes. Single-threaded; not copyable.
class WarcReader {
 public:
  // Opens a file. IOError when it cannot be opened.
  [[nodiscard]] static Result<std::unique_ptr<WarcReader>> Open(
      const std::string& path, const ReaderOptions& options = ReaderOptions());
  // Reads from memory (a copy of `data` is kept), e.g. for fuzzing.
  [[nodiscard]] static std::unique_ptr<WarcReader> FromString(
      std::string data, const ReaderOptions& options = ReaderOptions());

  ~WarcReader();
  WarcReader(const WarcReader&) = delete;
  WarcReader& operator=(const WarcReader&) = delete;

  // Reads the next record into *out. Returns true with a record, false at a
  // clean end of input (between records). Errors: Corruption for a
  // malformed, truncated or badly compressed record or trailing garbage
  // (the message names the byte offset), ResourceExhausted beyond the
  // ReaderOptions caps, IOError on read failure. After an error, every
  // later call returns the same error.
  // REQUIRES: out != nullptr.
  [[nodiscard]] Result<bool> Next(Record* out);

  // File offset just past the last record returned by Next() (0 before the
  // first): where a file cut after that record would end.
  [[nodiscard]] uint64_t end_of_last_record() const;

 private:
  class Impl;
  explicit WarcReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads the one record stored in the `length` bytes at `offset` of `path`
// (a RecordRef's or a CDXJ line's coordinates; the record's offset and
// length are then relative to those bytes). IOError when the file cannot
// be read that far; Corruption when the bytes are not one whole record.
[[nodiscard]] Result<Record> ReadRecordAt(
    const std::string& path, uint64_t offset, uint64_t length,
    const ReaderOptions& options = ReaderOptions());

struct VerifyReport {
  std::string file;
  // Records read completely (including those with defects).
  uint64_t records = 0;
  // Conformance failures, each "offset N: what"; empty means valid.
  std::vector<std::string> defects;
  // Suspicious but allowed, e.g. a WARC-Concurrent-To pointing outside the
  // file, a digest algorithm we cannot check.
  std::vector<std::string> warnings;

  [[nodiscard]] bool ok() const { return defects.empty(); }
};

// Checks a whole file: version line WARC/1.0 or WARC/1.1; mandatory fields
// WARC-Record-ID, Content-Length, WARC-Date, WARC-Type; exact lengths and the
// CRLF CRLF after each block; WARC-Block-Digest and (for application/http
// records with a parseable head, not revisits) WARC-Payload-Digest
// recomputed (sha1, base32 or hex); record ids unique; first record
// warcinfo; WARC-Concurrent-To targets present (warning); no trailing bytes.
// Defects go into the report; the returned Status is IOError only when the
// file cannot be opened or read.
[[nodiscard]] Result<VerifyReport> VerifyFile(
    const std::string& path, const ReaderOptions& options = ReaderOptions());

// Same checks on bytes in memory (`name` is used as the report's file).
[[nodiscard]] VerifyReport VerifyBytes(
    std::string data, std::string name,
    const ReaderOptions& options = ReaderOptions());

// Crash recovery: cuts a file so that it ends at its last complete record
// (for .warc.gz, its last complete gzip member), dropping a half-written
// record or trailing garbage. Returns the new size (unchanged for an intact
// file; 0 when not even the first record is complete). IOError when the
// file cannot be read or truncated. Digests are not checked.
// REQUIRES: no writer has the file open.
[[nodiscard]] Result<uint64_t> TruncateToLastCompleteRecord(
    const std::string& path);

// "sha1:" + RFC 4648 base32 of SHA-1(data), the form WARC digests take.
[[nodiscard]] std::string Sha1Digest(std::string_view data);

// The block of a `metadata` record listing a page's outlinks, as
// application/warc-fields: one "outlink: <url>" line (CRLF) per link, the
// field Heritrix writes (without its hop/context columns). A link holding
// CR, LF or NUL is left out: it would forge a field.
[[nodiscard]] std::string OutlinksMetadataBlock(
    const std::vector<std::string>& links);

// What a worker writes about a page in its `metadata` record: the
// page-level robots flags indexers must honour, the near-duplicate it
// resembles, its canonical URL, and its outlinks (with rel=nofollow).
struct PageMetadata {
  bool noindex = false;
  bool nofollow = false;
  std::string near_duplicate_of;
  std::string canonical;
  struct Outlink {
    std::string url;
    bool nofollow = false;
  };
  std::vector<Outlink> outlinks;
};

// The application/warc-fields block of a page's metadata record:
//   robots: noindex          (when set)
//   robots: nofollow         (when set)
//   near-duplicate-of: <url> (when set)
//   canonical: <url>         (when set)
//   outlink: <url>[ nofollow] (one per outlink, in document order)
// each line ending in CRLF. A value holding CR, LF or NUL is left out: it
// would forge a field. An outlink URL holds no space (URLs are serialized
// percent-encoded), so " nofollow" is unambiguous.
[[nodiscard]] std::string PageMetadataBlock(const PageMetadata& page);

// The reverse of PageMetadataBlock(), for recovery: unknown fields and
// malformed lines are skipped.
[[nodiscard]] PageMetadata ParsePageMetadataBlock(std::string_view block);

// Cuts a line-oriented file (CDXJ, feed segment) after its last '\n',
// dropping a line half-written by a crash. Returns the new size. IOError
// when the file cannot be read or truncated.
// REQUIRES: no writer has the file open.
[[nodiscard]] Result<uint64_t> TruncateToLastCompleteLine(
    const std::string& path);

// ---------------------------------------------------------------------------
// CDXJ index
// ---------------------------------------------------------------------------

// The SURT sort key of a URL as pywb and the python `surt` package write it
// by default (no scheme, no trailing comma): host labels reversed and
// comma-joined with "www", "www2", ... dropped, ")" and the path; default
// port, userinfo, fragment and an empty query dropped; tab/CR/LF removed;
// percent-escapes decoded repeatedly and only what must be escaped
// (controls, space, '#', '%', non-ASCII) escaped again; "//" in the path
// collapsed; a trailing "/" dropped except for the root; query arguments
// sorted; jsessionid/phpsessid/sid/aspsessionid query session ids dropped;
// everything lower-cased. "http://www.Example.com/A/?b=2&a=1" ->
// "com,example)/a?a=1&b=2". A dotted-quad host is not reversed. A URL
// without "//" after its scheme (dns:, mailto:) is returned as it is;
// "" gives "-".
[[nodiscard]] std::string Surt(std::string_view url);

// One CDXJ line: "<surt> <timestamp> {json}\n".
struct CdxjEntry {
  std::string surt;       // sort key, Surt(url)
  std::string timestamp;  // 14 digits, UTC, YYYYMMDDhhmmss
  std::string url;
  std::string mime;      // "warc/revisit" for revisits, as pywb writes
  int status = 0;        // 0 = unknown
  std::string digest;    // payload digest, base32 without "sha1:" (pywb form)
  uint64_t length = 0;   // gzip member length of the record
  uint64_t offset = 0;   // gzip member offset in `filename`
  std::string filename;  // WARC basename
  bool revisit = false;
  IndexFlags flags;
};

// The line for `e`, newline included.
[[nodiscard]] std::string FormatCdxjLine(const CdxjEntry& e);
// Parses one line (with or without its '\n'). InvalidArgument, naming what
// is wrong, for anything that is not a CDXJ line.
[[nodiscard]] Result<CdxjEntry> ParseCdxjLine(std::string_view line);

// Writes a sorted copy of the CDXJ file `in` to `out` (byte order, i.e.
// `LC_ALL=C sort`, what pywb and OutbackCDX expect), via a temporary file
// renamed into place, so `out` is either absent/old or complete. A torn
// last line (no '\n') is left out. Returns the number of lines written.
// IOError on read or write failure; `in` may equal `out`.
[[nodiscard]] Result<uint64_t> SortCdxj(const std::string& in,
                                        const std::string& out);

// Every entry of the CDXJ file `path` whose key is Surt(url), in file
// order (a linear scan: works on sorted and unsorted files). IOError when
// the file cannot be read, Corruption for a malformed complete line.
[[nodiscard]] Result<std::vector<CdxjEntry>> LookupCdxj(const std::string& path,
                                                        std::string_view url);

// The identical-payload-digest original described by a CDXJ line of an
// earlier crawl (issue 17: dedupe against earlier crawls). From the line
// alone: target_uri = url, payload_digest = "sha1:" + digest, date = the
// timestamp to the second ("2024-01-02T03:04:05Z"). When the line's WARC
// is readable as <warc_dir>/<filename>, the record at its offset and
// length is read and, if it is a response whose WARC-Target-URI and
// WARC-Payload-Digest match the line, its WARC-Record-ID and exact
// WARC-Date are used; an unreadable file leaves them as above.
// Errors: InvalidArgument for a revisit line (its record holds no payload:
// refer to its original instead) or one without a digest; Corruption when
// the record at the line's position is not the one the line describes
// (the index is stale).
[[nodiscard]] Result<RevisitOf> OriginalFromCdxj(const CdxjEntry& entry,
                                                 const std::string& warc_dir);

// ---------------------------------------------------------------------------
// Earlier crawls
// ---------------------------------------------------------------------------
//
// The captures of earlier crawls by payload digest, so that a crawl stores
// only what changed since (issue 17, "dedupe against earlier crawls";
// docs/STORE.md, "Revisits of an earlier crawl"). Loaded once from the
// CDXJ indexes; a hit is turned into a RevisitOf by OriginalFromCdxj, with
// the earlier WARC when it is at hand.
//
// Memory: 32 bytes a capture (the SHA-1, the file and the line's offset),
// in one sorted array; the line itself is read back from its CDXJ file on
// a hit. With a cache path the array is built once into that file and
// mapped read-only, so the workers of a node share one copy in the page
// cache instead of each holding its own. Find is const and opens its own
// file handles: safe from several threads at once.
class EarlierCaptures {
 public:
  struct Stats {
    uint64_t files = 0;           // CDXJ files read
    uint64_t lines = 0;           // complete lines in them
    uint64_t captures = 0;        // distinct payload digests kept
    uint64_t revisits = 0;        // revisit lines (no payload: skipped)
    uint64_t no_digest = 0;       // lines without a payload digest (skipped)
    uint64_t malformed = 0;       // lines that are not CDXJ (skipped)
    std::string first_malformed;  // "<file>:<line>: <why>" of the first
  };

  // Reads every source, in order: a crawld data directory (its
  // index/*.cdxj; the WARCs in its warc/) or one CDXJ file (the WARCs
  // beside it). The first capture of a digest wins. NotFound for a source
  // that is neither, naming it; IOError when a file cannot be read.
  // Malformed lines are skipped and counted, not fatal: one torn line of
  // a killed crawl must not refuse the next.
  //
  // `cache` (optional): a file in which the sorted index is kept for the
  // other processes loading the same sources (a node's workers): the first
  // builds it, under an exclusive lock on `cache` + ".lock", and the rest
  // map it. It is rebuilt when a source's CDXJ files differ in name, size
  // or modification time from those it was built from. A cache that cannot
  // be written is not an error: the index is then held in memory.
  [[nodiscard]] static Result<std::unique_ptr<EarlierCaptures>> Load(
      const std::vector<std::string>& sources, const std::string& cache = "");
  ~EarlierCaptures();
  EarlierCaptures(const EarlierCaptures&) = delete;
  EarlierCaptures& operator=(const EarlierCaptures&) = delete;

  // The earlier capture of a payload whose digest is `payload_digest`
  // ("sha1:" + base32, as Sha1Digest gives it). NotFound when no earlier
  // crawl holds it; Corruption when its line no longer describes its record
  // (a stale index: no revisit may point at the wrong record); IOError
  // when the line cannot be read back.
  [[nodiscard]] Result<RevisitOf> Find(std::string_view payload_digest) const;

  const Stats& stats() const { return stats_; }
  size_t size() const { return size_; }
  // The index's own heap (0 when it is mapped from the cache).
  size_t memory_bytes() const { return owned_.capacity() * sizeof(Slot); }
  // The bytes mapped from the cache, shared with the other processes that
  // map it (0 when the index is in memory).
  size_t mapped_bytes() const { return map_bytes_; }

 private:
  struct Slot {
    uint8_t sha1[20];
    uint32_t file;    // index into files_
    uint64_t offset;  // of the line in that file
  };
  struct File {
    std::string cdxj;      // path of the CDXJ file
    std::string warc_dir;  // where its WARCs are
  };
  EarlierCaptures() = default;
  Status LoadFile(const std::string& cdxj, const std::string& warc_dir);
  void SortOwned();
  // The cache (earlier.cc): the fingerprint of the files it indexes, and
  // the index written to and mapped from it.
  Status WriteCache(const std::string& path, uint64_t fingerprint) const;
  bool MapCache(const std::string& path, uint64_t fingerprint);

  std::vector<File> files_;
  std::vector<Slot> owned_;      // sorted by sha1, when held in memory
  const Slot* slots_ = nullptr;  // sorted by sha1: owned_ or the mapping
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  Stats stats_;
};

// ---------------------------------------------------------------------------
// Document feed
// ---------------------------------------------------------------------------
//
// One ordered feed for a whole crawl (issue 14): every entry carries a
// 64-bit feed ID, unique across workers, nodes and restarts and
// time-ordered, and readers return entries in ID order, never an ID lower
// than one already returned, so a consumer resumes from one number.
// Layout, the ID's bits and the proof sketch of the order: docs/STORE.md,
// "Document feed".

// The clocks and boot identity the feed's IDs come from. A feed ID's time
// is the writer's wall clock when it opened, advanced by the monotonic
// clock: it never goes back while the writer runs, whatever the wall clock
// does. Readers use the monotonic clock to know how far an idle writer has
// come. Tests inject their own; implementations must be safe from any
// thread.
class FeedClock {
 public:
  virtual ~FeedClock() = default;
  // Milliseconds since the Unix epoch (CLOCK_REALTIME); may step back.
  [[nodiscard]] virtual int64_t WallMs() const = 0;
  // Milliseconds of a clock that never goes back and that every process on
  // this machine shares (CLOCK_MONOTONIC); restarts at each boot.
  [[nodiscard]] virtual int64_t MonoMs() const = 0;
  // This boot of this machine (/proc/sys/kernel/random/boot_id): MonoMs()
  // values are comparable only under one boot id. At most 39 bytes.
  [[nodiscard]] virtual std::string BootId() const = 0;

  // The system clocks. Never destroyed; safe from any thread.
  static const FeedClock* Default();
};

// Feed IDs: bit 63 is 0; then 41 bits of milliseconds since
// 2024-01-01T00:00:00Z (until 2093), 10 bits of node id, 8 bits of worker
// id (the global worker id modulo 256: a node's writers have consecutive
// ids), 4 bits of sequence within the millisecond (a writer that writes
// more than 16 entries in a millisecond borrows the next one).
inline constexpr int64_t kFeedEpochMs = 1704067200000;  // 2024-01-01
inline constexpr int kFeedSeqBits = 4;
inline constexpr int kFeedWorkerBits = 8;
inline constexpr int kFeedNodeBits = 10;
inline constexpr int kFeedTimeShift =
    kFeedSeqBits + kFeedWorkerBits + kFeedNodeBits;

// The parts of a feed ID (no validity check: every uint64_t below 2^63
// decomposes).
struct FeedIdParts {
  int64_t unix_ms = 0;  // milliseconds since the Unix epoch
  int node = 0;
  int worker = 0;  // global worker id modulo 256
  int sequence = 0;
};
[[nodiscard]] FeedIdParts SplitFeedId(uint64_t id);

// One stored record, as an indexer needs it to fetch and process it.
struct FeedEntry {
  // The feed ID. FeedWriter::Append assigns one when this is 0 (or uses
  // the one BeginEntry() returned); FeedReader always sets it.
  uint64_t id = 0;
  std::string url;
  std::string warc_file;  // WARC basename
  uint64_t offset = 0;    // gzip member of the record in warc_file
  uint64_t length = 0;
  std::string digest;  // "sha1:<BASE32>" payload digest, as in the WARC
  int status = 0;      // HTTP status, 0 = unknown
  std::string mime;    // MIME type without parameters
  int64_t fetch_time_us = 0;
  bool revisit = false;  // a revisit record (digest names the original)
  IndexFlags flags;
  // Set by FeedReader: the cursor just after this entry, the decimal id
  // (what a consumer stores once it has processed the entry). Ignored by
  // FeedWriter.
  std::string cursor;
};

struct FeedOptions {
  // Feed directory (normally <data>/index/feed); created if missing.
  std::string dir;
  // Segments are feed-<worker 5 digits>-<segment 8 digits>.jsonl; each
  // worker appends only to its own. The global worker id, 0..99999; its
  // value modulo 256 goes into the IDs (Open refuses a second live writer
  // of the directory with the same value).
  int worker_id = 0;
  // cluster.node_id, 0..1023 (InvalidArgument otherwise).
  int node_id = 0;
  // New segment once the current one reaches this size (bytes); >= 4096.
  uint64_t segment_bytes = 64ull << 20;
  // fsync a segment when leaving it and at Close(); Flush() fdatasyncs.
  bool fsync = true;
  // File operations for writing; nullptr = Env::Default(). Not owned.
  Env* env = nullptr;
  // Clocks for the IDs; nullptr = FeedClock::Default(). Not owned; must
  // outlive the writer.
  const FeedClock* clock = nullptr;
};

// Appends entries to one worker's feed and hands out its feed IDs. Owned
// by one loop; not thread-safe. A second writer for the same dir and worker
// is refused (an OFD lock on its mark file, feed-<worker>.mark), so two
// processes never interleave lines.
//
// The mark file is shared memory (mmap) that readers on this machine read
// without a system call from the writer: the last ID handed out, whether a
// record holding it may still be on its way into the feed ("busy"), and
// the clock anchor. It survives kill -9 (the page cache keeps it), so a
// restarted writer never hands out an ID again, even one that reached only
// the WARC.
class FeedWriter {
 public:
  // Creates the dir, takes the worker's lock, reopens the worker's newest
  // segment and cuts a half-written last line (a crash mid-append), so a
  // restarted worker continues the same feed. Its IDs start above every ID
  // any writer of this dir handed out and above what any reader could have
  // assumed of them. InvalidArgument for an empty dir or a node id out of
  // range, FailedPrecondition when another writer holds the lock (or a
  // live writer of the dir has the same worker id modulo 256), IOError on
  // file errors.
  [[nodiscard]] static Result<std::unique_ptr<FeedWriter>> Open(
      const FeedOptions& options);
  ~FeedWriter();
  FeedWriter(const FeedWriter&) = delete;
  FeedWriter& operator=(const FeedWriter&) = delete;

  // Hands out the ID of a record about to be written and marks the writer
  // busy: readers return nothing at or above this ID until Append() or
  // AbortEntry() ends the entry. The ID is greater than every ID this
  // worker's writers handed out before. FailedPrecondition after Close()
  // or while an entry is open; ResourceExhausted past the year 2093.
  [[nodiscard]] Result<uint64_t> BeginEntry();
  // Ends the open entry without a line (its record was not written); its
  // ID is never used again. No-op when no entry is open.
  void AbortEntry();

  // Appends one line and ends the open entry; entry.id must be the ID
  // BeginEntry() returned, or 0 when no entry is open (one is then begun
  // here). On a write failure the segment is cut back, so it ends at a
  // complete line, the entry is ended all the same, and IOError is
  // returned. FailedPrecondition after Close(); InvalidArgument for an id
  // that is not the open entry's.
  [[nodiscard]] Status Append(const FeedEntry& entry);
  // fdatasync the current segment (when options.fsync).
  [[nodiscard]] Status Flush();
  // fsync (when options.fsync), close, release the lock. Idempotent.
  [[nodiscard]] Status Close();

 private:
  class Impl;
  explicit FeedWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct FeedPage {
  // In ascending ID order, across all workers.
  std::vector<FeedEntry> entries;
  // Pass back to Read() for the entries after these; equals the input
  // cursor when there was nothing new.
  std::string next_cursor;
  // Every entry with an ID in (cursor, watermark] is in `entries`, and no
  // entry with such an ID will ever be written later. At least the input
  // cursor's ID. This is what lets several feeds (nodes) be merged
  // exactly: MergeFeedPages().
  uint64_t watermark = 0;
};

// Reads the feed of all workers in a feed dir. Stateless between calls:
// several consumers may read at once, also while writers append.
//
// The cursor contract: a cursor is the decimal ID of the last entry the
// consumer processed; "" (or "0") is the start of the feed. Read(c, n)
// returns up to n entries with IDs greater than c, in ascending ID order,
// and each returned entry's `cursor` (the last one being next_cursor) is
// its ID. Read never returns an entry whose ID is lower than one it has
// returned for an earlier cursor: an entry is returned only once every
// writer that could still write a lower ID is past it (the watermark). A
// consumer that stores the cursor of the last entry it processed and
// restarts from it sees every entry exactly once, across crawld restarts,
// worker crashes and segment rotation. A line still being written is
// never returned.
//
// Writers are judged through their mark files: a live writer (its lock
// held) holds the feed only while it writes a record; an idle one, or one
// that is gone (lock free), never holds it, because any writer that starts
// later in this dir takes IDs above what a reader assumed. This needs the
// reader on the writers' machine (same boot id); a dir read from another
// machine is read exactly too, but an idle writer there holds the feed at
// its last ID.
class FeedReader {
 public:
  // IOError when `dir` is not a readable directory. `clock` nullptr =
  // FeedClock::Default(); not owned, must outlive the reader.
  [[nodiscard]] static Result<std::unique_ptr<FeedReader>> Open(
      const std::string& dir, const FeedClock* clock = nullptr);
  ~FeedReader();
  FeedReader(const FeedReader&) = delete;
  FeedReader& operator=(const FeedReader&) = delete;

  // InvalidArgument for a malformed cursor (not a decimal ID below 2^63;
  // the "<worker>:<segment>:<offset>" cursors of crawld before feed IDs
  // are refused with a message saying so); Corruption (naming file and
  // offset) for a complete line that does not parse, has no id, or breaks
  // the ID order of its worker; IOError on read failure. limit == 0
  // returns no entries and the same cursor; limit is capped at 100000.
  [[nodiscard]] Result<FeedPage> Read(std::string_view cursor, size_t limit);

 private:
  class Impl;
  explicit FeedReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses a feed cursor: "" -> 0, else a decimal ID below 2^63.
// InvalidArgument otherwise (with a hint for the old per-worker cursors).
[[nodiscard]] Result<uint64_t> ParseFeedCursor(std::string_view cursor);

// The merge of the pages that several feeds (the nodes of a crawl) gave
// for one cursor: the entries with IDs up to the lowest of the pages'
// watermarks, in ID order, at most `limit` of them. `order` names them as
// (page index, entry index); `watermark` is the merged page's (the last
// entry's ID when `limit` cut it short). IDs equal across pages (which
// unique IDs never are) come once, from the first page.
struct FeedMerge {
  std::vector<std::pair<size_t, size_t>> order;
  uint64_t watermark = 0;
};
[[nodiscard]] FeedMerge MergeFeedPages(const std::vector<FeedPage>& pages,
                                       size_t limit);

}  // namespace crawld::store

#endif  // CRAWLD_STORE_STORE_H_
