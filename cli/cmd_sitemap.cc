// crawlctl sitemap: show what the sitemap reader (sitemap/sitemap.h) yields
// for one local file, offline.
//
//   crawlctl sitemap FILE [--url SITEMAP_URL] [--cross-submitted HOST]...
//                         [--json] [--max-urls N] [--max-bytes N]
//
// Reads FILE ("-": stdin) in 64 KiB pieces through sitemap::Reader, as the
// crawler reads a transfer, and stops reading once the reader says so (a
// gzip bomb is not read to its end). Prints one line per admitted entry,
// "url<TAB>kind<TAB>lastmod<TAB>changefreq<TAB>priority", and the counters
// on stderr; with --json, one JSON object on stdout instead. --url is where
// the file was fetched from: it sets the scope (sitemaps.org "Sitemap file
// location"); without it nothing is out of scope.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "cli/commands.h"
#include "sitemap/sitemap.h"
#include "url/url.h"

namespace crawld::cli {
namespace {

constexpr char kSitemapHelp[] =
    "usage: crawlctl sitemap FILE [--url SITEMAP_URL] [--cross-submitted "
    "HOST]...\n"
    "                             [--json] [--max-urls N] [--max-bytes N]\n"
    "\n"
    "Reads a sitemap or feed from FILE ('-' for stdin), gzip or not (told\n"
    "by its bytes, not its name): a sitemaps.org urlset or sitemap index,\n"
    "RSS 2.0, Atom 1.0, or a text file of URLs. Prints each admitted entry\n"
    "as url<TAB>kind<TAB>lastmod<TAB>changefreq<TAB>priority (kind page or\n"
    "sitemap, lastmod in UTC or '-', changefreq or '-'), and what was read\n"
    "and dropped on stderr. See docs/SITEMAPS.md.\n"
    "\n"
    "options:\n"
    "  --url URL                where FILE was fetched from: URLs outside\n"
    "                           its scheme, host, port and directory are\n"
    "                           dropped (without --url, none is)\n"
    "  --cross-submitted HOST   HOST's robots.txt names this sitemap: its\n"
    "                           URLs are admitted whatever the path\n"
    "                           (repeat, or separate hosts by commas)\n"
    "  --json                   one JSON object on stdout: entries,\n"
    "                           counters, error\n"
    "  --max-urls N             entries read (default 50000)\n"
    "  --max-bytes N            uncompressed bytes read (default 52428800)\n"
    "  --help                   this text\n"
    "\n"
    "exit codes: 0 every entry admitted, 1 some entries dropped or the file\n"
    "is malformed, cut or over a limit, 2 usage or I/O error\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "crawlctl sitemap: %s\n%s", error.c_str(), kSitemapHelp);
  return 2;
}

bool ParseCount(const char* s, size_t* out) {
  if (*s < '0' || *s > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = static_cast<size_t>(v);
  return true;
}

// "2004-12-23T18:00:15Z".
std::string IsoSeconds(int64_t unix_s) {
  const time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  if (gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// (name, value) of every counter, in Counters order.
std::vector<std::pair<const char*, uint64_t>> CounterList(
    const sitemap::Counters& c) {
  return {{"entries", c.entries},
          {"admitted", c.admitted},
          {"no_loc", c.no_loc},
          {"over_limit", c.over_limit},
          {"too_long", c.too_long},
          {"invalid_url", c.invalid_url},
          {"not_http", c.not_http},
          {"other_origin", c.other_origin},
          {"outside_path", c.outside_path},
          {"bad_lastmod", c.bad_lastmod},
          {"bad_changefreq", c.bad_changefreq},
          {"bad_priority", c.bad_priority},
          {"clamped_priority", c.clamped_priority},
          {"bytes_in", c.bytes_in},
          {"bytes_out", c.bytes_out}};
}

void PrintEntry(const sitemap::Entry& e) {
  const std::string freq =
      e.changefreq == sitemap::ChangeFreq::kUnset
          ? "-"
          : std::string(sitemap::ChangeFreqName(e.changefreq));
  std::printf("%s\t%s\t%s\t%s\t%g\n", e.url.c_str(),
              std::string(sitemap::EntryKindName(e.kind)).c_str(),
              e.lastmod ? IsoSeconds(*e.lastmod).c_str() : "-", freq.c_str(),
              e.priority);
}

void PrintSummary(const sitemap::Report& r) {
  const sitemap::Counters& c = r.counters;
  std::fprintf(stderr, "crawlctl sitemap: format %.*s%s\n",
               static_cast<int>(sitemap::FormatName(r.format).size()),
               sitemap::FormatName(r.format).data(), r.gzip ? " (gzip)" : "");
  std::fprintf(stderr,
               "crawlctl sitemap: %llu entries read, %llu admitted, %llu "
               "dropped\n",
               static_cast<unsigned long long>(c.entries),
               static_cast<unsigned long long>(c.admitted),
               static_cast<unsigned long long>(c.dropped()));
  std::string details;
  const auto list = CounterList(c);
  for (size_t i = 2; i + 2 < list.size(); ++i) {
    if (list[i].second == 0) continue;
    details += ' ';
    details += list[i].first;
    details += '=';
    details += std::to_string(list[i].second);
  }
  if (!details.empty()) {
    std::fprintf(stderr, "crawlctl sitemap:%s\n", details.c_str());
  }
  std::fprintf(stderr, "crawlctl sitemap: %llu bytes in, %llu bytes out\n",
               static_cast<unsigned long long>(c.bytes_in),
               static_cast<unsigned long long>(c.bytes_out));
  if (!r.error.ok()) {
    std::fprintf(stderr, "crawlctl sitemap: error: %s\n",
                 r.error.ToString().c_str());
  }
}

Json ToJson(std::string_view sitemap_url, const sitemap::Report& r,
            const std::vector<sitemap::Entry>& entries) {
  Json j = Json::object();
  j["sitemap_url"] = std::string(sitemap_url);
  j["format"] = std::string(sitemap::FormatName(r.format));
  j["gzip"] = r.gzip;
  Json list = Json::array();
  for (const sitemap::Entry& e : entries) {
    Json o = Json::object();
    o["url"] = e.url;
    o["kind"] = std::string(sitemap::EntryKindName(e.kind));
    o["lastmod"] = e.lastmod ? Json(*e.lastmod) : Json(nullptr);
    o["changefreq"] =
        e.changefreq == sitemap::ChangeFreq::kUnset
            ? Json(nullptr)
            : Json(std::string(sitemap::ChangeFreqName(e.changefreq)));
    o["priority"] = e.priority;
    list.push_back(std::move(o));
  }
  j["entries"] = std::move(list);
  Json counters = Json::object();
  for (const auto& [name, value] : CounterList(r.counters)) {
    counters[name] = value;
  }
  counters["dropped"] = r.counters.dropped();
  j["counters"] = std::move(counters);
  j["truncated"] = r.truncated;
  if (r.error.ok()) {
    j["error"] = nullptr;
  } else {
    Json e = Json::object();
    e["code"] = std::string(Status::CodeName(r.error.code()));
    e["message"] = r.error.message();
    e["line"] = r.error_line;
    e["column"] = r.error_column;
    j["error"] = std::move(e);
  }
  return j;
}

}  // namespace

int RunSitemapCommand(int argc, char** argv) {
  std::string file;
  std::string url_text;
  std::vector<std::string> hosts;
  bool as_json = false;
  sitemap::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kSitemapHelp, stdout);
      return 0;
    }
    if (a == "--url" && i + 1 < argc) {
      url_text = argv[++i];
    } else if (a == "--cross-submitted" && i + 1 < argc) {
      std::string_view list = argv[++i];
      while (!list.empty()) {
        const size_t comma = list.find(',');
        if (comma != 0) hosts.emplace_back(list.substr(0, comma));
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (a == "--json") {
      as_json = true;
    } else if (a == "--max-urls" && i + 1 < argc) {
      if (!ParseCount(argv[++i], &options.max_urls)) {
        return Usage("--max-urls needs a number");
      }
    } else if (a == "--max-bytes" && i + 1 < argc) {
      if (!ParseCount(argv[++i], &options.max_uncompressed_bytes)) {
        return Usage("--max-bytes needs a number");
      }
    } else if (file.empty() && (a == "-" || !a.starts_with("-"))) {
      file = std::string(a);
    } else {
      return Usage("unknown or incomplete argument '" + std::string(a) + "'");
    }
  }
  if (file.empty()) return Usage("a FILE is required");

  url::Url sitemap_url;
  if (url_text.empty()) {
    // No scope without a URL: the file's own URL is a base for feed links
    // only (they come out as file: URLs and are dropped as not http).
    options.enforce_scope = false;
    std::error_code ec;
    const std::filesystem::path abs = file == "-"
                                          ? std::filesystem::path("/dev/stdin")
                                          : std::filesystem::absolute(file, ec);
    Result<url::Url> u = url::Parse("file://" + abs.string());
    if (!u.ok()) u = url::Parse("file:///");
    sitemap_url = *u;
  } else {
    Result<url::Url> u = url::Parse(url_text);
    if (!u.ok()) {
      std::fprintf(stderr, "crawlctl sitemap: invalid --url: %s\n",
                   u.status().ToString().c_str());
      return 2;
    }
    sitemap_url = *u;
  }

  FILE* in = file == "-" ? stdin : std::fopen(file.c_str(), "rb");
  if (in == nullptr) {
    std::fprintf(stderr, "crawlctl sitemap: %s: %s\n", file.c_str(),
                 std::strerror(errno));
    return 2;
  }
  sitemap::Reader reader(sitemap_url, hosts, options);
  std::vector<sitemap::Entry> entries;
  std::vector<char> buf(64 * 1024);
  bool read_error = false;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), in);
    if (n > 0 && !reader.Feed({buf.data(), n})) break;  // the reader stopped
    if (n < buf.size()) {
      read_error = std::ferror(in) != 0;
      break;
    }
    if (!as_json) {
      reader.TakeEntries(&entries);
      for (const sitemap::Entry& e : entries) PrintEntry(e);
      entries.clear();
    }
  }
  if (in != stdin) std::fclose(in);
  if (read_error) {
    std::fprintf(stderr, "crawlctl sitemap: %s: read error\n", file.c_str());
    return 2;
  }
  const sitemap::Report& report = reader.Finish();
  reader.TakeEntries(&entries);
  if (as_json) {
    std::printf(
        "%s\n",
        json::Dump(ToJson(sitemap_url.href(), report, entries)).c_str());
  } else {
    for (const sitemap::Entry& e : entries) PrintEntry(e);
    PrintSummary(report);
  }
  if (std::fflush(stdout) != 0) return 2;
  return report.error.ok() && report.counters.dropped() == 0 ? 0 : 1;
}

}  // namespace crawld::cli
