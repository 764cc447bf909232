// report/scan.h (private to report/): one pass over a data directory's
// files, gathered into per-host, per-MIME, per-status, per-seed and
// per-error-class figures that the reports are built from.
#ifndef CRAWLD_REPORT_SCAN_H_
#define CRAWLD_REPORT_SCAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "report/report.h"

namespace crawld::report::internal {

enum class Source { kIndex, kWarcs, kSeeds, kLogs, kCounters };

// Which sources a report needs.
struct Needs {
  bool index = false;     // index/*.cdxj
  bool warcs = false;     // warc/ file count and sizes
  bool seeds = false;     // the seed list (and the seeds' records)
  bool logs = false;      // logs/*.jsonl
  bool counters = false;  // summary.json

  [[nodiscard]] bool Has(Source s) const;
};

struct StatusClasses {
  uint64_t s2xx = 0, s3xx = 0, s4xx = 0, s5xx = 0, other = 0;
  void Add(int status);
};

struct HostFigures {
  uint64_t captures = 0;
  StatusClasses classes;
  uint64_t revisits = 0;
  uint64_t bytes = 0;       // gzip member bytes of its records
  std::string first, last;  // 14-digit timestamps
};

struct MimeFigures {
  uint64_t captures = 0;
  uint64_t bytes = 0;
};

struct SeedFigures {
  std::string url;   // as in the seed list
  std::string surt;  // store::Surt(url): how captures are matched
  std::string host;
  std::string origin;  // url::Url::origin_key(), the event log's "host"
  // The seed's earliest capture, when there is one.
  bool fetched = false;
  int status = 0;
  std::string timestamp;  // 14 digits
  std::string captured_url;
  std::string warc_file;
  uint64_t offset = 0, length = 0;
  std::string redirect_to;  // from the record's Location, resolved
  // The first error the event log records for the seed's URL.
  std::string error;
};

struct ErrorFigures {
  uint64_t count = 0;
  std::string example_url;  // the first event's url (or host)
  std::string example_error;
};

struct RuleFigures {
  uint64_t hits = 0;
  std::string example;
  std::string source;  // "log" or "summary.json"
};

struct Figures {
  // index
  uint64_t index_files = 0;
  uint64_t captures = 0, revisits = 0, robots_txt = 0, bytes = 0;
  StatusClasses classes;
  std::string first, last;  // 14-digit timestamps
  std::map<std::string, HostFigures> hosts;
  std::map<std::string, MimeFigures> mimes;
  std::map<int, uint64_t> statuses;
  // warc/
  uint64_t warc_files = 0, warc_bytes = 0;
  // seeds
  bool have_seeds = false;
  std::string seeds_source;  // the file read
  std::vector<SeedFigures> seeds;
  std::unordered_map<std::string, size_t> seed_by_surt;
  std::unordered_multimap<std::string, size_t> seed_by_origin;
  // logs
  uint64_t log_files = 0;
  uint64_t error_events = 0;
  std::map<std::string, ErrorFigures> errors;  // by class
  std::map<std::pair<std::string, std::string>, RuleFigures>
      rules;  // kind, rule
  bool have_counters = false;
  // Lines left out: too long, or not a CDXJ line / JSON object.
  uint64_t index_lines_skipped = 0, log_lines_skipped = 0;
  // What a source could not give, for the reports built from it.
  std::vector<std::pair<Source, std::string>> notes;

  void Note(Source source, std::string text) {
    notes.emplace_back(source, std::move(text));
  }
};

// Reads what `needs` asks for. Errors as report::Compute.
[[nodiscard]] Status Scan(const Options& options, const Needs& needs,
                          Figures* out);

// "YYYY-MM-DDThh:mm:ssZ" from a 14-digit timestamp; "" for "".
[[nodiscard]] std::string IsoFrom14(const std::string& ts);

}  // namespace crawld::report::internal

#endif  // CRAWLD_REPORT_SCAN_H_
