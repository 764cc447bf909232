// The admin server: JSON, the http-parser based request reader, routing and
// the per-connection state machine on libuv. See admin.h and docs/API.md.
#include "daemon/admin.h"

#include <http_parser.h>
#include <uv.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <system_error>

namespace crawld::daemon {

// ---------------------------------------------------------------------------
// JSON

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs,
// no surrogates, nothing past U+10FFFF), or 0.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // U+D800..U+DFFF are not characters
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD keeps the output valid JSON
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendJsonNumber(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ec == std::errc() ? end : buf);
}

void DumpTo(std::string* out, const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull:
      out->append("null");
      break;
    case Json::Type::kBool:
      out->append(v.as_bool() ? "true" : "false");
      break;
    case Json::Type::kNumber:
      AppendJsonNumber(out, v.as_number());
      break;
    case Json::Type::kString:
      AppendJsonString(out, v.as_string());
      break;
    case Json::Type::kArray: {
      out->push_back('[');
      bool first = true;
      for (const Json& item : v.items()) {
        if (!first) out->push_back(',');
        first = false;
        DumpTo(out, item);
      }
      out->push_back(']');
      break;
    }
    case Json::Type::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, value] : v.members()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(out, key);
        out->push_back(':');
        DumpTo(out, value);
      }
      out->push_back('}');
      break;
    }
  }
}

}  // namespace

// Recursive descent; the depth limit bounds the recursion.
class JsonParser {
 public:
  JsonParser(std::string_view text, const JsonLimits& limits)
      : s_(text), limits_(limits) {}

  Result<Json> Run() {
    if (s_.size() > limits_.max_bytes) {
      return Status::ResourceExhausted("JSON text larger than " +
                                       std::to_string(limits_.max_bytes) +
                                       " bytes");
    }
    Json value;
    SkipSpace();
    Status st = ParseValue(&value, 0);
    if (!st.ok()) return st;
    SkipSpace();
    if (pos_ != s_.size()) return Error("trailing characters");
    return value;
  }

 private:
  Status Error(std::string_view what) const {
    return Status::InvalidArgument("JSON: " + std::string(what) + " at byte " +
                                   std::to_string(pos_));
  }

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status ParseValue(Json* out, int depth) {
    if (pos_ >= s_.size()) return Error("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{' || c == '[') {
      if (depth + 1 > limits_.max_depth) {
        return Status::ResourceExhausted("JSON nested deeper than " +
                                         std::to_string(limits_.max_depth) +
                                         " at byte " + std::to_string(pos_));
      }
      return c == '{' ? ParseObject(out, depth + 1)
                      : ParseArray(out, depth + 1);
    }
    if (c == '"') {
      std::string s;
      Status st = ParseString(&s);
      if (!st.ok()) return st;
      *out = Json(std::move(s));
      return Status::Ok();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(out);
    if (Literal("true")) {
      *out = Json(true);
    } else if (Literal("false")) {
      *out = Json(false);
    } else if (Literal("null")) {
      *out = Json();
    } else {
      return Error("unexpected character");
    }
    return Status::Ok();
  }

  Status ParseObject(Json* out, int depth) {
    ++pos_;  // '{'
    Json::Object members;
    std::set<std::string, std::less<>> keys;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      *out = Json::MakeObject();
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected key");
      const size_t key_pos = pos_;
      std::string key;
      Status st = ParseString(&key);
      if (!st.ok()) return st;
      if (!keys.insert(key).second) {
        pos_ = key_pos;
        return Error("duplicate key");
      }
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      SkipSpace();
      Json value;
      st = ParseValue(&value, depth);
      if (!st.ok()) return st;
      members.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        break;
      }
      return Error("expected ',' or '}'");
    }
    Json obj = Json::MakeObject();
    for (auto& [k, v] : members) obj.Set(k, std::move(v));
    *out = std::move(obj);
    return Status::Ok();
  }

  Status ParseArray(Json* out, int depth) {
    ++pos_;  // '['
    Json::Array items;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      *out = Json(std::move(items));
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      Json value;
      Status st = ParseValue(&value, depth);
      if (!st.ok()) return st;
      items.push_back(std::move(value));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        break;
      }
      return Error("expected ',' or ']'");
    }
    *out = Json(std::move(items));
    return Status::Ok();
  }

  bool Digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }

  // RFC 8259 section 6 grammar, checked here because from_chars accepts
  // more (leading zeros, "inf", hex floats).
  Status ParseNumber(Json* out) {
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return Error("invalid number");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!Digits()) return Error("invalid number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!Digits()) return Error("invalid number");
    }
    double v = 0;
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last) {
      pos_ = start;
      return Error("number out of range");
    }
    *out = Json(v);
    return Status::Ok();
  }

  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  Status ParseString(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= s_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return Status::Ok();
      }
      if (c < 0x20) return Error("control character in string");
      if (c >= 0x80) {
        const size_t n = Utf8SequenceLength(s_, pos_);
        if (n == 0) return Error("invalid UTF-8");
        out->append(s_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) return Error("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return Error("invalid \\u escape");
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (!Literal("\\u") || !Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) {
              return Error("lone surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          --pos_;
          return Error("invalid escape");
      }
    }
  }

  std::string_view s_;
  JsonLimits limits_;
  size_t pos_ = 0;
};

Result<Json> Json::Parse(std::string_view text, const JsonLimits& limits) {
  return JsonParser(text, limits).Run();
}

std::string Json::Dump() const {
  std::string out;
  DumpTo(&out, *this);
  return out;
}

const Json* Json::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : members()) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json& Json::Set(std::string_view key, Json value) {
  Object& obj = std::get<Object>(v_);
  for (auto& [k, v] : obj) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  obj.emplace_back(std::string(key), std::move(value));
  return *this;
}

Json& Json::Push(Json value) {
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

// ---------------------------------------------------------------------------
// HTTP messages

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// False on a '%' not followed by two hex digits.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]);
      const int lo = HexValue(in[i + 2]);
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

std::vector<std::string_view> Split(std::string_view s, char sep) {
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

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

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
  for (std::string_view seg : Split(path.substr(1), '/')) {
    std::string decoded;
    if (!PercentDecode(seg, /*plus_is_space=*/false, &decoded)) {
      return "bad percent-encoding in path";
    }
    req->segments.push_back(std::move(decoded));
  }
  if (q == std::string_view::npos) return "";
  for (std::string_view pair : Split(target.substr(q + 1), '&')) {
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
    if (ignore_case ? EqualsIgnoreCase(k, key) : k == key) return &v;
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
Result<Json> Request::JsonBody(const JsonLimits& limits) const {
  if (body.empty()) return Status::InvalidArgument("empty body, JSON expected");
  return Json::Parse(body, limits);
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
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

Response Response::MakeJson(int status, const Json& body) {
  Response r;
  r.status = status;
  r.body = body.Dump();
  return r;
}

Response Response::MakeError(int status, std::string_view message) {
  Json body = Json::MakeObject();
  body.Set("error", Json(message)).Set("status", Json(status));
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
      name.push_back(
          static_cast<char>(std::tolower(static_cast<unsigned char>(at[i]))));
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
    for (auto& [name, value] : req.headers) value = std::string(Trim(value));
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
    if (p->content_length != ULLONG_MAX &&
        p->content_length > self->limits.max_body_bytes) {
      return self->Fail(413, "request body larger than " +
                                 std::to_string(self->limits.max_body_bytes) +
                                 " bytes");
    }
    const std::string* expect = req.Header("expect");
    self->expect_continue = expect != nullptr &&
                            EqualsIgnoreCase(*expect, "100-continue") &&
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

// ---------------------------------------------------------------------------
// The server

namespace {

bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  const unsigned char* b = a6->sin6_addr.s6_addr;
  static constexpr unsigned char kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0,    0,
                                                0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(b, b + 16, kLoop)) return true;
  return std::equal(b, b + 12, kMapped) && b[12] == 127;
}

// Compares in time that depends only on the expected token's length, so a
// client cannot find the token byte by byte from response times.
bool TokenMatches(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : 0;
    diff |= static_cast<unsigned char>(g ^ expected[i]);
  }
  return diff == 0;
}

bool HasCrOrLf(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

std::string HttpDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const size_t n =
      std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

std::string Serialize(const Response& r, bool close, bool head) {
  std::string out;
  out.reserve(256 + (head ? 0 : r.body.size()));
  std::string_view reason = StatusReason(r.status);
  out.append("HTTP/1.1 ").append(std::to_string(r.status)).push_back(' ');
  out.append(reason.empty() ? "Unknown" : reason).append("\r\n");
  out.append("Date: ").append(HttpDate()).append("\r\n");
  if (!HasCrOrLf(r.content_type)) {
    out.append("Content-Type: ").append(r.content_type).append("\r\n");
  }
  out.append("Content-Length: ")
      .append(std::to_string(r.body.size()))
      .append("\r\n");
  out.append("Cache-Control: no-store\r\n");
  out.append(close ? "Connection: close\r\n" : "Connection: keep-alive\r\n");
  for (const auto& [name, value] : r.headers) {
    // A handler echoing client input must not be able to split the response.
    if (name.empty() || HasCrOrLf(name) || HasCrOrLf(value) ||
        name.find(':') != std::string::npos) {
      continue;
    }
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out.append("\r\n");
  if (!head) out.append(r.body);
  return out;
}

struct RouteEntry {
  std::string method;
  std::string pattern;
  // Literal segments, or "{name}" captures (stored as name, capture=true).
  std::vector<std::pair<std::string, bool>> segments;
  int literals = 0;
  Handler handler;
};

class Conn;

}  // namespace

struct AdminServer::Impl {
  uv_loop_t* loop = nullptr;
  Options options;
  uv_tcp_t* listener = nullptr;  // heap: freed by its close callback
  uint16_t port = 0;
  std::vector<RouteEntry> routes;
  std::map<Conn*, std::shared_ptr<Conn>> conns;

  ~Impl();
  void OnConnection();
  void Dispatch(Conn* conn, uint64_t seq, Request req);
  void RejectConnection();
};

namespace {

// One client connection. Phases, in order for each request:
//   kReading -> kHandling (a handler holds a Responder) -> kWriting ->
//   kReading again on keep-alive, or kLingering (shut down our side, drain
//   the client's until EOF or a short timer) -> closed.
// One timer serves every phase; timer_kind_ says what its expiry means.
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  explicit Conn(AdminServer::Impl* server)
      : server_(server), reader_(server->options.request) {}
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Accepts from the listener and starts reading. On failure the caller
  // must Close().
  bool Start(uv_stream_t* listener) {
    uv_tcp_init(server_->loop, &tcp_);
    uv_timer_init(server_->loop, &timer_);
    tcp_.data = this;
    timer_.data = this;
    open_handles_ = 2;
    if (uv_accept(listener, Stream()) != 0) return false;
    if (!StartReading()) return false;
    UpdateReadTimer();
    return true;
  }

  // Closes at once; idempotent. The object lives on until both handles'
  // close callbacks have run.
  void Close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    self_ = shared_from_this();
    uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &Conn::OnHandleClosed);
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_), &Conn::OnHandleClosed);
    if (server_ != nullptr) {
      AdminServer::Impl* server = server_;
      server_ = nullptr;
      server->conns.erase(this);  // self_ keeps us alive
    }
  }

  // The server is going away: no more calls into it.
  void Detach() {
    server_ = nullptr;
    Close();
  }

  // Sends r for request seq; see Responder::Send.
  bool Reply(uint64_t seq, const Response& r, bool close) {
    if (server_ == nullptr || phase_ != Phase::kHandling || seq != seq_) {
      return false;
    }
    const bool close_after = close || !keep_alive_;
    out_ = Serialize(r, close_after, head_);
    if (server_->options.on_response) {
      AccessRecord rec;
      rec.method = method_;
      rec.path = path_;
      rec.status = r.status;
      rec.body_bytes = r.body.size();
      rec.duration_ms = uv_now(server_->loop) - started_ms_;
      server_->options.on_response(rec);
      if (server_ == nullptr || phase_ != Phase::kHandling) return true;
    }
    phase_ = Phase::kWriting;
    close_after_write_ = close_after;
    write_req_.data = this;
    uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
    if (uv_write(&write_req_, Stream(), &buf, 1, &Conn::OnWritten) != 0) {
      Close();
      return true;  // the response was accepted; the peer is just gone
    }
    ArmTimer(server_->options.request_timeout_ms, TimerKind::kWrite);
    return true;
  }

  uint64_t seq() const { return seq_; }

 private:
  enum class Phase { kReading, kHandling, kWriting, kLingering, kClosed };
  enum class TimerKind { kNone, kIdle, kRequest, kHandler, kWrite, kLinger };

  uv_stream_t* Stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }

  bool StartReading() {
    if (reading_) return true;
    if (uv_read_start(Stream(), &Conn::OnAlloc, &Conn::OnRead) != 0) {
      return false;
    }
    reading_ = true;
    return true;
  }
  void StopReading() {
    if (!reading_) return;
    uv_read_stop(Stream());
    reading_ = false;
  }

  void ArmTimer(uint64_t ms, TimerKind kind) {
    timer_kind_ = kind;
    uv_timer_start(&timer_, &Conn::OnTimer, ms, 0);
  }

  // Idle until a byte of the next request arrives, then the request clock,
  // which is armed once per request and not pushed back by more bytes.
  void UpdateReadTimer() {
    if (server_ == nullptr) return;
    if (reader_.started() || inpos_ < in_.size()) {
      if (timer_kind_ != TimerKind::kRequest) {
        ArmTimer(server_->options.request_timeout_ms, TimerKind::kRequest);
      }
    } else if (timer_kind_ != TimerKind::kIdle) {
      ArmTimer(server_->options.idle_timeout_ms, TimerKind::kIdle);
    }
  }

  void ProcessInput() {
    while (phase_ == Phase::kReading && inpos_ < in_.size()) {
      const size_t n = reader_.Feed(std::string_view(in_).substr(inpos_));
      inpos_ += n;
      const RequestReader::State st = reader_.state();
      if (st == RequestReader::State::kError) {
        SendFinal(reader_.error_status(), reader_.error_message());
        return;
      }
      if (st == RequestReader::State::kRequest) {
        bool keep_alive = false;
        Request req = reader_.TakeRequest(&keep_alive);
        Dispatch(std::move(req), keep_alive);
      } else if (reader_.TakeExpectContinue()) {
        SendContinue();
      }
    }
    if (phase_ == Phase::kClosed) return;
    in_.erase(0, inpos_);
    inpos_ = 0;
    if (phase_ == Phase::kReading) UpdateReadTimer();
  }

  void SendContinue() {
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    continue_req_.data = this;
    uv_buf_t buf =
        uv_buf_init(const_cast<char*>(kContinue), sizeof(kContinue) - 1);
    // Ordered before any later write on the stream; a failure shows up
    // there too, so the callback has nothing to do.
    if (uv_write(&continue_req_, Stream(), &buf, 1, [](uv_write_t*, int) {}) !=
        0) {
      Close();
    }
  }

  void Dispatch(Request req, bool keep_alive) {
    phase_ = Phase::kHandling;
    method_ = req.method;
    path_ = req.path;
    started_ms_ = uv_now(server_->loop);
    keep_alive_ = keep_alive;
    head_ = req.method == "HEAD";
    StopReading();
    ++seq_;
    ArmTimer(server_->options.handler_timeout_ms, TimerKind::kHandler);
    // Keep this alive even if the handler's response closes it.
    std::shared_ptr<Conn> keep = shared_from_this();
    server_->Dispatch(this, seq_, std::move(req));
  }

  // An error on the connection's byte stream: answer it and close.
  void SendFinal(int status, std::string_view message) {
    phase_ = Phase::kHandling;
    method_.clear();
    path_.clear();
    started_ms_ = uv_now(server_->loop);
    keep_alive_ = false;
    head_ = false;
    StopReading();
    ++seq_;
    Reply(seq_, Response::MakeError(status, message), /*close=*/true);
  }

  void AfterWrite(int status) {
    if (phase_ == Phase::kClosed) return;  // cancelled by Close()
    out_.clear();
    if (status < 0 || server_ == nullptr) {
      Close();
      return;
    }
    if (close_after_write_) {
      BeginLinger();
      return;
    }
    phase_ = Phase::kReading;
    timer_kind_ = TimerKind::kNone;
    if (!StartReading()) {
      Close();
      return;
    }
    ProcessInput();
  }

  // Closing right after the response would reset the connection if the
  // client is still sending (an oversized body), and a reset can destroy
  // the response before the client reads it. So: shut down our side, read
  // and drop until the client closes, for a bounded time.
  void BeginLinger() {
    phase_ = Phase::kLingering;
    shutdown_req_.data = this;
    if (uv_shutdown(&shutdown_req_, Stream(), &Conn::OnShutdown) != 0 ||
        !StartReading()) {
      Close();
      return;
    }
    ArmTimer(std::min<uint64_t>(server_->options.request_timeout_ms, 2000),
             TimerKind::kLinger);
  }

  void Expire() {
    switch (timer_kind_) {
      case TimerKind::kRequest:
        if (phase_ == Phase::kReading) {
          SendFinal(408, "request not received in time");
          return;
        }
        break;
      case TimerKind::kHandler:
        if (phase_ == Phase::kHandling) {
          Reply(seq_,
                Response::MakeError(503, "handler did not respond in time"),
                /*close=*/true);
          return;
        }
        break;
      default:
        break;
    }
    Close();
  }

  static void OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
    Conn* c = static_cast<Conn*>(h->data);
    *buf = uv_buf_init(c->read_buf_, sizeof(c->read_buf_));
  }

  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
    Conn* c = static_cast<Conn*>(s->data);
    if (nread == 0 || c->phase_ == Phase::kClosed) return;
    if (nread < 0) {
      // EOF or error: with a partial request there is no one to answer.
      c->Close();
      return;
    }
    if (c->phase_ != Phase::kReading) return;  // lingering: drop
    c->in_.append(c->read_buf_, static_cast<size_t>(nread));
    c->ProcessInput();
  }

  static void OnWritten(uv_write_t* req, int status) {
    static_cast<Conn*>(req->data)->AfterWrite(status);
  }

  static void OnShutdown(uv_shutdown_t* req, int status) {
    Conn* c = static_cast<Conn*>(req->data);
    if (status < 0 && c->phase_ != Phase::kClosed) c->Close();
  }

  static void OnTimer(uv_timer_t* t) { static_cast<Conn*>(t->data)->Expire(); }

  static void OnHandleClosed(uv_handle_t* h) {
    Conn* c = static_cast<Conn*>(h->data);
    if (--c->open_handles_ == 0) {
      // Drops the last reference: c is destroyed when `last` goes.
      std::shared_ptr<Conn> last = std::move(c->self_);
    }
  }

  AdminServer::Impl* server_;
  uv_tcp_t tcp_{};
  uv_timer_t timer_{};
  uv_write_t write_req_{};
  uv_write_t continue_req_{};
  uv_shutdown_t shutdown_req_{};
  int open_handles_ = 0;
  std::shared_ptr<Conn> self_;  // set while closing

  Phase phase_ = Phase::kReading;
  TimerKind timer_kind_ = TimerKind::kNone;
  bool reading_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  bool close_after_write_ = false;
  uint64_t seq_ = 0;
  std::string method_, path_;  // of the request being handled
  uint64_t started_ms_ = 0;
  RequestReader reader_;
  std::string in_;  // received, not yet parsed (pipelined requests)
  size_t inpos_ = 0;
  std::string out_;  // the response being written
  char read_buf_[16 * 1024];
};

}  // namespace

// Shared by every copy of one Responder.
struct Responder::Pending {
  Pending(std::weak_ptr<Conn> c, uint64_t s) : conn(std::move(c)), seq(s) {}
  ~Pending() {
    if (done) return;
    if (std::shared_ptr<Conn> c = conn.lock()) {
      c->Reply(seq, Response::MakeError(500, "the handler dropped the request"),
               /*close=*/false);
    }
  }
  std::weak_ptr<Conn> conn;
  uint64_t seq;
  bool done = false;
};

bool Responder::Send(Response response) const {
  if (!pending_ || pending_->done) return false;
  pending_->done = true;
  std::shared_ptr<Conn> c = pending_->conn.lock();
  return c != nullptr && c->Reply(pending_->seq, response, /*close=*/false);
}

namespace {

void OnListenerClosed(uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); }

void OnNewConnection(uv_stream_t* listener, int status) {
  if (status < 0) return;
  static_cast<AdminServer::Impl*>(listener->data)->OnConnection();
}

// Matches req.segments against a route; fills params on success.
bool MatchRoute(const RouteEntry& route, const std::vector<std::string>& segs,
                std::vector<std::pair<std::string, std::string>>* params) {
  if (route.segments.size() != segs.size()) return false;
  std::vector<std::pair<std::string, std::string>> found;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& [text, capture] = route.segments[i];
    if (capture) {
      if (segs[i].empty()) return false;
      found.emplace_back(text, segs[i]);
    } else if (text != segs[i]) {
      return false;
    }
  }
  if (params != nullptr) *params = std::move(found);
  return true;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

AdminServer::Impl::~Impl() {
  for (auto& [raw, conn] : std::map<Conn*, std::shared_ptr<Conn>>(conns)) {
    conn->Detach();
  }
  conns.clear();
  if (listener != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(listener), &OnListenerClosed);
  }
}

void AdminServer::Impl::RejectConnection() {
  auto* tcp = new uv_tcp_t;
  uv_tcp_init(loop, tcp);
  if (uv_accept(reinterpret_cast<uv_stream_t*>(listener),
                reinterpret_cast<uv_stream_t*>(tcp)) == 0) {
    // Best effort and never blocking: a fresh socket's send buffer takes
    // this at once, and if not the client just sees the close.
    std::string msg = Serialize(
        Response::MakeError(503, "too many connections"), true, false);
    uv_buf_t buf = uv_buf_init(msg.data(), static_cast<unsigned>(msg.size()));
    uv_try_write(reinterpret_cast<uv_stream_t*>(tcp), &buf, 1);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(tcp), &OnListenerClosed);
  if (options.on_response) {
    AccessRecord rec;
    rec.status = 503;
    options.on_response(rec);
  }
}

void AdminServer::Impl::OnConnection() {
  if (conns.size() >= options.max_connections) {
    RejectConnection();
    return;
  }
  auto conn = std::make_shared<Conn>(this);
  conns.emplace(conn.get(), conn);
  if (!conn->Start(reinterpret_cast<uv_stream_t*>(listener))) conn->Close();
}

void AdminServer::Impl::Dispatch(Conn* conn, uint64_t seq, Request req) {
  const bool is_read = req.method == "GET" || req.method == "HEAD";
  if (!options.token.empty() && (options.token_for_reads || !is_read)) {
    const std::string* auth = req.Header("authorization");
    std::string_view given;
    if (auth != nullptr && auth->size() > 7 &&
        EqualsIgnoreCase(std::string_view(*auth).substr(0, 7), "bearer ")) {
      given = Trim(std::string_view(*auth).substr(7));
    }
    if (!TokenMatches(given, options.token)) {
      Response r = Response::MakeError(
          401, auth == nullptr ? "missing bearer token" : "invalid token");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"crawld\"");
      conn->Reply(seq, r, false);
      return;
    }
  }

  const RouteEntry* best = nullptr;
  std::set<std::string> allowed;
  for (const RouteEntry& route : routes) {
    if (!MatchRoute(route, req.segments, nullptr)) continue;
    allowed.insert(route.method);
    if (route.method == "GET") allowed.insert("HEAD");
    const bool method_ok = route.method == req.method ||
                           (req.method == "HEAD" && route.method == "GET");
    if (method_ok &&
        (best == nullptr || route.literals > best->literals ||
         (route.literals == best->literals && route.method == req.method &&
          best->method != req.method))) {
      best = &route;
    }
  }
  if (best == nullptr) {
    if (allowed.empty()) {
      conn->Reply(seq,
                  Response::MakeError(404, "no such endpoint: " + req.path),
                  false);
      return;
    }
    std::string allow;
    for (const std::string& m : allowed) {
      if (!allow.empty()) allow += ", ";
      allow += m;
    }
    Response r = Response::MakeError(
        405, "method " + req.method + " not allowed on " + req.path);
    r.headers.emplace_back("Allow", allow);
    conn->Reply(seq, r, false);
    return;
  }
  MatchRoute(*best, req.segments, &req.params);
  // A copy: the handler may add routes, which would move the vector.
  const Handler handler = best->handler;
  Responder responder(
      std::make_shared<Responder::Pending>(conn->weak_from_this(), seq));
  try {
    handler(req, std::move(responder));
  } catch (...) {
    // Exceptions must not cross into libuv; the Pending left behind by the
    // handler (if it did not answer) reports 500 when released.
  }
}

Result<std::unique_ptr<AdminServer>> AdminServer::Create(
    uv_loop_s* loop, const Options& options) {
  if (loop == nullptr) return Status::InvalidArgument("admin: no loop");
  if (options.max_connections == 0 || options.request_timeout_ms == 0 ||
      options.idle_timeout_ms == 0 || options.handler_timeout_ms == 0 ||
      options.request.max_header_bytes == 0 ||
      options.request.max_headers == 0 || options.backlog <= 0) {
    return Status::InvalidArgument("admin: limits and timeouts must be > 0");
  }
  sockaddr_storage addr{};
  if (uv_ip4_addr(options.bind_address.c_str(), options.port,
                  reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(options.bind_address.c_str(), options.port,
                  reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    return Status::InvalidArgument("admin: bind address '" +
                                   options.bind_address +
                                   "' is not a numeric IP address");
  }
  if (!IsLoopback(addr) && options.token.empty()) {
    return Status::FailedPrecondition(
        "admin: refusing to listen on non-loopback address " +
        options.bind_address + " without a token");
  }

  auto impl = std::make_unique<Impl>();
  impl->loop = loop;
  impl->options = options;
  impl->listener = new uv_tcp_t;
  uv_tcp_init(loop, impl->listener);
  impl->listener->data = impl.get();
  int rc =
      uv_tcp_bind(impl->listener, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(impl->listener),
                   options.backlog, &OnNewConnection);
  }
  if (rc != 0) {
    // ~Impl closes the listener.
    return Status::IOError("admin: cannot listen on " + options.bind_address +
                           ":" + std::to_string(options.port) + ": " +
                           uv_strerror(rc));
  }
  sockaddr_storage bound{};
  int len = sizeof(bound);
  uv_tcp_getsockname(impl->listener, reinterpret_cast<sockaddr*>(&bound), &len);
  impl->port = ntohs(bound.ss_family == AF_INET
                         ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                         : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return std::unique_ptr<AdminServer>(new AdminServer(std::move(impl)));
}

AdminServer::AdminServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AdminServer::~AdminServer() = default;

Status AdminServer::Route(std::string_view method, std::string_view pattern,
                          Handler handler) {
  if (method.empty() || !handler) {
    return Status::InvalidArgument("admin: route needs a method and handler");
  }
  if (pattern.empty() || pattern.front() != '/') {
    return Status::InvalidArgument("admin: route pattern '" +
                                   std::string(pattern) +
                                   "' must start with '/'");
  }
  RouteEntry entry;
  entry.method = std::string(method);
  entry.pattern = std::string(pattern);
  std::set<std::string_view> names;
  for (std::string_view seg : Split(pattern.substr(1), '/')) {
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      std::string_view name = seg.substr(1, seg.size() - 2);
      if (!IsIdentifier(name) || !names.insert(name).second) {
        return Status::InvalidArgument("admin: bad parameter '" +
                                       std::string(seg) + "' in route " +
                                       std::string(pattern));
      }
      entry.segments.emplace_back(std::string(name), true);
    } else {
      if (seg.find_first_of("{}%?") != std::string_view::npos) {
        return Status::InvalidArgument("admin: bad segment '" +
                                       std::string(seg) + "' in route " +
                                       std::string(pattern));
      }
      entry.segments.emplace_back(std::string(seg), false);
      ++entry.literals;
    }
  }
  for (const RouteEntry& r : impl_->routes) {
    if (r.method != entry.method || r.segments.size() != entry.segments.size())
      continue;
    bool same = true;
    for (size_t i = 0; i < r.segments.size() && same; ++i) {
      // Two captures at the same place match the same paths.
      same = r.segments[i].second == entry.segments[i].second &&
             (r.segments[i].second ||
              r.segments[i].first == entry.segments[i].first);
    }
    if (same) {
      return Status::InvalidArgument("admin: duplicate route " + entry.method +
                                     " " + entry.pattern);
    }
  }
  entry.handler = std::move(handler);
  impl_->routes.push_back(std::move(entry));
  return Status::Ok();
}

uint16_t AdminServer::port() const { return impl_->port; }
size_t AdminServer::connection_count() const { return impl_->conns.size(); }

}  // namespace crawld::daemon
