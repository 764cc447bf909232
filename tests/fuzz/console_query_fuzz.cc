// Fuzz target for what the web console's endpoints read from a request
// (issue 18): the query strings of GET /api/hosts and GET /api/docs/record
// (daemon/console_api.h), parsed from a request line exactly as the admin
// server parses it (http::RequestReader), and the browser checks of every
// request (http::CheckBrowserRequest, CheckJsonContentType) on Host,
// Origin, Sec-Fetch-Site and Content-Type values taken from the input.
//
// Input: up to four lines: query string, Host, Origin, Sec-Fetch-Site /
// Content-Type (split at the first ' ').
//
// Invariants checked (abort on violation):
//  - a parsed host query has a limit in 1..1000, a q of at most 256 bytes,
//    a known state or none; sorting rows keeps at most `limit` of them, in
//    the query's order;
//  - a parsed record query names a plain *.warc(.gz) file (no '/', no
//    leading '.') and a length in 1..8 MiB;
//  - the browser checks answer 0, 403 or 415 only, always with a reason
//    when refusing; a POST that passes has no cross-site Sec-Fetch-Site,
//    and a JSON Content-Type; GET never gets 415.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/console_api.h"
#include "http/http.h"

namespace {

using crawld::Json;
using crawld::http::Request;
using crawld::http::RequestReader;

void Check(bool ok) {
  if (!ok) std::abort();
}

std::vector<std::string_view> Lines(std::string_view in) {
  std::vector<std::string_view> out;
  while (out.size() < 3) {
    const size_t nl = in.find('\n');
    if (nl == std::string_view::npos) break;
    out.push_back(in.substr(0, nl));
    in.remove_prefix(nl + 1);
  }
  out.push_back(in);
  while (out.size() < 4) out.emplace_back();
  return out;
}

bool ParseRequest(const std::string& text, Request* out) {
  RequestReader reader(crawld::http::RequestLimits{});
  reader.Feed(text);
  if (reader.state() != RequestReader::State::kRequest) return false;
  bool keep_alive = false;
  *out = reader.TakeRequest(&keep_alive);
  return true;
}

void CheckQueries(const Request& req) {
  auto hq = crawld::daemon::ParseHostQuery(req.query);
  if (hq.ok()) {
    Check(hq->limit >= 1 && hq->limit <= crawld::daemon::kMaxHostRows);
    Check(hq->q.size() <= crawld::daemon::kMaxHostQueryBytes);
    const auto& names = crawld::daemon::HostStateNames();
    Check(hq->state.empty() ||
          std::find(names.begin(), names.end(), hq->state) != names.end());
    std::vector<Json> rows;
    for (int i = 0; i < 7; ++i) {
      rows.push_back({{"host", "h" + std::to_string((i * 5) % 7)},
                      {"state", "ready"},
                      {"queued", (i * 3) % 4},
                      {"fetched", i},
                      {"errors", i % 2},
                      {"next_fetch_in_ms", 10 * (i % 3)},
                      {"credit", 0.5 * i},
                      {"crawl_delay_ms", 0},
                      {"pages", i}});
    }
    crawld::daemon::SortHostRows(*hq, &rows);
    Check(rows.size() <= hq->limit);
  }
  auto rq = crawld::daemon::ParseRecordQuery(req.query);
  if (rq.ok()) {
    Check(!rq->warc.empty() && rq->warc.find('/') == std::string::npos &&
          rq->warc.front() != '.');
    Check(rq->length >= 1 && rq->length <= crawld::daemon::kMaxRecordLength);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> l = Lines(input);
  const std::string query(l[0]);
  const std::string host(l[1]);
  const std::string origin(l[2]);
  std::string_view rest = l[3];
  const size_t sp = rest.find(' ');
  const std::string site(rest.substr(0, sp));
  const std::string type(sp == std::string_view::npos ? std::string_view()
                                                      : rest.substr(sp + 1));

  for (const char* method : {"GET", "POST"}) {
    std::string text = std::string(method) + " /api/hosts?" + query +
                       " HTTP/1.1\r\nHost: " + host + "\r\n";
    if (!origin.empty()) text += "Origin: " + origin + "\r\n";
    if (!site.empty()) text += "Sec-Fetch-Site: " + site + "\r\n";
    if (!type.empty()) text += "Content-Type: " + type + "\r\n";
    text += "Content-Length: 0\r\n\r\n";
    Request req;
    if (!ParseRequest(text, &req)) continue;
    CheckQueries(req);
    for (bool token : {false, true}) {
      std::string why;
      const int browser = crawld::http::CheckBrowserRequest(req, token, &why);
      Check(browser == 0 || browser == 403);
      Check(browser == 0 || !why.empty());
      why.clear();
      const int typed = crawld::http::CheckJsonContentType(req, &why);
      Check(typed == 0 || typed == 415);
      Check(typed == 0 || !why.empty());
      if (req.method == "GET") Check(typed == 0);
      if (req.method == "POST" && browser == 0) {
        const std::string* s = req.Header("sec-fetch-site");
        Check(s == nullptr || *s == "same-origin" || *s == "none");
      }
    }
  }
  return 0;
}
