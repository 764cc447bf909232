// report/report.cc: the report tables and their JSON and CSV forms; the
// files are read by scan.cc.
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "base/fd_io.h"
#include "base/json.h"
#include "report/scan.h"

namespace crawld::report {

namespace {

using internal::Figures;
using internal::IsoFrom14;
using internal::Needs;

Value Int(uint64_t n) { return Value(static_cast<int64_t>(n)); }
Value Text(std::string s) { return Value(std::move(s)); }
Value TextOrNull(std::string s) {
  return s.empty() ? Value() : Value(std::move(s));
}

Needs NeedsOf(std::string_view name) {
  Needs n;
  if (name == "summary") {
    n.index = n.warcs = n.seeds = n.logs = true;
  } else if (name == "hosts" || name == "mime" || name == "status") {
    n.index = true;
  } else if (name == "seeds") {
    n.seeds = n.index = n.logs = true;
  } else if (name == "errors") {
    n.logs = true;
  } else if (name == "rules") {
    n.logs = n.counters = true;
  }
  return n;
}

Table Summary(const Figures& f) {
  Table t;
  t.columns = {"metric", "value"};
  uint64_t seeds_fetched = 0;
  for (const auto& s : f.seeds) seeds_fetched += s.fetched;
  auto row = [&t](const char* name, Value v) {
    t.rows.push_back({Text(name), std::move(v)});
  };
  row("captures", Int(f.captures));
  row("pages", Int(f.captures - f.robots_txt));
  row("robots_txt", Int(f.robots_txt));
  row("responses", Int(f.captures - f.revisits));
  row("revisits", Int(f.revisits));
  row("status_2xx", Int(f.classes.s2xx));
  row("status_3xx", Int(f.classes.s3xx));
  row("status_4xx", Int(f.classes.s4xx));
  row("status_5xx", Int(f.classes.s5xx));
  row("status_other", Int(f.classes.other));
  row("record_bytes", Int(f.bytes));
  row("hosts", Int(f.hosts.size()));
  row("mime_types", Int(f.mimes.size()));
  row("first_capture", TextOrNull(IsoFrom14(f.first)));
  row("last_capture", TextOrNull(IsoFrom14(f.last)));
  row("warc_files", Int(f.warc_files));
  row("warc_bytes", Int(f.warc_bytes));
  row("index_files", Int(f.index_files));
  row("seeds", f.have_seeds ? Int(f.seeds.size()) : Value());
  row("seeds_fetched", f.have_seeds ? Int(seeds_fetched) : Value());
  row("error_events", Int(f.error_events));
  row("lines_skipped", Int(f.index_lines_skipped + f.log_lines_skipped));
  return t;
}

Table Hosts(const Figures& f) {
  Table t;
  t.columns = {"host",  "captures", "2xx",   "3xx",   "4xx", "5xx",
               "other", "revisits", "bytes", "first", "last"};
  std::vector<const std::pair<const std::string, internal::HostFigures>*> v;
  for (const auto& e : f.hosts) v.push_back(&e);
  // Busiest first; ties by name, so the order is stable.
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
    return a->second.captures > b->second.captures;
  });
  for (const auto* e : v) {
    const internal::HostFigures& h = e->second;
    t.rows.push_back({Text(e->first), Int(h.captures), Int(h.classes.s2xx),
                      Int(h.classes.s3xx), Int(h.classes.s4xx),
                      Int(h.classes.s5xx), Int(h.classes.other),
                      Int(h.revisits), Int(h.bytes), Text(IsoFrom14(h.first)),
                      Text(IsoFrom14(h.last))});
  }
  return t;
}

Table Mime(const Figures& f) {
  Table t;
  t.columns = {"mime", "captures", "bytes"};
  std::vector<const std::pair<const std::string, internal::MimeFigures>*> v;
  for (const auto& e : f.mimes) v.push_back(&e);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
    return a->second.captures > b->second.captures;
  });
  for (const auto* e : v) {
    t.rows.push_back(
        {Text(e->first), Int(e->second.captures), Int(e->second.bytes)});
  }
  return t;
}

Table StatusTable(const Figures& f) {
  Table t;
  t.columns = {"status", "captures"};
  for (const auto& [status, n] : f.statuses) {
    t.rows.push_back({Value(static_cast<int64_t>(status)), Int(n)});
  }
  return t;
}

Table Seeds(const Figures& f) {
  Table t;
  t.columns = {"seed",        "fetched",       "status",
               "redirect_to", "captured_url",  "first_capture",
               "host",        "host_captures", "error"};
  for (const internal::SeedFigures& s : f.seeds) {
    auto h = f.hosts.find(s.host);
    t.rows.push_back(
        {Text(s.url), Value(s.fetched),
         s.fetched ? Value(static_cast<int64_t>(s.status)) : Value(),
         TextOrNull(s.redirect_to), TextOrNull(s.captured_url),
         TextOrNull(IsoFrom14(s.timestamp)), Text(s.host),
         Int(h == f.hosts.end() ? 0 : h->second.captures),
         TextOrNull(s.error)});
  }
  if (f.have_seeds) t.notes.push_back("seed list: " + f.seeds_source);
  return t;
}

Table Errors(const Figures& f) {
  Table t;
  t.columns = {"class", "count", "example_url", "example_error"};
  std::vector<const std::pair<const std::string, internal::ErrorFigures>*> v;
  for (const auto& e : f.errors) v.push_back(&e);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
    return a->second.count > b->second.count;
  });
  for (const auto* e : v) {
    t.rows.push_back({Text(e->first), Int(e->second.count),
                      TextOrNull(e->second.example_url),
                      TextOrNull(e->second.example_error)});
  }
  t.notes.push_back(
      "warn and error events of the event logs (logs/*.jsonl), by event "
      "and its class or reason; HTTP 4xx and 5xx answers are in the status "
      "report");
  return t;
}

Table Rules(const Figures& f) {
  Table t;
  t.columns = {"kind", "rule", "hits", "example", "source"};
  for (const auto& [key, r] : f.rules) {
    t.rows.push_back({Text(key.first), Text(key.second), Int(r.hits),
                      TextOrNull(r.example), Text(r.source)});
  }
  t.notes.push_back(
      "override rows: hosts each robots override was applied to (again "
      "after a rules reload), from the event log. counter rows: crawld's "
      "decision counters in summary.json, the last run that ended. The "
      "event log does not name the filter rule or robots line that "
      "decided each URL (those events are debug level); per-rule hits of "
      "a running crawl are in /metrics (crawld_filter_rule_hits, "
      "crawld_override_hits)");
  return t;
}

Table Build(std::string_view name, const Figures& f) {
  Table t;
  if (name == "summary") t = Summary(f);
  if (name == "hosts") t = Hosts(f);
  if (name == "mime") t = Mime(f);
  if (name == "status") t = StatusTable(f);
  if (name == "seeds") t = Seeds(f);
  if (name == "errors") t = Errors(f);
  if (name == "rules") t = Rules(f);
  t.name = std::string(name);
  const Needs needs = NeedsOf(name);
  std::vector<std::string> notes;
  for (const auto& [source, text] : f.notes) {
    if (needs.Has(source)) notes.push_back(text);
  }
  t.notes.insert(t.notes.begin(), notes.begin(), notes.end());
  return t;
}

Options Sanitized(Options o) {
  o.max_line_bytes = std::clamp<size_t>(o.max_line_bytes, 4 << 10, 64 << 20);
  while (o.data_dir.size() > 1 && o.data_dir.back() == '/') {
    o.data_dir.pop_back();
  }
  return o;
}

bool Known(std::string_view name) {
  for (const ReportInfo& r : Reports()) {
    if (r.name == name) return true;
  }
  return false;
}

Json ValueJson(const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  return nullptr;
}

void AppendCsvField(std::string* out, const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) {
    *out += *b ? "true" : "false";
    return;
  }
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    *out += std::to_string(*i);
    return;
  }
  const std::string* s = std::get_if<std::string>(&v);
  if (s == nullptr) return;
  std::string text = *s;
  if (!text.empty() && (text[0] == '=' || text[0] == '+' || text[0] == '-' ||
                        text[0] == '@' || text[0] == '\t' || text[0] == '\r')) {
    text.insert(0, "'");
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    *out += text;
    return;
  }
  out->push_back('"');
  for (char c : text) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

Status WriteFileAtomically(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(tmp + ": " + strerror(errno));
  if (!WriteFull(fd, data.data(), data.size())) {
    const std::string why = strerror(errno);
    close(fd);
    unlink(tmp.c_str());
    return Status::IOError(tmp + ": " + why);
  }
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = strerror(errno);
    unlink(tmp.c_str());
    return Status::IOError(path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace

const std::vector<ReportInfo>& Reports() {
  static const std::vector<ReportInfo> kReports = {
      {"summary",
       "captures, pages, responses by status class, revisits, bytes, hosts, "
       "first and last capture, WARC files and bytes, seeds, errors"},
      {"hosts",
       "per host: captures, 2xx/3xx/4xx/5xx, revisits, bytes, first and "
       "last capture"},
      {"mime", "per MIME type: captures, bytes"},
      {"status", "per HTTP status: captures"},
      {"seeds",
       "per seed: fetched or not, status, redirect target, captures on its "
       "host, its error"},
      {"errors", "per error class of the event logs: count, an example"},
      {"rules", "robots override applications and decision counters"},
  };
  return kReports;
}

Result<Table> Compute(std::string_view name, const Options& options) {
  if (!Known(name)) {
    std::string names;
    for (const ReportInfo& r : Reports()) {
      names += (names.empty() ? "" : ", ") + std::string(r.name);
    }
    return Status::NotFound("unknown report '" + std::string(name) +
                            "' (reports: " + names + ")");
  }
  const Options o = Sanitized(options);
  Figures f;
  if (Status s = internal::Scan(o, NeedsOf(name), &f); !s.ok()) return s;
  return Build(name, f);
}

Result<std::vector<Table>> ComputeAll(const Options& options) {
  const Options o = Sanitized(options);
  Needs all;
  all.index = all.warcs = all.seeds = all.logs = all.counters = true;
  Figures f;
  if (Status s = internal::Scan(o, all, &f); !s.ok()) return s;
  std::vector<Table> out;
  for (const ReportInfo& r : Reports()) out.push_back(Build(r.name, f));
  return out;
}

std::string ToJson(const Table& table) {
  Json rows = Json::array();
  for (const std::vector<Value>& row : table.rows) {
    Json r = Json::object();
    for (size_t i = 0; i < table.columns.size() && i < row.size(); ++i) {
      r[table.columns[i]] = ValueJson(row[i]);
    }
    rows.push_back(std::move(r));
  }
  Json j = Json::object();
  j["report"] = table.name;
  j["columns"] = table.columns;
  j["rows"] = std::move(rows);
  j["notes"] = table.notes;
  return json::Dump(j) + "\n";
}

std::string ToCsv(const Table& table) {
  std::string out;
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendCsvField(&out, Value(table.columns[i]));
  }
  out += "\r\n";
  for (const std::vector<Value>& row : table.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendCsvField(&out, row[i]);
    }
    out += "\r\n";
  }
  return out;
}

Status WriteReports(const Options& options, const std::string& dir) {
  auto tables = ComputeAll(options);
  if (!tables.ok()) return tables.status();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(dir + ": " + ec.message());
  for (const Table& t : *tables) {
    const std::string base = dir + "/" + t.name;
    if (Status s = WriteFileAtomically(base + ".json", ToJson(t)); !s.ok()) {
      return s;
    }
    if (Status s = WriteFileAtomically(base + ".csv", ToCsv(t)); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace crawld::report
