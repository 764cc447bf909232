// fetcher/decode.cc: bounded Content-Encoding decoding (RFC 9110 8.4.1):
// gzip and deflate with zlib, br with the brotli decoder (RFC 7932), zstd
// (RFC 8878). Output is capped while decoding, so a small hostile body can
// never allocate more than max_bytes of output (decompression bombs); the
// decoders' own memory is bounded too (a zstd window of at most 8 MiB, as
// RFC 8878 section 3.1.1.1.2 recommends for HTTP; brotli's is 16 MiB by the
// format).
#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/ascii.h"
#include "fetcher/fetcher.h"

namespace crawld::fetcher {
namespace {

enum class Coding { kIdentity, kGzip, kDeflate, kBrotli, kZstd };

// zstd frames may ask for a window of up to 2 GiB; 2^23 = 8 MiB is what
// RFC 8878 asks HTTP decoders to support, and all a browser accepts.
constexpr int kZstdWindowLogMax = 23;

// One decompression stream over a sequence of input chunks, writing into
// `out` up to `max_bytes`.
class Decoder {
 public:
  virtual ~Decoder() = default;
  // Feeds `in`. Returns Corruption for damaged data; sets capped() when the
  // output limit was reached (further input is ignored).
  virtual Status Feed(std::string_view in) = 0;
  // Checks the stream ended (unless the input was cut short or the output
  // capped).
  virtual Status Finish(bool input_truncated) = 0;
  bool capped() const { return capped_; }

 protected:
  bool capped_ = false;
};

// gzip or deflate. windowBits 15+32 detects gzip or zlib headers; when the
// first bytes are neither (deflate sent raw, as some servers do), it
// restarts with -15 (raw DEFLATE).
class Inflater : public Decoder {
 public:
  Inflater(Coding coding, std::string* out, size_t max_bytes)
      : coding_(coding), out_(out), max_bytes_(max_bytes) {
    std::memset(&zs_, 0, sizeof(zs_));
  }
  ~Inflater() override {
    if (initialized_) inflateEnd(&zs_);
  }

  Status Feed(std::string_view in) override {
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
  Status Finish(bool input_truncated) override {
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

 private:
  Status Init(int window_bits) {
    if (inflateInit2(&zs_, window_bits) != Z_OK) {
      return Status::Internal("inflateInit2 failed");
    }
    initialized_ = true;
    return Status::Ok();
  }

  Status Error() const {
    return Status::Corruption(std::string("inflate: ") +
                              (zs_.msg != nullptr ? zs_.msg : "error"));
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
          return Error();
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
      if (rc != Z_OK) return Error();
    }
  }

  Coding coding_;
  std::string* out_;
  size_t max_bytes_;
  z_stream zs_;
  bool initialized_ = false;
  bool raw_ = false;
  bool finished_ = false;
  uint64_t total_in_ = 0;
  std::string probe_;
};

// br (RFC 7932). Bytes after the end of the stream are ignored, as they
// are after a gzip member.
class BrotliDecoder : public Decoder {
 public:
  BrotliDecoder(std::string* out, size_t max_bytes)
      : state_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)),
        out_(out),
        max_bytes_(max_bytes) {}
  ~BrotliDecoder() override {
    if (state_ != nullptr) BrotliDecoderDestroyInstance(state_);
  }

  Status Feed(std::string_view in) override {
    if (state_ == nullptr) return Status::Internal("brotli: out of memory");
    if (capped_ || finished_) return Status::Ok();
    total_in_ += in.size();
    size_t avail_in = in.size();
    auto next_in = reinterpret_cast<const uint8_t*>(in.data());
    uint8_t buf[16384];
    while (true) {
      const size_t room = max_bytes_ - out_->size();
      // With the output full, one byte more decides: produced means capped.
      const size_t want = room == 0 ? 1 : std::min(sizeof(buf), room);
      size_t avail_out = want;
      uint8_t* next_out = buf;
      BrotliDecoderResult rc = BrotliDecoderDecompressStream(
          state_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      const size_t produced = want - avail_out;
      if (room == 0 && produced > 0) {
        capped_ = true;
        return Status::Ok();
      }
      out_->append(reinterpret_cast<const char*>(buf), produced);
      switch (rc) {
        case BROTLI_DECODER_RESULT_SUCCESS:
          finished_ = true;
          return Status::Ok();
        case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
          return Status::Ok();
        case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
          break;  // loop: more room, or the cap probe above
        case BROTLI_DECODER_RESULT_ERROR:
        default:
          return Status::Corruption(
              std::string("brotli: ") +
              BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state_)));
      }
    }
  }

  Status Finish(bool input_truncated) override {
    if (state_ == nullptr) return Status::Internal("brotli: out of memory");
    if (capped_ || finished_ || input_truncated || total_in_ == 0) {
      return Status::Ok();
    }
    return Status::Corruption("br body ends before its stream does");
  }

 private:
  BrotliDecoderState* state_;
  std::string* out_;
  size_t max_bytes_;
  bool finished_ = false;
  uint64_t total_in_ = 0;
};

// zstd (RFC 8878): one or more frames (skippable frames are skipped by the
// library).
class ZstdDecoder : public Decoder {
 public:
  ZstdDecoder(std::string* out, size_t max_bytes)
      : dctx_(ZSTD_createDCtx()), out_(out), max_bytes_(max_bytes) {
    if (dctx_ != nullptr) {
      ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, kZstdWindowLogMax);
    }
  }
  ~ZstdDecoder() override { ZSTD_freeDCtx(dctx_); }

  Status Feed(std::string_view in) override {
    if (dctx_ == nullptr) return Status::Internal("zstd: out of memory");
    if (capped_) return Status::Ok();
    total_in_ += in.size();
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    char buf[16384];
    while (true) {
      const size_t room = max_bytes_ - out_->size();
      const size_t want = room == 0 ? 1 : std::min(sizeof(buf), room);
      ZSTD_outBuffer output{buf, want, 0};
      const size_t before_in = input.pos;
      const size_t rc = ZSTD_decompressStream(dctx_, &output, &input);
      if (ZSTD_isError(rc)) {
        return Status::Corruption(std::string("zstd: ") +
                                  ZSTD_getErrorName(rc));
      }
      if (room == 0 && output.pos > 0) {
        capped_ = true;
        return Status::Ok();
      }
      out_->append(buf, output.pos);
      const bool progress = output.pos > 0 || input.pos > before_in;
      // 0: a frame is complete and flushed; another may follow. A call
      // that only waits for the next frame's first byte changes nothing.
      if (rc == 0) {
        frame_done_ = true;
      } else if (progress) {
        frame_done_ = false;
      }
      if (input.pos == input.size && output.pos < output.size) {
        return Status::Ok();  // all input used, all output flushed
      }
      if (!progress) return Status::Ok();
    }
  }

  Status Finish(bool input_truncated) override {
    if (dctx_ == nullptr) return Status::Internal("zstd: out of memory");
    if (capped_ || frame_done_ || input_truncated || total_in_ == 0) {
      return Status::Ok();
    }
    return Status::Corruption("zstd body ends before its frame does");
  }

 private:
  ZSTD_DCtx* dctx_;
  std::string* out_;
  size_t max_bytes_;
  bool frame_done_ = false;
  uint64_t total_in_ = 0;
};

// Copies up to `max_bytes`.
class IdentityDecoder : public Decoder {
 public:
  IdentityDecoder(std::string* out, size_t max_bytes)
      : out_(out), max_bytes_(max_bytes) {}
  Status Feed(std::string_view in) override {
    const size_t take = std::min(in.size(), max_bytes_ - out_->size());
    out_->append(in.substr(0, take));
    if (take < in.size()) capped_ = true;
    return Status::Ok();
  }
  Status Finish(bool) override { return Status::Ok(); }

 private:
  std::string* out_;
  size_t max_bytes_;
};

std::unique_ptr<Decoder> NewDecoder(Coding coding, std::string* out,
                                    size_t max_bytes) {
  switch (coding) {
    case Coding::kGzip:
    case Coding::kDeflate:
      return std::make_unique<Inflater>(coding, out, max_bytes);
    case Coding::kBrotli:
      return std::make_unique<BrotliDecoder>(out, max_bytes);
    case Coding::kZstd:
      return std::make_unique<ZstdDecoder>(out, max_bytes);
    case Coding::kIdentity:
      break;
  }
  return std::make_unique<IdentityDecoder>(out, max_bytes);
}

// Decodes `input` (given as a chunk source) with one coding.
Status DecodeOne(
    Coding coding,
    const std::function<Status(const std::function<Status(std::string_view)>&)>&
        source,
    bool input_truncated, size_t max_bytes, std::string* out, bool* capped) {
  out->clear();
  std::unique_ptr<Decoder> decoder = NewDecoder(coding, out, max_bytes);
  Status s =
      source([&](std::string_view chunk) { return decoder->Feed(chunk); });
  if (!s.ok()) return s;
  s = decoder->Finish(input_truncated);
  if (decoder->capped()) *capped = true;
  return s;
}

// The codings of Content-Encoding in the order applied (empty: identity).
Result<std::vector<Coding>> ParseCodings(const std::string& header) {
  std::vector<Coding> codings;
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t comma = header.find(',', pos);
    if (comma == std::string::npos) comma = header.size();
    const std::string t = ascii::ToLower(ascii::TrimHttpSpace(
        std::string_view(header).substr(pos, comma - pos)));
    if (t == "gzip" || t == "x-gzip") {
      codings.push_back(Coding::kGzip);
    } else if (t == "deflate") {
      codings.push_back(Coding::kDeflate);
    } else if (t == "br") {
      codings.push_back(Coding::kBrotli);
    } else if (t == "zstd") {
      codings.push_back(Coding::kZstd);
    } else if (!t.empty() && t != "identity") {
      return Status::InvalidArgument("unsupported Content-Encoding: " + t);
    }
    pos = comma + 1;
  }
  if (codings.size() > 4) {
    return Status::InvalidArgument("more than 4 content codings: " + header);
  }
  return codings;
}

}  // namespace

Result<std::string_view> DecodeBodyView(const Response& response,
                                        size_t max_bytes, std::string* storage,
                                        bool* capped) {
  if (capped != nullptr) *capped = false;
  storage->clear();
  // Content-Encoding lists codings in the order applied; undo right to left.
  auto parsed = ParseCodings(response.Header("Content-Encoding"));
  if (!parsed.ok()) return parsed.status();
  std::vector<Coding> codings = std::move(parsed).value();
  if (codings.empty()) {
    if (std::optional<std::string_view> all = response.body.MemoryView()) {
      // Identity in memory (the common page): the body itself, cut at the
      // cap as the identity decoder would cut it.
      if (capped != nullptr) *capped = all->size() > max_bytes;
      return all->substr(0, max_bytes);
    }
    codings.push_back(Coding::kIdentity);
  }

  bool any_capped = false;
  std::string next;
  bool first = true;
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    bool stage_capped = false;
    Status s;
    if (first) {
      s = DecodeOne(
          *it,
          [&](const std::function<Status(std::string_view)>& sink) {
            return response.body.ForEachChunk(sink);
          },
          response.truncated, max_bytes, storage, &stage_capped);
    } else {
      // An earlier stage that hit the cap left a cut stream behind.
      s = DecodeOne(
          *it,
          [&](const std::function<Status(std::string_view)>& sink) {
            return sink(next);
          },
          response.truncated || any_capped, max_bytes, storage, &stage_capped);
    }
    if (!s.ok()) return s;
    any_capped = any_capped || stage_capped;
    first = false;
    // The next stage reads this one's output.
    if (std::next(it) != codings.rend()) std::swap(next, *storage);
  }
  if (capped != nullptr) *capped = any_capped;
  return std::string_view(*storage);
}

Result<std::string> DecodeBody(const Response& response, size_t max_bytes,
                               bool* capped) {
  std::string storage;
  auto view = DecodeBodyView(response, max_bytes, &storage, capped);
  if (!view.ok()) return view.status();
  if (view->data() == storage.data()) return storage;
  return std::string(*view);
}

int64_t ParseRetryAfter(std::string_view value, int64_t now_epoch_s) {
  constexpr int64_t kDayUs = 86400ll * 1000000;
  value = ascii::TrimHttpSpace(value);
  if (value.empty()) return -1;
  if (std::all_of(value.begin(), value.end(), ascii::IsDigit)) {
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
