// fetcher/decode.cc: bounded Content-Encoding decoding (RFC 9110 8.4.1) with
// zlib. Output is capped while inflating, so a small hostile body can never
// allocate more than max_bytes (decompression bombs).
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <string>

#include "fetcher/fetcher.h"

namespace crawld::fetcher {
namespace {

enum class Coding { kIdentity, kGzip, kDeflate };

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// One zlib stream over a sequence of input chunks, writing into `out` up to
// `max_bytes`. windowBits 15+32 detects gzip or zlib headers; when the first
// bytes are neither (deflate sent raw, as some servers do), it restarts with
// -15 (raw DEFLATE).
class Inflater {
 public:
  Inflater(Coding coding, std::string* out, size_t max_bytes)
      : coding_(coding), out_(out), max_bytes_(max_bytes) {
    std::memset(&zs_, 0, sizeof(zs_));
  }
  ~Inflater() {
    if (initialized_) inflateEnd(&zs_);
  }

  // Feeds `in`. Returns an error for damaged data; sets capped() when the
  // output limit was reached (further input is ignored).
  Status Feed(std::string_view in) {
    if (capped_ || finished_) return Status::Ok();
    if (!initialized_) {
      Status s = Init(15 + 32);
      if (!s.ok()) return s;
    }
    if (!raw_ && total_in_ == 0 && coding_ == Coding::kDeflate) {
      // Buffer the first bytes to decide zlib-wrapped vs raw.
      probe_.append(in);
      if (probe_.size() < 2) return Status::Ok();
      auto b0 = static_cast<unsigned char>(probe_[0]);
      auto b1 = static_cast<unsigned char>(probe_[1]);
      bool zlib_header = (b0 & 0x0f) == 8 && ((b0 << 8) | b1) % 31 == 0;
      if (!zlib_header) {
        inflateEnd(&zs_);
        initialized_ = false;
        Status s = Init(-15);
        if (!s.ok()) return s;
        raw_ = true;
      }
      std::string probe = std::move(probe_);
      probe_.clear();
      return Run(probe);
    }
    return Run(in);
  }

  // Flushes a short deflate probe; then checks the stream ended.
  Status Finish(bool input_truncated) {
    if (!probe_.empty()) {
      std::string probe = std::move(probe_);
      probe_.clear();
      Status s = Run(probe);
      if (!s.ok()) return s;
    }
    if (capped_ || finished_ || input_truncated) return Status::Ok();
    if (total_in_ == 0) return Status::Ok();  // empty body
    return Status::Corruption("compressed body ends before its stream does");
  }

  bool capped() const { return capped_; }

 private:
  Status Init(int window_bits) {
    if (inflateInit2(&zs_, window_bits) != Z_OK) {
      return Status::Internal("inflateInit2 failed");
    }
    initialized_ = true;
    return Status::Ok();
  }

  Status Run(std::string_view in) {
    total_in_ += in.size();
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs_.avail_in = static_cast<uInt>(in.size());
    char buf[16384];
    while (true) {
      size_t room = max_bytes_ - out_->size();
      if (room == 0) {
        // Output is full. Only a byte that would not fit means "capped"; a
        // stream that merely ends here is complete.
        char one;
        zs_.next_out = reinterpret_cast<Bytef*>(&one);
        zs_.avail_out = 1;
        int rc = inflate(&zs_, Z_NO_FLUSH);
        if (zs_.avail_out == 0) {
          capped_ = true;
        } else if (rc == Z_STREAM_END) {
          finished_ = true;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
          return Status::Corruption(std::string("inflate: ") +
                                    (zs_.msg != nullptr ? zs_.msg : "error"));
        }
        return Status::Ok();
      }
      zs_.next_out = reinterpret_cast<Bytef*>(buf);
      zs_.avail_out = static_cast<uInt>(std::min(sizeof(buf), room));
      int rc = inflate(&zs_, Z_NO_FLUSH);
      size_t produced = std::min(sizeof(buf), room) - zs_.avail_out;
      out_->append(buf, produced);
      if (rc == Z_STREAM_END) {
        // gzip allows concatenated members (RFC 1952 2.2); go on if the
        // rest starts with another gzip header, else ignore trailing junk.
        if (zs_.avail_in >= 2 && zs_.next_in[0] == 0x1f &&
            zs_.next_in[1] == 0x8b) {
          inflateReset(&zs_);
          continue;
        }
        finished_ = true;
        return Status::Ok();
      }
      if (rc == Z_BUF_ERROR ||
          (rc == Z_OK && zs_.avail_in == 0 && zs_.avail_out > 0)) {
        return Status::Ok();  // needs more input
      }
      if (rc != Z_OK) {
        return Status::Corruption(std::string("inflate: ") +
                                  (zs_.msg != nullptr ? zs_.msg : "error"));
      }
    }
  }

  Coding coding_;
  std::string* out_;
  size_t max_bytes_;
  z_stream zs_;
  bool initialized_ = false;
  bool raw_ = false;
  bool finished_ = false;
  bool capped_ = false;
  uint64_t total_in_ = 0;
  std::string probe_;
};

// Decodes `input` (given as a chunk source) with one coding.
Status DecodeOne(
    Coding coding,
    const std::function<Status(const std::function<Status(std::string_view)>&)>&
        source,
    bool input_truncated, size_t max_bytes, std::string* out, bool* capped) {
  out->clear();
  if (coding == Coding::kIdentity) {
    Status s = source([&](std::string_view chunk) {
      size_t take = std::min(chunk.size(), max_bytes - out->size());
      out->append(chunk.substr(0, take));
      if (take < chunk.size()) *capped = true;
      return Status::Ok();
    });
    return s;
  }
  Inflater inf(coding, out, max_bytes);
  Status s = source([&](std::string_view chunk) { return inf.Feed(chunk); });
  if (!s.ok()) return s;
  s = inf.Finish(input_truncated);
  if (inf.capped()) *capped = true;
  return s;
}

}  // namespace

Result<std::string> DecodeBody(const Response& response, size_t max_bytes,
                               bool* capped) {
  if (capped != nullptr) *capped = false;
  // Content-Encoding lists codings in the order applied; undo right to left.
  std::vector<Coding> codings;
  std::string header = response.Header("Content-Encoding");
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t comma = header.find(',', pos);
    if (comma == std::string::npos) comma = header.size();
    std::string_view tok(header.data() + pos, comma - pos);
    while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) {
      tok.remove_prefix(1);
    }
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t')) {
      tok.remove_suffix(1);
    }
    std::string t = Lower(tok);
    if (t == "gzip" || t == "x-gzip") {
      codings.push_back(Coding::kGzip);
    } else if (t == "deflate") {
      codings.push_back(Coding::kDeflate);
    } else if (!t.empty() && t != "identity") {
      return Status::InvalidArgument("unsupported Content-Encoding: " + t);
    }
    pos = comma + 1;
  }
  if (codings.size() > 4) {
    return Status::InvalidArgument("more than 4 content codings: " + header);
  }
  if (codings.empty()) codings.push_back(Coding::kIdentity);

  bool any_capped = false;
  std::string current;
  bool first = true;
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    std::string next;
    bool stage_capped = false;
    Status s;
    if (first) {
      s = DecodeOne(
          *it,
          [&](const std::function<Status(std::string_view)>& sink) {
            return response.body.ForEachChunk(sink);
          },
          response.truncated, max_bytes, &next, &stage_capped);
    } else {
      // An earlier stage that hit the cap left a cut stream behind.
      s = DecodeOne(
          *it,
          [&](const std::function<Status(std::string_view)>& sink) {
            return sink(current);
          },
          response.truncated || any_capped, max_bytes, &next, &stage_capped);
    }
    if (!s.ok()) return s;
    any_capped = any_capped || stage_capped;
    current = std::move(next);
    first = false;
  }
  if (capped != nullptr) *capped = any_capped;
  return current;
}

int64_t ParseRetryAfter(std::string_view value, int64_t now_epoch_s) {
  constexpr int64_t kDayUs = 86400ll * 1000000;
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  if (value.empty()) return -1;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return kDayUs;  // absurd: one day
    const int64_t s = std::stoll(std::string(value));
    return std::min(s * 1000000, kDayUs);
  }
  struct tm tm {};
  const std::string v(value);
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  const int64_t when = static_cast<int64_t>(timegm(&tm));
  return std::clamp<int64_t>((when - now_epoch_s) * 1000000, 0, kDayUs);
}

}  // namespace crawld::fetcher
