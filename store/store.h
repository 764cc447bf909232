// store/store.h: the document store. Writes what the crawler fetched as
// WARC/1.1 records (ISO 28500:2017), one gzip member per record, in files
// rotated by size; reads and verifies such files.
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
//   intact). When the head is not parseable HTTP, WARC-Payload-Digest is
//   omitted (WARC 1.1 section 5.9 makes it optional).
// - A request and its response are always written to the same file, so
//   WARC-Concurrent-To never points into another file.
#ifndef CRAWLD_STORE_STORE_H_
#define CRAWLD_STORE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/doc_buffer.h"
#include "base/status.h"

namespace crawld::store {

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
};

// Where a record lives: `file` is the basename, `offset` and `length` the
// byte range of its gzip member in that file (exact for files we write).
struct RecordRef {
  std::string file;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string record_id;  // "<urn:uuid:...>", as in WARC-Record-ID
};

// One HTTP exchange as the fetcher saw it. The writer does not take
// ownership of anything; `body` must stay valid during the call.
struct FetchRecord {
  std::string target_uri;
  // WARC-IP-Address (empty: header omitted).
  std::string ip;
  // Epoch microseconds of the fetch; becomes WARC-Date.
  int64_t fetch_time_us = 0;
  // Raw HTTP request bytes as sent (request line + headers + CRLF CRLF).
  std::string request_head;
  // Raw HTTP status line + headers + CRLF CRLF as received.
  std::string response_head;
  // Raw payload bytes as received (content coding intact); null = empty.
  const DocBuffer* body = nullptr;
  // "" or the WARC-Truncated reason: "length", "time", "disconnect".
  std::string truncated;
};

struct WrittenExchange {
  RecordRef request;
  RecordRef response;
  // "sha1:<BASE32>" of the payload; empty when the head was not HTTP.
  std::string payload_digest;
};

// Appends WARC records to size-rotated files. Owned by one worker loop; not
// thread-safe. Every write is synchronous (one write loop per gzip member).
//
// Failure model: when a write fails (disk full, EFBIG, EIO) the file is
// truncated back to where the failed call started, so it still ends at its
// last complete record, and IOError is returned; the writer stays usable.
// If even that truncation fails, the writer refuses further writes.
class WarcWriter {
 public:
  // Creates `options.dir`, opens the first file and writes its warcinfo
  // record. Options are clamped (see their comments).
  // Returns InvalidArgument for an empty dir or a prefix with '/', IOError
  // when the directory or file cannot be created or written.
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

  // Writes a `revisit` record with the identical-payload-digest profile:
  // block = record.response_head only (record.body is ignored), with
  // WARC-Refers-To, WARC-Refers-To-Target-URI, WARC-Refers-To-Date and
  // WARC-Payload-Digest = `payload_digest` (as returned by WriteExchange).
  // Errors as for WriteExchange.
  // REQUIRES: refers_to_record_id is a "<urn:...>" id of an earlier record.
  [[nodiscard]] Result<RecordRef> WriteRevisit(
      const FetchRecord& record, const std::string& refers_to_record_id,
      const std::string& refers_to_uri, int64_t refers_to_time_us,
      const std::string& payload_digest);

  // Writes a `metadata` record about `target_uri` with the given content
  // type and block; `concurrent_to` (a record id, may be empty) becomes
  // WARC-Concurrent-To. Errors as for WriteExchange.
  [[nodiscard]] Result<RecordRef> WriteMetadata(
      const std::string& target_uri, const std::string& concurrent_to,
      int64_t time_us, std::string_view content_type, std::string_view block);

  // Every record written so far is with the OS already; with fsync_on_flush
  // this also waits until it is on disk. IOError if fdatasync fails.
  [[nodiscard]] Status Flush();

  // fsync (if fsync_on_rotate) and close; later writes fail with
  // FailedPrecondition. Idempotent; IOError if fsync or close fails.
  [[nodiscard]] Status Close();

  // Basename of the file the last record went to (or, before any record,
  // the file holding the first warcinfo). Rotation happens lazily at the
  // next write, so this may name a file already past rotate_bytes.
  [[nodiscard]] std::string current_file() const;
  // Bytes in the current file; the offset the next record would get.
  [[nodiscard]] uint64_t current_offset() const;
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

}  // namespace crawld::store

#endif  // CRAWLD_STORE_STORE_H_
