// cluster/wire.h (private to cluster/): the batch encoding shared by both
// exchanges and the frames of the local exchange. Layout: docs/CLUSTER.md.
// All integers little-endian.
#ifndef CRAWLD_CLUSTER_WIRE_H_
#define CRAWLD_CLUSTER_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"

namespace crawld::cluster::wire {

struct BatchHeader {
  uint32_t from = 0;         // sender worker id
  uint64_t incarnation = 0;  // random per sender process start
  uint64_t id = 0;           // per (sender, destination), from 1, no gaps
};

// Appends the encoded batch to `out`.
void EncodeBatch(const BatchHeader& h, const std::vector<UrlMessage>& urls,
                 std::string* out);

// Decodes a whole batch. Corruption on any malformed, truncated or trailing
// byte; `urls` is then unspecified. Never reads outside `in`.
[[nodiscard]] Status DecodeBatch(std::string_view in, BatchHeader* h,
                                 std::vector<UrlMessage>* urls,
                                 uint32_t max_url_bytes);

// Local frames: u32 length (of type + body) | u8 type | body.
enum class FrameType : uint8_t {
  kHello = 1,  // body: u32 from, u64 incarnation
  kBatch = 2,  // body: an encoded batch
  kAck = 3,    // body: u64 batch id
};

// Appends a frame header for a body of `body_len` bytes.
void AppendFrameHeader(FrameType t, size_t body_len, std::string* out);

// Little-endian helpers.
void PutU32(uint32_t v, std::string* out);
void PutU64(uint64_t v, std::string* out);
uint32_t GetU32(const char* p);
uint64_t GetU64(const char* p);

// Clamps ExchangeOptions into range; InvalidArgument when self/workers are
// inconsistent.
[[nodiscard]] Status SanitizeExchangeOptions(ExchangeOptions* o);

// The checks Send applies to one message (besides the destination).
[[nodiscard]] Status ValidateMessage(const UrlMessage& m,
                                     const ExchangeOptions& o);

// A random non-zero 64-bit value, new for every exchange instance.
uint64_t NewIncarnation();

// Milliseconds on a monotonic clock.
uint64_t NowMs();

}  // namespace crawld::cluster::wire

#endif  // CRAWLD_CLUSTER_WIRE_H_
