// WarcWriter: record assembly, per-record gzip members, rotation and the
// write-failure rollback. Layout: docs/STORE.md.
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <vector>

#include "base/ascii.h"
#include "base/time.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {

using internal::Errno;

constexpr std::string_view kConformsTo =
    "http://iipc.github.io/warc-specifications/specifications/warc-format/"
    "warc-1.1/";
// WARC 1.1 sections 6.7.2 and 6.7.3.
constexpr std::string_view kIdenticalPayloadDigest =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
constexpr std::string_view kServerNotModified =
    "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
// Generous bound on the WARC header block we generate around a block; used
// only for the max_record_bytes check before any body byte is read.
constexpr uint64_t kHeaderAllowance = 64 * 1024;

Options Sanitize(Options o) {
  o.worker_id = std::clamp(o.worker_id, 0, 99999);
  o.rotate_bytes = std::max<uint64_t>(o.rotate_bytes, 1);
  o.gzip_level = std::clamp(o.gzip_level, 1, 12);
  o.max_record_bytes =
      std::clamp<uint64_t>(o.max_record_bytes, 1ull << 20, 4ull << 30);
  o.feed_segment_bytes = std::max<uint64_t>(o.feed_segment_bytes, 4096);
  return o;
}

// A WARC-Record-ID (WARC 1.1 section 5.2): "<" uri ">", the uri with a
// scheme, no whitespace.
bool IsRecordId(std::string_view id) {
  return id.size() > 3 && id.front() == '<' && id.back() == '>' &&
         id.find(':') != std::string_view::npos &&
         id.find_first_of(" \t") == std::string_view::npos;
}

class PosixEnv : public Env {
 public:
  int Open(const std::string& path, int flags, int mode) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
  }
  ssize_t Pwrite(int fd, const void* data, size_t size,
                 uint64_t offset) override {
    return ::pwrite(fd, data, size, static_cast<off_t>(offset));
  }
  int Ftruncate(int fd, uint64_t size) override {
    return ::ftruncate(fd, static_cast<off_t>(size));
  }
  int Sync(int fd, bool data_only) override {
    return data_only ? ::fdatasync(fd) : ::fsync(fd);
  }
  int Close(int fd) override { return ::close(fd); }
  int CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) {
      errno = ec.value();
      return -1;
    }
    return 0;
  }
};

// Header values go out verbatim, so a CR or LF from a hostile URL or a bad
// caller would forge fields; refuse them instead.
bool SafeValue(std::string_view v) {
  return v.find_first_of(std::string_view("\r\n\0", 3)) ==
         std::string_view::npos;
}

void AddField(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append("\r\n");
}

// One record's bytes in one reusable buffer. The block is assembled after
// a headroom, so that the WARC header, which can only be built once the
// block's digests are known, is copied in front of it without moving the
// block: libdeflate compresses one contiguous input. (Inserting the header
// in front used to move every block once more: a second copy of each body
// on its way to the disk, issue 16.)
class RecordBuffer {
 public:
  // Starts an empty block; keeps the allocation.
  void Clear() { buf_.resize(kHeadroom); }
  void Reserve(size_t block_bytes) {
    buf_.reserve(kHeadroom + block_bytes + 4);
  }
  void Append(std::string_view data) { buf_.append(data); }
  void Assign(std::string_view data) {
    Clear();
    Append(data);
  }
  std::string_view block() const {
    return std::string_view(buf_).substr(kHeadroom);
  }
  size_t size() const { return buf_.size() - kHeadroom; }

  // header + block + CRLF CRLF, contiguous, valid until the next change.
  std::string_view Seal(std::string_view header) {
    buf_.append("\r\n\r\n");
    if (header.size() <= kHeadroom) {
      const size_t at = kHeadroom - header.size();
      std::copy(header.begin(), header.end(), buf_.begin() + at);
      return std::string_view(buf_).substr(at);
    }
    // A header longer than the headroom (a very long URL): move once.
    buf_.replace(0, kHeadroom, header);
    return buf_;
  }

 private:
  // Our WARC headers take about 700 bytes plus the target URI.
  static constexpr size_t kHeadroom = 4096;
  std::string buf_ = std::string(kHeadroom, '\0');
};

// The feed entry of one response or revisit: its ID is taken before the
// record is written (the record carries it), and the entry is ended on
// every way out, so a record given up never holds the feed.
class FeedEntryGuard {
 public:
  explicit FeedEntryGuard(FeedWriter* feed) : feed_(feed) {}
  ~FeedEntryGuard() {
    if (open_) feed_->AbortEntry();
  }
  FeedEntryGuard(const FeedEntryGuard&) = delete;
  FeedEntryGuard& operator=(const FeedEntryGuard&) = delete;

  // Takes the ID; a no-op without a feed.
  Status Begin() {
    if (feed_ == nullptr) return Status::Ok();
    auto id = feed_->BeginEntry();
    if (!id.ok()) return id.status();
    id_ = *id;
    open_ = true;
    return Status::Ok();
  }
  // 0 without a feed.
  uint64_t id() const { return id_; }
  // FeedWriter::Append took over the entry.
  void Done() { open_ = false; }

 private:
  FeedWriter* feed_;  // not owned; may be null
  uint64_t id_ = 0;
  bool open_ = false;
};

// Crawld-Feed-ID: the record's feed ID (docs/STORE.md). Not a WARC- name:
// WARC 1.1 section 4 leaves other names to extensions.
void AddFeedId(std::string* header, uint64_t id) {
  if (id != 0) AddField(header, "Crawld-Feed-ID", std::to_string(id));
}

}  // namespace

Env* Env::Default() {
  static Env* const env = new PosixEnv();  // never destroyed
  return env;
}

class WarcWriter::Impl {
 public:
  explicit Impl(const Options& options)
      : opt_(Sanitize(options)),
        env_(opt_.env != nullptr ? opt_.env : Env::Default()) {}

  ~Impl() {
    if (fd_ >= 0) env_->Close(fd_);
    if (index_fd_ >= 0) env_->Close(index_fd_);
    if (compressor_ != nullptr) libdeflate_free_compressor(compressor_);
  }

  Status Init() {
    if (opt_.dir.empty()) return Status::InvalidArgument("store: empty dir");
    if (opt_.prefix.empty() || opt_.prefix.find('/') != std::string::npos)
      return Status::InvalidArgument("store: bad prefix '" + opt_.prefix + "'");
    if (env_->CreateDirs(opt_.dir) != 0)
      return Status::IOError(Errno("store: cannot create " + opt_.dir));
    compressor_ = libdeflate_alloc_compressor(opt_.gzip_level);
    if (compressor_ == nullptr)
      return Status::ResourceExhausted("store: libdeflate_alloc_compressor");
    // A per-writer generator seeded from the kernel pool: ids must differ
    // across workers and restarts, and no state is shared between writers.
    std::array<uint32_t, 8> seed{};
    int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(Errno("store: open /dev/urandom"));
    ssize_t n = ::read(fd, seed.data(), sizeof(seed));
    ::close(fd);
    if (n != static_cast<ssize_t>(sizeof(seed)))
      return Status::IOError("store: short read from /dev/urandom");
    std::seed_seq seq(seed.begin(), seed.end());
    rng_.seed(seq);
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) hostname_ = host;
    if (!opt_.index_dir.empty()) {
      if (env_->CreateDirs(opt_.index_dir) != 0)
        return Status::IOError(Errno("store: cannot create " + opt_.index_dir));
      if (opt_.write_feed) {
        FeedOptions fo;
        fo.dir = opt_.index_dir + "/feed";
        fo.worker_id = opt_.worker_id;
        fo.node_id = opt_.node_id;
        fo.clock = opt_.feed_clock;
        fo.segment_bytes = opt_.feed_segment_bytes;
        fo.fsync = opt_.fsync_on_flush;
        fo.env = env_;
        auto feed = FeedWriter::Open(fo);
        if (!feed.ok()) return feed.status();
        feed_ = std::move(feed).value();
      }
    }
    return OpenNextFile();
  }

  // For callers that name a record before writing it.
  std::string FreshRecordId() { return NewRecordId(); }

  Result<WrittenExchange> WriteExchange(const FetchRecord& r) {
    if (Status s = CheckWritable(); !s.ok()) return s;
    if (r.target_uri.empty())
      return Status::InvalidArgument("store: empty target_uri");
    if (!SafeValue(r.target_uri) || !SafeValue(r.ip) ||
        !SafeValue(r.truncated) || !SafeValue(r.record_id))
      return Status::InvalidArgument("store: CR/LF/NUL in a header value");
    if (!IsProtocolId(r.protocol))
      return Status::InvalidArgument("store: '" + r.protocol +
                                     "' is not a protocol id");
    if (!r.record_id.empty() && !IsRecordId(r.record_id))
      return Status::InvalidArgument("store: '" + r.record_id +
                                     "' is not a WARC-Record-ID");
    // A response record holds an HTTP message (issue 19): refuse a head
    // that is not one, or whose framing is invalid, rather than archive a
    // record that misdescribes what arrived.
    auto framing = CheckResponseHead(r.response_head);
    if (!framing.ok()) return framing.status();
    uint64_t body_size = r.body != nullptr ? r.body->size() : 0;
    if (r.response_head.size() + body_size + kHeaderAllowance >
            opt_.max_record_bytes ||
        r.request_head.size() + kHeaderAllowance > opt_.max_record_bytes)
      return Status::ResourceExhausted(
          "store: record larger than max_record_bytes (" +
          std::to_string(opt_.max_record_bytes) + ")");
    // A body shorter than its Content-Length was cut: say so even when the
    // caller did not (WARC 1.1 section 6.3.2: "shall be noted").
    std::string truncated = r.truncated;
    if (truncated.empty() && !framing->bodyless && !framing->transfer_coded &&
        framing->content_length && body_size < *framing->content_length)
      truncated = "unspecified";
    if (Status s = MaybeRotate(); !s.ok()) return s;

    // The feed ID first: it goes into the record, and readers hold the
    // feed below it until the feed line is written or the record given up.
    FeedEntryGuard feed_entry(feed_.get());
    if (Status s = feed_entry.Begin(); !s.ok()) return s;
    const std::string response_id =
        r.record_id.empty() ? NewRecordId() : r.record_id;
    const std::string request_id = NewRecordId();
    const std::string date = Iso8601Micros(r.fetch_time_us);

    // Response block: head + body, assembled once in record_ so that the
    // digests and the compressor all read the same contiguous bytes.
    record_.Clear();
    record_.Reserve(r.response_head.size() + body_size);
    record_.Append(r.response_head);
    if (r.body != nullptr) {
      Status s = r.body->ForEachChunk([this](std::string_view chunk) {
        record_.Append(chunk);
        return Status::Ok();
      });
      if (!s.ok()) return s;
    }
    std::string block_digest, payload_digest;
    BlockAndPayloadDigests(record_.block(), r.response_head.size(),
                           &block_digest, &payload_digest);
    std::string header = Begin("response", response_id);
    AddField(&header, "WARC-Warcinfo-ID", warcinfo_id_);
    AddField(&header, "WARC-Concurrent-To", request_id);
    AddField(&header, "WARC-Target-URI", r.target_uri);
    AddField(&header, "WARC-Date", date);
    if (!r.ip.empty()) AddField(&header, "WARC-IP-Address", r.ip);
    AddProtocol(&header, r);
    AddField(&header, "WARC-Block-Digest", block_digest);
    AddField(&header, "WARC-Payload-Digest", payload_digest);
    if (!truncated.empty()) AddField(&header, "WARC-Truncated", truncated);
    AddFeedId(&header, feed_entry.id());
    AddField(&header, "Content-Type", "application/http;msgtype=response");
    AddField(&header, "Content-Length", std::to_string(record_.size()));
    header.append("\r\n");

    const uint64_t start = offset_;
    WrittenExchange out;
    auto response = WriteMember(header, response_id);
    if (!response.ok()) return Rollback(start, response.status());
    out.response = std::move(response.value());
    out.response.feed_id = feed_entry.id();
    auto request = WriteRequest(r, request_id, response_id, date);
    if (!request.ok()) return Rollback(start, request.status());
    out.request = std::move(request.value());
    // Both records are complete in the file: only now may the index and
    // the feed name them.
    if (Status s = Index(r, out.response, payload_digest, false, &feed_entry);
        !s.ok())
      return Rollback(start, s);
    out.payload_digest = std::move(payload_digest);
    ++records_in_file_;
    return out;
  }

  Result<WrittenRevisit> WriteRevisit(const FetchRecord& r,
                                      const RevisitOf& o) {
    if (Status s = CheckWritable(); !s.ok()) return s;
    if (r.target_uri.empty())
      return Status::InvalidArgument("store: empty target_uri");
    if (o.target_uri.empty())
      return Status::InvalidArgument(
          "store: revisit without the original's target URI");
    if (!SafeValue(r.target_uri) || !SafeValue(r.ip) ||
        !SafeValue(o.record_id) || !SafeValue(o.target_uri) ||
        !SafeValue(o.date) || !SafeValue(o.payload_digest))
      return Status::InvalidArgument("store: CR/LF/NUL in a header value");
    if (!IsProtocolId(r.protocol))
      return Status::InvalidArgument("store: '" + r.protocol +
                                     "' is not a protocol id");
    if (!o.record_id.empty() && !IsRecordId(o.record_id))
      return Status::InvalidArgument("store: '" + o.record_id +
                                     "' is not a WARC-Record-ID");
    if (!o.date.empty() && !internal::IsWarcDate(o.date))
      return Status::InvalidArgument("store: '" + o.date +
                                     "' is not a WARC-Date");
    auto framing = CheckResponseHead(r.response_head);
    if (!framing.ok()) return framing.status();
    const bool identical = o.profile == RevisitProfile::kIdenticalPayloadDigest;
    if (identical && o.payload_digest.empty())
      return Status::InvalidArgument(
          "store: identical-payload-digest revisit without the payload "
          "digest (WARC 1.1 section 6.7.2)");
    if (!identical && framing->status != 304)
      return Status::InvalidArgument(
          "store: server-not-modified revisit of a " +
          std::to_string(framing->status) + ", not a 304");
    if (r.response_head.size() + kHeaderAllowance > opt_.max_record_bytes ||
        r.request_head.size() + kHeaderAllowance > opt_.max_record_bytes)
      return Status::ResourceExhausted("store: revisit head too large");
    if (Status s = MaybeRotate(); !s.ok()) return s;

    FeedEntryGuard feed_entry(feed_.get());
    if (Status s = feed_entry.Begin(); !s.ok()) return s;
    const std::string id = NewRecordId();
    const std::string request_id =
        r.request_head.empty() ? std::string() : NewRecordId();
    const std::string date = Iso8601Micros(r.fetch_time_us);
    record_.Assign(r.response_head);
    std::string header = Begin("revisit", id);
    AddField(&header, "WARC-Warcinfo-ID", warcinfo_id_);
    if (!request_id.empty())
      AddField(&header, "WARC-Concurrent-To", request_id);
    AddField(&header, "WARC-Target-URI", r.target_uri);
    AddField(&header, "WARC-Date", date);
    if (!r.ip.empty()) AddField(&header, "WARC-IP-Address", r.ip);
    AddProtocol(&header, r);
    AddField(&header, "WARC-Profile",
             identical ? kIdenticalPayloadDigest : kServerNotModified);
    if (!o.record_id.empty()) AddField(&header, "WARC-Refers-To", o.record_id);
    AddField(&header, "WARC-Refers-To-Target-URI", o.target_uri);
    if (!o.date.empty()) AddField(&header, "WARC-Refers-To-Date", o.date);
    AddField(&header, "WARC-Block-Digest", Digest(record_.block()));
    if (!o.payload_digest.empty())
      AddField(&header, "WARC-Payload-Digest", o.payload_digest);
    // 6.7.2: "A WARC-Truncated header with reason 'length' shall be used
    // for any identical-digest truncation." A 304 has no body to cut.
    if (identical) AddField(&header, "WARC-Truncated", "length");
    AddFeedId(&header, feed_entry.id());
    AddField(&header, "Content-Type", "application/http;msgtype=response");
    AddField(&header, "Content-Length", std::to_string(record_.size()));
    header.append("\r\n");
    const uint64_t start = offset_;
    WrittenRevisit out;
    auto ref = WriteMember(header, id);
    if (!ref.ok()) return Rollback(start, ref.status());
    out.revisit = std::move(ref).value();
    out.revisit.feed_id = feed_entry.id();
    if (!request_id.empty()) {
      auto request = WriteRequest(r, request_id, id, date);
      if (!request.ok()) return Rollback(start, request.status());
      out.request = std::move(request).value();
    }
    if (Status s = Index(r, out.revisit, o.payload_digest, true, &feed_entry);
        !s.ok())
      return Rollback(start, s);
    ++records_in_file_;
    return out;
  }

  Result<RecordRef> WriteMetadata(const std::string& target_uri,
                                  const std::string& concurrent_to,
                                  int64_t time_us,
                                  std::string_view content_type,
                                  std::string_view block) {
    if (Status s = CheckWritable(); !s.ok()) return s;
    if (target_uri.empty())
      return Status::InvalidArgument("store: empty target_uri");
    if (!SafeValue(target_uri) || !SafeValue(concurrent_to) ||
        !SafeValue(content_type))
      return Status::InvalidArgument("store: CR/LF/NUL in a header value");
    if (block.size() + kHeaderAllowance > opt_.max_record_bytes)
      return Status::ResourceExhausted("store: metadata block too large");
    if (Status s = MaybeRotate(); !s.ok()) return s;
    const std::string id = NewRecordId();
    record_.Assign(block);
    std::string header = Begin("metadata", id);
    AddField(&header, "WARC-Warcinfo-ID", warcinfo_id_);
    AddField(&header, "WARC-Target-URI", target_uri);
    AddField(&header, "WARC-Date", Iso8601Micros(time_us));
    if (!concurrent_to.empty())
      AddField(&header, "WARC-Concurrent-To", concurrent_to);
    AddField(&header, "WARC-Block-Digest", Digest(record_.block()));
    if (!content_type.empty()) AddField(&header, "Content-Type", content_type);
    AddField(&header, "Content-Length", std::to_string(record_.size()));
    header.append("\r\n");
    return WriteSingle(header, id);
  }

  Result<std::optional<RecordRef>> WriteConversion(
      const std::string& target_uri, const std::string& refers_to,
      int64_t time_us, std::string_view text) {
    if (!opt_.conversion_records) return std::optional<RecordRef>();
    if (Status s = CheckWritable(); !s.ok()) return s;
    if (target_uri.empty())
      return Status::InvalidArgument("store: empty target_uri");
    if (!SafeValue(target_uri) || !SafeValue(refers_to))
      return Status::InvalidArgument("store: CR/LF/NUL in a header value");
    if (text.size() + kHeaderAllowance > opt_.max_record_bytes)
      return Status::ResourceExhausted("store: conversion text too large");
    if (Status s = MaybeRotate(); !s.ok()) return s;
    const std::string id = NewRecordId();
    record_.Assign(text);
    std::string header = Begin("conversion", id);
    AddField(&header, "WARC-Warcinfo-ID", warcinfo_id_);
    AddField(&header, "WARC-Target-URI", target_uri);
    AddField(&header, "WARC-Date", Iso8601Micros(time_us));
    if (!refers_to.empty()) AddField(&header, "WARC-Refers-To", refers_to);
    AddField(&header, "WARC-Block-Digest", Digest(record_.block()));
    AddField(&header, "Content-Type", "text/plain; charset=utf-8");
    AddField(&header, "Content-Length", std::to_string(record_.size()));
    header.append("\r\n");
    auto ref = WriteSingle(header, id);
    if (!ref.ok()) return ref.status();
    return std::optional<RecordRef>(std::move(ref).value());
  }

  Status Flush() {
    if (!opt_.fsync_on_flush) return Status::Ok();
    // WARC first: after a power loss the index and the feed must not be
    // ahead of the records they name.
    if (fd_ >= 0 && env_->Sync(fd_, true) != 0)
      return Status::IOError(Errno("store: fdatasync " + file_));
    if (index_fd_ >= 0 && env_->Sync(index_fd_, true) != 0)
      return Status::IOError(Errno("store: fdatasync " + IndexPath(file_)));
    if (feed_ != nullptr) return feed_->Flush();
    return Status::Ok();
  }

  Status Close() {
    if (closed_) return Status::Ok();
    closed_ = true;
    Status s = CloseFile();
    Status si = CloseFd(index_fd_, IndexPath(file_));
    index_fd_ = -1;
    Status sf = feed_ != nullptr ? feed_->Close() : Status::Ok();
    if (!s.ok()) return s;
    return si.ok() ? sf : si;
  }

  std::string IndexPath(const std::string& warc) const {
    return opt_.index_dir.empty() ? std::string()
                                  : opt_.index_dir + "/" + warc + ".cdxj";
  }

  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }
  const Options& options() const { return opt_; }

 private:
  // The framing of `head` when it is an HTTP response head (and nothing
  // else) whose framing is valid; InvalidArgument otherwise.
  static Result<internal::HeadFraming> CheckResponseHead(
      const std::string& head) {
    auto len = internal::HttpHeadLength(head, true);
    if (!len || *len != head.size())
      return Status::InvalidArgument(
          "store: the response head is not an HTTP response head (status "
          "line, fields, blank line); nothing written");
    internal::HeadFraming framing = internal::ParseHeadFraming(head);
    if (!framing.error.empty())
      return Status::InvalidArgument("store: invalid framing in the head: " +
                                     framing.error + "; nothing written");
    return framing;
  }

  // "" or an ALPN-style protocol id: "h2", "http/1.1" (FetchRecord).
  static bool IsProtocolId(std::string_view p) {
    if (p.size() > 32) return false;
    for (char c : p) {
      if (!ascii::IsAlnum(c) && c != '/' && c != '.' && c != '-') return false;
    }
    return true;
  }

  // WARC-Protocol (iipc warc-specifications #42) for an exchange whose
  // heads were written in HTTP/1.1 syntax from another protocol (h2).
  static void AddProtocol(std::string* header, const FetchRecord& r) {
    if (!r.protocol.empty()) AddField(header, "WARC-Protocol", r.protocol);
  }

  // The `request` record of an exchange (or revisit) `concurrent_to`.
  Result<RecordRef> WriteRequest(const FetchRecord& r, const std::string& id,
                                 const std::string& concurrent_to,
                                 const std::string& date) {
    std::string header = Begin("request", id);
    AddField(&header, "WARC-Warcinfo-ID", warcinfo_id_);
    AddField(&header, "WARC-Concurrent-To", concurrent_to);
    AddField(&header, "WARC-Target-URI", r.target_uri);
    AddField(&header, "WARC-Date", date);
    if (!r.ip.empty()) AddField(&header, "WARC-IP-Address", r.ip);
    AddProtocol(&header, r);
    AddField(&header, "WARC-Block-Digest", Digest(r.request_head));
    AddField(&header, "Content-Type", "application/http;msgtype=request");
    AddField(&header, "Content-Length", std::to_string(r.request_head.size()));
    header.append("\r\n");
    record_.Assign(r.request_head);
    return WriteMember(header, id);
  }

  // Appends the CDXJ line and then the feed entry for a response or
  // revisit whose record `ref` is complete in the WARC. On failure neither
  // is kept (the index is cut back) and the caller rolls the WARC back.
  Status Index(const FetchRecord& r, const RecordRef& ref,
               const std::string& payload_digest, bool revisit,
               FeedEntryGuard* feed_entry) {
    if (index_fd_ < 0 && feed_ == nullptr) return Status::Ok();
    const int status = r.status >= 0
                           ? r.status
                           : std::max(0, internal::HttpStatus(r.response_head));
    std::string mime =
        r.mime.empty() ? internal::HttpMimeType(r.response_head) : r.mime;
    if (mime.empty()) mime = "unk";
    const uint64_t index_start = index_offset_;
    if (index_fd_ >= 0) {
      CdxjEntry e;
      e.surt = Surt(r.target_uri);
      e.timestamp = Timestamp14(r.fetch_time_us);
      e.url = r.target_uri;
      e.mime = revisit ? "warc/revisit" : mime;
      e.status = status;
      // pywb's form: the base32 value without the "sha1:" label.
      std::string_view d = payload_digest;
      if (size_t colon = d.find(':'); colon != std::string_view::npos)
        d.remove_prefix(colon + 1);
      e.digest = std::string(d);
      e.length = ref.length;
      e.offset = ref.offset;
      e.filename = ref.file;
      e.revisit = revisit;
      e.flags = r.flags;
      const std::string line = FormatCdxjLine(e);
      if (Status s = WriteAll(index_fd_, line, index_start, IndexPath(file_));
          !s.ok())
        return CutIndex(index_start, s);
      index_offset_ = index_start + line.size();
    }
    if (feed_ != nullptr) {
      FeedEntry fe;
      fe.url = r.target_uri;
      fe.warc_file = ref.file;
      fe.offset = ref.offset;
      fe.length = ref.length;
      fe.digest = payload_digest;
      fe.status = status;
      fe.mime = std::move(mime);
      fe.fetch_time_us = r.fetch_time_us;
      fe.revisit = revisit;
      fe.flags = r.flags;
      fe.id = feed_entry->id();
      feed_entry->Done();  // Append ends the entry, whatever it returns
      if (Status s = feed_->Append(fe); !s.ok())
        return CutIndex(index_start, s);
    }
    return Status::Ok();
  }

  Status CutIndex(uint64_t start, Status error) {
    if (index_fd_ >= 0) {
      if (env_->Ftruncate(index_fd_, start) != 0) {
        broken_ = true;
        return Status::IOError(
            error.message() +
            "; index rollback failed too: " + strerror(errno));
      }
      index_offset_ = start;
    }
    return error;
  }

  Status CheckWritable() const {
    if (closed_) return Status::FailedPrecondition("store: writer closed");
    if (broken_)
      return Status::FailedPrecondition(
          "store: writer disabled after a failed rollback of " + file_);
    return Status::Ok();
  }

  std::string NewRecordId() {
    // RFC 4122 version 4: 122 random bits, version nibble 4, variant 10.
    // Locked: the crawl takes ids on its loop (a record id claimed before
    // the write) while a pool thread writes records and takes theirs; two
    // unlocked draws could return the same state twice.
    uint64_t hi, lo;
    {
      std::lock_guard<std::mutex> lock(rng_mu_);
      hi = rng_();
      lo = rng_();
    }
    hi = (hi & ~0xF000ull) | 0x4000ull;
    lo = (lo & ~(3ull << 62)) | (2ull << 62);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "<urn:uuid:%08x-%04x-%04x-%04x-%012llx>",
                  static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF),
                  static_cast<unsigned>(hi & 0xFFFF),
                  static_cast<unsigned>(lo >> 48),
                  static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
    return buf;
  }

  std::string Digest(std::string_view data) {
    sha_.Update(data);
    return sha_.Finish();
  }

  // The WARC-Block-Digest of `block` and the WARC-Payload-Digest of its
  // bytes from `payload_at` on, in one pass: each chunk of the payload
  // feeds both contexts while it is in the L1 cache, rather than reading
  // the whole body from memory twice.
  void BlockAndPayloadDigests(std::string_view block, size_t payload_at,
                              std::string* block_digest,
                              std::string* payload_digest) {
    constexpr size_t kChunk = 8192;
    sha_.Update(block.substr(0, payload_at));
    for (size_t at = payload_at; at < block.size(); at += kChunk) {
      const std::string_view chunk = block.substr(at, kChunk);
      sha_.Update(chunk);
      payload_sha_.Update(chunk);
    }
    *block_digest = sha_.Finish();
    *payload_digest = payload_sha_.Finish();
  }

  static std::string Begin(std::string_view type, const std::string& id) {
    std::string h = "WARC/1.1\r\n";
    AddField(&h, "WARC-Type", type);
    AddField(&h, "WARC-Record-ID", id);
    return h;
  }

  Result<RecordRef> WriteSingle(const std::string& header,
                                const std::string& id) {
    const uint64_t start = offset_;
    auto ref = WriteMember(header, id);
    if (!ref.ok()) return Rollback(start, ref.status());
    ++records_in_file_;
    return ref;
  }

  // Compresses header + record_ + CRLF CRLF as one gzip member and appends
  // it to the current file. On failure the caller rolls back.
  Result<RecordRef> WriteMember(const std::string& header,
                                const std::string& id) {
    // libdeflate has no streaming input, so the member's input must be one
    // buffer: the header goes into the headroom in front of the block.
    const std::string_view member = record_.Seal(header);
    size_t bound = libdeflate_gzip_compress_bound(compressor_, member.size());
    if (out_.size() < bound) out_.resize(bound);
    size_t n = libdeflate_gzip_compress(compressor_, member.data(),
                                        member.size(), out_.data(), bound);
    if (n == 0) return Status::Internal("store: libdeflate_gzip_compress");
    const uint64_t at = offset_;
    if (Status s = WriteAll(
            fd_,
            std::string_view(reinterpret_cast<const char*>(out_.data()), n), at,
            file_);
        !s.ok())
      return s;
    offset_ = at + n;
    return RecordRef{file_, at, n, id};
  }

  // Writes all of `data` at `at`, retrying short writes; IOError (with the
  // cause) on the first failure. What was written stays: the caller cuts.
  Status WriteAll(int fd, std::string_view data, uint64_t at,
                  const std::string& name) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t w =
          env_->Pwrite(fd, data.data() + done, data.size() - done, at + done);
      if (w < 0) {
        if (errno == EINTR) continue;
        return Status::IOError(Errno("store: write " + name));
      }
      if (w == 0)
        return Status::IOError("store: write " + name + ": no progress");
      done += static_cast<size_t>(w);
    }
    return Status::Ok();
  }

  // Puts the file back to `start` bytes after a failed write so it ends at
  // its last complete record.
  Status Rollback(uint64_t start, Status error) {
    while (env_->Ftruncate(fd_, start) != 0) {
      if (errno == EINTR) continue;
      broken_ = true;
      return Status::IOError(error.message() +
                             "; rollback failed too: " + strerror(errno));
    }
    offset_ = start;
    return error;
  }

  Status MaybeRotate() {
    if (fd_ >= 0 && (offset_ < opt_.rotate_bytes || records_in_file_ == 0))
      return Status::Ok();
    return OpenNextFile();
  }

  Status CloseFile() {
    Status s = CloseFd(fd_, file_);
    fd_ = -1;
    return s;
  }

  Status CloseFd(int fd, const std::string& name) const {
    if (fd < 0) return Status::Ok();
    Status result;
    if (opt_.fsync_on_rotate && env_->Sync(fd, false) != 0)
      result = Status::IOError(Errno("store: fsync " + name));
    if (env_->Close(fd) != 0 && result.ok())
      result = Status::IOError(Errno("store: close " + name));
    return result;
  }

  // Opens the next file and writes its warcinfo. The old file is closed only
  // once the new one is ready, so a failure leaves the writer on the old one.
  Status OpenNextFile() {
    const int64_t now_us = WallMicros();
    const std::string stamp = Timestamp14(now_us);
    std::string name;
    int fd = -1;
    // O_EXCL: a restarted worker in the same second must never append to or
    // clobber a file it did not write.
    for (int tries = 0; tries < 100000; ++tries) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "-%s-%05d-%05d.warc.gz", stamp.c_str(),
                    opt_.worker_id, serial_ % 100000);
      name = opt_.prefix + buf;
      ++serial_;
      fd = env_->Open(opt_.dir + "/" + name,
                      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0)
      return Status::IOError(Errno("store: create " + opt_.dir + "/" + name));
    int index_fd = -1;
    if (!opt_.index_dir.empty()) {
      // The WARC name is new (O_EXCL), so an index file of that name can
      // only be a leftover of a deleted WARC: start it afresh.
      index_fd = env_->Open(IndexPath(name),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (index_fd < 0) {
        Status err = Status::IOError(Errno("store: create " + IndexPath(name)));
        env_->Close(fd);
        ::unlink((opt_.dir + "/" + name).c_str());
        return err;
      }
    }
    if (opt_.fsync_on_rotate) {
      // Make the new name itself durable.
      int dfd = ::open(opt_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        (void)::fsync(dfd);
        ::close(dfd);
      }
    }
    const int old_fd = fd_;
    const std::string old_file = file_;
    const uint64_t old_offset = offset_;
    const std::string old_warcinfo = warcinfo_id_;
    const int old_index_fd = index_fd_;
    const uint64_t old_index_offset = index_offset_;
    fd_ = fd;
    file_ = name;
    offset_ = 0;
    index_fd_ = index_fd;
    index_offset_ = 0;
    warcinfo_id_ = NewRecordId();

    std::string info;
    AddField(&info, "software", opt_.software);
    AddField(&info, "format", "WARC File Format 1.1");
    AddField(&info, "conformsTo", kConformsTo);
    AddField(&info, "isPartOf", opt_.prefix);
    if (!hostname_.empty()) AddField(&info, "hostname", hostname_);
    if (!opt_.user_agent.empty())
      AddField(&info, "http-header-user-agent", opt_.user_agent);
    if (!opt_.operator_contact.empty())
      AddField(&info, "operator", opt_.operator_contact);
    record_.Assign(info);
    std::string header = Begin("warcinfo", warcinfo_id_);
    AddField(&header, "WARC-Date", Iso8601Micros(now_us));
    AddField(&header, "WARC-Filename", name);
    AddField(&header, "WARC-Block-Digest", Digest(record_.block()));
    AddField(&header, "Content-Type", "application/warc-fields");
    AddField(&header, "Content-Length", std::to_string(record_.size()));
    header.append("\r\n");
    auto ref = WriteMember(header, warcinfo_id_);
    if (!ref.ok()) {
      env_->Close(fd_);
      ::unlink((opt_.dir + "/" + name).c_str());
      if (index_fd_ >= 0) {
        env_->Close(index_fd_);
        ::unlink(IndexPath(name).c_str());
      }
      fd_ = old_fd;
      file_ = old_file;
      offset_ = old_offset;
      warcinfo_id_ = old_warcinfo;
      index_fd_ = old_index_fd;
      index_offset_ = old_index_offset;
      return ref.status();
    }
    records_in_file_ = 0;
    // The old file is complete; an fsync error on it is reported, but the
    // writer carries on with the new file.
    Status s = CloseFd(old_fd, old_file);
    Status si = CloseFd(old_index_fd, IndexPath(old_file));
    return s.ok() ? si : s;
  }

  Options opt_;
  Env* env_;  // not owned
  libdeflate_compressor* compressor_ = nullptr;
  std::mutex rng_mu_;  // NewRecordId may be called from two threads
  std::mt19937_64 rng_;
  internal::Sha1 sha_;
  internal::Sha1 payload_sha_;  // beside sha_ for responses
  std::string hostname_;

  int fd_ = -1;
  int index_fd_ = -1;          // CDXJ of the open file, -1 = no index
  uint64_t index_offset_ = 0;  // bytes in the CDXJ file
  std::unique_ptr<FeedWriter> feed_;
  std::string file_;              // basename of the open file
  uint64_t offset_ = 0;           // bytes in the open file
  int serial_ = 0;                // next file's serial
  uint64_t records_in_file_ = 0;  // records after the warcinfo
  std::string warcinfo_id_;
  bool closed_ = false;
  bool broken_ = false;

  // Reused across records so steady-state writing allocates nothing.
  RecordBuffer record_;
  std::vector<uint8_t> out_;
};

std::string OutlinksMetadataBlock(const std::vector<std::string>& links) {
  std::string block;
  for (const std::string& link : links) {
    if (link.empty() || !SafeValue(link)) continue;
    AddField(&block, "outlink", link);
  }
  return block;
}

std::string PageMetadataBlock(const PageMetadata& page) {
  std::string block;
  block.reserve(64 + page.outlinks.size() * 80);
  if (page.noindex) AddField(&block, "robots", "noindex");
  if (page.nofollow) AddField(&block, "robots", "nofollow");
  if (!page.near_duplicate_of.empty() && SafeValue(page.near_duplicate_of)) {
    AddField(&block, "near-duplicate-of", page.near_duplicate_of);
  }
  if (!page.canonical.empty() && SafeValue(page.canonical)) {
    AddField(&block, "canonical", page.canonical);
  }
  for (const PageMetadata::Outlink& link : page.outlinks) {
    if (link.url.empty() || !SafeValue(link.url) ||
        link.url.find(' ') != std::string::npos) {
      continue;
    }
    if (link.nofollow) {
      AddField(&block, "outlink", link.url + " nofollow");
    } else {
      AddField(&block, "outlink", link.url);
    }
  }
  return block;
}

PageMetadata ParsePageMetadataBlock(std::string_view block) {
  PageMetadata page;
  while (!block.empty()) {
    size_t end = block.find("\r\n");
    std::string_view line = block.substr(0, end);
    block = end == std::string_view::npos ? std::string_view()
                                          : block.substr(end + 2);
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 2);
    if (name == "robots") {
      if (value == "noindex") page.noindex = true;
      if (value == "nofollow") page.nofollow = true;
    } else if (name == "near-duplicate-of") {
      page.near_duplicate_of = std::string(value);
    } else if (name == "canonical") {
      page.canonical = std::string(value);
    } else if (name == "outlink" && !value.empty()) {
      const size_t sp = value.find(' ');
      PageMetadata::Outlink link;
      link.url = std::string(value.substr(0, sp));
      link.nofollow =
          sp != std::string_view::npos && value.substr(sp + 1) == "nofollow";
      page.outlinks.push_back(std::move(link));
    }
  }
  return page;
}

WarcWriter::WarcWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WarcWriter::~WarcWriter() = default;

Result<std::unique_ptr<WarcWriter>> WarcWriter::Open(const Options& options) {
  auto impl = std::make_unique<Impl>(options);
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<WarcWriter>(new WarcWriter(std::move(impl)));
}

Result<WrittenExchange> WarcWriter::WriteExchange(const FetchRecord& record) {
  return impl_->WriteExchange(record);
}

Result<WrittenRevisit> WarcWriter::WriteRevisit(const FetchRecord& record,
                                                const RevisitOf& original) {
  return impl_->WriteRevisit(record, original);
}

Result<RecordRef> WarcWriter::WriteRevisit(
    const FetchRecord& record, const std::string& refers_to_record_id,
    const std::string& refers_to_uri, int64_t refers_to_time_us,
    const std::string& payload_digest) {
  RevisitOf original;
  original.profile = RevisitProfile::kIdenticalPayloadDigest;
  original.record_id = refers_to_record_id;
  original.target_uri = refers_to_uri;
  original.date = Iso8601Micros(refers_to_time_us);
  original.payload_digest = payload_digest;
  auto written = impl_->WriteRevisit(record, original);
  if (!written.ok()) return written.status();
  return std::move(written).value().revisit;
}

Result<RecordRef> WarcWriter::WriteMetadata(const std::string& target_uri,
                                            const std::string& concurrent_to,
                                            int64_t time_us,
                                            std::string_view content_type,
                                            std::string_view block) {
  return impl_->WriteMetadata(target_uri, concurrent_to, time_us, content_type,
                              block);
}

Result<std::optional<RecordRef>> WarcWriter::WriteConversion(
    const std::string& target_uri, const std::string& refers_to_record_id,
    int64_t time_us, std::string_view text) {
  return impl_->WriteConversion(target_uri, refers_to_record_id, time_us, text);
}

Status WarcWriter::Flush() { return impl_->Flush(); }
Status WarcWriter::Close() { return impl_->Close(); }
std::string WarcWriter::NewRecordId() { return impl_->FreshRecordId(); }
std::string WarcWriter::current_file() const { return impl_->file(); }
uint64_t WarcWriter::current_offset() const { return impl_->offset(); }
std::string WarcWriter::current_index_path() const {
  return impl_->IndexPath(impl_->file());
}
const Options& WarcWriter::options() const { return impl_->options(); }

}  // namespace crawld::store
