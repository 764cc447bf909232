// Fuzz target for the fetcher's body decoding: DecodeBody (content codings
// gzip, deflate, br, zstd and lists of them, fetcher/fetcher.h) and the
// response framing (FramingOf, ChunkedDecoder, fetcher/framing.h).
//
// The first byte picks the mode; the rest drives it. Invariants checked,
// beyond not crashing:
// 1. DecodeBody never returns more than its cap, returns exactly the cap
//    when it says capped, and for identity returns a prefix of the body.
// 2. A body made by compressing the input (gzip, zlib, raw deflate, zstd)
//    decodes back to the input (cut at the cap, capped iff longer).
// 3. The chunked decoder gives the same result (output and success) fed in
//    one piece or in pieces, and never more output than input.
// 4. Any payload chunk-encoded in any chunking decodes back to itself.
// 5. FramingOf on fuzzed fields either fails or gives a framing whose
//    Content-Length, when there is one, is a decimal that was in the input.
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "fetcher/fetcher.h"
#include "fetcher/framing.h"

namespace {

using crawld::Status;
using crawld::fetcher::DecodeBody;
using crawld::fetcher::Response;
using crawld::fetcher::internal::BodyFraming;
using crawld::fetcher::internal::ChunkedDecoder;
using crawld::fetcher::internal::FramingOf;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "decode_fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

// Reads bytes off the front of the input.
struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t Byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    n = 0;
    return s;
  }
};

Response MakeResponse(const std::string& coding, const std::string& body,
                      size_t memory_limit, bool truncated) {
  crawld::DocBuffer::Options bo;
  bo.memory_limit = memory_limit;
  Response r;
  r.body = crawld::DocBuffer(bo);
  Check(r.body.Append(body).ok(), "body append");
  if (!coding.empty()) r.headers.emplace_back("Content-Encoding", coding);
  r.truncated = truncated;
  return r;
}

std::string Deflate(const std::string& in, int window_bits) {
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  Check(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const size_t n =
      ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 1);
  Check(!ZSTD_isError(n), "zstd compress");
  out.resize(n);
  return out;
}

const char* const kCodings[] = {
    "",         "identity",  "gzip",       "x-gzip",
    "deflate",  "br",        "zstd",       "GZIP",
    "gzip, br", "br, zstd",  "zstd, gzip", "deflate, gzip, br, zstd",
    "compress", "gzip,,gzip"};

// Invariant 1.
void FuzzDecodeBody(Input in) {
  const std::string coding = kCodings[in.Byte() % std::size(kCodings)];
  const size_t cap = static_cast<size_t>(in.Byte()) * 64 + in.Byte();
  const uint8_t flags = in.Byte();
  const std::string body = in.Rest();
  Response r = MakeResponse(coding, body, 1 + (flags >> 1) * 64, flags & 1);
  bool capped = false;
  auto d = DecodeBody(r, cap, &capped);
  if (!d.ok()) return;
  Check(d->size() <= cap, "output within the cap");
  if (capped) Check(d->size() == cap, "capped output is exactly the cap");
  if (coding.empty() || coding == "identity") {
    Check(*d == body.substr(0, cap), "identity is a prefix of the body");
    Check(capped == (body.size() > cap), "identity capped iff longer");
  }
}

// Invariant 2.
void FuzzRoundTrip(Input in) {
  const uint8_t which = in.Byte() % 4;
  const size_t cap = static_cast<size_t>(in.Byte()) * 256 + in.Byte();
  const std::string text = in.Rest();
  std::string body, coding;
  switch (which) {
    case 0:
      body = Deflate(text, 15 + 16), coding = "gzip";
      break;
    case 1:
      body = Deflate(text, 15), coding = "deflate";
      break;
    case 2:
      body = Deflate(text, -15), coding = "deflate";
      break;
    default:
      body = Zstd(text), coding = "zstd";
  }
  if (text.empty()) body.clear();  // an empty body is empty in any coding
  bool capped = false;
  auto d = DecodeBody(MakeResponse(coding, body, 4096, false), cap, &capped);
  Check(d.ok(), "an intact stream decodes");
  Check(*d == text.substr(0, cap), "round trip gives the input back");
  Check(capped == (text.size() > cap), "capped iff the text is longer");
}

struct Decoded {
  Status status;
  std::string out;
  bool done = false;
};

Decoded Chunked(const std::string& wire, const std::vector<size_t>& splits) {
  Decoded d;
  ChunkedDecoder dec;
  size_t at = 0;
  for (size_t i = 0; at < wire.size(); ++i) {
    const size_t n =
        splits.empty() ? wire.size()
                       : std::min(wire.size() - at, splits[i % splits.size()]);
    d.status = dec.Feed(std::string_view(wire).substr(at, n),
                        [&](std::string_view chunk) {
                          d.out.append(chunk);
                          return Status::Ok();
                        });
    at += n;
    if (!d.status.ok() || dec.done()) break;
  }
  d.done = dec.done();
  return d;
}

// Invariant 3.
void FuzzChunked(Input in) {
  std::vector<size_t> splits;
  for (int i = 0, k = in.Byte() % 8; i < k; ++i)
    splits.push_back(1 + in.Byte());
  const std::string wire = in.Rest();
  Decoded whole = Chunked(wire, {});
  Decoded pieces = Chunked(wire, splits);
  Check(whole.out.size() <= wire.size(), "no more output than input");
  Check(whole.status.ok() == pieces.status.ok(), "splits agree on success");
  Check(whole.done == pieces.done, "splits agree on the end");
  Check(whole.out == pieces.out, "splits agree on the output");
}

// Invariant 4.
void FuzzChunkedModel(Input in) {
  std::vector<size_t> sizes;
  for (int i = 0, k = 1 + in.Byte() % 8; i < k; ++i)
    sizes.push_back(1 + in.Byte());
  const uint8_t style = in.Byte();
  const std::string payload = in.Rest();
  std::string wire;
  const char* eol = (style & 1) ? "\n" : "\r\n";
  size_t i = 0;
  for (size_t at = 0; at < payload.size(); ++i) {
    const size_t n = std::min(payload.size() - at, sizes[i % sizes.size()]);
    char hex[32];
    std::snprintf(hex, sizeof(hex), (style & 2) ? "%zX" : "%zx", n);
    wire += hex;
    if (style & 4) wire += ";ext=\"v\"";
    wire += eol;
    wire.append(payload, at, n);
    wire += eol;
    at += n;
  }
  wire += std::string("0") + eol;
  if (style & 8) wire += std::string("X-Trailer: t") + eol;
  wire += eol;
  Decoded d = Chunked(wire, sizes);
  Check(d.status.ok(), "a well-formed chunked body decodes");
  Check(d.done, "a well-formed chunked body ends");
  Check(d.out == payload, "chunked round trip");
}

// Invariant 5.
void FuzzFraming(Input in) {
  const int status = 100 + in.Byte() * 2;
  const std::string version = (in.Byte() & 1) ? "HTTP/1.0" : "HTTP/1.1";
  const std::string text = in.Rest();
  std::vector<std::pair<std::string, std::string>> fields;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      fields.emplace_back(line.substr(0, colon), line.substr(colon + 1));
    }
    at = end + 1;
  }
  auto f = FramingOf(status, version, fields);
  if (f.ok() && f->kind == BodyFraming::Kind::kLength) {
    Check(text.find(std::to_string(f->length)) != std::string::npos,
          "the length was in the input");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  switch (in.Byte() % 5) {
    case 0:
      FuzzDecodeBody(in);
      break;
    case 1:
      FuzzRoundTrip(in);
      break;
    case 2:
      FuzzChunked(in);
      break;
    case 3:
      FuzzChunkedModel(in);
      break;
    default:
      FuzzFraming(in);
  }
  return 0;
}
