// Fuzz target for the admin server's request path (http/http.h): the
// bytes a client could send, fed to RequestReader exactly as the server
// does, and every body and the raw input to the JSON parser (base/json.h).
//
// Invariants checked (abort on violation):
//  - Feed never consumes more than it is given, and stops only on a whole
//    request or an error;
//  - the requests and the final state are the same whether the input comes
//    in one piece or split at a point taken from the input (TCP may cut a
//    stream anywhere);
//  - an error is one of 400, 413, 431 with a message, and no request
//    exceeds the limits;
//  - for JSON: a parsed value dumps to text that parses back to an equal
//    value, and json::Dump() of any string is valid JSON.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "http/http.h"

namespace {

namespace json = crawld::json;
using crawld::Json;
using crawld::http::Request;
using crawld::http::RequestLimits;
using crawld::http::RequestReader;

void Check(bool ok) {
  if (!ok) std::abort();
}

struct Outcome {
  std::vector<std::string> summaries;  // one per request
  RequestReader::State state = RequestReader::State::kNeedMore;
  int error_status = 0;
};

std::string Summarize(const Request& r, bool keep_alive) {
  std::string s = r.method + '\0' + r.target + '\0' + r.body + '\0';
  for (const auto& [k, v] : r.headers) s += k + ':' + v + '\0';
  for (const auto& [k, v] : r.query) s += k + '=' + v + '\0';
  for (const auto& seg : r.segments) s += seg + '/';
  s += keep_alive ? "K" : "C";
  return s;
}

// Feeds chunks in order, the way a connection does: after each request the
// rest of the chunk is fed again.
Outcome Run(const std::vector<std::string_view>& chunks,
            const RequestLimits& limits) {
  Outcome out;
  RequestReader reader(limits);
  for (std::string_view chunk : chunks) {
    while (!chunk.empty()) {
      const size_t n = reader.Feed(chunk);
      Check(n <= chunk.size());
      chunk.remove_prefix(n);
      const RequestReader::State st = reader.state();
      if (st == RequestReader::State::kError) {
        out.state = st;
        out.error_status = reader.error_status();
        Check(out.error_status == 400 || out.error_status == 413 ||
              out.error_status == 431);
        Check(!reader.error_message().empty());
        return out;
      }
      if (st == RequestReader::State::kRequest) {
        bool keep_alive = false;
        Request req = reader.TakeRequest(&keep_alive);
        Check(req.body.size() <= limits.max_body_bytes);
        Check(req.headers.size() <= limits.max_headers);
        Check(!req.target.empty() && req.target[0] == '/');
        out.summaries.push_back(Summarize(req, keep_alive));
        // JSON bodies are what handlers parse.
        json::Limits jl;
        jl.max_depth = 32;
        crawld::Result<Json> body = json::Parse(req.body, jl);
        if (body.ok()) {
          crawld::Result<Json> again = json::Parse(json::Dump(*body), jl);
          Check(again.ok() && *again == *body);
        }
        if (!keep_alive) return out;  // the server closes here
        continue;
      }
      Check(n > 0 || chunk.empty());  // kNeedMore consumes everything
      Check(chunk.empty());
    }
  }
  out.state = reader.state();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  limits.max_header_bytes = 2048;
  limits.max_headers = 32;
  limits.max_body_bytes = 4096;

  const Outcome whole = Run({input}, limits);
  const size_t cut = size == 0 ? 0 : (data[0] * 131 + data[size - 1]) % size;
  const Outcome split = Run({input.substr(0, cut), input.substr(cut)}, limits);
  Check(whole.summaries == split.summaries);
  Check(whole.state == split.state);
  Check(whole.error_status == split.error_status);

  // The raw bytes as a JSON text too.
  json::Limits jl;
  jl.max_depth = 32;
  crawld::Result<Json> v = json::Parse(input, jl);
  if (v.ok()) {
    crawld::Result<Json> again = json::Parse(json::Dump(*v), jl);
    Check(again.ok() && *again == *v);
  }
  // Dump of an arbitrary string is always valid JSON.
  Check(json::Parse(json::Dump(Json(input)), json::Limits{1 << 20, 2}).ok());
  return 0;
}
