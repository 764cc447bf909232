// http/guard.cc: the checks that keep a web page in the operator's browser
// from using the admin API (docs/API.md, "Cross-site requests"; threat
// model in docs/SECURITY.md). See http.h.
#include <string>
#include <string_view>

#include "base/ascii.h"
#include "http/http.h"

namespace crawld::http {

namespace {

// "host:port" without a default port for the scheme, lower-cased, so that
// "http://127.0.0.1" and a Host of "127.0.0.1:80" compare equal.
std::string NormalAuthority(std::string_view authority, bool https) {
  std::string a = ascii::ToLower(authority);
  const std::string_view def = https ? ":443" : ":80";
  if (a.size() > def.size() && a.ends_with(def))
    a.resize(a.size() - def.size());
  return a;
}

// The host part of a Host header value: "[::1]:8181" -> "::1",
// "127.0.0.1:8181" -> "127.0.0.1", "localhost" -> "localhost".
std::string_view HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return {};
    return host.substr(1, close - 1);
  }
  const size_t colon = host.rfind(':');
  if (colon != std::string_view::npos &&
      host.find(':') == colon) {  // one colon: a port follows
    return host.substr(0, colon);
  }
  return host;
}

bool IsSafeMethod(std::string_view method) {
  return method == "GET" || method == "HEAD";
}

}  // namespace

int CheckBrowserRequest(const Request& req, bool token_configured,
                        std::string* why) {
  const std::string* host = req.Header("host");
  // DNS rebinding: a page at http://evil.example:PORT/ whose name now
  // resolves to 127.0.0.1 is same-origin with the API as far as the
  // browser knows, so Origin and Sec-Fetch-Site do not help; only the
  // name it used, in Host, gives it away. With a token the page has no
  // credential to send, so any name is fine (a proxy, a DNS name).
  if (!token_configured && host != nullptr) {
    const std::string_view name = HostName(*host);
    if (!ascii::EqualsIgnoreCase(name, "localhost") &&
        !IsLoopbackAddress(name)) {
      *why = "Host '" + *host +
             "' is not a loopback address or localhost: refused without "
             "admin.token (DNS rebinding protection)";
      return 403;
    }
  }
  if (IsSafeMethod(req.method)) return 0;
  // Fetch Metadata: every current browser says where a request comes
  // from. "same-site" is refused too: another port of 127.0.0.1 (any local
  // web app) is the same site but not the same origin.
  if (const std::string* site = req.Header("sec-fetch-site");
      site != nullptr && *site != "same-origin" && *site != "none") {
    *why = "cross-site request refused (Sec-Fetch-Site: " + *site + ")";
    return 403;
  }
  // Origin, for browsers without Fetch Metadata: it must be this server
  // as the client addressed it. "null" (sandboxed frames, file: pages,
  // some redirects) is never this server.
  if (const std::string* origin = req.Header("origin"); origin != nullptr) {
    std::string_view o = *origin;
    bool https = false;
    bool same = false;
    if (ascii::StartsWithIgnoreCase(o, "http://")) {
      o.remove_prefix(7);
    } else if (ascii::StartsWithIgnoreCase(o, "https://")) {
      o.remove_prefix(8);
      https = true;
    } else {
      o = {};
    }
    if (!o.empty() && host != nullptr) {
      same = NormalAuthority(o, https) == NormalAuthority(*host, https);
    }
    if (!same) {
      *why = "cross-origin request refused (Origin: " + *origin + ")";
      return 403;
    }
  }
  return 0;
}

int CheckJsonContentType(const Request& req, std::string* why) {
  if (IsSafeMethod(req.method)) return 0;
  // A cross-site HTML form can only send form-urlencoded, multipart or
  // text/plain; fetch() needs a CORS preflight, which this server never
  // grants, for application/json. So a JSON type proves the request was
  // not forged by another site, even from a browser without Origin.
  const std::string* type = req.Header("content-type");
  std::string_view media = type != nullptr ? std::string_view(*type) : "";
  media = ascii::TrimHttpSpace(media.substr(0, media.find(';')));
  if (ascii::EqualsIgnoreCase(media, "application/json")) return 0;
  *why = "a " + req.method +
         " request needs Content-Type: application/json (got " +
         (type == nullptr ? std::string("none") : "'" + *type + "'") +
         "); see docs/API.md, \"Cross-site requests\"";
  return 415;
}

}  // namespace crawld::http
