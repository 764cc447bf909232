// daemon/supervisor_admin.cc: see supervisor_admin.h.
#include "daemon/supervisor_admin.h"

#include <curl/curl.h>
#include <uv.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "cluster/cluster.h"
#include "daemon/metrics.h"
#include "url/url.h"

namespace crawld::daemon {

// ---------------------------------------------------------------------------
// Metrics merge

namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (colon && c == ':');
}
bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || (c >= '0' && c <= '9');
}

// Length of the metric (colon) or label name at the front of s, 0 if none.
size_t NameLength(std::string_view s, bool colon) {
  if (s.empty() || !IsNameStart(s[0], colon)) return 0;
  size_t n = 1;
  while (n < s.size() && IsNameChar(s[n], colon)) ++n;
  return n;
}

bool IsValue(std::string_view v) {
  if (v == "NaN" || v == "+Inf" || v == "-Inf" || v == "Inf") return true;
  if (v.empty() || v.size() > 64) return false;
  const std::string s(v);
  char* end = nullptr;
  errno = 0;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool IsTimestamp(std::string_view v) {
  if (!v.empty() && v[0] == '-') v.remove_prefix(1);
  if (v.empty() || v.size() > 20) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

struct ParsedSample {
  std::string name;
  // (label name, value still escaped as in the source)
  std::vector<std::pair<std::string, std::string>> labels;
  std::string rest;  // " value" or " value timestamp"
};

// One sample line: name, optional {labels}, value, optional timestamp.
bool ParseSample(std::string_view line, ParsedSample* out) {
  const size_t n = NameLength(line, true);
  if (n == 0) return false;
  out->name = std::string(line.substr(0, n));
  out->labels.clear();
  size_t i = n;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t ln = NameLength(line.substr(i), false);
      if (ln == 0) return false;
      std::string label(line.substr(i, ln));
      i += ln;
      while (i < line.size() && line[i] == ' ') ++i;
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
        return false;
      }
      i += 2;
      const size_t start = i;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\') {
          if (i + 1 >= line.size()) return false;
          const char e = line[i + 1];
          if (e != '\\' && e != '"' && e != 'n') return false;
          ++i;
        }
        ++i;
      }
      if (i >= line.size()) return false;
      for (const auto& [k, v] : out->labels) {
        if (k == label) return false;  // a repeated label is invalid
      }
      out->labels.emplace_back(std::move(label),
                               std::string(line.substr(start, i - start)));
      ++i;  // closing quote
      while (i < line.size() && line[i] == ' ') ++i;
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      return false;
    }
  }
  if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) return false;
  std::string_view rest = line.substr(i);
  // value [timestamp], separated by blanks
  std::vector<std::string_view> fields;
  size_t k = 0;
  while (k < rest.size()) {
    while (k < rest.size() && (rest[k] == ' ' || rest[k] == '\t')) ++k;
    const size_t s = k;
    while (k < rest.size() && rest[k] != ' ' && rest[k] != '\t') ++k;
    if (k > s) fields.push_back(rest.substr(s, k - s));
  }
  if (fields.empty() || fields.size() > 2 || !IsValue(fields[0])) return false;
  if (fields.size() == 2 && !IsTimestamp(fields[1])) return false;
  out->rest = " " + std::string(fields[0]);
  if (fields.size() == 2) out->rest += " " + std::string(fields[1]);
  return true;
}

// The family a sample named `name` belongs to, given the family of the
// last HELP/TYPE line of its source (histogram and summary series carry a
// suffix).
template <typename Declared>
std::string FamilyOf(const std::string& name, const Declared& declared) {
  if (declared.count(name) > 0) return name;
  for (std::string_view suffix :
       {"_bucket", "_sum", "_count", "_created", "_total"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::string base = name.substr(0, name.size() - suffix.size());
      if (declared.count(base) > 0) return base;
    }
  }
  return name;
}

void AppendEscapedLabel(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '"') {
      out->append("\\\"");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// Calls f(line) for each line of `text`, trailing CRs removed.
template <typename F>
void ForEachLine(std::string_view text, F f) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f(line);
  }
}

// A "# HELP name text" or "# TYPE name type" line.
struct MetricsHeader {
  bool help = false;
  std::string_view name;
  std::string_view arg;  // may be empty
};
enum class HeaderKind { kNotHeader, kMalformed, kHeader };

HeaderKind ParseHeader(std::string_view line, MetricsHeader* h) {
  h->help = line.rfind("# HELP ", 0) == 0;
  if (!h->help && line.rfind("# TYPE ", 0) != 0) return HeaderKind::kNotHeader;
  std::string_view rest = line.substr(7);
  const size_t n = NameLength(rest, true);
  if (n == 0 || (n < rest.size() && rest[n] != ' ')) {
    return HeaderKind::kMalformed;
  }
  h->name = rest.substr(0, n);
  h->arg = n < rest.size() ? rest.substr(n + 1) : std::string_view();
  return HeaderKind::kHeader;
}

}  // namespace

std::string MergeMetrics(const std::vector<MetricsSource>& sources,
                         size_t* dropped) {
  struct Family {
    std::string help;  // as escaped in the source
    bool has_help = false;
    std::string type;  // empty: none declared yet
    std::vector<std::string> samples;
  };
  std::map<std::string, Family> families;
  size_t bad = 0;
  // Families are those some source declares (HELP or TYPE), whichever
  // source a sample comes from: assigning by the preceding HELP/TYPE line
  // of each source would let the merged output regroup when read again.
  std::set<std::string> declared;
  for (const MetricsSource& src : sources) {
    // Exactly the lines the pass below accepts and prints a header for
    // (HELP, or TYPE with a type).
    ForEachLine(src.text, [&](std::string_view line) {
      MetricsHeader h;
      if (ParseHeader(line, &h) == HeaderKind::kHeader &&
          (h.help || !h.arg.empty())) {
        declared.insert(std::string(h.name));
      }
    });
  }
  for (const MetricsSource& src : sources) {
    std::string current;
    // This source's own TYPE per family, to detect conflicts.
    std::map<std::string, std::string> types;
    ForEachLine(src.text, [&](std::string_view line) {
      if (line.empty()) return;
      if (line[0] == '#') {
        MetricsHeader h;
        const HeaderKind kind = ParseHeader(line, &h);
        if (kind == HeaderKind::kNotHeader) return;  // a plain comment
        if (kind == HeaderKind::kMalformed) {
          ++bad;
          return;
        }
        current = std::string(h.name);
        const std::string_view arg = h.arg;
        Family& f = families[current];
        if (h.help) {
          if (!f.has_help) {
            f.help = std::string(arg);
            f.has_help = true;
          }
        } else {
          types[current] = std::string(arg);
          if (f.type.empty()) f.type = std::string(arg);
        }
        return;
      }
      ParsedSample s;
      if (!ParseSample(line, &s)) {
        ++bad;
        return;
      }
      const std::string family = FamilyOf(s.name, declared);
      Family& f = families[family];
      auto own = types.find(family);
      const std::string& own_type =
          own == types.end() ? std::string() : own->second;
      if (!f.type.empty() && own_type != f.type) {
        ++bad;  // mixing types would make the family unparsable
        return;
      }
      std::string out = s.name;
      const bool add_worker = !src.worker.empty();
      if (add_worker || !s.labels.empty()) {
        out.push_back('{');
        bool first = true;
        if (add_worker) {
          out.append("worker=\"");
          AppendEscapedLabel(&out, src.worker);
          out.push_back('"');
          first = false;
        }
        for (const auto& [k, v] : s.labels) {
          if (add_worker && k == "worker") continue;
          if (!first) out.push_back(',');
          first = false;
          out.append(k).append("=\"").append(v).push_back('"');
        }
        out.push_back('}');
      }
      out.append(s.rest);
      f.samples.push_back(std::move(out));
    });
  }
  std::string out;
  for (const auto& [name, f] : families) {
    if (f.samples.empty() && f.type.empty() && !f.has_help) continue;
    if (f.has_help) out.append("# HELP ").append(name + " ").append(f.help);
    if (f.has_help) out.push_back('\n');
    if (!f.type.empty()) {
      out.append("# TYPE ").append(name + " ").append(f.type).push_back('\n');
    }
    for (const std::string& s : f.samples) out.append(s).push_back('\n');
  }
  if (dropped != nullptr) *dropped = bad;
  return out;
}

// ---------------------------------------------------------------------------
// Status merge

namespace {

double Num(const Json& j, std::string_view key) {
  const Json* v = j.Find(key);
  return v != nullptr && v->is_number() ? v->as_number() : 0;
}

void SumMembers(const Json* from, Json* into) {
  if (from == nullptr || !from->is_object()) return;
  for (const auto& [k, v] : from->members()) {
    if (!v.is_number()) continue;
    into->Set(k, Num(*into, k) + v.as_number());
  }
}

std::string StateOf(const Json& status) {
  const Json* s = status.Find("state");
  return s != nullptr && s->is_string() ? s->as_string() : std::string();
}

}  // namespace

Json MergeStatus(const Json& supervisor,
                 const std::vector<WorkerStatus>& statuses) {
  static constexpr const char* kSums[] = {
      "pages",     "pages_per_s", "bytes",         "queued",
      "in_flight", "ip_waiting",  "robots_fetches"};
  Json sums = Json::MakeObject();
  for (const char* k : kSums) sums.Set(k, 0);
  Json hosts = Json::MakeObject();
  for (const char* k : {"known", "active", "retired"}) hosts.Set(k, 0);
  Json counts = Json::MakeObject();
  Json workers = Json::MakeArray();
  bool stopping = StateOf(supervisor) == "stopping";
  int answered = 0, paused = 0;
  const Json* view = supervisor.Find("workers");
  const size_t n =
      view != nullptr && view->is_array() ? view->items().size() : size_t{0};
  for (size_t i = 0; i < n; ++i) {
    const Json& w = view->items()[i];
    Json entry = Json::MakeObject();
    if (w.is_object()) {
      for (const auto& [k, v] : w.members()) entry.Set(k, v);
    }
    const WorkerStatus* ws = i < statuses.size() ? &statuses[i] : nullptr;
    if (ws != nullptr && ws->status.is_object()) {
      const Json& st = ws->status;
      ++answered;
      const std::string state = StateOf(st);
      if (state == "paused") ++paused;
      if (state == "stopping" || state == "done") stopping = true;
      for (const char* k : kSums) sums.Set(k, Num(sums, k) + Num(st, k));
      SumMembers(st.Find("hosts"), &hosts);
      SumMembers(st.Find("counts"), &counts);
      entry.Set("pages", Num(st, "pages"));
      entry.Set("queued", Num(st, "queued"));
      entry.Set("status", st);
    } else {
      entry.Set("error", ws != nullptr && !ws->error.empty()
                             ? ws->error
                             : std::string("no status"));
    }
    workers.Push(std::move(entry));
  }
  // The fields in the order a worker gives them.
  Json out = Json::MakeObject();
  out.Set("state", stopping                             ? "stopping"
                   : answered > 0 && paused == answered ? "paused"
                                                        : "running");
  out.Set("pages", *sums.Find("pages"));
  out.Set("pages_per_s", *sums.Find("pages_per_s"));
  out.Set("bytes", *sums.Find("bytes"));
  out.Set("queued", *sums.Find("queued"));
  out.Set("in_flight", *sums.Find("in_flight"));
  out.Set("ip_waiting", *sums.Find("ip_waiting"));
  out.Set("hosts", std::move(hosts));
  out.Set("robots_fetches", *sums.Find("robots_fetches"));
  out.Set("uptime_s", Num(supervisor, "uptime_s"));
  out.Set("counts", std::move(counts));
  out.Set("workers", std::move(workers));
  return out;
}

// ---------------------------------------------------------------------------
// Worker calls

namespace {

// Largest worker answer read; /metrics with many filter rules is the big
// one.
constexpr size_t kMaxReplyBytes = 64u << 20;

// How often a paused crawl's workers are checked for a restart.
constexpr uint64_t kKeepPausedMs = 500;

struct Call {
  int index = 0;  // local worker index
  std::string method, target, body;
  // out
  bool done = false;
  bool connect_failed = false;  // nothing reached the worker: safe to retry
  long status = 0;
  std::string content_type, reply, error;
  // curl state
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string url;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  Call* c = static_cast<Call*>(user);
  if (c->reply.size() + size * n > kMaxReplyBytes) return 0;
  c->reply.append(data, size * n);
  return size * n;
}

// The port in "http://host:port\n" (the worker's admin-<id>.url).
int PortOf(const std::string& url) {
  std::string_view s = url;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' ||
                        s.back() == ' ' || s.back() == '/')) {
    s.remove_suffix(1);
  }
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= s.size()) return -1;
  int port = 0;
  for (char ch : s.substr(colon + 1)) {
    if (ch < '0' || ch > '9' || port > 65535) return -1;
    port = port * 10 + (ch - '0');
  }
  return port > 0 && port <= 65535 ? port : -1;
}

}  // namespace

struct SupervisorAdmin::Impl {
  uv_loop_t* loop = nullptr;
  Options options;
  View view;
  std::unique_ptr<AdminServer> server;
  MetricsRegistry metrics;
  std::string url, url_file;
  // While the operator has the crawl paused: the pid each worker had when
  // it acknowledged the pause. A worker restarted after a crash starts
  // unpaused, so the keeper timer pauses any worker whose pid changed.
  bool paused = false;
  std::vector<int64_t> paused_pids;
  uv_timer_t* keeper = nullptr;

  ~Impl() {
    if (keeper != nullptr) {
      uv_close(reinterpret_cast<uv_handle_t*>(keeper),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
  }

  int Global(int index) const { return options.first_worker + index; }

  static int64_t Pid(const Json& sup, int index) {
    const Json* w = sup.Find("workers");
    if (w == nullptr || !w->is_array() || index < 0 ||
        static_cast<size_t>(index) >= w->items().size()) {
      return 0;
    }
    return static_cast<int64_t>(
        Num(w->items()[static_cast<size_t>(index)], "pid"));
  }

  void KeepPaused() {
    if (!paused) return;
    const Json sup = SupervisorJson();
    std::vector<Call> calls;
    for (int i = 0; i < options.workers; ++i) {
      if (Up(sup, i) && Pid(sup, i) != paused_pids[static_cast<size_t>(i)]) {
        Call c;
        c.index = i;
        c.method = "POST";
        c.target = "/api/pause";
        calls.push_back(std::move(c));
      }
    }
    if (calls.empty()) return;
    Run(&calls);  // one not ready yet is tried again at the next tick
    for (const Call& c : calls) {
      if (c.done && c.status == 200) {
        paused_pids[static_cast<size_t>(c.index)] = Pid(sup, c.index);
      }
    }
  }

  Json SupervisorJson() const {
    Json j = view.supervisor_status ? view.supervisor_status() : Json();
    if (!j.is_object()) j = Json::MakeObject();
    const Json* w = j.Find("workers");
    if (w == nullptr || !w->is_array()) {
      // No view: every local worker, assumed up.
      Json workers = Json::MakeArray();
      for (int i = 0; i < options.workers; ++i) {
        workers.Push(Json::MakeObject().Set("id", Global(i)).Set("up", true));
      }
      j.Set("workers", std::move(workers));
    }
    return j;
  }

  static bool Up(const Json& sup, int index) {
    const Json* w = sup.Find("workers");
    if (w == nullptr || !w->is_array() || index < 0 ||
        static_cast<size_t>(index) >= w->items().size()) {
      return false;
    }
    const Json* up = w->items()[static_cast<size_t>(index)].Find("up");
    return up == nullptr || (up->is_bool() && up->as_bool());
  }

  std::string WorkerName(int index) const {
    return "worker " + std::to_string(Global(index));
  }

  // Runs the calls in parallel, each bounded by worker_timeout_ms.
  void Run(std::vector<Call>* calls) {
    CURLM* multi = curl_multi_init();
    if (multi == nullptr) {
      for (Call& c : *calls) c.error = "curl_multi_init failed";
      return;
    }
    const long timeout = static_cast<long>(options.worker_timeout_ms);
    for (Call& c : *calls) {
      const std::string path = options.data_dir + "/run/admin-" +
                               std::to_string(Global(c.index)) + ".url";
      std::ifstream in(path);
      std::string line;
      const int port = in && std::getline(in, line) ? PortOf(line) : -1;
      if (port < 0) {
        c.error = WorkerName(c.index) + ": no admin URL in " + path +
                  " (not started yet?)";
        c.connect_failed = true;
        continue;
      }
      // The worker always listens on 127.0.0.1 under a supervisor, whatever
      // host its URL file names.
      c.url = "http://127.0.0.1:" + std::to_string(port) + c.target;
      c.easy = curl_easy_init();
      if (c.easy == nullptr) {
        c.error = "curl_easy_init failed";
        continue;
      }
      CURL* e = c.easy;
      curl_easy_setopt(e, CURLOPT_URL, c.url.c_str());
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout);
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
      curl_easy_setopt(e, CURLOPT_PRIVATE, &c);
      if (c.method == "POST") {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, c.body.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(c.body.size()));
        c.headers =
            curl_slist_append(c.headers, "Content-Type: application/json");
      }
      // No 100-continue round trip for a small local body.
      c.headers = curl_slist_append(c.headers, "Expect:");
      if (!options.admin.token.empty()) {
        c.headers = curl_slist_append(
            c.headers,
            ("Authorization: Bearer " + options.admin.token).c_str());
      }
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, c.headers);
      curl_multi_add_handle(multi, e);
    }
    int running = 1;
    while (running > 0) {
      if (curl_multi_perform(multi, &running) != CURLM_OK) break;
      int queued = 0;
      while (CURLMsg* m = curl_multi_info_read(multi, &queued)) {
        if (m->msg != CURLMSG_DONE) continue;
        Call* c = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &c);
        if (c == nullptr) continue;
        const CURLcode rc = m->data.result;
        if (rc == CURLE_OK) {
          c->done = true;
          curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
          char* ct = nullptr;
          curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct);
          if (ct != nullptr) c->content_type = ct;
        } else {
          c->connect_failed = rc == CURLE_COULDNT_CONNECT;
          c->error = WorkerName(c->index) + " (" + c->url +
                     "): " + curl_easy_strerror(rc);
        }
      }
      if (running > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    }
    for (Call& c : *calls) {
      if (c.easy != nullptr) {
        if (!c.done && c.error.empty()) {
          c.error = WorkerName(c.index) + ": no answer";
        }
        curl_multi_remove_handle(multi, c.easy);
        curl_easy_cleanup(c.easy);
        c.easy = nullptr;
      }
      curl_slist_free_all(c.headers);
      c.headers = nullptr;
    }
    curl_multi_cleanup(multi);
  }

  Call MakeCall(int index, const Request& req) const {
    Call c;
    c.index = index;
    c.method = req.method == "HEAD" ? "GET" : req.method;
    c.target = req.target;
    c.body = req.body;
    return c;
  }

  static Response Forward(const Call& c) {
    if (!c.done) return Response::MakeError(502, c.error);
    Response r;
    r.status = static_cast<int>(c.status);
    r.content_type =
        c.content_type.empty() ? "application/json" : c.content_type;
    r.body = c.reply;
    return r;
  }

  // Asks the first local worker that can be reached, in id order: worker 0
  // unless it is down.
  void ToFirst(const Request& req, const Responder& r) {
    const Json sup = SupervisorJson();
    std::string errors;
    for (int i = 0; i < options.workers; ++i) {
      if (!Up(sup, i)) {
        errors +=
            (errors.empty() ? "" : "; ") + WorkerName(i) + " is not running";
        continue;
      }
      std::vector<Call> calls = {MakeCall(i, req)};
      Run(&calls);
      if (calls[0].done || !calls[0].connect_failed) {
        r.Send(Forward(calls[0]));
        return;
      }
      errors += (errors.empty() ? "" : "; ") + calls[0].error;
    }
    r.SendError(503, "no worker could be reached: " + errors);
  }

  // The same request to every running local worker.
  std::vector<Call> ToAll(const Request& req, const Json& sup,
                          std::string* not_running) {
    std::vector<Call> calls;
    for (int i = 0; i < options.workers; ++i) {
      if (Up(sup, i)) {
        calls.push_back(MakeCall(i, req));
      } else if (not_running != nullptr) {
        *not_running += (not_running->empty() ? "" : "; ") + WorkerName(i) +
                        " is not running";
      }
    }
    Run(&calls);
    return calls;
  }

  void Status(const Request& req, const Responder& r) {
    const Json sup = SupervisorJson();
    Request get = req;
    get.method = "GET";
    get.target = "/api/status";
    std::vector<Call> calls = ToAll(get, sup, nullptr);
    std::vector<WorkerStatus> statuses(static_cast<size_t>(options.workers));
    for (int i = 0; i < options.workers; ++i) {
      statuses[static_cast<size_t>(i)].error =
          WorkerName(i) + " is not running";
    }
    for (const Call& c : calls) {
      WorkerStatus& ws = statuses[static_cast<size_t>(c.index)];
      if (!c.done) {
        ws.error = c.error;
      } else if (c.status != 200) {
        ws.error = WorkerName(c.index) + " answered " +
                   std::to_string(c.status) + ": " + c.reply.substr(0, 200);
      } else if (auto j = Json::Parse(c.reply); j.ok() && j->is_object()) {
        ws.status = std::move(j).value();
        ws.error.clear();
      } else {
        ws.error = WorkerName(c.index) + ": status is not a JSON object";
      }
    }
    r.SendJson(200, MergeStatus(sup, statuses));
  }

  void Metrics(const Request& req, const Responder& r) {
    const Json sup = SupervisorJson();
    Request get = req;
    get.method = "GET";
    get.target = "/metrics";
    std::vector<Call> calls = ToAll(get, sup, nullptr);
    std::vector<MetricsSource> sources;
    std::vector<bool> scraped(static_cast<size_t>(options.workers), false);
    for (const Call& c : calls) {
      if (!c.done || c.status != 200) continue;
      scraped[static_cast<size_t>(c.index)] = true;
      sources.push_back({std::to_string(Global(c.index)), c.reply});
    }
    // The supervisor's own series: worker lifecycle.
    const Json* w = sup.Find("workers");
    int up = 0;
    for (int i = 0; i < options.workers; ++i) {
      const std::string id = std::to_string(Global(i));
      const bool is_up = Up(sup, i);
      up += is_up;
      double restarts = 0;
      if (w != nullptr && static_cast<size_t>(i) < w->items().size()) {
        restarts = Num(w->items()[static_cast<size_t>(i)], "restarts");
      }
      if (auto g = metrics.GetGauge("crawld_worker_up",
                                    "1 while the worker process runs.",
                                    {{"worker", id}});
          g.ok()) {
        (*g)->Set(is_up ? 1 : 0);
      }
      if (auto g = metrics.GetGauge(
              "crawld_worker_scrape_ok",
              "1 when the worker's own metrics are in this scrape.",
              {{"worker", id}});
          g.ok()) {
        (*g)->Set(scraped[static_cast<size_t>(i)] ? 1 : 0);
      }
      if (auto c = metrics.GetCounter("crawld_worker_restarts_total",
                                      "Restarts of the worker after a crash.",
                                      {{"worker", id}});
          c.ok()) {
        (*c)->Increment(restarts - (*c)->value());
      }
    }
    if (auto g =
            metrics.GetGauge("crawld_workers_up", "Worker processes running.");
        g.ok()) {
      (*g)->Set(up);
    }
    if (auto g =
            metrics.GetGauge("crawld_workers", "Worker processes configured.");
        g.ok()) {
      (*g)->Set(options.workers);
    }
    sources.push_back({"", metrics.Render()});
    r.Send(Response::MakeText(200, MergeMetrics(sources),
                              std::string(MetricsRegistry::kContentType)));
  }

  // pause and resume: every worker; one error makes the whole call fail
  // (the others did act).
  void Broadcast(const Request& req, const Responder& r, const char* state_ok) {
    const Json sup = SupervisorJson();
    std::string errors;
    std::vector<Call> calls = ToAll(req, sup, &errors);
    paused = req.path == "/api/pause";
    paused_pids.assign(static_cast<size_t>(options.workers), -1);
    Json workers = Json::MakeArray();
    for (const Call& c : calls) {
      Json e = Json::MakeObject().Set("id", Global(c.index));
      if (c.done && c.status == 200) {
        paused_pids[static_cast<size_t>(c.index)] = Pid(sup, c.index);
        auto j = Json::Parse(c.reply);
        const Json* st = j.ok() ? j->Find("state") : nullptr;
        e.Set("state", st != nullptr ? *st : Json());
      } else {
        const std::string why = c.done ? WorkerName(c.index) + " answered " +
                                             std::to_string(c.status)
                                       : c.error;
        errors += (errors.empty() ? "" : "; ") + why;
        e.Set("error", why);
      }
      workers.Push(std::move(e));
    }
    if (!errors.empty()) {
      r.SendError(calls.empty() ? 503 : 502, errors);
      return;
    }
    r.SendJson(200, Json::MakeObject()
                        .Set("state", state_ok)
                        .Set("workers", std::move(workers)));
  }

  void RulesReload(const Request& req, const Responder& r) {
    // A worker that is not running loads the rule files when it starts.
    const Json sup = SupervisorJson();
    std::vector<Call> calls = ToAll(req, sup, nullptr);
    if (calls.empty()) {
      r.SendError(503, "no worker is running");
      return;
    }
    for (const Call& c : calls) {
      if (!c.done || c.status < 200 || c.status > 299) {
        r.Send(Forward(c));
        return;
      }
    }
    r.Send(Forward(calls.front()));
  }

  void Host(const Request& req, const Responder& r) {
    const std::string& name = *req.Param("host");
    std::string host;
    auto u = url::Parse(
        name.find("://") != std::string::npos ? name : "http://" + name + "/");
    if (u.ok()) host = std::string(u->host());
    int index = 0;  // unparsable: worker 0 gives the worker's own answer
    if (!host.empty()) {
      const int owner =
          cluster::Ring(options.total_workers, options.ring).Owner(host);
      index = owner - options.first_worker;
      if (index < 0 || index >= options.workers) {
        r.SendError(502, "host " + host + " is owned by worker " +
                             std::to_string(owner) + " on another node");
        return;
      }
    }
    if (!Up(SupervisorJson(), index)) {
      r.SendError(
          503, WorkerName(index) + ", owner of " + host + ", is not running");
      return;
    }
    std::vector<Call> calls = {MakeCall(index, req)};
    Run(&calls);
    r.Send(Forward(calls[0]));
  }

  void Stop(const Responder& r) {
    r.SendJson(200, Json::MakeObject().Set("state", "stopping"));
    if (!view.stop) return;
    // Deferred to its own loop turn: the stop may end the supervisor's
    // loop, which destroys this server, which must not happen inside its
    // own handler.
    struct Deferred {
      uv_timer_t timer;
      std::function<void(const std::string&)> stop;
    };
    auto* d = new Deferred;
    d->stop = view.stop;
    uv_timer_init(loop, &d->timer);
    d->timer.data = d;
    uv_timer_start(
        &d->timer,
        [](uv_timer_t* t) {
          auto* self = static_cast<Deferred*>(t->data);
          auto stop = std::move(self->stop);
          uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) {
            delete static_cast<Deferred*>(h->data);
          });
          stop("api stop");
        },
        0, 0);
  }
};

Result<std::unique_ptr<SupervisorAdmin>> SupervisorAdmin::Start(
    uv_loop_s* loop, const Options& options, View view) {
  // Local workers may lie past the ring (drainers handing over their
  // hosts), so only the counts themselves are checked.
  if (options.workers < 1 || options.total_workers < 1 ||
      options.first_worker < 0) {
    return Status::InvalidArgument(
        "supervisor admin: bad worker counts (workers " +
        std::to_string(options.workers) + ", first " +
        std::to_string(options.first_worker) + ", total " +
        std::to_string(options.total_workers) + ")");
  }
  if (options.admin.port < 0 || options.admin.port > 65535) {
    return Status::InvalidArgument("supervisor admin: bad port " +
                                   std::to_string(options.admin.port));
  }
  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = options;
  impl->view = std::move(view);
  AdminServer::Options ao;
  ao.bind_address = options.admin.address;
  ao.port = static_cast<uint16_t>(options.admin.port);
  ao.token = options.admin.token;
  auto server = AdminServer::Create(loop, ao);
  if (!server.ok()) return server.status();
  impl->server = std::move(server).value();

  Impl* self = impl.get();
  auto route = [&](const char* method, const char* pattern, Handler h) {
    Status s = self->server->Route(method, pattern, std::move(h));
    (void)s;  // literal patterns, tested
  };
  route("GET", "/api/status",
        [self](const Request& q, Responder r) { self->Status(q, r); });
  route("GET", "/metrics",
        [self](const Request& q, Responder r) { self->Metrics(q, r); });
  route("POST", "/api/pause", [self](const Request& q, Responder r) {
    self->Broadcast(q, r, "paused");
  });
  route("POST", "/api/resume", [self](const Request& q, Responder r) {
    self->Broadcast(q, r, "running");
  });
  route("POST", "/api/stop",
        [self](const Request&, Responder r) { self->Stop(r); });
  route("POST", "/api/seeds",
        [self](const Request& q, Responder r) { self->ToFirst(q, r); });
  route("POST", "/api/rules/reload",
        [self](const Request& q, Responder r) { self->RulesReload(q, r); });
  route("POST", "/api/rules/test",
        [self](const Request& q, Responder r) { self->ToFirst(q, r); });
  route("GET", "/api/hosts/{host}",
        [self](const Request& q, Responder r) { self->Host(q, r); });
  route("GET", "/api/docs",
        [self](const Request& q, Responder r) { self->ToFirst(q, r); });

  const std::string& a = options.admin.address;
  const std::string url =
      "http://" + (a.find(':') != std::string::npos ? "[" + a + "]" : a) + ":" +
      std::to_string(impl->server->port());
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir + "/run", ec);
  // A URL file left by a killed worker of an earlier run could name a port
  // that another process has since taken.
  for (int i = 0; i < options.workers; ++i) {
    std::filesystem::remove(options.data_dir + "/run/admin-" +
                                std::to_string(options.first_worker + i) +
                                ".url",
                            ec);
  }
  impl->url = url;
  impl->url_file = options.data_dir + "/run/admin.url";
  const std::string tmp = impl->url_file + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return Status::IOError("supervisor admin: cannot write " + tmp);
  }
  fprintf(f, "%s\n", url.c_str());
  const bool ok = fclose(f) == 0;
  std::filesystem::rename(tmp, impl->url_file, ec);
  if (!ok || ec) {
    return Status::IOError("supervisor admin: cannot write " + impl->url_file);
  }
  impl->paused_pids.assign(static_cast<size_t>(options.workers), -1);
  impl->keeper = new uv_timer_t;
  uv_timer_init(loop, impl->keeper);
  impl->keeper->data = impl.get();
  uv_timer_start(
      impl->keeper,
      [](uv_timer_t* t) { static_cast<Impl*>(t->data)->KeepPaused(); },
      kKeepPausedMs, kKeepPausedMs);
  return std::unique_ptr<SupervisorAdmin>(new SupervisorAdmin(std::move(impl)));
}

SupervisorAdmin::SupervisorAdmin(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

SupervisorAdmin::~SupervisorAdmin() {
  std::error_code ec;
  std::filesystem::remove(impl_->url_file, ec);
}

uint16_t SupervisorAdmin::port() const { return impl_->server->port(); }
const std::string& SupervisorAdmin::url() const { return impl_->url; }

}  // namespace crawld::daemon
