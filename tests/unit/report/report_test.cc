// Tests for the crawl reports (report/report.h, issue 18): a data directory
// is built here with store/'s writer (WARCs and their CDXJ index), a seed
// list, event log lines and a summary.json, and each report must say what
// the files hold.
#include "report/report.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/doc_buffer.h"
#include "base/json.h"
#include "store/store.h"

namespace crawld::report {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (fs::temp_directory_path() / "report_test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteText(const std::string& path, const std::string& text,
               bool append = false) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(
      path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  f << text;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// 2026-11-22T10:00:00Z plus `s` seconds, in epoch microseconds.
int64_t At(int s) { return (int64_t{1795341600} + s) * 1000000; }

// A crawl's data directory, written the way a worker writes it.
class DataDir {
 public:
  explicit DataDir(const TempDir& dir, int worker = 0) : root_(dir.path()) {
    store::Options o;
    o.dir = root_ + "/warc";
    o.index_dir = root_ + "/index";
    o.worker_id = worker;
    o.write_feed = false;
    o.fsync_on_rotate = false;
    o.fsync_on_flush = false;
    auto w = store::WarcWriter::Open(o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    writer_ = std::move(w).value();
  }

  // A response: `status`, `content_type` ("" = no Content-Type), `extra`
  // header lines (each ending in CRLF), the body.
  store::WrittenExchange Fetch(const std::string& url, int status,
                               const std::string& content_type, int at_s,
                               const std::string& body = "<p>hello</p>",
                               const std::string& extra = "") {
    store::FetchRecord r;
    r.target_uri = url;
    r.fetch_time_us = At(at_s);
    r.request_head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    r.response_head =
        "HTTP/1.1 " + std::to_string(status) + " X\r\n" +
        (content_type.empty() ? std::string()
                              : "Content-Type: " + content_type + "\r\n") +
        extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    DocBuffer b;
    EXPECT_TRUE(b.Append(body).ok());
    r.body = &b;
    auto w = writer_->WriteExchange(r);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? *w : store::WrittenExchange();
  }

  // An identical-payload revisit of `original` (fetched at original_s).
  void Revisit(const std::string& url, const std::string& original_url,
               const store::WrittenExchange& original, int original_s,
               int at_s) {
    store::FetchRecord r;
    r.target_uri = url;
    r.fetch_time_us = At(at_s);
    r.request_head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    r.response_head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        "Content-Length: 12\r\n\r\n";
    auto w = writer_->WriteRevisit(r, original.response.record_id, original_url,
                                   At(original_s), original.payload_digest);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
  }

  void Close() {
    EXPECT_TRUE(writer_->Close().ok());
    writer_.reset();
  }

  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::unique_ptr<store::WarcWriter> writer_;
};

// An event log line as daemon/event_log.h writes it.
std::string Event(const std::string& level, const std::string& event,
                  const std::map<std::string, std::string>& fields = {}) {
  Json j = Json::object();
  j["time"] = "2026-11-22T10:00:00.000000Z";
  j["level"] = level;
  j["event"] = event;
  for (const auto& [k, v] : fields) j[k] = v;
  return json::Dump(j) + "\n";
}

Table Get(const std::string& name, const Options& o) {
  auto t = Compute(name, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : Table();
}

size_t Col(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i] == name) return i;
  }
  ADD_FAILURE() << t.name << " has no column " << name;
  return 0;
}

// The row whose first cell is `key`; nullptr when there is none.
const std::vector<Value>* Row(const Table& t, const Value& key) {
  for (const auto& row : t.rows) {
    if (!row.empty() && row[0] == key) return &row;
  }
  return nullptr;
}

int64_t IntAt(const Table& t, const Value& key, const std::string& column) {
  const std::vector<Value>* row = Row(t, key);
  if (row == nullptr) {
    ADD_FAILURE() << t.name << ": no row for key";
    return -1;
  }
  const Value& v = (*row)[Col(t, column)];
  if (!std::holds_alternative<int64_t>(v)) {
    ADD_FAILURE() << t.name << "." << column << " is not a number";
    return -1;
  }
  return std::get<int64_t>(v);
}

std::string TextAt(const Table& t, const Value& key,
                   const std::string& column) {
  const std::vector<Value>* row = Row(t, key);
  if (row == nullptr) return "<no row>";
  const Value& v = (*row)[Col(t, column)];
  return std::holds_alternative<std::string>(v) ? std::get<std::string>(v)
                                                : "<not text>";
}

Value S(const char* s) { return Value(std::string(s)); }

// The small crawl most tests read: two hosts, every status class, three
// MIME types, a revisit and a robots.txt.
struct SmallCrawl {
  explicit SmallCrawl(const TempDir& dir) : data(dir) {
    data.Fetch("http://a.test/robots.txt", 200, "text/plain", 0,
               "User-agent: *\n");
    original = data.Fetch("http://a.test/", 200, "text/html", 1);
    data.Fetch("http://a.test/2", 200, "text/html; charset=utf-8", 2);
    data.Fetch("http://a.test/old", 301, "", 3, "", "Location: /new\r\n");
    data.Fetch("http://a.test/gone", 404, "text/html", 4, "nope");
    data.Fetch("http://b.test:8080/img.png", 200, "image/png", 5,
               std::string(100, 'x'));
    data.Fetch("http://b.test:8080/err", 503, "text/html", 6, "busy");
    data.Revisit("http://b.test:8080/copy", "http://a.test/", original, 1, 7);
    data.Close();
    o.data_dir = dir.path();
  }
  DataDir data;
  store::WrittenExchange original;
  Options o;
};

TEST(Reports, HostsReportCountsEachHostsCapturesByStatusClass) {
  TempDir dir;
  SmallCrawl crawl(dir);
  Table t = Get("hosts", crawl.o);
  ASSERT_EQ(t.rows.size(), 2u);
  // The busiest host first.
  EXPECT_EQ(t.rows[0][0], S("a.test"));
  EXPECT_EQ(IntAt(t, S("a.test"), "captures"), 5);
  EXPECT_EQ(IntAt(t, S("a.test"), "2xx"), 3);
  EXPECT_EQ(IntAt(t, S("a.test"), "3xx"), 1);
  EXPECT_EQ(IntAt(t, S("a.test"), "4xx"), 1);
  EXPECT_EQ(IntAt(t, S("a.test"), "5xx"), 0);
  EXPECT_EQ(IntAt(t, S("a.test"), "revisits"), 0);
  EXPECT_EQ(TextAt(t, S("a.test"), "first"), "2026-11-22T10:00:00Z");
  EXPECT_EQ(TextAt(t, S("a.test"), "last"), "2026-11-22T10:00:04Z");
  // The host without its port, as operators name hosts.
  EXPECT_EQ(IntAt(t, S("b.test"), "captures"), 3);
  EXPECT_EQ(IntAt(t, S("b.test"), "2xx"), 2);  // the png and the revisit
  EXPECT_EQ(IntAt(t, S("b.test"), "5xx"), 1);
  EXPECT_EQ(IntAt(t, S("b.test"), "revisits"), 1);
  EXPECT_EQ(TextAt(t, S("b.test"), "last"), "2026-11-22T10:00:07Z");
}

TEST(Reports, HostBytesAreTheRecordsBytesInTheWarcs) {
  TempDir dir;
  SmallCrawl crawl(dir);
  // Every record's gzip member, as the index gives offset and length: the
  // sum over both hosts is the summary's record_bytes.
  uint64_t sum = 0;
  for (const auto& e : fs::directory_iterator(dir.path() + "/index")) {
    std::ifstream f(e.path());
    for (std::string line; std::getline(f, line);) {
      auto c = store::ParseCdxjLine(line);
      ASSERT_TRUE(c.ok());
      sum += c->length;
    }
  }
  Table hosts = Get("hosts", crawl.o);
  EXPECT_EQ(
      IntAt(hosts, S("a.test"), "bytes") + IntAt(hosts, S("b.test"), "bytes"),
      static_cast<int64_t>(sum));
  Table summary = Get("summary", crawl.o);
  EXPECT_EQ(IntAt(summary, S("record_bytes"), "value"),
            static_cast<int64_t>(sum));
}

TEST(Reports, StatusReportCountsEveryStatusCode) {
  TempDir dir;
  SmallCrawl crawl(dir);
  Table t = Get("status", crawl.o);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"status", "captures"}));
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(IntAt(t, Value(int64_t{200}), "captures"), 5);
  EXPECT_EQ(IntAt(t, Value(int64_t{301}), "captures"), 1);
  EXPECT_EQ(IntAt(t, Value(int64_t{404}), "captures"), 1);
  EXPECT_EQ(IntAt(t, Value(int64_t{503}), "captures"), 1);
  EXPECT_EQ(t.rows[0][0], Value(int64_t{200}));  // ascending
}

TEST(Reports, MimeReportCountsTypesWithoutParameters) {
  TempDir dir;
  SmallCrawl crawl(dir);
  Table t = Get("mime", crawl.o);
  // text/html; charset=utf-8 is text/html; no Content-Type is "unk"; a
  // revisit is warc/revisit, as the CDXJ index (and pywb) has it.
  EXPECT_EQ(IntAt(t, S("text/html"), "captures"), 4);
  EXPECT_EQ(IntAt(t, S("text/plain"), "captures"), 1);
  EXPECT_EQ(IntAt(t, S("image/png"), "captures"), 1);
  EXPECT_EQ(IntAt(t, S("unk"), "captures"), 1);
  EXPECT_EQ(IntAt(t, S("warc/revisit"), "captures"), 1);
  EXPECT_EQ(t.rows.size(), 5u);
  EXPECT_GT(IntAt(t, S("image/png"), "bytes"), 100);
}

TEST(Reports, SummaryAddsUpTheCrawl) {
  TempDir dir;
  SmallCrawl crawl(dir);
  Table t = Get("summary", crawl.o);
  auto v = [&t](const char* metric) { return IntAt(t, S(metric), "value"); };
  EXPECT_EQ(v("captures"), 8);
  EXPECT_EQ(v("pages"), 7);  // robots.txt is not a page
  EXPECT_EQ(v("robots_txt"), 1);
  EXPECT_EQ(v("responses"), 7);
  EXPECT_EQ(v("revisits"), 1);
  EXPECT_EQ(v("status_2xx"), 5);
  EXPECT_EQ(v("status_3xx"), 1);
  EXPECT_EQ(v("status_4xx"), 1);
  EXPECT_EQ(v("status_5xx"), 1);
  EXPECT_EQ(v("hosts"), 2);
  EXPECT_EQ(v("mime_types"), 5);
  EXPECT_EQ(TextAt(t, S("first_capture"), "value"), "2026-11-22T10:00:00Z");
  EXPECT_EQ(TextAt(t, S("last_capture"), "value"), "2026-11-22T10:00:07Z");
  // The WARC files as they are on disk.
  int64_t files = 0, bytes = 0;
  for (const auto& e : fs::directory_iterator(dir.path() + "/warc")) {
    ++files;
    bytes += static_cast<int64_t>(fs::file_size(e.path()));
  }
  EXPECT_EQ(v("warc_files"), files);
  EXPECT_EQ(v("warc_bytes"), bytes);
  EXPECT_EQ(v("index_files"), files);
}

TEST(Reports, CapturesOfSeveralWorkersAndFilesAreAllCounted) {
  TempDir dir;
  {
    DataDir w0(dir, 0);
    w0.Fetch("http://a.test/", 200, "text/html", 1);
    w0.Close();
  }
  {
    DataDir w1(dir, 1);
    w1.Fetch("http://a.test/x", 200, "text/html", 2);
    w1.Fetch("http://c.test/", 500, "text/html", 3);
    w1.Close();
  }
  Options o;
  o.data_dir = dir.path() + "/";  // a trailing slash is the same directory
  Table hosts = Get("hosts", o);
  EXPECT_EQ(IntAt(hosts, S("a.test"), "captures"), 2);
  EXPECT_EQ(IntAt(hosts, S("c.test"), "5xx"), 1);
  Table summary = Get("summary", o);
  EXPECT_EQ(IntAt(summary, S("warc_files"), "value"), 2);
}

TEST(Reports, SeedsReportGivesEachSeedsOutcome) {
  TempDir dir;
  SmallCrawl crawl(dir);
  WriteText(dir.path() + "/run/seeds.txt",
            "http://a.test/\n"
            "http://a.test/old\n"
            "# a comment\n"
            "http://never.test/\n"
            "http://down.test/start\n");
  WriteText(dir.path() + "/logs/crawld.jsonl",
            Event("warn", "fetch_error",
                  {{"url", "http://never.test/"},
                   {"class", "dns"},
                   {"error", "NotFound: no address"}}) +
                Event("warn", "robots_unavailable",
                      {{"host", "http://down.test:80"},
                       {"status", "500"},
                       {"reason", "unreachable"}}));
  Table t = Get("seeds", crawl.o);
  ASSERT_EQ(t.rows.size(), 4u);
  // Fetched: its status and its host's captures.
  EXPECT_EQ(t.rows[0][Col(t, "fetched")], Value(true));
  EXPECT_EQ(IntAt(t, S("http://a.test/"), "status"), 200);
  EXPECT_EQ(IntAt(t, S("http://a.test/"), "host_captures"), 5);
  EXPECT_EQ(TextAt(t, S("http://a.test/"), "first_capture"),
            "2026-11-22T10:00:01Z");
  // Redirected: the target from the record's Location, resolved.
  EXPECT_EQ(IntAt(t, S("http://a.test/old"), "status"), 301);
  EXPECT_EQ(TextAt(t, S("http://a.test/old"), "redirect_to"),
            "http://a.test/new");
  // Not fetched: why, from the event log (its URL, or its host's robots).
  EXPECT_EQ(t.rows[2][Col(t, "fetched")], Value(false));
  EXPECT_EQ(t.rows[2][Col(t, "status")], Value());
  EXPECT_EQ(TextAt(t, S("http://never.test/"), "error"), "fetch_error:dns");
  EXPECT_EQ(IntAt(t, S("http://never.test/"), "host_captures"), 0);
  EXPECT_EQ(TextAt(t, S("http://down.test/start"), "error"),
            "robots_unavailable:unreachable");
  Table summary = Get("summary", crawl.o);
  EXPECT_EQ(IntAt(summary, S("seeds"), "value"), 4);
  EXPECT_EQ(IntAt(summary, S("seeds_fetched"), "value"), 2);
}

TEST(Reports, SeedsFileArgumentIsUsedWhenTheDataDirHasNone) {
  TempDir dir;
  SmallCrawl crawl(dir);
  // No run/seeds.txt: an empty report that says why.
  Table none = Get("seeds", crawl.o);
  EXPECT_TRUE(none.rows.empty());
  ASSERT_FALSE(none.notes.empty());
  EXPECT_NE(none.notes[0].find("--seeds"), std::string::npos);
  Table summary = Get("summary", crawl.o);
  EXPECT_EQ((*Row(summary, S("seeds")))[1], Value());

  TempDir other;
  WriteText(other.path() + "/seeds.txt", "http://b.test:8080/img.png\n");
  crawl.o.seeds_file = other.path() + "/seeds.txt";
  Table t = Get("seeds", crawl.o);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(IntAt(t, S("http://b.test:8080/img.png"), "status"), 200);

  crawl.o.seeds_file = other.path() + "/missing.txt";
  auto missing = Compute("seeds", crawl.o);
  EXPECT_EQ(missing.status().code(), Status::Code::kIOError);
}

TEST(Reports, ErrorsReportCountsWarnAndErrorEventsByClass) {
  TempDir dir;
  WriteText(dir.path() + "/logs/crawld-0.jsonl",
            Event("info", "crawl_start") +
                Event("warn", "fetch_error",
                      {{"url", "http://a.test/1"},
                       {"class", "timeout"},
                       {"error", "too slow"}}) +
                Event("warn", "fetch_error",
                      {{"url", "http://a.test/2"}, {"class", "timeout"}}) +
                Event("warn", "fetch_error",
                      {{"url", "http://b.test/"}, {"class", "connect"}}));
  WriteText(dir.path() + "/logs/supervisor.jsonl",
            Event("error", "worker_failed",
                  {{"worker", "1"}, {"reason", "store_error"}}) +
                Event("info", "crawl_end", {{"reason", "done"}}));
  Options o;
  o.data_dir = dir.path();
  Table t = Get("errors", o);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][0], S("fetch_error:timeout"));  // most frequent first
  EXPECT_EQ(IntAt(t, S("fetch_error:timeout"), "count"), 2);
  EXPECT_EQ(TextAt(t, S("fetch_error:timeout"), "example_url"),
            "http://a.test/1");
  EXPECT_EQ(TextAt(t, S("fetch_error:timeout"), "example_error"), "too slow");
  EXPECT_EQ(IntAt(t, S("fetch_error:connect"), "count"), 1);
  EXPECT_EQ(IntAt(t, S("worker_failed:store_error"), "count"), 1);
  Table summary = Get("summary", o);
  EXPECT_EQ(IntAt(summary, S("error_events"), "value"), 4);
}

TEST(Reports, RulesReportCountsOverridesAndDecisionCounters) {
  TempDir dir;
  WriteText(
      dir.path() + "/logs/crawld.jsonl",
      Event("info", "override_applied",
            {{"host", "http://a.test:80"}, {"override", "ov.conf:3 ignore"}}) +
          Event("info", "override_applied",
                {{"host", "http://b.test:80"},
                 {"override", "ov.conf:3 ignore"}}) +
          Event("debug", "filter_rejected",
                {{"url", "http://a.test/x"},
                 {"rule", "-prefix http://a.test/x"},
                 {"line", "7"}}));
  WriteText(dir.path() + "/summary.json",
            R"({"stop_reason":"done","pages":3,"counts":{"filter_rejected":)"
            R"(12,"robots_disallowed":4,"trap_calendar":2,"http_4xx":9}})"
            "\n");
  Options o;
  o.data_dir = dir.path();
  Table t = Get("rules", o);
  auto hits = [&t](const std::string& kind, const std::string& rule) {
    for (const auto& row : t.rows) {
      if (row[0] == Value(kind) && row[1] == Value(rule)) {
        return std::get<int64_t>(row[2]);
      }
    }
    return int64_t{-1};
  };
  EXPECT_EQ(hits("override", "ov.conf:3 ignore"), 2);
  EXPECT_EQ(hits("filter", "-prefix http://a.test/x (line 7)"), 1);
  EXPECT_EQ(hits("counter", "filter_rejected"), 12);
  EXPECT_EQ(hits("counter", "robots_disallowed"), 4);
  EXPECT_EQ(hits("counter", "trap_calendar"), 2);
  // Not a rule decision.
  EXPECT_EQ(hits("counter", "http_4xx"), -1);
  EXPECT_EQ(t.rows.size(), 5u);
}

TEST(Reports, TornAndMalformedLinesAreLeftOutAndCounted) {
  TempDir dir;
  SmallCrawl crawl(dir);
  std::string index;
  for (const auto& e : fs::directory_iterator(dir.path() + "/index")) {
    index = e.path().string();
  }
  // A junk line, a line over the cap, and a torn last line (a writer in
  // the middle of an append): none is a capture.
  WriteText(index,
            "not a cdxj line\n" + std::string(5000, 'x') + "\n" +
                "com,a)/torn 20261122100009 {\"url\": \"http://a.test/torn\"",
            /*append=*/true);
  WriteText(dir.path() + "/logs/crawld.jsonl",
            "{broken\n" + Event("warn", "fetch_error", {{"class", "tls"}}) +
                R"({"time":"x","level":"warn","event":"fetch_e)");
  crawl.o.max_line_bytes = 4096;
  Table summary = Get("summary", crawl.o);
  EXPECT_EQ(IntAt(summary, S("captures"), "value"), 8);
  EXPECT_EQ(IntAt(summary, S("lines_skipped"), "value"), 3);
  EXPECT_EQ(IntAt(summary, S("error_events"), "value"), 1);
  bool noted = false;
  for (const std::string& n : summary.notes) {
    noted |= n.find("2 index lines were left out") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(Reports, EmptyDataDirectoryGivesEmptyReports) {
  TempDir dir;
  Options o;
  o.data_dir = dir.path();
  auto all = ComputeAll(o);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), Reports().size());
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].name, Reports()[i].name);
  }
  EXPECT_TRUE((*all)[1].rows.empty());  // hosts
  EXPECT_EQ(IntAt((*all)[0], S("captures"), "value"), 0);
  EXPECT_EQ((*(Row((*all)[0], S("first_capture"))))[1], Value());
}

TEST(Reports, UnknownReportAndMissingDataDirAreClearErrors) {
  TempDir dir;
  Options o;
  o.data_dir = dir.path();
  auto bad = Compute("nosuch", o);
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
  EXPECT_NE(bad.status().message().find("summary, hosts, mime, status, "
                                        "seeds, errors, rules"),
            std::string::npos)
      << bad.status().message();
  o.data_dir = dir.path() + "/missing";
  auto missing = Compute("hosts", o);
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find(o.data_dir), std::string::npos);
}

TEST(Reports, CancelledComputationStops) {
  TempDir dir;
  SmallCrawl crawl(dir);
  std::atomic<bool> cancel{true};
  crawl.o.cancel = &cancel;
  auto t = Compute("hosts", crawl.o);
  EXPECT_EQ(t.status().code(), Status::Code::kUnavailable);
}

TEST(Rfc4180, FieldsWithCommasQuotesAndLineBreaksAreQuoted) {
  Table t;
  t.name = "x";
  t.columns = {"a", "b,c"};
  t.rows.push_back({Value(std::string("plain")), Value(int64_t{-5})});
  t.rows.push_back(
      {Value(std::string("say \"hi\", twice")), Value(std::string("l1\nl2"))});
  t.rows.push_back({Value(true), Value()});
  EXPECT_EQ(ToCsv(t),
            "a,\"b,c\"\r\n"
            "plain,-5\r\n"
            "\"say \"\"hi\"\", twice\",\"l1\nl2\"\r\n"
            "true,\r\n");
}

TEST(Rfc4180, CrawledTextCannotBecomeASpreadsheetFormula) {
  Table t;
  t.name = "mime";
  t.columns = {"mime"};
  t.rows.push_back({Value(std::string("=HYPERLINK(\"http://x\")"))});
  t.rows.push_back({Value(std::string("@SUM(1)"))});
  EXPECT_EQ(ToCsv(t),
            "mime\r\n"
            "\"'=HYPERLINK(\"\"http://x\"\")\"\r\n"
            "'@SUM(1)\r\n");
}

TEST(Reports, JsonRowsAreObjectsKeyedByColumn) {
  Table t;
  t.name = "status";
  t.columns = {"status", "captures", "ok", "note"};
  t.rows.push_back(
      {Value(int64_t{200}), Value(int64_t{3}), Value(true), Value()});
  t.notes = {"n1"};
  auto j = json::Parse(ToJson(t));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(json::Dump(*j),
            R"({"report":"status","columns":["status","captures","ok","note"],)"
            R"("rows":[{"status":200,"captures":3,"ok":true,"note":null}],)"
            R"("notes":["n1"]})");
}

TEST(Reports, WriteReportsLeavesEveryReportAsJsonAndCsv) {
  TempDir dir;
  SmallCrawl crawl(dir);
  const std::string out = dir.path() + "/reports";
  ASSERT_TRUE(WriteReports(crawl.o, out).ok());
  for (const ReportInfo& r : Reports()) {
    const std::string base = out + "/" + std::string(r.name);
    auto j = json::Parse(ReadAll(base + ".json"));
    ASSERT_TRUE(j.ok()) << base;
    EXPECT_EQ((*j)["report"], std::string(r.name));
    auto direct = Compute(r.name, crawl.o);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(ReadAll(base + ".csv"), ToCsv(*direct)) << r.name;
  }
  // Nothing half-written is left behind.
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos);
  }
}

}  // namespace
}  // namespace crawld::report
