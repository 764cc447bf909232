// crawlctl robots: check URLs against a robots.txt file (offline), and show
// a live host's robots.txt (needs the fetcher; not available yet).
//
//   crawlctl robots check --robots FILE --agent NAME [--why]
//     Reads URLs (absolute, or path+query) from stdin, one per line, and
//     prints one line per input: "allowed" or "disallowed"; with --why, a
//     TAB and the deciding rule ("line N: Disallow: /x") or "default".
//     Diagnostics about the robots.txt go to stderr.
//   crawlctl robots show URL
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "robots/robots.h"

namespace crawld::cli {
namespace {

constexpr char kGroupHelp[] =
    "usage: crawlctl robots <subcommand> [args...]\n"
    "\n"
    "subcommands:\n"
    "  check --robots FILE --agent NAME [--why]\n"
    "        check URLs read from stdin against a robots.txt file\n"
    "  show URL\n"
    "        fetch and show the robots.txt that applies to URL\n"
    "\n"
    "Run 'crawlctl robots <subcommand> --help' for details.\n";

constexpr char kCheckHelp[] =
    "usage: crawlctl robots check --robots FILE --agent NAME [--why]\n"
    "\n"
    "Reads URLs from stdin, one per line: absolute URLs\n"
    "(https://host/path?query) or a path with its query (/path?query).\n"
    "Prints one line per input line: 'allowed' or 'disallowed' for the\n"
    "product token NAME under RFC 9309.\n"
    "\n"
    "  --robots FILE  the robots.txt file to read\n"
    "  --agent NAME   our product token, e.g. crawld (case-insensitive)\n"
    "  --why          append a TAB and the deciding rule, as\n"
    "                 'line N: Disallow: /x', or 'default' when no rule\n"
    "                 matched (robots.txt itself is always allowed)\n"
    "\n"
    "Skipped robots.txt lines are reported on stderr.\n"
    "Exit codes: 0 done, 2 usage or I/O error.\n";

constexpr char kShowHelp[] =
    "usage: crawlctl robots show URL\n"
    "\n"
    "Fetches the robots.txt of URL's host and shows the rules that apply.\n"
    "Not available in this build.\n";

bool IsHelp(std::string_view arg) { return arg == "--help" || arg == "-h"; }

// The path and query of an absolute URL ("https://h:1/p?q#f" -> "/p?q"),
// or the input itself when it has no scheme and authority. Deliberately
// small: no validation and no canonicalisation (that is url/'s job);
// Rules normalises percent-encoding itself.
std::string_view PathAndQuery(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end != std::string_view::npos && scheme_end > 0 &&
      url.substr(0, scheme_end).find_first_of("/?#") ==
          std::string_view::npos) {
    url.remove_prefix(scheme_end + 3);
    const size_t path = url.find_first_of("/?#");
    if (path == std::string_view::npos) return "/";
    url.remove_prefix(path);
  }
  const size_t fragment = url.find('#');
  if (fragment != std::string_view::npos) url = url.substr(0, fragment);
  return url;
}

int RunCheck(int argc, char** argv) {
  std::string robots_file;
  std::string agent;
  bool why = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (IsHelp(arg)) {
      std::fputs(kCheckHelp, stdout);
      return 0;
    }
    if ((arg == "--robots" || arg == "--agent") && i + 1 < argc) {
      (arg == "--robots" ? robots_file : agent) = argv[++i];
    } else if (arg == "--why") {
      why = true;
    } else {
      std::fprintf(stderr, "robots check: unexpected argument '%s'\n\n%s",
                   argv[i], kCheckHelp);
      return 2;
    }
  }
  if (robots_file.empty() || agent.empty()) {
    std::fprintf(stderr,
                 "robots check: --robots and --agent are required\n\n%s",
                 kCheckHelp);
    return 2;
  }
  std::ifstream in(robots_file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "robots check: cannot read %s: %s\n",
                 robots_file.c_str(), std::strerror(errno));
    return 2;
  }
  std::ostringstream body;
  body << in.rdbuf();
  if (in.bad()) {
    std::fprintf(stderr, "robots check: error reading %s\n",
                 robots_file.c_str());
    return 2;
  }
  const robots::Rules rules = robots::Rules::Parse(body.str(), agent);
  for (const std::string& d : rules.diagnostics()) {
    std::fprintf(stderr, "%s: %s\n", robots_file.c_str(), d.c_str());
  }
  if (rules.diagnostic_count() > rules.diagnostics().size()) {
    std::fprintf(stderr, "%s: %zu more diagnostics not shown\n",
                 robots_file.c_str(),
                 rules.diagnostic_count() - rules.diagnostics().size());
  }

  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const robots::Verdict v = rules.Check(PathAndQuery(line));
    out = v.allowed ? "allowed" : "disallowed";
    if (why) {
      out += '\t';
      if (v.rule.empty()) {
        out += "default";
      } else if (v.line > 0) {
        out += "line " + std::to_string(v.line) + ": " + v.rule;
      } else {
        out += v.rule;  // a rule without a line (not produced by Parse)
      }
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (std::cin.bad() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "robots check: I/O error\n");
    return 2;
  }
  return 0;
}

int RunShow(int argc, char** argv) {
  if (argc > 1 && IsHelp(argv[1])) {
    std::fputs(kShowHelp, stdout);
    return 0;
  }
  // TODO(lead): implement once fetcher/ exposes a one-shot fetch: fetch
  // <scheme>://<authority>/robots.txt, map the access result to
  // Rules::Parse / AllowAll (4xx) / DisallowAll (5xx, unreachable) as in
  // RFC 9309 2.3.1, and print group(), rule_count(), crawl_delay_seconds(),
  // sitemaps() and diagnostics().
  std::fprintf(stderr, "robots show: not available in this build\n");
  return 2;
}

}  // namespace

int RunRobotsCommand(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kGroupHelp, stderr);
    return 2;
  }
  std::string_view sub = argv[1];
  if (IsHelp(sub)) {
    std::fputs(kGroupHelp, stdout);
    return 0;
  }
  if (sub == "check") return RunCheck(argc - 1, argv + 1);
  if (sub == "show") return RunShow(argc - 1, argv + 1);
  std::fprintf(stderr, "robots: unknown subcommand '%s'\n\n%s", argv[1],
               kGroupHelp);
  return 2;
}

}  // namespace crawld::cli
