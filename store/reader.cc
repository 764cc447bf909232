// WarcReader: gzip-member-aware streaming reader for .warc.gz and .warc.
//
// Decompressed bytes accumulate in out_ only as far as the parser asks for
// them, and a new gzip member is started only when the current one is
// exhausted. That keeps two things true: memory is bounded by the header and
// block caps, and the bytes still pending at a record start all come from
// the newest member, so member_start_ is that record's offset.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "base/fd_io.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {
constexpr size_t kRawChunk = 256 * 1024;
constexpr size_t kOutChunk = 64 * 1024;
}  // namespace

class WarcReader::Impl {
 public:
  explicit Impl(const ReaderOptions& options) : opt_(options) {
    std::memset(&zs_, 0, sizeof(zs_));
  }
  ~Impl() {
    if (zinit_) inflateEnd(&zs_);
    if (fd_ >= 0) ::close(fd_);
  }

  Status OpenFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      return Status::IOError("cannot open " + path + ": " + strerror(errno));
    return Init();
  }

  Status OpenMemory(std::string data) {
    raw_ = std::move(data);
    raw_eof_ = true;
    return Init();
  }

  Result<bool> Next(Record* rec) {
    if (!error_.ok()) return error_;
    Result<bool> r = ReadRecord(rec);
    if (!r.ok()) error_ = r.status();
    return r;
  }

  uint64_t end_of_last_record() const { return end_of_last_; }

 private:
  Status Init() {
    // windowBits 15+16: gzip wrapper only; inflateReset per member.
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) {
      error_ = Status::ResourceExhausted("inflateInit2 failed");
      return error_;
    }
    zinit_ = true;
    return Status::Ok();
  }

  size_t pending() const { return out_.size() - out_pos_; }
  uint64_t raw_offset() const { return raw_base_ + raw_pos_; }

  // Reads more compressed (or plain) input; false at end of input.
  Result<bool> ReadRaw() {
    if (raw_eof_) return false;
    if (raw_pos_ > 0 && raw_pos_ >= raw_.size() / 2) {
      raw_.erase(0, raw_pos_);
      raw_base_ += raw_pos_;
      raw_pos_ = 0;
    }
    size_t old = raw_.size();
    raw_.resize(old + kRawChunk);
    ssize_t n;
    do {
      n = ::read(fd_, raw_.data() + old, kRawChunk);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      raw_.resize(old);
      return Status::IOError(std::string("read: ") + strerror(errno));
    }
    raw_.resize(old + static_cast<size_t>(n));
    if (n == 0) raw_eof_ = true;
    return n > 0;
  }

  // Ensures at least `n` raw bytes are buffered past raw_pos_ if the input
  // has them.
  Status FillRaw(size_t n) {
    while (raw_.size() - raw_pos_ < n) {
      auto more = ReadRaw();
      if (!more.ok()) return more.status();
      if (!*more) break;
    }
    return Status::Ok();
  }

  // Appends decompressed bytes to out_. Sets *eof at the end of input (only
  // possible between members). With `new_member` false, stops at the end of
  // the current member instead of starting the next.
  Status More(bool new_member, bool* eof) {
    *eof = false;
    if (!detected_) {
      if (Status s = FillRaw(2); !s.ok()) return s;
      gzip_ = raw_.size() >= 2 && static_cast<unsigned char>(raw_[0]) == 0x1f &&
              static_cast<unsigned char>(raw_[1]) == 0x8b;
      detected_ = true;
    }
    if (!gzip_) {
      if (raw_pos_ == raw_.size()) {
        if (Status s = FillRaw(1); !s.ok()) return s;
        if (raw_pos_ == raw_.size()) {
          *eof = true;
          return Status::Ok();
        }
      }
      CompactOut();
      out_.append(raw_, raw_pos_, std::string::npos);
      raw_pos_ = raw_.size();
      return Status::Ok();
    }
    for (;;) {
      if (!in_member_) {
        if (!new_member) {
          *eof = true;
          return Status::Ok();
        }
        if (Status s = FillRaw(2); !s.ok()) return s;
        size_t avail = raw_.size() - raw_pos_;
        if (avail == 0) {
          *eof = true;
          return Status::Ok();
        }
        if (avail < 2 || static_cast<unsigned char>(raw_[raw_pos_]) != 0x1f ||
            static_cast<unsigned char>(raw_[raw_pos_ + 1]) != 0x8b)
          return Status::Corruption("offset " + std::to_string(raw_offset()) +
                                    ": trailing bytes that are not a gzip "
                                    "member");
        inflateReset(&zs_);
        member_start_ = raw_offset();
        in_member_ = true;
      }
      if (raw_pos_ == raw_.size()) {
        if (Status s = FillRaw(1); !s.ok()) return s;
        if (raw_pos_ == raw_.size())
          return Status::Corruption(
              "offset " + std::to_string(member_start_) +
              ": truncated gzip member (file ends inside it)");
      }
      CompactOut();
      size_t old = out_.size();
      out_.resize(old + kOutChunk);
      zs_.next_in = reinterpret_cast<Bytef*>(raw_.data() + raw_pos_);
      zs_.avail_in =
          static_cast<uInt>(std::min<size_t>(raw_.size() - raw_pos_, 1u << 30));
      zs_.next_out = reinterpret_cast<Bytef*>(out_.data() + old);
      zs_.avail_out = static_cast<uInt>(kOutChunk);
      int ret = inflate(&zs_, Z_NO_FLUSH);
      size_t consumed =
          reinterpret_cast<char*>(zs_.next_in) - (raw_.data() + raw_pos_);
      size_t produced = kOutChunk - zs_.avail_out;
      raw_pos_ += consumed;
      out_.resize(old + produced);
      if (ret == Z_STREAM_END) {
        in_member_ = false;
        member_end_ = raw_offset();
        if (produced > 0 || !new_member) return Status::Ok();
        continue;  // an empty member: go on to the next
      }
      if (ret == Z_OK || ret == Z_BUF_ERROR) {
        if (produced > 0) return Status::Ok();
        if (consumed == 0 && raw_pos_ < raw_.size())
          return Status::Corruption("offset " + std::to_string(member_start_) +
                                    ": gzip stream makes no progress");
        continue;
      }
      return Status::Corruption(
          "offset " + std::to_string(member_start_) + ": bad gzip data (" +
          (zs_.msg != nullptr ? zs_.msg : "zlib error " + std::to_string(ret)) +
          ")");
    }
  }

  void CompactOut() {
    if (out_pos_ > 0 && out_pos_ >= out_.size() / 2) {
      out_.erase(0, out_pos_);
      out_base_ += out_pos_;
      out_pos_ = 0;
    }
  }

  // Offset at which the next pending byte's record begins (see file
  // comment).
  uint64_t RecordStart() const {
    return gzip_ ? member_start_ : out_base_ + out_pos_;
  }

  // Makes `n` bytes pending; false if the input ends first.
  Result<bool> Ensure(size_t n) {
    while (pending() < n) {
      bool eof = false;
      if (Status s = More(true, &eof); !s.ok()) return s;
      if (eof) return false;
    }
    return true;
  }

  Result<bool> ReadRecord(Record* rec) {
    auto have = Ensure(1);
    if (!have.ok()) return have.status();
    if (!*have) return false;  // clean end between records
    const uint64_t start = RecordStart();
    const std::string where = "offset " + std::to_string(start) + ": ";

    // The version line comes first; check it early so that garbage fails
    // at once instead of after max_header_bytes of searching.
    auto got = Ensure(5);
    if (!got.ok()) return got.status();
    if (std::string_view(out_).substr(out_pos_, 5) != "WARC/")
      return Status::Corruption(where + "no WARC version line" +
                                (*got ? "" : " (file ends)"));
    size_t header_end;
    for (size_t searched = out_pos_;;) {
      size_t p = out_.find("\r\n\r\n", searched);
      if (p != std::string::npos) {
        header_end = p + 4;
        break;
      }
      if (pending() > opt_.max_header_bytes)
        return Status::Corruption(where + "WARC header block longer than " +
                                  std::to_string(opt_.max_header_bytes));
      searched = out_.size() >= 3 ? out_.size() - 3 : 0;
      size_t before_pos = out_pos_;
      auto more = Ensure(pending() + 1);
      if (!more.ok()) return more.status();
      if (!*more)
        return Status::Corruption(where +
                                  "truncated record (file ends in "
                                  "the WARC header)");
      // Ensure() may compact out_ and move the window.
      searched -= std::min(searched, before_pos - out_pos_);
    }
    Record r;
    if (Status s = ParseHeader(
            std::string_view(out_).substr(out_pos_, header_end - out_pos_ - 2),
            where, &r);
        !s.ok())
      return s;
    auto cl_it = r.headers.find("Content-Length");
    if (cl_it == r.headers.end())
      return Status::Corruption(where + "no Content-Length");
    const std::string& cl = cl_it->second;
    if (cl.empty() || cl.size() > 19 ||
        cl.find_first_not_of("0123456789") != std::string::npos)
      return Status::Corruption(where + "bad Content-Length '" + cl + "'");
    const uint64_t length = std::stoull(cl);
    if (length > opt_.max_block_bytes)
      return Status::ResourceExhausted(
          where + "Content-Length " + cl + " exceeds the reader's cap of " +
          std::to_string(opt_.max_block_bytes) + " bytes");
    out_pos_ = header_end;
    auto full = Ensure(static_cast<size_t>(length) + 4);
    if (!full.ok()) return full.status();
    if (!*full) {
      return Status::Corruption(
          where + "truncated record (Content-Length " + cl + ", file ends " +
          std::to_string(pending()) + " bytes into the block)");
    }
    r.block.assign(out_, out_pos_, static_cast<size_t>(length));
    out_pos_ += static_cast<size_t>(length);
    if (std::string_view(out_).substr(out_pos_, 4) != "\r\n\r\n")
      return Status::Corruption(where +
                                "block not followed by CRLF CRLF (wrong "
                                "Content-Length?)");
    out_pos_ += 4;

    uint64_t end;
    if (gzip_) {
      if (pending() == 0 && in_member_) {
        // See whether the member ends here (reads its trailer and CRC):
        // only then is the record complete on disk.
        bool eof = false;
        if (Status s = More(false, &eof); !s.ok()) return s;
      }
      end = (pending() == 0 && !in_member_) ? member_end_ : raw_offset();
    } else {
      end = out_base_ + out_pos_;
    }
    CompactOut();
    r.offset = start;
    r.length = end - start;
    end_of_last_ = end;
    *rec = std::move(r);
    return true;
  }

  static Status ParseHeader(std::string_view head, const std::string& where,
                            Record* r) {
    size_t eol = head.find("\r\n");
    r->version = std::string(head.substr(0, eol));
    if (r->version.size() < 6)
      return Status::Corruption(where + "bad version line");
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    while (!head.empty()) {
      eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
      if (line.empty()) continue;
      if (line.front() == ' ' || line.front() == '\t') {
        // Continuation line (WARC 1.1 section 4, after RFC 2616 LWS).
        if (r->fields.empty())
          return Status::Corruption(where + "continuation before any field");
        size_t b = line.find_first_not_of(" \t");
        if (b == std::string_view::npos) continue;  // whitespace-only line
        std::string& value = r->fields.back().second;
        if (!value.empty()) value += " ";
        value += line.substr(b);
        continue;
      }
      size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0)
        return Status::Corruption(where + "header line without a name: '" +
                                  std::string(line.substr(0, 80)) + "'");
      std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      size_t b = value.find_first_not_of(" \t");
      value =
          b == std::string_view::npos ? std::string_view() : value.substr(b);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
      r->fields.emplace_back(std::string(name), std::string(value));
    }
    for (const auto& [name, value] : r->fields) r->headers.emplace(name, value);
    return Status::Ok();
  }

  ReaderOptions opt_;
  int fd_ = -1;
  std::string raw_;        // buffered input
  size_t raw_pos_ = 0;     // next unconsumed byte in raw_
  uint64_t raw_base_ = 0;  // file offset of raw_[0]
  bool raw_eof_ = false;

  bool detected_ = false;
  bool gzip_ = false;
  z_stream zs_;
  bool zinit_ = false;
  bool in_member_ = false;
  uint64_t member_start_ = 0;
  uint64_t member_end_ = 0;

  std::string out_;        // decompressed bytes
  size_t out_pos_ = 0;     // next unparsed byte in out_
  uint64_t out_base_ = 0;  // stream offset of out_[0] (plain files)

  uint64_t end_of_last_ = 0;
  Status error_;
};

WarcReader::WarcReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WarcReader::~WarcReader() = default;

Result<std::unique_ptr<WarcReader>> WarcReader::Open(
    const std::string& path, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  if (Status s = impl->OpenFile(path); !s.ok()) return s;
  return std::unique_ptr<WarcReader>(new WarcReader(std::move(impl)));
}

std::unique_ptr<WarcReader> WarcReader::FromString(
    std::string data, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  // Only inflateInit2 can fail here; the reader then reports it from Next().
  (void)impl->OpenMemory(std::move(data));
  return std::unique_ptr<WarcReader>(new WarcReader(std::move(impl)));
}

Result<bool> WarcReader::Next(Record* out) { return impl_->Next(out); }

uint64_t WarcReader::end_of_last_record() const {
  return impl_->end_of_last_record();
}

Result<Record> ReadRecordAt(const std::string& path, uint64_t offset,
                            uint64_t length, const ReaderOptions& options) {
  if (length == 0 ||
      length > options.max_block_bytes + options.max_header_bytes + (1 << 20)) {
    return Status::InvalidArgument("record length " + std::to_string(length) +
                                   " out of range");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("cannot open " + path + ": " + strerror(errno));
  }
  std::string bytes(length, '\0');
  if (const ReadResult r = PreadFull(fd, bytes.data(), length, offset);
      r != ReadResult::kDone) {
    const std::string why =
        r == ReadResult::kError ? strerror(errno) : "end of file";
    ::close(fd);
    return Status::IOError("cannot read " + std::to_string(length) +
                           " bytes at " + std::to_string(offset) + " of " +
                           path + ": " + why);
  }
  ::close(fd);
  auto reader = WarcReader::FromString(std::move(bytes), options);
  Record rec;
  Result<bool> more = reader->Next(&rec);
  if (!more.ok()) return more.status();
  Record extra;
  Result<bool> after = reader->Next(&extra);
  if (!*more || !after.ok() || *after) {
    return Status::Corruption(path + " at " + std::to_string(offset) +
                              ": not one whole WARC record");
  }
  return rec;
}

}  // namespace crawld::store
