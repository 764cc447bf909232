// console/console.cc: serving the embedded assets. See console.h.
#include "console/console.h"

#include <algorithm>

#include "console/assets.h"

namespace crawld::console {

namespace {

constexpr uint32_t kMaxAgeCapS = 86400;

const internal::EmbeddedAsset* Find(std::string_view name) {
  for (size_t i = 0; i < internal::kAssetCount; ++i) {
    if (internal::kAssets[i].name == name) return &internal::kAssets[i];
  }
  return nullptr;
}

// If-None-Match is a list of ETags or "*" (RFC 9110 section 13.1.2); weak
// comparison, so a proxy's W/ prefix still matches.
bool EtagMatches(std::string_view header, std::string_view etag) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view tag = header.substr(pos, end - pos);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) {
      tag.remove_prefix(1);
    }
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) {
      tag.remove_suffix(1);
    }
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    pos = end + 1;
  }
  return false;
}

void AddSecurityHeaders(const Options& options, http::Response* r) {
  r->headers.emplace_back("Content-Security-Policy",
                          std::string(kContentSecurityPolicy));
  // For browsers that predate frame-ancestors.
  r->headers.emplace_back("X-Frame-Options", "DENY");
  // API URLs name hosts of the crawl: none of them goes to another site.
  r->headers.emplace_back("Referrer-Policy", "no-referrer");
  r->headers.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  r->headers.emplace_back("Cross-Origin-Resource-Policy", "same-origin");
  const uint32_t age = std::min(options.max_age_s, kMaxAgeCapS);
  r->headers.emplace_back("Cache-Control",
                          age == 0 ? std::string("no-cache")
                                   : "private, max-age=" + std::to_string(age));
}

}  // namespace

http::Response Serve(std::string_view path, const std::string* if_none_match,
                     const Options& options) {
  std::string_view name;
  if (path == "/") {
    name = "index.html";
  } else if (path.starts_with("/console/")) {
    name = path.substr(9);
  }
  const internal::EmbeddedAsset* asset = name.empty() ? nullptr : Find(name);
  http::Response r;
  if (asset == nullptr) {
    r = http::Response::MakeError(404,
                                  "no such console file: " + std::string(path));
    AddSecurityHeaders(options, &r);
    return r;
  }
  r.headers.emplace_back("ETag", std::string(asset->etag));
  AddSecurityHeaders(options, &r);
  if (if_none_match != nullptr && EtagMatches(*if_none_match, asset->etag)) {
    r.status = 304;
    r.content_type = std::string(asset->type);
    return r;
  }
  r.status = 200;
  r.content_type = std::string(asset->type);
  r.body = std::string(asset->data);
  return r;
}

Status AddRoutes(http::Server* server, const Options& options) {
  if (!options.enabled) return Status::Ok();
  auto handler = [options](const http::Request& req, http::Responder r) {
    // The raw path: the asset names are plain, so a percent-encoded one is
    // simply not found.
    r.Send(Serve(req.path, req.Header("if-none-match"), options));
  };
  if (Status s = server->PublicRoute("/", handler); !s.ok()) return s;
  return server->PublicRoute("/console/{file}", handler);
}

std::vector<std::string_view> AssetNames() {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < internal::kAssetCount; ++i) {
    names.push_back(internal::kAssets[i].name);
  }
  return names;
}

}  // namespace crawld::console
