// crawlctl's online commands: the admin HTTP API's client (docs/API.md,
// docs/CRAWLCTL.md).
//
//   crawlctl status | metrics | pause | resume | stop
//   crawlctl seeds add FILE
//   crawlctl rules reload | rules test URL [--depth N] [--seed-host H]
//   crawlctl host NAME
//   crawlctl docs tail [--since C] [--limit N] [--follow] [--max-seconds S]
//                      [--cursor-file F] [--once]
//   crawlctl feed --node URL|DIR... [the same options as docs tail]
//
// libcurl easy, one blocking request at a time: an operator's command is
// one request, and `docs tail --follow` is a plain poll loop. The handle is
// kept for the whole command so a follow loop reuses one connection.
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.h"
#include "base/fd_io.h"
#include "base/json.h"
#include "base/status.h"
#include "cli/commands.h"
#include "store/store.h"

namespace crawld::cli {
namespace {

// Exit codes of every online command (docs/CRAWLCTL.md).
constexpr int kExitOk = 0;
constexpr int kExitServer = 1;  // the server answered an error
constexpr int kExitUsage = 2;   // usage error, or local I/O error
constexpr int kExitUnreachable = 3;

// Seed batches stay well under the server's default 1 MiB body limit
// (http::ServerOptions::request.max_body_bytes) whatever the URL lengths.
constexpr size_t kSeedBatchUrls = 1000;
constexpr size_t kSeedBatchBytes = 512 * 1024;
constexpr size_t kMaxSeedLineBytes = 64 * 1024;
// A reply larger than this is not something the API sends; stop reading
// rather than grow without bound.
constexpr size_t kMaxReplyBytes = 64u << 20;

constexpr char kCommonHelp[] =
    "common options:\n"
    "  --api URL        the admin API's base URL, e.g. http://127.0.0.1:40123\n"
    "  --data DIR       read the base URL from DIR/run/admin.url (written by\n"
    "                   crawld at start)\n"
    "  --token T        bearer token (default: $CRAWLD_TOKEN)\n"
    "  --timeout-ms N   give up on a request after N ms (default 10000)\n"
    "  --json           print the server's JSON instead of text\n"
    "\n"
    "exit codes: 0 ok, 1 the server answered an error, 2 usage or local\n"
    "I/O error, 3 cannot reach the server (refused, timeout, no admin.url)\n";

bool IsHelp(std::string_view arg) { return arg == "--help" || arg == "-h"; }

struct Common {
  std::string api;
  std::string data;
  std::string token;
  bool token_set = false;
  long timeout_ms = 10000;
  bool json = false;
};

bool ParseLong(std::string_view s, long lo, long hi, long* out) {
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

// One parsed command line: the common options, the command's own flags
// (name -> value, "" for switches) and the positional arguments.
struct Args {
  Common common;
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> positional;
  bool help = false;

  const std::string* Flag(std::string_view name) const {
    for (const auto& [k, v] : flags) {
      if (k == name) return &v;
    }
    return nullptr;
  }
};

// A command's flag: does it take a value?
struct FlagSpec {
  const char* name;
  bool has_value;
};

// Parses argv[first..argc). Returns an empty string or the usage error.
std::string ParseArgs(int argc, char** argv, int first,
                      const std::vector<FlagSpec>& specs, Args* out) {
  for (int i = first; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string* v) -> bool {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    if (IsHelp(arg)) {
      out->help = true;
      continue;
    }
    if (arg == "--json") {
      out->common.json = true;
      continue;
    }
    if (arg == "--api" || arg == "--data" || arg == "--token" ||
        arg == "--timeout-ms") {
      std::string v;
      if (!value(&v)) return std::string(arg) + " needs a value";
      if (arg == "--api") {
        out->common.api = v;
      } else if (arg == "--data") {
        out->common.data = v;
      } else if (arg == "--token") {
        out->common.token = v;
        out->common.token_set = true;
      } else if (!ParseLong(v, 1, 3600 * 1000, &out->common.timeout_ms)) {
        return "--timeout-ms wants an integer from 1 to 3600000, not '" + v +
               "'";
      }
      continue;
    }
    bool known = false;
    for (const FlagSpec& s : specs) {
      if (arg != s.name) continue;
      known = true;
      std::string v;
      if (s.has_value && !value(&v)) {
        return std::string(arg) + " needs a value";
      }
      out->flags.emplace_back(s.name, std::move(v));
    }
    if (known) continue;
    // "-" alone is a positional (stdin), anything else with a dash is not.
    if (arg.size() > 1 && arg[0] == '-') {
      return "unknown option " + std::string(arg);
    }
    out->positional.emplace_back(arg);
  }
  return {};
}

std::string Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

// RFC 3986 unreserved characters stay, every other byte is %XX: safe both
// as one path segment and as a query value.
std::string PercentEncode(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (ascii::IsAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += ascii::HexDigitUpper(b >> 4);
      out += ascii::HexDigitUpper(b);
    }
  }
  return out;
}

struct Reply {
  long status = 0;
  std::string body;
};

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t bytes = size * n;
  if (body->size() + bytes > kMaxReplyBytes) return 0;  // aborts the transfer
  body->append(data, bytes);
  return bytes;
}

// The connection to one crawld admin API.
class Client {
 public:
  // Finds the base URL (--api, or --data's run/admin.url) and sets up curl.
  // On failure prints why and returns the exit code in *exit_code.
  static std::unique_ptr<Client> Open(const char* cmd, const Common& common,
                                      int* exit_code) {
    std::string base;
    std::string url_file;
    if (!common.api.empty() && !common.data.empty()) {
      std::fprintf(stderr, "crawlctl %s: give --api or --data, not both\n",
                   cmd);
      *exit_code = kExitUsage;
      return nullptr;
    }
    if (!common.api.empty()) {
      base = common.api;
    } else if (!common.data.empty()) {
      const std::string path = common.data + "/run/admin.url";
      std::ifstream in(path);
      std::string line;
      if (!in || !std::getline(in, line) || Trim(line).empty()) {
        std::fprintf(stderr,
                     "crawlctl %s: cannot read %s (is crawld running with "
                     "this data directory?)\n",
                     cmd, path.c_str());
        *exit_code = kExitUnreachable;
        return nullptr;
      }
      base = Trim(line);
      url_file = path;
    } else {
      std::fprintf(stderr,
                   "crawlctl %s: give --api URL or --data DIR (see --help)\n",
                   cmd);
      *exit_code = kExitUsage;
      return nullptr;
    }
    while (!base.empty() && base.back() == '/') base.pop_back();
    if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
      std::fprintf(stderr,
                   "crawlctl %s: API URL must start with http:// or "
                   "https://, not '%s'\n",
                   cmd, base.c_str());
      *exit_code = kExitUsage;
      return nullptr;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      std::fprintf(stderr, "crawlctl %s: libcurl initialisation failed\n", cmd);
      *exit_code = kExitUsage;
      return nullptr;
    }
    std::unique_ptr<Client> client(new Client(cmd, std::move(base)));
    client->curl_.reset(curl_easy_init());
    std::string token = common.token;
    if (!common.token_set) {
      const char* env = std::getenv("CRAWLD_TOKEN");
      if (env != nullptr) token = env;
    }
    for (const char ch : token) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
        std::fprintf(stderr, "crawlctl %s: the token has a control character\n",
                     cmd);
        *exit_code = kExitUsage;
        return nullptr;
      }
    }
    bool ok = client->curl_ != nullptr;
    if (ok && !token.empty()) {
      const std::string header = "Authorization: Bearer " + token;
      client->headers_.reset(curl_slist_append(nullptr, header.c_str()));
      ok = client->headers_ != nullptr;
    }
    if (ok) {
      curl_slist* h = curl_slist_append(client->headers_.get(),
                                        "Content-Type: application/json");
      if (h == nullptr) {
        ok = false;
      } else {
        (void)client->headers_.release();
        client->headers_.reset(h);
      }
    }
    if (!ok) {
      std::fprintf(stderr, "crawlctl %s: libcurl initialisation failed\n", cmd);
      *exit_code = kExitUsage;
      return nullptr;
    }
    client->timeout_ms_ = common.timeout_ms;
    client->url_file_ = std::move(url_file);
    client->json_ = common.json;
    return client;
  }

  const std::string& base() const { return base_; }

  // Prints why the server cannot be reached; returns kExitUnreachable.
  int Unreachable(const Status& why) const {
    std::fprintf(stderr, "crawlctl %s: cannot reach %s: %s\n", cmd_,
                 base_.c_str(), why.message().c_str());
    if (!url_file_.empty()) {
      // crawld leaves the file behind when it exits.
      std::fprintf(stderr,
                   "crawlctl %s: (%s may be stale: is crawld still "
                   "running?)\n",
                   cmd_, url_file_.c_str());
    }
    return kExitUnreachable;
  }
  bool json() const { return json_; }

  // Sends one request. Transport failures are a Status; any HTTP answer,
  // errors included, is a Reply.
  Result<Reply> Call(const char* method, const std::string& path,
                     const std::string* body) {
    CURL* c = curl_.get();
    curl_easy_reset(c);
    const std::string url = base_ + path;
    char errbuf[CURL_ERROR_SIZE] = "";
    Reply reply;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    // The API is local; an http_proxy in the environment must not divert
    // (and see) admin calls and tokens.
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms_);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "crawlctl/0.1");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers_.get());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body != nullptr) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(body->size()));
    } else if (std::strcmp(method, "POST") == 0) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{0});
    }
    const CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      const std::string why =
          errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT) return Status::Timeout(why);
      return Status::Unavailable(why);
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
    return reply;
  }

  // Call() and check the answer: 2xx with a JSON body. Otherwise prints the
  // error (the server's "error" member when there is one) and returns the
  // exit code. With --json the server's body is printed in both cases.
  int CallJson(const char* method, const std::string& path,
               const std::string* body, Json* out) {
    Result<Reply> reply = Call(method, path, body);
    if (!reply.ok()) return Unreachable(reply.status());
    json::Limits limits;
    limits.max_bytes = kMaxReplyBytes;  // a full docs page can pass 1 MiB
    Result<Json> parsed = json::Parse(reply->body, limits);
    if (reply->status < 200 || reply->status > 299) {
      std::string why = Trim(reply->body);
      if (parsed.ok()) {
        const Json* e = json::Find(*parsed, "error");
        if (e != nullptr && e->is_string()) why = e->get<std::string>();
      }
      if (why.size() > 2000) why.resize(2000);
      if (json_ && !reply->body.empty()) PrintRaw(reply->body);
      std::fprintf(stderr, "crawlctl %s: server answered %ld: %s\n", cmd_,
                   reply->status, why.c_str());
      return kExitServer;
    }
    if (!parsed.ok()) {
      std::fprintf(stderr, "crawlctl %s: server sent invalid JSON: %s\n", cmd_,
                   parsed.status().message().c_str());
      return kExitServer;
    }
    if (json_) PrintRaw(reply->body);
    *out = std::move(parsed).value();
    return kExitOk;
  }

  static void PrintRaw(const std::string& body) {
    std::fwrite(body.data(), 1, body.size(), stdout);
    if (body.empty() || body.back() != '\n') std::fputc('\n', stdout);
  }

 private:
  Client(const char* cmd, std::string base)
      : cmd_(cmd), base_(std::move(base)) {}

  const char* cmd_;
  std::string base_;
  std::unique_ptr<CURL, CurlDeleter> curl_;
  std::unique_ptr<curl_slist, SlistDeleter> headers_;
  long timeout_ms_ = 10000;
  bool json_ = false;
  std::string url_file_;  // where base_ came from, if from --data
};

// ---------------------------------------------------------------------------
// Text output helpers. A missing or mistyped member prints as "?" so a
// newer or older server never crashes the client.

const Json* At(const Json& j, std::initializer_list<std::string_view> path) {
  const Json* v = &j;
  for (std::string_view k : path) {
    v = json::Find(*v, k);
    if (v == nullptr) return nullptr;
  }
  return v;
}

// The string at v, or nullptr when v is absent or not a string.
const std::string* Str(const Json* v) {
  return v != nullptr && v->is_string() ? &v->get_ref<const std::string&>()
                                        : nullptr;
}

std::string Text(const Json* v) {
  if (v == nullptr) return "?";
  if (v->is_null()) return "null";
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "no";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number()) {
    const double d = v->get<double>();
    char buf[64];
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.0f", d);
    } else {
      std::snprintf(buf, sizeof buf, "%.2f", d);
    }
    return buf;
  }
  return json::Dump(*v);
}

std::string Text(const Json& j, std::initializer_list<std::string_view> path) {
  return Text(At(j, path));
}

// One field of a `docs tail` line: control characters would break the
// one-line-per-record, TAB-separated format, so they become '?'.
std::string Field(const Json& entry, std::string_view key) {
  std::string s = Text(json::Find(entry, key));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

void Line(std::string_view key, const std::string& value) {
  std::printf("%-19.*s %s\n", static_cast<int>(key.size()), key.data(),
              value.c_str());
}

std::string OrNone(const std::string& s) { return s.empty() ? "(none)" : s; }

// Prints help or a usage error for a command; returns the exit code.
int UsageError(const char* cmd, const std::string& why, const char* help) {
  std::fprintf(stderr, "crawlctl %s: %s\n\n%s\n%s", cmd, why.c_str(), help,
               kCommonHelp);
  return kExitUsage;
}

int Help(const char* help) {
  std::printf("%s\n%s", help, kCommonHelp);
  return kExitOk;
}

// ---------------------------------------------------------------------------
// Commands

constexpr char kStatusHelp[] =
    "usage: crawlctl status [common options]\n"
    "\n"
    "Shows the crawl's state, page and byte counts, queue sizes, hosts,\n"
    "event counts and per-worker figures (GET /api/status).\n";

int RunStatus(Client& client) {
  Json j;
  if (int rc = client.CallJson("GET", "/api/status", nullptr, &j)) return rc;
  if (client.json()) return kExitOk;
  Line("state:", Text(j, {"state"}));
  Line("pages:",
       Text(j, {"pages"}) + " (" + Text(j, {"pages_per_s"}) + " pages/s)");
  Line("bytes:", Text(j, {"bytes"}));
  Line("queued:", Text(j, {"queued"}));
  Line("in flight:", Text(j, {"in_flight"}));
  Line("hosts:", Text(j, {"hosts", "known"}) + " known, " +
                     Text(j, {"hosts", "active"}) + " active, " +
                     Text(j, {"hosts", "retired"}) + " retired");
  Line("robots fetches:", Text(j, {"robots_fetches"}));
  Line("uptime:", Text(j, {"uptime_s"}) + " s");
  const Json* counts = json::Find(j, "counts");
  if (counts != nullptr && counts->is_object() && !counts->empty()) {
    std::string s;
    for (const auto& [k, v] : counts->items()) {
      if (!s.empty()) s += ' ';
      s += k + "=" + Text(&v);
    }
    Line("counts:", s);
  }
  const Json* workers = json::Find(j, "workers");
  if (workers != nullptr && workers->is_array()) {
    for (const Json& w : *workers) {
      Line("worker " + Text(w, {"id"}) + ":",
           Text(w, {"pages"}) + " pages, " + Text(w, {"queued"}) + " queued");
    }
  }
  return kExitOk;
}

constexpr char kMetricsHelp[] =
    "usage: crawlctl metrics [common options]\n"
    "\n"
    "Prints the Prometheus metrics (GET /metrics) as the server sends them.\n";

int RunMetrics(Client& client) {
  Result<Reply> reply = client.Call("GET", "/metrics", nullptr);
  if (!reply.ok()) return client.Unreachable(reply.status());
  if (reply->status < 200 || reply->status > 299) {
    std::string why = Trim(reply->body);
    Result<Json> parsed = json::Parse(reply->body);
    if (parsed.ok() && json::Find(*parsed, "error") != nullptr) {
      why = Text(json::Find(*parsed, "error"));
    }
    std::fprintf(stderr, "crawlctl metrics: server answered %ld: %s\n",
                 reply->status, why.c_str());
    return kExitServer;
  }
  std::fwrite(reply->body.data(), 1, reply->body.size(), stdout);
  return kExitOk;
}

constexpr char kPauseHelp[] =
    "usage: crawlctl pause [common options]\n"
    "\n"
    "Stops scheduling new fetches; fetches in flight finish (POST\n"
    "/api/pause). Prints the new state.\n";
constexpr char kResumeHelp[] =
    "usage: crawlctl resume [common options]\n"
    "\n"
    "Resumes scheduling after a pause (POST /api/resume). Prints the new\n"
    "state.\n";
constexpr char kStopHelp[] =
    "usage: crawlctl stop [common options]\n"
    "\n"
    "Asks crawld to checkpoint and stop (POST /api/stop). Returns once the\n"
    "request is accepted; crawld exits when its workers are done.\n";

int RunStateChange(Client& client, const char* verb) {
  Json j;
  const std::string path = std::string("/api/") + verb;
  if (int rc = client.CallJson("POST", path, nullptr, &j)) return rc;
  if (!client.json()) Line("state:", Text(j, {"state"}));
  return kExitOk;
}

constexpr char kSeedsHelp[] =
    "usage: crawlctl seeds add FILE [common options]\n"
    "\n"
    "Adds the URLs in FILE ('-' = stdin), one per line, to the running\n"
    "crawl (POST /api/seeds). Blank lines and lines starting with '#' are\n"
    "skipped. URLs are sent in batches of at most 1000 (and 512 KiB).\n"
    "Prints the number added, already known and rejected, and each\n"
    "rejected URL with the server's reason (on stderr). With --json, each\n"
    "batch's reply is printed on its own line.\n"
    "\n"
    "Exit code 1 also when the server rejected some URLs (the others are\n"
    "added). When a batch fails, the lines before it have been sent and\n"
    "the message says which line the failed batch started at.\n";

struct SeedLine {
  std::string url;
  size_t line;
};

int SendSeedBatch(Client& client, const std::vector<SeedLine>& batch,
                  long totals[3], std::vector<std::string>* rejected) {
  Json urls = Json::array();
  for (const SeedLine& s : batch) urls.push_back(s.url);
  Json body = Json::object();
  body["urls"] = std::move(urls);
  const std::string text = json::Dump(body);
  Json j;
  if (int rc = client.CallJson("POST", "/api/seeds", &text, &j)) {
    std::fprintf(stderr,
                 "crawlctl seeds: the batch starting at line %zu was not "
                 "added (%ld URLs added before it)\n",
                 batch.front().line, totals[0]);
    return rc;
  }
  const Json* added = json::Find(j, "added");
  const Json* known = json::Find(j, "known");
  if (added != nullptr && added->is_number()) {
    totals[0] += static_cast<long>(added->get<double>());
  }
  if (known != nullptr && known->is_number()) {
    totals[1] += static_cast<long>(known->get<double>());
  }
  const Json* rej = json::Find(j, "rejected");
  if (rej != nullptr && rej->is_array()) {
    for (const Json& r : *rej) {
      ++totals[2];
      rejected->push_back(Text(r, {"url"}) + ": " + Text(r, {"error"}));
    }
  }
  return kExitOk;
}

int RunSeeds(Client& client, const Args& args) {
  const std::string& file = args.positional[1];
  std::ifstream fin;
  std::istream* in = &std::cin;
  if (file != "-") {
    fin.open(file);
    if (!fin) {
      std::fprintf(stderr, "crawlctl seeds: cannot open %s: %s\n", file.c_str(),
                   std::strerror(errno));
      return kExitUsage;
    }
    in = &fin;
  }
  long totals[3] = {0, 0, 0};  // added, known, rejected
  std::vector<std::string> rejected;
  std::vector<SeedLine> batch;
  size_t batch_bytes = 0;
  std::string line;
  size_t lineno = 0;
  while (std::getline(*in, line)) {
    ++lineno;
    std::string url = Trim(line);
    if (url.empty() || url[0] == '#') continue;
    if (url.size() > kMaxSeedLineBytes) {
      ++totals[2];
      rejected.push_back(file + ":" + std::to_string(lineno) +
                         ": line longer than 64 KiB, not sent");
      continue;
    }
    // Its size in the request body, escapes included.
    const size_t bytes = json::Dump(Json(url)).size() + 1;
    if (!batch.empty() && (batch.size() >= kSeedBatchUrls ||
                           batch_bytes + bytes > kSeedBatchBytes)) {
      if (int rc = SendSeedBatch(client, batch, totals, &rejected)) return rc;
      batch.clear();
      batch_bytes = 0;
    }
    batch_bytes += bytes;
    batch.push_back({std::move(url), lineno});
  }
  if (in->bad()) {
    std::fprintf(stderr, "crawlctl seeds: error reading %s\n", file.c_str());
    return kExitUsage;
  }
  if (!batch.empty()) {
    if (int rc = SendSeedBatch(client, batch, totals, &rejected)) return rc;
  }
  for (const std::string& r : rejected) {
    std::fprintf(stderr, "rejected: %s\n", r.c_str());
  }
  if (!client.json()) {
    std::printf("added %ld, already known %ld, rejected %ld\n", totals[0],
                totals[1], totals[2]);
  }
  return totals[2] > 0 ? kExitServer : kExitOk;
}

constexpr char kRulesHelp[] =
    "usage: crawlctl rules reload [common options]\n"
    "       crawlctl rules test URL [--depth N] [--seed-host H] [common "
    "options]\n"
    "\n"
    "reload: re-reads the URL filter rules and robots overrides, as SIGHUP\n"
    "  does (POST /api/rules/reload). On a bad file the server keeps the\n"
    "  old rules and the error names FILE:LINE (exit 1).\n"
    "test: shows what crawld would decide for URL without applying\n"
    "  anything (POST /api/rules/test): the canonical URL, the deciding\n"
    "  filter rule, trap heuristics, the host's robots override and the\n"
    "  robots.txt verdict.\n"
    "  --depth N        links followed from the seed (default 0)\n"
    "  --seed-host H    host of the seed, for 'scope' rules (default none)\n";

int RunRulesReload(Client& client) {
  Json j;
  if (int rc = client.CallJson("POST", "/api/rules/reload", nullptr, &j)) {
    return rc;
  }
  if (!client.json()) {
    std::printf("reloaded: %s filter rules, %s overrides\n",
                Text(j, {"filter_rules"}).c_str(),
                Text(j, {"overrides"}).c_str());
  }
  return kExitOk;
}

int RunRulesTest(Client& client, const Args& args) {
  long depth = 0;
  if (const std::string* d = args.Flag("--depth")) {
    if (!ParseLong(*d, 0, 1000000, &depth)) {
      return UsageError("rules",
                        "--depth wants an integer >= 0, not '" + *d + "'",
                        kRulesHelp);
    }
  }
  const std::string* seed_host = args.Flag("--seed-host");
  Json body = Json::object();
  body["url"] = args.positional[1];
  body["depth"] = static_cast<int64_t>(depth);
  body["seed_host"] = seed_host != nullptr ? *seed_host : std::string();
  const std::string text = json::Dump(body);
  Json j;
  if (int rc = client.CallJson("POST", "/api/rules/test", &text, &j)) {
    return rc;
  }
  if (client.json()) return kExitOk;
  Line("url:", Text(j, {"url"}));
  const Json* accept = At(j, {"filter", "accept"});
  std::string filter = accept != nullptr && accept->is_boolean()
                           ? (accept->get<bool>() ? "accept" : "reject")
                           : "?";
  const std::string rule = Text(j, {"filter", "rule"});
  const std::string* file = Str(At(j, {"filter", "file"}));
  if (file != nullptr && !file->empty()) {
    filter += " by " + *file + ":" + Text(j, {"filter", "line"});
  }
  if (!rule.empty() && rule != "?") filter += " (" + rule + ")";
  Line("filter:", filter);
  const Json* traps = json::Find(j, "traps");
  Line("traps:", Str(traps) != nullptr ? OrNone(*Str(traps)) : Text(traps));
  const Json* ov = json::Find(j, "override");
  Line("override:", Str(ov) != nullptr ? OrNone(*Str(ov)) : Text(ov));
  const Json* allowed = At(j, {"robots", "allowed"});
  std::string robots = Text(j, {"robots", "state"});
  if (allowed != nullptr && allowed->is_boolean()) {
    robots += allowed->get<bool>() ? ", allowed" : ", disallowed";
  } else {
    robots += " (no verdict until robots.txt is fetched)";
  }
  const std::string* robots_rule = Str(At(j, {"robots", "rule"}));
  if (robots_rule != nullptr && !robots_rule->empty()) {
    robots += " (" + *robots_rule + ")";
  }
  Line("robots:", robots);
  return kExitOk;
}

constexpr char kHostHelp[] =
    "usage: crawlctl host NAME [common options]\n"
    "\n"
    "Shows crawld's record of one host (GET /api/hosts/NAME): queue size,\n"
    "next fetch time, credit, crawl delay, errors, robots rules and the\n"
    "admin override. NAME is a host name or an origin such as\n"
    "http://h0.farm.test:8080. An unknown host is an error (exit 1).\n";

int RunHost(Client& client, const Args& args) {
  Json j;
  const std::string path = "/api/hosts/" + PercentEncode(args.positional[0]);
  if (int rc = client.CallJson("GET", path, nullptr, &j)) return rc;
  if (client.json()) return kExitOk;
  Line("host:", Text(j, {"host"}));
  Line("queued:", Text(j, {"queued"}));
  Line("in flight:", Text(j, {"in_flight"}));
  Line("next fetch in:", Text(j, {"next_fetch_in_ms"}) + " ms");
  Line("credit:", Text(j, {"credit"}));
  Line("crawl delay:", Text(j, {"crawl_delay_ms"}) + " ms");
  Line("consecutive errors:", Text(j, {"consecutive_errors"}));
  Line("retired:", Text(j, {"retired"}));
  Line("pages:", Text(j, {"pages"}));
  const Json* ov = json::Find(j, "override");
  Line("override:", Str(ov) != nullptr ? OrNone(*Str(ov)) : Text(ov));
  Line("robots:", Text(j, {"robots", "state"}));
  if (const std::string* rules = Str(At(j, {"robots", "rules"}))) {
    std::istringstream lines(*rules);
    std::string l;
    while (std::getline(lines, l)) std::printf("  %s\n", l.c_str());
  }
  return kExitOk;
}

constexpr char kDocsHelp[] =
    "usage: crawlctl docs tail [--since CURSOR] [--limit N] [--once]\n"
    "                          [--follow [--max-seconds S]]\n"
    "                          [--cursor-file F] [common options]\n"
    "\n"
    "Prints the document feed (GET /api/docs), one line per record:\n"
    "  CURSOR<TAB>STATUS<TAB>URL<TAB>WARC:OFFSET\n"
    "With --json, each batch's reply is printed on its own line instead.\n"
    "Without --follow, reads until it has caught up, then exits.\n"
    "\n"
    "  --since CURSOR   start after CURSOR (default: the beginning)\n"
    "  --limit N        records per request, 1..1000 (default 100)\n"
    "  --once           one request only: at most N records\n"
    "  --follow         keep polling (every second when caught up) until\n"
    "                   SIGINT/SIGTERM, or until --max-seconds S elapse\n"
    "  --max-seconds S  stop after S seconds (checked between requests)\n"
    "  --cursor-file F  start after the cursor stored in F when F exists\n"
    "                   (it wins over --since), and store the last cursor\n"
    "                   in F after each batch is printed (temp file +\n"
    "                   rename). SIGINT/SIGTERM are held while a batch is\n"
    "                   printed and F written, so a consumer that is\n"
    "                   stopped and restarted with the same F sees every\n"
    "                   record exactly once (SIGKILL between the two may\n"
    "                   repeat one batch).\n";

Status ReadCursorFile(const std::string& path, std::string* cursor,
                      bool* exists) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) {
      *exists = false;
      return Status::Ok();
    }
    return Status::IOError(path + ": " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IOError(path + ": read error");
  *exists = true;
  *cursor = Trim(ss.str());
  return Status::Ok();
}

// Replaces path's content with cursor + "\n": a temp file in the same
// directory, fsync, rename, so a reader sees the old or the new cursor.
Status WriteCursorFile(const std::string& path, const std::string& cursor) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(tmp + ": " + std::strerror(errno));
  const std::string text = cursor + "\n";
  if (!WriteFull(fd, text.data(), text.size())) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::IOError(tmp + ": " + why);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::IOError(tmp + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::IOError(path + ": " + why);
  }
  return Status::Ok();
}

// SIGINT and SIGTERM are blocked for the whole tail and collected with
// sigtimedwait between batches: no handler and no global flag, and a
// signal never lands between printing a batch and storing its cursor.
class HeldSignals {
 public:
  HeldSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  ~HeldSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

  // Waits up to ms for SIGINT/SIGTERM; true when one arrived.
  bool Wait(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    for (;;) {
      const int sig = sigtimedwait(&set_, nullptr, &ts);
      if (sig > 0) return true;
      if (errno != EINTR) return false;
    }
  }

 private:
  sigset_t set_;
  sigset_t old_;
};

// The flags `crawlctl docs` and `crawlctl feed` share: how much to ask
// for at a time, whether to stop or follow, and where to start.
struct TailFlags {
  long limit = 100;
  bool follow = false;
  bool once = false;
  long max_seconds = -1;  // -1: no time limit
  std::string cursor;     // --since, or what --cursor-file holds
  const std::string* cursor_file = nullptr;
};

// Reads the shared flags into *out; a usage error (its exit code) for a bad
// value, kExitOk otherwise.
int ParseTailFlags(const char* verb, const char* help, const Args& args,
                   TailFlags* out) {
  if (const std::string* l = args.Flag("--limit")) {
    if (!ParseLong(*l, 1, 1000, &out->limit)) {
      return UsageError(verb, "--limit wants 1..1000, not '" + *l + "'", help);
    }
  }
  out->follow = args.Flag("--follow") != nullptr;
  out->once = args.Flag("--once") != nullptr;
  if (out->follow && out->once) {
    return UsageError(verb, "--once and --follow exclude each other", help);
  }
  if (const std::string* s = args.Flag("--max-seconds")) {
    if (!ParseLong(*s, 0, 365L * 86400, &out->max_seconds)) {
      return UsageError(
          verb, "--max-seconds wants an integer >= 0, not '" + *s + "'", help);
    }
  }
  if (const std::string* s = args.Flag("--since")) out->cursor = *s;
  out->cursor_file = args.Flag("--cursor-file");
  if (out->cursor_file != nullptr) {
    bool exists = false;
    std::string stored;
    const Status st = ReadCursorFile(*out->cursor_file, &stored, &exists);
    if (!st.ok()) {
      std::fprintf(stderr, "crawlctl %s: %s\n", verb, st.message().c_str());
      return kExitUsage;
    }
    if (exists) out->cursor = stored;
  }
  return kExitOk;
}

// The loop of `crawlctl docs` and `crawlctl feed`: ask for a batch from
// the cursor, print it, move the cursor on, and ask again at once while
// batches come full, every second with --follow, until SIGINT/SIGTERM or
// --max-seconds.
class TailLoop {
 public:
  TailLoop(const char* verb, TailFlags flags)
      : verb_(verb),
        flags_(std::move(flags)),
        deadline_(flags_.max_seconds >= 0
                      ? Clock::now() + std::chrono::seconds(flags_.max_seconds)
                      : Clock::time_point::max()) {}

  // Before each batch: false once a signal came or the time is up.
  bool Go() { return !signals_.Wait(0) && MsLeft() > 0; }
  [[nodiscard]] const std::string& cursor() const { return flags_.cursor; }
  [[nodiscard]] long limit() const { return flags_.limit; }

  // After a batch of `count` records up to `next` is printed: flushes it,
  // moves the cursor (and its file) on, and waits when caught up. *more
  // says whether to ask again; an exit code on error.
  int Done(const std::string& next, size_t count, bool* more) {
    *more = false;
    // The cursor moves on only once the batch is out of our hands.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "crawlctl %s: cannot write output: %s\n", verb_,
                   std::strerror(errno));
      return kExitUsage;
    }
    if (flags_.cursor_file != nullptr && next != flags_.cursor) {
      const Status st = WriteCursorFile(*flags_.cursor_file, next);
      if (!st.ok()) {
        std::fprintf(stderr, "crawlctl %s: %s\n", verb_, st.message().c_str());
        return kExitUsage;
      }
    }
    flags_.cursor = next;
    if (flags_.once) return kExitOk;
    if (count >= static_cast<size_t>(flags_.limit)) {
      *more = true;  // more is waiting: ask again at once
      return kExitOk;
    }
    if (!flags_.follow) return kExitOk;  // caught up
    const long wait = std::min(1000L, MsLeft());
    *more = !(wait > 0 && signals_.Wait(wait));
    return kExitOk;
  }

 private:
  using Clock = std::chrono::steady_clock;

  long MsLeft() const {
    if (deadline_ == Clock::time_point::max()) return 1000;
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ -
                                                              Clock::now())
            .count());
  }

  const char* verb_;
  TailFlags flags_;
  Clock::time_point deadline_;
  HeldSignals signals_;
};

int RunDocsTail(Client& client, const Args& args) {
  TailFlags flags;
  if (int rc = ParseTailFlags("docs", kDocsHelp, args, &flags)) return rc;
  TailLoop tail("docs", std::move(flags));
  while (tail.Go()) {
    Json j;
    const std::string path = "/api/docs?since=" + PercentEncode(tail.cursor()) +
                             "&limit=" + std::to_string(tail.limit());
    if (int rc = client.CallJson("GET", path, nullptr, &j)) return rc;
    const Json* entries = json::Find(j, "entries");
    const std::string* next = Str(json::Find(j, "next"));
    if (entries == nullptr || !entries->is_array() || next == nullptr) {
      std::fprintf(stderr, "crawlctl docs: reply lacks 'entries' or 'next'\n");
      return kExitServer;
    }
    if (!entries->empty() && *next == tail.cursor()) {
      // Would print the same records forever.
      std::fprintf(stderr,
                   "crawlctl docs: the server sent records but did not "
                   "advance the cursor\n");
      return kExitServer;
    }
    if (!client.json()) {
      for (const Json& e : *entries) {
        std::printf("%s\t%s\t%s\t%s:%s\n", Field(e, "cursor").c_str(),
                    Field(e, "status").c_str(), Field(e, "url").c_str(),
                    Field(e, "warc").c_str(), Field(e, "offset").c_str());
      }
    }
    bool more = false;
    if (int rc = tail.Done(*next, entries->size(), &more)) return rc;
    if (!more) break;
  }
  return kExitOk;
}

constexpr char kFeedHelp[] =
    "usage: crawlctl feed --node SOURCE [--node SOURCE]... [--since ID]\n"
    "                     [--limit N] [--once] [--follow [--max-seconds S]]\n"
    "                     [--cursor-file F] [--token T] [--timeout-ms MS]\n"
    "                     [--json]\n"
    "\n"
    "Reads the document feed of a whole crawl, one or several nodes, as one\n"
    "stream in feed ID order (docs/STORE.md, \"Document feed\"), one line per\n"
    "record:\n"
    "  ID<TAB>STATUS<TAB>URL<TAB>WARC:OFFSET<TAB>SOURCE\n"
    "With --json, one JSON object per record (with \"source\").\n"
    "A SOURCE is a node's admin API (http://HOST:PORT, its GET /api/docs) or\n"
    "a node's data directory on this machine (read directly, whether the\n"
    "node runs or not). A record is printed only once every source is past\n"
    "it (its watermark), so IDs never go back and a consumer resumes from\n"
    "one number. A source that cannot be read holds the feed: nothing is\n"
    "printed, exit 3. Take a node that is gone for good out of the list\n"
    "(the records it stored and nobody read are then not read), or give\n"
    "its data directory.\n"
    "Without --node, the node of --api or --data (its API) is read.\n"
    "\n"
    "  --node SOURCE    a node's API URL or data directory (repeatable)\n"
    "  --since ID       start after feed ID (default: the beginning)\n"
    "  --limit N        records per batch, 1..1000 (default 100)\n"
    "  --once           one batch only: at most N records\n"
    "  --follow         keep polling (every second when caught up) until\n"
    "                   SIGINT/SIGTERM, or until --max-seconds S elapse\n"
    "  --max-seconds S  stop after S seconds (checked between batches)\n"
    "  --cursor-file F  as for docs tail: start after the ID stored in F,\n"
    "                   store the last ID printed after each batch\n";

// One node of `crawlctl feed`: its API or its feed directory.
struct FeedSource {
  std::string name;                // as given on the command line
  std::unique_ptr<Client> client;  // an API
  std::string dir;                 // or <data>/index/feed
  std::unique_ptr<store::FeedReader> reader;
};

// The page of one source after `cursor`, or the exit code. An API page
// without a watermark (a worker's own API, or a crawld before feed IDs)
// is exact only alone; `alone` says whether it is.
int ReadFeedSource(FeedSource& src, const std::string& cursor, long limit,
                   bool alone, store::FeedPage* page) {
  *page = store::FeedPage();
  auto after = store::ParseFeedCursor(cursor);
  if (!after.ok()) {
    std::fprintf(stderr, "crawlctl feed: %s\n",
                 after.status().message().c_str());
    return kExitUsage;
  }
  page->watermark = *after;
  if (src.client == nullptr) {
    if (src.reader == nullptr) {
      auto r = store::FeedReader::Open(src.dir);
      // No feed yet: the node has not written; it holds the others.
      if (!r.ok()) return kExitOk;
      src.reader = std::move(r).value();
    }
    auto p = src.reader->Read(cursor, static_cast<size_t>(limit));
    if (!p.ok()) {
      std::fprintf(stderr, "crawlctl feed: %s: %s\n", src.name.c_str(),
                   p.status().message().c_str());
      return p.status().code() == Status::Code::kInvalidArgument ? kExitUsage
                                                                 : kExitServer;
    }
    *page = std::move(p).value();
    return kExitOk;
  }
  Json j;
  const std::string path = "/api/docs?since=" + PercentEncode(cursor) +
                           "&limit=" + std::to_string(limit);
  if (int rc = src.client->CallJson("GET", path, nullptr, &j)) return rc;
  const Json* entries = json::Find(j, "entries");
  const std::string* wm = Str(json::Find(j, "watermark"));
  auto bad = [&](const std::string& why) {
    std::fprintf(stderr, "crawlctl feed: %s: %s\n", src.name.c_str(),
                 why.c_str());
    return kExitServer;
  };
  if (entries == nullptr || !entries->is_array())
    return bad("reply lacks 'entries'");
  for (const Json& e : *entries) {
    store::FeedEntry fe;
    const std::string* id = Str(json::Find(e, "id"));
    if (id == nullptr) id = Str(json::Find(e, "cursor"));
    if (id == nullptr) return bad("an entry without an id");
    auto parsed = store::ParseFeedCursor(*id);
    if (!parsed.ok() || *parsed <= page->watermark ||
        (!page->entries.empty() && *parsed <= page->entries.back().id))
      return bad("an entry without an ascending feed id");
    fe.id = *parsed;
    if (const std::string* v = Str(json::Find(e, "url"))) fe.url = *v;
    if (const std::string* v = Str(json::Find(e, "warc"))) fe.warc_file = *v;
    if (const std::string* v = Str(json::Find(e, "digest"))) fe.digest = *v;
    if (const std::string* v = Str(json::Find(e, "mime"))) fe.mime = *v;
    const Json* off = json::Find(e, "offset");
    const Json* len = json::Find(e, "length");
    const Json* st = json::Find(e, "status");
    if (off != nullptr && off->is_number_unsigned())
      fe.offset = off->get<uint64_t>();
    if (len != nullptr && len->is_number_unsigned())
      fe.length = len->get<uint64_t>();
    if (st != nullptr && st->is_number_integer()) fe.status = st->get<int>();
    const Json* flags = json::Find(e, "flags");
    if (flags != nullptr && flags->is_object()) {
      const Json* ni = json::Find(*flags, "noindex");
      const Json* rv = json::Find(*flags, "revisit");
      const Json* nd = json::Find(*flags, "near_duplicate_of");
      fe.flags.noindex = ni != nullptr && ni->is_boolean() && ni->get<bool>();
      fe.revisit = rv != nullptr && rv->is_boolean() && rv->get<bool>();
      if (nd != nullptr && nd->is_string())
        fe.flags.near_duplicate_of = nd->get<std::string>();
    }
    page->entries.push_back(std::move(fe));
  }
  if (wm != nullptr) {
    auto w = store::ParseFeedCursor(*wm);
    if (!w.ok()) return bad("malformed watermark '" + *wm + "'");
    page->watermark = std::max(page->watermark, *w);
  } else if (alone) {
    // Its entries are final as they come.
    page->watermark =
        page->entries.empty() ? page->watermark : page->entries.back().id;
  } else {
    return bad(
        "no watermark (a worker's own API, or a crawld before feed "
        "IDs): it cannot be merged with other nodes; give the node's "
        "supervisor API or its data directory");
  }
  for (const store::FeedEntry& e : page->entries) {
    if (e.id > page->watermark)
      return bad("an entry above the source's own watermark");
  }
  return kExitOk;
}

std::string Clean(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

int RunFeed(const Args& args) {
  TailFlags flags;
  if (int rc = ParseTailFlags("feed", kFeedHelp, args, &flags)) return rc;
  std::vector<FeedSource> sources;
  for (const auto& [flag, value] : args.flags) {
    if (flag != "--node") continue;
    FeedSource src;
    src.name = value;
    if (value.rfind("http://", 0) == 0 || value.rfind("https://", 0) == 0) {
      Common c = args.common;
      c.api = value;
      c.data.clear();
      c.json = false;  // the merged records are printed, not the pages
      int rc = kExitOk;
      src.client = Client::Open("feed", c, &rc);
      if (src.client == nullptr) return rc;
    } else {
      src.dir = value + "/index/feed";
    }
    sources.push_back(std::move(src));
  }
  if (sources.empty()) {
    FeedSource src;
    int rc = kExitOk;
    Common c = args.common;
    c.json = false;  // the merged records are printed, not the pages
    src.client = Client::Open("feed", c, &rc);
    if (src.client == nullptr) return rc;
    src.name = src.client->base();
    sources.push_back(std::move(src));
  } else if (!args.common.api.empty() || !args.common.data.empty()) {
    return UsageError("feed", "give --node, or --api/--data, not both",
                      kFeedHelp);
  }
  if (auto c = store::ParseFeedCursor(flags.cursor); !c.ok()) {
    return UsageError("feed", c.status().message(), kFeedHelp);
  }
  const bool as_json = args.common.json;
  TailLoop tail("feed", std::move(flags));
  while (tail.Go()) {
    std::vector<store::FeedPage> pages(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      if (int rc = ReadFeedSource(sources[i], tail.cursor(), tail.limit(),
                                  sources.size() == 1, &pages[i])) {
        if (rc == kExitUnreachable) {
          std::fprintf(stderr,
                       "crawlctl feed: the feed waits for every node: %s did "
                       "not answer\n",
                       sources[i].name.c_str());
        }
        return rc;
      }
    }
    const store::FeedMerge merged =
        store::MergeFeedPages(pages, static_cast<size_t>(tail.limit()));
    std::string next = tail.cursor();
    for (const auto& [p, i] : merged.order) {
      const store::FeedEntry& e = pages[p].entries[i];
      const std::string id = std::to_string(e.id);
      if (as_json) {
        Json line = {
            {"id", id},
            {"url", e.url},
            {"warc", e.warc_file},
            {"offset", e.offset},
            {"length", e.length},
            {"digest", e.digest},
            {"status", e.status},
            {"mime", e.mime},
            {"flags", {{"noindex", e.flags.noindex}, {"revisit", e.revisit}}},
            {"source", sources[p].name}};
        if (!e.flags.near_duplicate_of.empty())
          line["flags"]["near_duplicate_of"] = e.flags.near_duplicate_of;
        std::printf("%s\n", json::Dump(line).c_str());
      } else {
        std::printf("%s\t%d\t%s\t%s:%llu\t%s\n", id.c_str(), e.status,
                    Clean(e.url).c_str(), Clean(e.warc_file).c_str(),
                    static_cast<unsigned long long>(e.offset),
                    Clean(sources[p].name).c_str());
      }
      next = id;
    }
    bool more = false;
    if (int rc = tail.Done(next, merged.order.size(), &more)) return rc;
    if (!more) break;
  }
  return kExitOk;
}

constexpr char kAdminHelp[] =
    "Online commands talk to a running crawld's admin API:\n"
    "  status, metrics, pause, resume, stop, seeds add FILE, rules reload,\n"
    "  rules test URL, host NAME, docs tail, feed --node URL|DIR...\n"
    "Run 'crawlctl <command> --help' for details.\n";

}  // namespace

int CommonOptionArity(const char* arg) {
  const std::string_view a = arg;
  if (a == "--api" || a == "--data" || a == "--token" || a == "--timeout-ms") {
    return 1;
  }
  return a == "--json" ? 0 : -1;
}

int RunAdminCommand(int argc, char** argv) {
  const std::string_view group = argv[0];
  // Subcommand groups take their verb first.
  struct Cmd {
    const char* group;
    const char* sub;  // nullptr: no subcommand
    const char* help;
    std::vector<FlagSpec> flags;
    size_t positional;  // after the subcommand
  };
  const std::vector<Cmd> cmds = {
      {"status", nullptr, kStatusHelp, {}, 0},
      {"metrics", nullptr, kMetricsHelp, {}, 0},
      {"pause", nullptr, kPauseHelp, {}, 0},
      {"resume", nullptr, kResumeHelp, {}, 0},
      {"stop", nullptr, kStopHelp, {}, 0},
      {"host", nullptr, kHostHelp, {}, 1},
      {"seeds", "add", kSeedsHelp, {}, 1},
      {"rules", "reload", kRulesHelp, {}, 0},
      {"rules",
       "test",
       kRulesHelp,
       {{"--depth", true}, {"--seed-host", true}},
       1},
      {"docs",
       "tail",
       kDocsHelp,
       {{"--since", true},
        {"--limit", true},
        {"--once", false},
        {"--follow", false},
        {"--max-seconds", true},
        {"--cursor-file", true}},
       0},
      {"feed",
       nullptr,
       kFeedHelp,
       {{"--node", true},
        {"--since", true},
        {"--limit", true},
        {"--once", false},
        {"--follow", false},
        {"--max-seconds", true},
        {"--cursor-file", true}},
       0},
  };
  const std::string g(group);
  const char* group_help = nullptr;
  for (const Cmd& c : cmds) {
    if (group == c.group) group_help = c.help;
  }
  if (group_help == nullptr) {
    std::fputs(kAdminHelp, stderr);
    return kExitUsage;
  }
  const Cmd* cmd = nullptr;
  for (const Cmd& c : cmds) {
    if (group != c.group) continue;
    if (c.sub == nullptr || (argc >= 2 && std::string_view(argv[1]) == c.sub)) {
      cmd = &c;
      break;
    }
  }
  if (cmd == nullptr) {
    if (argc >= 2 && IsHelp(argv[1])) return Help(group_help);
    return UsageError(g.c_str(),
                      argc >= 2
                          ? "unknown subcommand '" + std::string(argv[1]) + "'"
                          : "missing subcommand",
                      group_help);
  }
  Args args;
  const int first = cmd->sub == nullptr ? 1 : 2;
  const std::string err = ParseArgs(argc, argv, first, cmd->flags, &args);
  if (args.help) return Help(cmd->help);
  if (!err.empty()) return UsageError(g.c_str(), err, cmd->help);
  if (args.positional.size() != cmd->positional) {
    return UsageError(g.c_str(),
                      "expected " + std::to_string(cmd->positional) +
                          " argument(s), got " +
                          std::to_string(args.positional.size()),
                      cmd->help);
  }
  // RunSeeds and RunRulesTest read their argument at index 1.
  if (cmd->sub != nullptr)
    args.positional.insert(args.positional.begin(), cmd->sub);
  // feed opens its own sources (several APIs and data directories).
  if (group == "feed") return RunFeed(args);
  int rc = kExitOk;
  std::unique_ptr<Client> client = Client::Open(g.c_str(), args.common, &rc);
  if (!client) return rc;
  const std::string_view sub = cmd->sub != nullptr ? cmd->sub : "";
  if (group == "status") return RunStatus(*client);
  if (group == "metrics") return RunMetrics(*client);
  if (group == "pause" || group == "resume" || group == "stop") {
    return RunStateChange(*client, cmd->group);
  }
  if (group == "host") return RunHost(*client, args);
  if (group == "seeds") return RunSeeds(*client, args);
  if (group == "rules" && sub == "reload") return RunRulesReload(*client);
  if (group == "rules") return RunRulesTest(*client, args);
  return RunDocsTail(*client, args);
}

}  // namespace crawld::cli
