// Fuzz target for the batch encoding of the exchange (cluster/wire.h,
// DecodeBatch / EncodeBatch; docs/CLUSTER.md): batches come from other
// worker processes and, over Redis, from other machines, and carry recrawl
// captures (UrlMessage::capture, flag 8) and sitemap hints (changefreq,
// lastmod_s, flag 0x80) since issue 17.
//
// Input: one byte choosing max_url_bytes (1 + 32 * byte), then the batch.
// Invariants checked (abort on violation):
//  - decoding never reads outside the input (ASan) and fails only with
//    Corruption;
//  - a batch that decodes holds URLs of 1..max_url_bytes bytes, finite
//    credits >= 0, captures within MaxCaptureBytes, a changefreq of 0..7;
//  - it encodes back to exactly the input bytes (one encoding per batch),
//    and that decodes again.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/wire.h"

namespace {

using crawld::Status;
using crawld::cluster::MaxCaptureBytes;
using crawld::cluster::UrlMessage;
namespace wire = crawld::cluster::wire;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t max_url_bytes = 1 + 32u * data[0];
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  wire::BatchHeader h;
  std::vector<UrlMessage> urls;
  Status s = wire::DecodeBatch(in, &h, &urls, max_url_bytes);
  if (!s.ok()) {
    Check(s.code() == Status::Code::kCorruption);
    return 0;
  }
  for (const UrlMessage& m : urls) {
    Check(!m.url.empty() && m.url.size() <= max_url_bytes);
    Check(std::isfinite(m.credit) && m.credit >= 0);
    Check(m.sitemap_kind <= 2 && m.sitemap_of.size() <= 255);
    Check(m.capture.size() <= MaxCaptureBytes(max_url_bytes));
    Check(m.changefreq <= 7);
  }
  std::string again;
  wire::EncodeBatch(h, urls, &again);
  Check(again == in);
  wire::BatchHeader h2;
  std::vector<UrlMessage> urls2;
  Check(wire::DecodeBatch(again, &h2, &urls2, max_url_bytes).ok());
  Check(urls2.size() == urls.size() && h2.id == h.id);
  return 0;
}
