// report/scan.cc: see scan.h.
#include "report/scan.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string_view>

#include "base/ascii.h"
#include "base/json.h"
#include "conf/seeds.h"
#include "store/store.h"
#include "url/url.h"

namespace crawld::report::internal {

namespace {

constexpr size_t kReadChunk = 64 << 10;
// summary.json is a few hundred bytes; anything near this is not ours.
constexpr uintmax_t kMaxSummaryBytes = 16 << 20;

bool Cancelled(const Options& o) {
  return o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed);
}

std::string Errno(const std::string& path) {
  return path + ": " + strerror(errno);
}

// Calls fn(line) for every complete line of `path` (without its '\n'). A
// last line without '\n' is being appended by a running crawl and is left
// out, as store/'s readers do. A line over max_line_bytes is skipped and
// counted in *skipped. A file that does not exist (removed meanwhile) has
// no lines.
template <typename Fn>
Status ForEachLine(const std::string& path, const Options& o, uint64_t* skipped,
                   Fn&& fn) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? Status::Ok() : Status::IOError(Errno(path));
  }
  std::unique_ptr<char[]> chunk(new char[kReadChunk]);
  std::string line;
  bool overlong = false;
  Status status;
  for (;;) {
    if (Cancelled(o)) {
      status = Status::Unavailable("report: cancelled");
      break;
    }
    const ssize_t n = read(fd, chunk.get(), kReadChunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Status::IOError(Errno(path));
      break;
    }
    if (n == 0) break;
    std::string_view data(chunk.get(), static_cast<size_t>(n));
    while (!data.empty()) {
      const size_t nl = data.find('\n');
      const std::string_view piece = data.substr(0, nl);
      if (!overlong && line.size() + piece.size() > o.max_line_bytes) {
        overlong = true;
        line.clear();
      }
      if (!overlong) line.append(piece);
      if (nl == std::string_view::npos) break;
      data.remove_prefix(nl + 1);
      if (overlong) {
        ++*skipped;
        overlong = false;
      } else {
        fn(std::string_view(line));
      }
      line.clear();
    }
  }
  close(fd);
  return status;
}

// The regular files of `dir` whose names end in `suffix`, sorted; none when
// the directory does not exist.
Result<std::vector<std::string>> ListFiles(const std::string& dir,
                                           std::string_view suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return Status::IOError(dir + ": " + ec.message());
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return Status::IOError(dir + ": " + ec.message());
    const std::string name = it->path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix) &&
        it->is_regular_file(ec)) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void KeepEarliest(const std::string& ts, std::string* first) {
  if (first->empty() || ts < *first) *first = ts;
}

void KeepLatest(const std::string& ts, std::string* last) {
  if (ts > *last) *last = ts;
}

void AddCapture(const store::CdxjEntry& e, Figures* f) {
  ++f->captures;
  f->revisits += e.revisit;
  f->bytes += e.length;
  f->classes.Add(e.status);
  ++f->statuses[e.status];
  MimeFigures& m = f->mimes[e.mime];
  ++m.captures;
  m.bytes += e.length;
  KeepEarliest(e.timestamp, &f->first);
  KeepLatest(e.timestamp, &f->last);

  auto u = url::Parse(e.url);
  const std::string host = u.ok() ? std::string(u->host()) : std::string();
  if (u.ok() && u->path() == "/robots.txt") ++f->robots_txt;
  HostFigures& h = f->hosts[host];
  ++h.captures;
  h.classes.Add(e.status);
  h.revisits += e.revisit;
  h.bytes += e.length;
  KeepEarliest(e.timestamp, &h.first);
  KeepLatest(e.timestamp, &h.last);

  if (f->seed_by_surt.empty()) return;
  auto it = f->seed_by_surt.find(e.surt);
  if (it == f->seed_by_surt.end()) return;
  SeedFigures& s = f->seeds[it->second];
  // The earliest capture is the seed's outcome; a later one (a revisit,
  // a later run) does not replace it.
  if (s.fetched && s.timestamp <= e.timestamp) return;
  s.fetched = true;
  s.status = e.status;
  s.timestamp = e.timestamp;
  s.captured_url = e.url;
  s.warc_file = e.filename;
  s.offset = e.offset;
  s.length = e.length;
}

Status ScanIndex(const Options& o, Figures* f) {
  const std::string dir = o.data_dir + "/index";
  auto files = ListFiles(dir, ".cdxj");
  if (!files.ok()) return files.status();
  if (files->empty()) {
    f->Note(Source::kIndex, "no CDXJ index in " + dir + " yet");
  }
  for (const std::string& name : *files) {
    ++f->index_files;
    Status s = ForEachLine(dir + "/" + name, o, &f->index_lines_skipped,
                           [f](std::string_view line) {
                             auto e = store::ParseCdxjLine(line);
                             if (!e.ok()) {
                               ++f->index_lines_skipped;
                               return;
                             }
                             AddCapture(*e, f);
                           });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status ScanWarcs(const Options& o, Figures* f) {
  const std::string dir = o.data_dir + "/warc";
  for (const char* suffix : {".warc.gz", ".warc"}) {
    auto files = ListFiles(dir, suffix);
    if (!files.ok()) return files.status();
    for (const std::string& name : *files) {
      std::error_code ec;
      const uintmax_t size = std::filesystem::file_size(dir + "/" + name, ec);
      if (ec) continue;  // removed meanwhile
      ++f->warc_files;
      f->warc_bytes += size;
    }
  }
  return Status::Ok();
}

Status LoadSeedList(const Options& o, Figures* f) {
  std::string path = o.seeds_file;
  if (path.empty()) {
    path = o.data_dir + "/run/seeds.txt";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      f->Note(Source::kSeeds,
              "no seed list: " + path +
                  " is missing (crawld writes it when it starts); "
                  "name the seeds file (crawlctl report seeds "
                  "--seeds FILE)");
      return Status::Ok();
    }
  }
  auto list = conf::LoadSeeds(path);
  if (!list.ok()) return list.status();
  f->have_seeds = true;
  f->seeds_source = path;
  for (const std::string& e : list->errors) f->Note(Source::kSeeds, e);
  for (const std::string& u : list->urls) {
    SeedFigures s;
    s.url = u;
    s.surt = store::Surt(u);
    if (auto p = url::Parse(u); p.ok()) {
      s.host = std::string(p->host());
      s.origin = p->origin_key();
    }
    // Seeds equal under SURT (http and https, "www.") are one capture key:
    // the first of them is matched.
    if (f->seed_by_surt.emplace(s.surt, f->seeds.size()).second) {
      f->seed_by_origin.emplace(s.origin, f->seeds.size());
      f->seeds.push_back(std::move(s));
    } else {
      f->Note(Source::kSeeds, "seed " + u +
                                  " has the index key of an earlier seed (" +
                                  s.surt + "): reported once");
    }
  }
  return Status::Ok();
}

// The Location field of an HTTP response head; "" when there is none.
std::string LocationOf(std::string_view head) {
  size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    const size_t start = pos + 1;
    const size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // end of the head
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos &&
        ascii::EqualsIgnoreCase(line.substr(0, colon), "location")) {
      return std::string(ascii::TrimHttpSpace(line.substr(colon + 1)));
    }
    pos = end;
  }
  return "";
}

// A redirected seed's target, from its record's Location (resolved against
// the seed's URL, as the crawler resolves it). Only seeds are read this
// way: a handful of records, not the crawl.
void FindRedirects(const Options& o, Figures* f) {
  for (SeedFigures& s : f->seeds) {
    if (!s.fetched || s.status < 300 || s.status > 399) continue;
    auto rec = store::ReadRecordAt(o.data_dir + "/warc/" + s.warc_file,
                                   s.offset, s.length);
    if (!rec.ok()) {
      f->Note(Source::kSeeds, "seed " + s.url +
                                  ": its record cannot be read (" +
                                  rec.status().ToString() + ")");
      continue;
    }
    const std::string location = LocationOf(rec->block);
    if (location.empty()) continue;
    auto base = url::Parse(s.captured_url);
    auto target = url::Parse(location, base.ok() ? &*base : nullptr);
    s.redirect_to = target.ok() ? std::string(target->href()) : location;
  }
}

std::string StringField(const Json& j, std::string_view key) {
  const Json* v = json::Find(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

void AddRule(Figures* f, const std::string& kind, const std::string& rule,
             uint64_t hits, const std::string& example, const char* source) {
  RuleFigures& r = f->rules[{kind, rule}];
  r.hits += hits;
  if (r.example.empty()) r.example = example;
  r.source = source;
}

// One event log line (daemon/event_log.h: {"time", "level", "event",
// fields...}, every field a string).
void AddEvent(std::string_view line, Figures* f) {
  json::Limits limits;
  limits.max_bytes = line.size();
  limits.max_depth = 2;
  auto j = json::Parse(line, limits);
  const Json* event = j.ok() ? json::Find(*j, "event") : nullptr;
  if (event == nullptr || !event->is_string()) {
    ++f->log_lines_skipped;
    return;
  }
  const std::string name = event->get<std::string>();
  const std::string url = StringField(*j, "url");
  const std::string host = StringField(*j, "host");
  const std::string level = StringField(*j, "level");
  if (level == "warn" || level == "error") {
    std::string cls = name;
    const std::string detail = !StringField(*j, "class").empty()
                                   ? StringField(*j, "class")
                                   : StringField(*j, "reason");
    if (!detail.empty()) cls += ":" + detail;
    ++f->error_events;
    ErrorFigures& e = f->errors[cls];
    if (e.count++ == 0) {
      e.example_url = url.empty() ? host : url;
      e.example_error = StringField(*j, "error");
    }
    // The seed's own error, or its host's (robots.txt unavailable: the
    // event names the host, "scheme://host:port").
    if (!url.empty() && !f->seed_by_surt.empty()) {
      auto it = f->seed_by_surt.find(store::Surt(url));
      if (it != f->seed_by_surt.end() && f->seeds[it->second].error.empty()) {
        f->seeds[it->second].error = cls;
      }
    } else if (url.empty() && !host.empty()) {
      auto [b, e] = f->seed_by_origin.equal_range(host);
      for (auto it = b; it != e; ++it) {
        if (f->seeds[it->second].error.empty()) {
          f->seeds[it->second].error = cls;
        }
      }
    }
  }
  // Decisions the log names the rule of. crawld logs override_applied at
  // info; filter, robots and trap decisions only at debug (not by
  // default), so those rows appear only when a log holds them.
  if (name == "override_applied") {
    AddRule(f, "override", StringField(*j, "override"), 1, host, "log");
  } else if (name == "filter_rejected") {
    std::string rule = StringField(*j, "rule");
    const std::string at = StringField(*j, "line");
    if (!at.empty() && at != "0") rule += " (line " + at + ")";
    AddRule(f, "filter", rule, 1, url, "log");
  } else if (name == "robots_disallowed") {
    const std::string origin = StringField(*j, "origin");
    AddRule(
        f, origin.empty() ? "robots" : "override_robots",
        StringField(*j, "rule") + (origin.empty() ? "" : " (" + origin + ")"),
        1, url, "log");
  } else if (name == "trap") {
    AddRule(f, "trap", StringField(*j, "trap"), 1, url, "log");
  }
}

Status ScanLogs(const Options& o, Figures* f) {
  const std::string dir = o.data_dir + "/logs";
  auto files = ListFiles(dir, ".jsonl");
  if (!files.ok()) return files.status();
  for (const std::string& name : *files) {
    ++f->log_files;
    Status s = ForEachLine(dir + "/" + name, o, &f->log_lines_skipped,
                           [f](std::string_view line) { AddEvent(line, f); });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// The counters crawld keeps of its scope and politeness decisions
// (daemon/crawl_stats.h), as summary.json holds them.
bool IsDecisionCounter(std::string_view name) {
  return name == "filter_rejected" || name == "max_depth" ||
         name == "nofollow_links" || name == "x_robots_noindex" ||
         name.starts_with("trap_") || name.starts_with("robots_") ||
         name.starts_with("override_");
}

Status ScanCounters(const Options& o, Figures* f) {
  const std::string path = o.data_dir + "/summary.json";
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    f->Note(Source::kCounters,
            "no summary.json: decision counters appear once a run has ended");
    return Status::Ok();
  }
  if (size > kMaxSummaryBytes) {
    return Status::InvalidArgument(path + ": larger than " +
                                   std::to_string(kMaxSummaryBytes) +
                                   " bytes, not a crawld summary");
  }
  std::string text;
  uint64_t skipped = 0;
  Options whole = o;
  whole.max_line_bytes = kMaxSummaryBytes;
  Status s = ForEachLine(path, whole, &skipped, [&text](std::string_view l) {
    text.append(l);
    text.push_back('\n');
  });
  if (!s.ok()) return s;
  json::Limits limits;
  limits.max_bytes = kMaxSummaryBytes;
  limits.max_depth = 4;
  auto j = json::Parse(text, limits);
  const Json* counts = j.ok() ? json::Find(*j, "counts") : nullptr;
  if (counts == nullptr || !counts->is_object()) {
    f->Note(Source::kCounters, path + ": no counts (" +
                                   (j.ok() ? std::string("not a crawld summary")
                                           : j.status().message()) +
                                   ")");
    return Status::Ok();
  }
  f->have_counters = true;
  for (const auto& [name, value] : counts->items()) {
    if (!IsDecisionCounter(name) || !value.is_number()) continue;
    AddRule(f, "counter", name, static_cast<uint64_t>(value.get<double>()), "",
            "summary.json");
  }
  return Status::Ok();
}

}  // namespace

bool Needs::Has(Source s) const {
  switch (s) {
    case Source::kIndex:
      return index;
    case Source::kWarcs:
      return warcs;
    case Source::kSeeds:
      return seeds;
    case Source::kLogs:
      return logs;
    case Source::kCounters:
      return counters;
  }
  return false;
}

void StatusClasses::Add(int status) {
  if (status >= 200 && status <= 299) {
    ++s2xx;
  } else if (status >= 300 && status <= 399) {
    ++s3xx;
  } else if (status >= 400 && status <= 499) {
    ++s4xx;
  } else if (status >= 500 && status <= 599) {
    ++s5xx;
  } else {
    ++other;
  }
}

std::string IsoFrom14(const std::string& ts) {
  if (ts.size() != 14) return ts;
  return ts.substr(0, 4) + "-" + ts.substr(4, 2) + "-" + ts.substr(6, 2) + "T" +
         ts.substr(8, 2) + ":" + ts.substr(10, 2) + ":" + ts.substr(12, 2) +
         "Z";
}

Status Scan(const Options& options, const Needs& needs, Figures* out) {
  std::error_code ec;
  if (!std::filesystem::is_directory(options.data_dir, ec)) {
    return Status::NotFound("data directory " + options.data_dir +
                            ": not a directory" +
                            (ec ? " (" + ec.message() + ")" : ""));
  }
  // Seeds first: the index and log passes match against them.
  if (needs.seeds) {
    if (Status s = LoadSeedList(options, out); !s.ok()) return s;
  }
  if (needs.index) {
    if (Status s = ScanIndex(options, out); !s.ok()) return s;
  }
  if (needs.warcs) {
    if (Status s = ScanWarcs(options, out); !s.ok()) return s;
  }
  if (needs.logs) {
    if (Status s = ScanLogs(options, out); !s.ok()) return s;
  }
  if (needs.counters) {
    if (Status s = ScanCounters(options, out); !s.ok()) return s;
  }
  if (needs.seeds) FindRedirects(options, out);
  const std::string why = " lines were left out (malformed, or over " +
                          std::to_string(options.max_line_bytes) + " bytes)";
  if (out->index_lines_skipped > 0) {
    out->Note(Source::kIndex,
              std::to_string(out->index_lines_skipped) + " index" + why);
  }
  if (out->log_lines_skipped > 0) {
    out->Note(Source::kLogs,
              std::to_string(out->log_lines_skipped) + " event log" + why);
  }
  return Status::Ok();
}

}  // namespace crawld::report::internal
