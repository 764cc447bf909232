// crawlctl links: show the links the parser extracts from one HTML document.
//
//   crawlctl links --base URL [--content-type CT] [--all] < page.html
//
// Prints the hyperlinks a browser finds (parser::Page::links: every HTML
// <a href> and <area href>, resolved against the frozen base URL, in
// document order, duplicates kept), one http(s) URL per line: the list the
// links corpus (docs/LINKS.md) checks against parse5. With --all, the other
// outlinks (canonical, alternate, next, refresh, frames, SVG anchors)
// follow, every line as "kind<TAB>url" with "<TAB>nofollow" appended where
// rel=nofollow. What the parser's bounds cut goes to stderr. Exit code 1
// when some hrefs did not resolve (their count goes to stderr).
#include <cstdio>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "parser/parser.h"
#include "url/url.h"

namespace crawld::cli {
namespace {

constexpr char kLinksHelp[] =
    "usage: crawlctl links --base URL [options] < document.html\n"
    "\n"
    "Reads one HTML document on stdin and prints the absolute http(s) URLs\n"
    "of its <a href> and <area href> links as a browser lists them, one per\n"
    "line, in document order, resolved against its <base href> (if any) or\n"
    "URL. <noscript> content is not markup (a browser with scripting on).\n"
    "\n"
    "options:\n"
    "  --base URL           the document's URL (required)\n"
    "  --content-type CT    the HTTP Content-Type, for its charset parameter\n"
    "  --all                also the other outlinks (canonical, refresh,\n"
    "                       frames, ...), as kind<TAB>url[<TAB>nofollow]\n"
    "  --help               this text\n"
    "\n"
    "exit codes: 0 ok, 1 some hrefs did not resolve, 2 usage or I/O error\n";

int Usage(const char* error) {
  std::fprintf(stderr, "crawlctl links: %s\n%s", error, kLinksHelp);
  return 2;
}

}  // namespace

int RunLinksCommand(int argc, char** argv) {
  std::string base_text;
  std::string content_type;
  bool have_base = false;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kLinksHelp, stdout);
      return 0;
    }
    if (a == "--base" && i + 1 < argc) {
      base_text = argv[++i];
      have_base = true;
    } else if (a == "--content-type" && i + 1 < argc) {
      content_type = argv[++i];
    } else if (a == "--all") {
      all = true;
    } else {
      return Usage(
          ("unknown or incomplete argument '" + std::string(a) + "'").c_str());
    }
  }
  if (!have_base) return Usage("--base URL is required");
  Result<url::Url> base = url::Parse(base_text);
  if (!base.ok()) {
    std::fprintf(stderr, "crawlctl links: invalid --base: %s\n",
                 base.status().ToString().c_str());
    return 2;
  }

  std::string body;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) body.append(buf, n);
  if (std::ferror(stdin)) {
    std::perror("crawlctl links: reading stdin");
    return 2;
  }

  parser::Options options;
  options.extract_text = false;
  parser::Extractor extractor(options);
  parser::Page page = extractor.Extract(body, content_type, *base);
  auto print = [](const parser::Link& link) {
    std::printf("%.*s\t%s%s\n",
                static_cast<int>(parser::LinkKindName(link.kind).size()),
                parser::LinkKindName(link.kind).data(), link.url.c_str(),
                link.nofollow ? "\tnofollow" : "");
  };
  for (const parser::Link& link : page.links) {
    if (all) {
      print(link);
    } else {
      std::printf("%s\n", link.url.c_str());
    }
  }
  if (all) {
    for (const parser::Link& link : page.other_links) print(link);
  }
  const parser::ParseCuts& cuts = page.cuts;
  if (cuts.bytes_cut) {
    std::fprintf(stderr, "crawlctl links: document cut at %zu bytes\n",
                 extractor.options().max_parse_bytes);
  }
  if (cuts.attributes_dropped > 0 || cuts.elements_flattened > 0 ||
      cuts.links_dropped > 0) {
    std::fprintf(stderr,
                 "crawlctl links: bounds: %zu attribute(s) dropped, %zu "
                 "element(s) flattened, %zu link(s) over the cap\n",
                 cuts.attributes_dropped, cuts.elements_flattened,
                 cuts.links_dropped);
  }
  if (std::fflush(stdout) != 0) return 2;
  if (page.invalid_links > 0) {
    std::fprintf(stderr, "crawlctl links: %zu href(s) did not resolve\n",
                 page.invalid_links);
    return 1;
  }
  return 0;
}

}  // namespace crawld::cli
