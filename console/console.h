// console/console.h: the operator's web console, served by the admin API.
//
// A single-page application (plain HTML, CSS and JavaScript, no framework)
// whose files under console/assets/ are embedded in the binary at build
// time (cmake/embed-assets.cmake). It is served on the admin API's own
// http::Server, so on the same address and port as the API, and it talks to
// crawld only through the documented API (docs/API.md); it has no endpoint
// of its own. What it shows: docs/OPERATIONS.md, "Console".
//
// Security (docs/SECURITY.md, "Admin API and console"):
//  - Every asset response carries a strict Content-Security-Policy
//    (default-src 'self', no inline script or style, frame-ancestors
//    'none'), X-Content-Type-Options: nosniff and no Referer: the app loads
//    nothing from any other origin and cannot be framed.
//  - The assets are served without the bearer token even when one is
//    configured. Deliberate: a browser cannot attach a bearer token to a
//    page load, and the alternatives are worse (a cookie is a credential
//    the browser sends on forged requests; a token in the URL leaks into
//    history, logs and Referer). The assets are the same static files in
//    every crawld build and hold no crawl data; the app asks the operator
//    for the token and sends it as "Authorization: Bearer" on every API
//    call, which the server checks as for any other client.
//  - Mutating calls are protected by the server for every client
//    (http::CheckBrowserRequest, http::CheckJsonContentType).
#ifndef CRAWLD_CONSOLE_CONSOLE_H_
#define CRAWLD_CONSOLE_CONSOLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/http.h"

namespace crawld::console {

struct Options {
  // --- behaviour
  // Serve the console at "/" and "/console/{file}". False: those paths are
  // not routed (404), the API is unchanged.
  bool enabled = true;

  // --- performance
  // Cache-Control max-age of the assets, in seconds. 0 (the default):
  // "no-cache", i.e. the browser revalidates each time with the ETag and
  // gets a body-less 304 while the binary is unchanged, so an upgraded
  // crawld is never shown with a stale app. Clamped to one day.
  uint32_t max_age_s = 0;
};

// The response to a GET of `path` ("/" or "/console/<file>"), without a
// server: 200 with the asset, 304 when if_none_match (the request's
// If-None-Match, may be null) names its ETag, 404 (JSON error) for an
// unknown file. Every answer has the console's security headers.
[[nodiscard]] http::Response Serve(std::string_view path,
                                   const std::string* if_none_match,
                                   const Options& options);

// Adds GET "/" and GET "/console/{file}" to server as public routes
// (http::Server::PublicRoute: no token; see above). Does nothing when
// options.enabled is false. Fails like http::Server::Route (a duplicate
// route). REQUIRES: server is not null; called on the server's loop.
[[nodiscard]] Status AddRoutes(http::Server* server, const Options& options);

// The embedded file names ("index.html", ...), for tests and docs.
[[nodiscard]] std::vector<std::string_view> AssetNames();

// The Content-Security-Policy sent with every asset.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace crawld::console

#endif  // CRAWLD_CONSOLE_CONSOLE_H_
