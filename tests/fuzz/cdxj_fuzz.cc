// Fuzz target for the CDXJ index line (store/store.h: ParseCdxjLine,
// FormatCdxjLine) and for the earlier-crawl index built from such lines
// (EarlierCaptures::Load and Find, issue 17): CDXJ files may come from
// other tools and from crawls that were killed mid-line.
//
// Invariants checked (abort on violation):
//  - a line that parses formats to a line that parses to the same entry,
//    and formatting that entry again gives the same line;
//  - loaded as a CDXJ file, every complete line is counted once: kept,
//    a revisit, without a digest, or malformed; the distinct captures are
//    at most the lines kept; a torn last line is not a line;
//  - every capture kept is found by its own digest (from its line; or
//    Corruption when the line names a file that is there but holds no such
//    record), and a digest that is not there is NotFound.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace {

using crawld::Result;
using crawld::Status;
using crawld::store::CdxjEntry;
using crawld::store::EarlierCaptures;

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Same(const CdxjEntry& a, const CdxjEntry& b) {
  return a.surt == b.surt && a.timestamp == b.timestamp && a.url == b.url &&
         a.mime == b.mime && a.status == b.status && a.digest == b.digest &&
         a.length == b.length && a.offset == b.offset &&
         a.filename == b.filename && a.revisit == b.revisit &&
         a.flags.noindex == b.flags.noindex &&
         a.flags.near_duplicate_of == b.flags.near_duplicate_of;
}

// One scratch directory per process (the lines' filenames are looked up
// beside the file), the file rewritten for every input.
const std::string& ScratchFile() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(dir != nullptr ? dir : "/tmp") + "/cdxj_fuzz-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    return tmpl + "/index.cdxj";
  }();
  static const bool cleanup = [] {
    // Nothing left behind in TMPDIR when the process exits normally.
    return std::atexit([] {
             const std::string& p = ScratchFile();
             ::unlink(p.c_str());
             ::rmdir(p.substr(0, p.rfind('/')).c_str());
           }) == 0;
  }();
  (void)cleanup;
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // One line: the round trip.
  const std::string_view first = input.substr(0, input.find('\n'));
  Result<CdxjEntry> e = crawld::store::ParseCdxjLine(first);
  if (e.ok()) {
    const std::string line = crawld::store::FormatCdxjLine(*e);
    Check(!line.empty() && line.back() == '\n');
    Result<CdxjEntry> again = crawld::store::ParseCdxjLine(line);
    Check(again.ok());
    Check(Same(*e, *again));
    Check(crawld::store::FormatCdxjLine(*again) == line);
  }

  // The whole input as a CDXJ file of an earlier crawl.
  const std::string& path = ScratchFile();
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    const bool written = std::fwrite(data, 1, size, f) == size;
    std::fclose(f);
    if (!written) return 0;
  }
  Result<std::unique_ptr<EarlierCaptures>> loaded =
      EarlierCaptures::Load({path});
  Check(loaded.ok());
  const EarlierCaptures& earlier = **loaded;
  const EarlierCaptures::Stats& st = earlier.stats();
  uint64_t lines = 0;
  for (char c : input) lines += c == '\n';
  Check(st.files == 1);
  Check(st.lines == lines);
  Check(st.revisits + st.no_digest + st.malformed <= st.lines);
  Check(st.captures <= st.lines - st.revisits - st.no_digest - st.malformed);
  Check(st.captures == earlier.size());
  Check((st.malformed == 0) == st.first_malformed.empty());
  // Every line that was kept is found by its digest.
  size_t start = 0;
  while (true) {
    const size_t nl = input.find('\n', start);
    if (nl == std::string_view::npos) break;
    Result<CdxjEntry> line =
        crawld::store::ParseCdxjLine(input.substr(start, nl - start));
    start = nl + 1;
    if (!line.ok() || line->revisit || line->digest.empty() ||
        line->timestamp.size() < 14) {
      continue;
    }
    Result<crawld::store::RevisitOf> of = earlier.Find(line->digest);
    // Not a SHA-1 (then the line was malformed); a line naming a file
    // that is there but holds no such record (the index file itself):
    // Corruption; else found.
    Check(of.ok() || of.status().code() == Status::Code::kInvalidArgument ||
          of.status().code() == Status::Code::kCorruption);
    if (of.ok()) {
      Check(!of->target_uri.empty());
      Check(of->payload_digest.size() > 5);
    }
  }
  Check(earlier.Find("sha1:" + std::string(32, 'A')).ok() ||
        earlier.Find("sha1:" + std::string(32, 'A')).status().code() ==
            Status::Code::kNotFound);
  return 0;
}
