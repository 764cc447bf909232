#include "conf/seeds.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "base/ascii.h"
#include "url/url.h"

namespace crawld::conf {

SeedList ParseSeeds(std::string_view text, std::string_view source) {
  SeedList out;
  // A UTF-8 byte order mark (editors on Windows write one) is not part of
  // the first URL (issue 19: it cost the first seed).
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  url::Canonicalizer canon{url::Options()};
  std::unordered_set<std::string> seen;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line = ascii::TrimWhatwgSpace(line);
    while (!line.empty() && line.back() == '\v') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string where =
        std::string(source) + ":" + std::to_string(line_no) + ": ";
    std::string shown(line.substr(0, 200));
    auto url = canon.Canonicalize(line);
    if (!url.ok()) {
      out.errors.push_back(where + "invalid seed URL (" +
                           url.status().message() + "): " + shown);
      continue;
    }
    if (!url->is_http()) {
      out.errors.push_back(where + "not an http(s) URL: " + shown);
      continue;
    }
    std::string href(url->href());
    if (seen.insert(href).second) out.urls.push_back(std::move(href));
  }
  return out;
}

Result<SeedList> LoadSeeds(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": " + strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSeeds(ss.str(), path);
}

}  // namespace crawld::conf
