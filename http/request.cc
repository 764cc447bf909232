// http/request.cc: the request side of the admin server: the http-parser
// based RequestReader, target and query decoding, and Response helpers.
// See http.h and docs/API.md.
#include <http_parser.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "base/ascii.h"
#include "http/http.h"
#include "http/internal.h"

namespace crawld::http {

// ---------------------------------------------------------------------------
// HTTP messages

namespace {

// False on a '%' not followed by two hex digits.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = ascii::HexValue(in[i + 1]);
      const int lo = ascii::HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

}  // namespace

std::vector<std::string_view> internal::Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

namespace {

// Fills path, segments and query from target. Returns an error message, or
// "" when the target is good.
std::string ParseTarget(Request* req) {
  const std::string_view target = req->target;
  if (target.empty() || target.front() != '/') {
    return "request target must be an absolute path";
  }
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  req->path = std::string(path);
  for (std::string_view seg : internal::Split(path.substr(1), '/')) {
    std::string decoded;
    if (!PercentDecode(seg, /*plus_is_space=*/false, &decoded)) {
      return "bad percent-encoding in path";
    }
    req->segments.push_back(std::move(decoded));
  }
  if (q == std::string_view::npos) return "";
  for (std::string_view pair : internal::Split(target.substr(q + 1), '&')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), true, &key) ||
        (eq != std::string_view::npos &&
         !PercentDecode(pair.substr(eq + 1), true, &value))) {
      return "bad percent-encoding in query";
    }
    req->query.emplace_back(std::move(key), std::move(value));
  }
  return "";
}

const std::string* FindPair(
    const std::vector<std::pair<std::string, std::string>>& list,
    std::string_view key, bool ignore_case) {
  for (const auto& [k, v] : list) {
    if (ignore_case ? ascii::EqualsIgnoreCase(k, key) : k == key) return &v;
  }
  return nullptr;
}

}  // namespace

const std::string* Request::QueryValue(std::string_view key) const {
  return FindPair(query, key, false);
}
const std::string* Request::Header(std::string_view name) const {
  return FindPair(headers, name, true);
}
const std::string* Request::Param(std::string_view name) const {
  return FindPair(params, name, false);
}
Result<Json> Request::JsonBody(const json::Limits& limits) const {
  if (body.empty()) return Status::InvalidArgument("empty body, JSON expected");
  return json::Parse(body, limits);
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

Response Response::MakeJson(int status, const Json& body) {
  Response r;
  r.status = status;
  r.body = json::Dump(body);
  return r;
}

Response Response::MakeError(int status, std::string_view message) {
  Json body = Json::object();
  body["error"] = message;
  body["status"] = status;
  return MakeJson(status, body);
}

Response Response::MakeText(int status, std::string body,
                            std::string content_type) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = std::move(content_type);
  return r;
}

// ---------------------------------------------------------------------------
// RequestReader

struct RequestReader::Impl {
  explicit Impl(const RequestLimits& l) : limits(l) {
    http_parser_init(&parser, HTTP_REQUEST);
    parser.data = this;
  }

  // Records the first failure; callbacks then return non-zero, which makes
  // http_parser stop with an HPE_CB_* error.
  int Fail(int status, std::string message) {
    if (error_status == 0) {
      error_status = status;
      error_message = std::move(message);
    }
    return -1;
  }

  int CountHeaderBytes(size_t n) {
    header_bytes += n;
    if (header_bytes > limits.max_header_bytes) {
      return Fail(431, "request header larger than " +
                           std::to_string(limits.max_header_bytes) + " bytes");
    }
    return 0;
  }

  static Impl* From(http_parser* p) { return static_cast<Impl*>(p->data); }

  static int OnMessageBegin(http_parser* p) {
    From(p)->started = true;
    return 0;
  }
  static int OnUrl(http_parser* p, const char* at, size_t n) {
    Impl* self = From(p);
    self->req.target.append(at, n);
    return self->CountHeaderBytes(n);
  }
  static int OnHeaderField(http_parser* p, const char* at, size_t n) {
    Impl* self = From(p);
    if (self->in_value || self->req.headers.empty()) {
      // Counted when the section is complete (OnHeadersComplete), not here:
      // this callback's timing depends on how the bytes came in chunks.
      // Memory stays bounded by the raw size limit.
      self->req.headers.emplace_back();
      self->in_value = false;
    }
    std::string& name = self->req.headers.back().first;
    for (size_t i = 0; i < n; ++i) {
      name.push_back(ascii::ToLower(at[i]));
    }
    return self->CountHeaderBytes(n);
  }
  static int OnHeaderValue(http_parser* p, const char* at, size_t n) {
    Impl* self = From(p);
    self->in_value = true;
    self->req.headers.back().second.append(at, n);
    return self->CountHeaderBytes(n);
  }
  static int OnHeadersComplete(http_parser* p) {
    Impl* self = From(p);
    self->headers_done = true;
    Request& req = self->req;
    if (req.headers.size() > self->limits.max_headers) {
      return self->Fail(431, "more than " +
                                 std::to_string(self->limits.max_headers) +
                                 " header fields");
    }
    for (auto& [name, value] : req.headers)
      value = std::string(ascii::TrimHttpSpace(value));
    req.method = http_method_str(static_cast<http_method>(p->method));
    req.http_minor = p->http_minor;
    if (p->http_major != 1) return self->Fail(400, "unsupported HTTP version");
    std::string bad = ParseTarget(&req);
    if (!bad.empty()) return self->Fail(400, std::move(bad));
    if (req.http_minor >= 1) {
      size_t hosts = 0;
      for (const auto& h : req.headers) hosts += h.first == "host";
      // RFC 9112 section 3.2: exactly one Host in an HTTP/1.1 request.
      if (hosts != 1) return self->Fail(400, "exactly one Host header needed");
    }
    // "Connection: upgrade" with an Upgrade header (a websocket handshake,
    // h2c): http-parser sets this before calling us. Answering the request
    // as plain HTTP would read as if the switch had been accepted.
    if (p->upgrade != 0) {
      return self->Fail(400, "protocol upgrade is not supported");
    }
    if (p->content_length != ULLONG_MAX &&
        p->content_length > self->limits.max_body_bytes) {
      return self->Fail(413, "request body larger than " +
                                 std::to_string(self->limits.max_body_bytes) +
                                 " bytes");
    }
    const std::string* expect = req.Header("expect");
    self->expect_continue = expect != nullptr &&
                            ascii::EqualsIgnoreCase(*expect, "100-continue") &&
                            req.http_minor >= 1;
    return 0;
  }
  static int OnBody(http_parser* p, const char* at, size_t n) {
    Impl* self = From(p);
    self->expect_continue = false;
    if (self->req.body.size() + n > self->limits.max_body_bytes) {
      return self->Fail(413, "request body larger than " +
                                 std::to_string(self->limits.max_body_bytes) +
                                 " bytes");
    }
    self->req.body.append(at, n);
    return 0;
  }
  static int OnMessageComplete(http_parser* p) {
    Impl* self = From(p);
    self->keep_alive = http_should_keep_alive(p) != 0 && p->upgrade == 0;
    self->state = State::kRequest;
    // Stop right after this request: the next pipelined one is parsed only
    // after this one is answered.
    http_parser_pause(p, 1);
    return 0;
  }

  static const http_parser_settings kSettings;

  RequestLimits limits;
  http_parser parser;
  State state = State::kNeedMore;
  bool started = false;
  bool in_value = false;
  bool keep_alive = false;
  bool expect_continue = false;
  size_t header_bytes = 0;
  // Bytes of the request line and header section given to http_parser, and
  // whether that section is complete (see Feed).
  size_t raw_header_bytes = 0;
  bool headers_done = false;
  Request req;
  int error_status = 0;
  std::string error_message;
};

const http_parser_settings RequestReader::Impl::kSettings = {
    .on_message_begin = &Impl::OnMessageBegin,
    .on_url = &Impl::OnUrl,
    .on_status = nullptr,
    .on_header_field = &Impl::OnHeaderField,
    .on_header_value = &Impl::OnHeaderValue,
    .on_headers_complete = &Impl::OnHeadersComplete,
    .on_body = &Impl::OnBody,
    .on_message_complete = &Impl::OnMessageComplete,
    .on_chunk_header = nullptr,
    .on_chunk_complete = nullptr,
};

RequestReader::RequestReader(const RequestLimits& limits)
    : impl_(std::make_unique<Impl>(limits)) {}
RequestReader::~RequestReader() = default;

size_t RequestReader::Feed(std::string_view data) {
  Impl& im = *impl_;
  // A zero length tells http_parser the peer closed: never send one.
  if (data.empty() || im.state != State::kNeedMore) return 0;
  if (!im.started) {
    // http_parser skips CR/LF before a request without any callback; make
    // those bytes count as the start so that a stream of them times out.
    im.started = true;
  }
  // The request line and header section are limited in raw bytes before
  // http_parser sees them, so that which error a request both too large and
  // malformed gets does not depend on how its bytes arrived in chunks
  // (http_parser reports a token to its callbacks at the token's end or at
  // the end of a chunk, whichever comes first).
  const std::string_view given = data;
  bool capped = false;
  if (!im.headers_done) {
    const size_t allowance =
        im.limits.max_header_bytes > im.raw_header_bytes
            ? im.limits.max_header_bytes - im.raw_header_bytes
            : 0;
    if (data.size() > allowance) {
      data = data.substr(0, allowance);
      capped = true;
    }
  }
  const size_t n = data.empty()
                       ? 0
                       : http_parser_execute(&im.parser, &Impl::kSettings,
                                             data.data(), data.size());
  if (!im.headers_done) im.raw_header_bytes += n;
  const http_errno err = HTTP_PARSER_ERRNO(&im.parser);
  if (err == HPE_PAUSED) {
    http_parser_pause(&im.parser, 0);
    return n;
  }
  if (err != HPE_OK) {
    im.state = State::kError;
    if (im.error_status == 0) {
      im.error_status = err == HPE_HEADER_OVERFLOW ? 431 : 400;
      im.error_message =
          std::string("malformed request: ") + http_errno_description(err);
    }
    return n;
  }
  if (capped && !im.headers_done) {
    im.state = State::kError;
    im.Fail(431, "request header larger than " +
                     std::to_string(im.limits.max_header_bytes) + " bytes");
    return n;
  }
  if (capped && im.state == State::kNeedMore && im.parser.upgrade == 0) {
    // The header section ended inside the allowance: the body that followed
    // it in this chunk was cut off with the cap, and is read now.
    return n + Feed(given.substr(n));
  }
  if (im.parser.upgrade != 0 && im.state != State::kRequest) {
    im.state = State::kError;
    im.error_status = 400;
    im.error_message = "protocol upgrade is not supported";
  }
  return n;
}

RequestReader::State RequestReader::state() const { return impl_->state; }
bool RequestReader::started() const { return impl_->started; }
int RequestReader::error_status() const { return impl_->error_status; }
const std::string& RequestReader::error_message() const {
  return impl_->error_message;
}

Request RequestReader::TakeRequest(bool* keep_alive) {
  Impl& im = *impl_;
  Request out = std::move(im.req);
  im.req = Request();
  *keep_alive = im.keep_alive;
  im.state = State::kNeedMore;
  im.started = false;
  im.in_value = false;
  im.expect_continue = false;
  im.header_bytes = 0;
  im.raw_header_bytes = 0;
  im.headers_done = false;
  return out;
}

bool RequestReader::TakeExpectContinue() {
  Impl& im = *impl_;
  const bool send = im.expect_continue && im.state == State::kNeedMore;
  im.expect_continue = false;
  return send;
}

}  // namespace crawld::http
