// report/report.h: crawl reports computed from a data directory, after
// Heritrix's crawl reports (summary, hosts, MIME types, response codes,
// seeds) plus errors and rule hits. One table per report, rendered as JSON
// or CSV (RFC 4180). What each report says: docs/OPERATIONS.md, "Crawl
// reports".
//
// The sources, all files crawld writes (docs/STORE.md, docs/OPERATIONS.md):
//  - <data>/index/*.cdxj: one line per response or revisit record (URL,
//    status, MIME, digest, record length), read with store::ParseCdxjLine.
//    The index is the report's view of the WARCs: it is written after each
//    record, so the two agree (a torn last line is left out).
//  - <data>/warc/*.warc.gz: counted and sized only; a seed's record is read
//    (store::ReadRecordAt) for its redirect target.
//  - <data>/run/seeds.txt: the seed list crawld writes at start (or
//    Options::seeds_file).
//  - <data>/logs/*.jsonl: the event logs (daemon/event_log.h): warn and
//    error events are the errors report; override_applied (and filter,
//    robots and trap decisions, when logged) the rules report.
//  - <data>/summary.json: the decision counters of the last run that
//    ended (the rules report).
//
// Memory is bounded by the number of hosts, MIME types, statuses, error
// classes and seeds, never by the number of captures: every file is
// streamed line by line.
#ifndef CRAWLD_REPORT_REPORT_H_
#define CRAWLD_REPORT_REPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"

namespace crawld::report {

struct Options {
  // The crawl's data directory. Required.
  std::string data_dir;
  // The seed list (one URL per line, conf/seeds.h); "" = <data_dir>/run/
  // seeds.txt, which crawld writes when it starts. Without either, the
  // seeds report is empty and says why in its notes.
  std::string seeds_file;
  // Longest line read from an index or log file, in bytes; a longer line
  // is skipped and counted (summary: lines_skipped). Clamped to
  // 4 KiB .. 64 MiB.
  size_t max_line_bytes = 1 << 20;
  // Checked between lines: once true, the computation stops with
  // Unavailable ("cancelled"). Lets a server that is shutting down end a
  // long computation. Not owned; may be null.
  const std::atomic<bool>* cancel = nullptr;
};

// One cell: empty, a flag, a number or text.
using Value = std::variant<std::monostate, bool, int64_t, std::string>;

struct Table {
  std::string name;  // the report's name, e.g. "hosts"
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;  // each of columns.size() cells
  // What the report could not see or how to read it (a missing seed list,
  // skipped lines); part of the JSON form only.
  std::vector<std::string> notes;
};

struct ReportInfo {
  std::string_view name;
  std::string_view description;
};

// Every report, in a fixed order: summary, hosts, mime, status, seeds,
// errors, rules.
[[nodiscard]] const std::vector<ReportInfo>& Reports();

// Computes one report. NotFound for an unknown name (the message lists the
// names) or a data directory that does not exist; IOError when a file
// cannot be read; Unavailable when cancelled. A data directory without an
// index or logs yet gives empty tables, not an error.
[[nodiscard]] Result<Table> Compute(std::string_view name,
                                    const Options& options);

// Every report, in Reports() order, from one pass over the files.
[[nodiscard]] Result<std::vector<Table>> ComputeAll(const Options& options);

// {"report": name, "columns": [...], "rows": [{column: value, ...}, ...],
//  "notes": [...]}: rows as objects in column order; numbers as JSON
// numbers, flags as booleans, empty cells as null.
[[nodiscard]] std::string ToJson(const Table& table);

// RFC 4180: a header line of the column names, then one line per row,
// CRLF line ends; a field holding a comma, a double quote, CR or LF is
// quoted, its quotes doubled. Flags are "true"/"false", empty cells empty.
// A text field starting with '=', '+', '-', '@', TAB or CR gets a leading
// "'" so that a spreadsheet does not run a crawled value as a formula
// (the MIME type and error text come from the web).
[[nodiscard]] std::string ToCsv(const Table& table);

// Computes every report and writes <dir>/<name>.json and <dir>/<name>.csv
// (each written to a temporary file and renamed into place, so a reader
// sees an old or a whole file). Creates `dir`. Errors as ComputeAll, or
// IOError naming the file that could not be written.
[[nodiscard]] Status WriteReports(const Options& options,
                                  const std::string& dir);

}  // namespace crawld::report

#endif  // CRAWLD_REPORT_REPORT_H_
