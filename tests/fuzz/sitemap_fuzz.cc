// Fuzz target for sitemap/: read arbitrary bytes as a sitemap or feed,
// whole, in pieces, and gzipped.
//
// Invariants checked (abort on violation):
//  - every entry is counted once: entries == admitted + dropped(), and
//    admitted == the number of entries handed out <= max_urls;
//  - at most the cap is read (bytes_out <= max_uncompressed_bytes), every
//    byte fed is counted, and truncated goes with ResourceExhausted;
//  - every entry is an http(s) URL that parses to itself and is in scope
//    (the sitemap's origin and directory, or the cross-submitted host);
//    priority is in [0, 1]; changefreq only in a urlset; kind sitemap
//    exactly in a sitemap index;
//  - streaming: fed in pieces (split where the input says), the entries,
//    the counters, the error and its position are those of the whole
//    buffer;
//  - gzip: the gzipped input gives what the input gives.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sitemap/sitemap.h"
#include "url/url.h"

namespace {

using crawld::sitemap::ChangeFreq;
using crawld::sitemap::Contents;
using crawld::sitemap::Entry;
using crawld::sitemap::EntryKind;
using crawld::sitemap::Format;
using crawld::sitemap::Options;
using crawld::sitemap::Reader;
using crawld::sitemap::Report;

void Check(bool ok) {
  if (!ok) std::abort();
}

std::string Gzip(std::string_view data) {
  z_stream zs{};
  Check(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  Check(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

bool SameEntries(const std::vector<Entry>& a, const std::vector<Entry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].url != b[i].url || a[i].kind != b[i].kind ||
        a[i].lastmod != b[i].lastmod || a[i].changefreq != b[i].changefreq ||
        a[i].priority != b[i].priority) {
      return false;
    }
  }
  return true;
}

bool SameReport(const Report& a, const Report& b) {
  return a.format == b.format && a.truncated == b.truncated &&
         a.error.ToString() == b.error.ToString() &&
         a.error_line == b.error_line && a.error_column == b.error_column &&
         a.counters.entries == b.counters.entries &&
         a.counters.admitted == b.counters.admitted &&
         a.counters.dropped() == b.counters.dropped() &&
         // bytes_out counts what had arrived when an error stopped the
         // reading, which depends on the pieces; otherwise it is all of it
         // (or the cap).
         ((!a.error.ok() && !a.truncated) ||
          a.counters.bytes_out == b.counters.bytes_out);
}

void CheckContents(const Contents& c, const Options& o, size_t fed) {
  const crawld::sitemap::Counters& k = c.report.counters;
  Check(k.entries == k.admitted + k.dropped());
  Check(k.admitted == c.entries.size());
  Check(c.entries.size() <= o.max_urls);
  Check(k.bytes_in == fed);
  Check(k.bytes_out <= o.max_uncompressed_bytes);
  if (c.report.truncated) {
    Check(c.report.error.code() == crawld::Status::Code::kResourceExhausted);
  }
  for (const Entry& e : c.entries) {
    crawld::Result<crawld::url::Url> u = crawld::url::Parse(e.url);
    Check(u.ok());
    Check(u->is_http());
    Check(u->href() == e.url);
    const bool own = u->scheme() == "http" && u->host() == "example.com" &&
                     u->port() == 80 && u->path().starts_with("/dir/");
    Check(own || u->host() == "other.example");
    Check(e.priority >= 0.0 && e.priority <= 1.0);
    if (c.report.format != Format::kUrlset) {
      Check(e.changefreq == ChangeFreq::kUnset);
    }
    Check((e.kind == EntryKind::kSitemap) ==
          (c.report.format == Format::kSitemapIndex));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const crawld::url::Url sitemap_url =
      *crawld::url::Parse("http://example.com/dir/sitemap.xml");
  const std::vector<std::string> hosts = {"Other.Example"};
  Options o;
  o.max_urls = 64;  // small, so that the limit is reached
  o.max_uncompressed_bytes = 128 * 1024;
  o.max_loc_bytes = 512;

  const Contents whole = crawld::sitemap::Read(body, sitemap_url, hosts, o);
  CheckContents(whole, o, size);

  // In pieces: sizes taken from the input's own bytes.
  {
    Reader r(sitemap_url, hosts, o);
    Contents pieces;
    size_t at = 0;
    uint32_t h = 2166136261u;
    while (at < size) {
      h = (h ^ data[at]) * 16777619u;
      const size_t n = 1 + h % 97;
      r.Feed(body.substr(at, n));
      at += n;
      if (h % 3 == 0) r.TakeEntries(&pieces.entries);
    }
    pieces.report = r.Finish();
    r.TakeEntries(&pieces.entries);
    CheckContents(pieces, o, size);
    Check(SameEntries(whole.entries, pieces.entries));
    Check(SameReport(whole.report, pieces.report));
  }

  // Gzipped: the same reading (unless the input is gzip itself, which the
  // gzipped copy would hand to the XML/text reader as bytes).
  if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) {
    const std::string gz = Gzip(body);
    const Contents z = crawld::sitemap::Read(gz, sitemap_url, hosts, o);
    CheckContents(z, o, gz.size());
    Check(z.report.gzip);
    Check(SameEntries(whole.entries, z.entries));
    Check(SameReport(whole.report, z.report));
  }
  return 0;
}
