// crawlctl: the operator's and tester's command-line tool. Offline commands
// show what one component does with one input; online commands talk to a
// running crawld's admin API.
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "cli/commands.h"

namespace {

struct Group {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

constexpr Group kGroups[] = {
#ifdef CRAWLD_HAVE_CMD_URL
    {"url", "resolve hrefs against a base, canonicalize URLs",
     crawld::cli::RunUrlCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_LINKS
    {"links", "extract the links of an HTML document",
     crawld::cli::RunLinksCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_ROBOTS
    {"robots", "check URLs against a robots.txt",
     crawld::cli::RunRobotsCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_FILTER
    {"filter", "test URLs against a filter rules file",
     crawld::cli::RunFilterCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_SITEMAP
    {"sitemap", "show what a sitemap or feed file yields",
     crawld::cli::RunSitemapCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_WARC
    {"warc", "verify and list WARC files", crawld::cli::RunWarcCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_REPORT
    {"report", "crawl reports from a data directory (hosts, mime, ...)",
     crawld::cli::RunReportCommand},
#endif
#ifdef CRAWLD_HAVE_CMD_ADMIN
    // Online: a running crawld's admin API (--api URL or --data DIR).
    {"status", "show a running crawl's state", crawld::cli::RunAdminCommand},
    {"metrics", "print a running crawl's Prometheus metrics",
     crawld::cli::RunAdminCommand},
    {"seeds", "add seed URLs to a running crawl", crawld::cli::RunAdminCommand},
    {"pause", "stop scheduling new fetches", crawld::cli::RunAdminCommand},
    {"resume", "resume scheduling after a pause", crawld::cli::RunAdminCommand},
    {"stop", "checkpoint and stop a running crawl",
     crawld::cli::RunAdminCommand},
    {"rules", "reload rules, or test a URL against the live rules",
     crawld::cli::RunAdminCommand},
    {"host", "show crawld's record of one host", crawld::cli::RunAdminCommand},
    {"docs", "follow the document feed (docs tail)",
     crawld::cli::RunAdminCommand},
    {"feed", "read a whole crawl's feed, its nodes merged in ID order",
     crawld::cli::RunAdminCommand},
#endif
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: crawlctl <command> [args...]\n"
               "       crawlctl [--api URL | --data DIR] [--token T] "
               "<online command> [args...]\n"
               "       crawlctl <command> --help\n\ncommands:\n");
  for (const Group& g : kGroups) {
    std::fprintf(out, "  %-8s %s\n", g.name, g.summary);
  }
  std::fprintf(out,
               "\nexit codes: 0 success, 1 the input has defects, "
               "2 usage or I/O error\n"
               "online commands: 0 ok, 1 the server answered an error, "
               "2 usage error, 3 cannot reach the server\n");
}

}  // namespace

int main(int argc, char** argv) {
  // The online commands' common options may come before the command
  // (`crawlctl --data DIR status`, as docs/OPERATIONS.md writes it): they
  // are moved after it, where the command's own parser reads them.
  std::vector<char*> global;
  int first = 1;
#ifdef CRAWLD_HAVE_CMD_ADMIN
  while (first < argc) {
    const int arity = crawld::cli::CommonOptionArity(argv[first]);
    if (arity < 0) break;
    if (first + arity >= argc) {
      std::fprintf(stderr, "crawlctl: %s needs a value and a command\n",
                   argv[first]);
      Usage(stderr);
      return 2;
    }
    for (int k = 0; k <= arity; ++k) global.push_back(argv[first + k]);
    first += arity + 1;
  }
#endif
  if (first >= argc) {
    Usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[first];
  if (global.empty() && (cmd == "--help" || cmd == "-h" || cmd == "help")) {
    Usage(stdout);
    return 0;
  }
  for (const Group& g : kGroups) {
    if (cmd != g.name) continue;
#ifdef CRAWLD_HAVE_CMD_ADMIN
    // `report` reads --data DIR too (`crawlctl --data DIR report hosts`).
    bool takes_global = g.run == crawld::cli::RunAdminCommand;
#ifdef CRAWLD_HAVE_CMD_REPORT
    takes_global |= g.run == crawld::cli::RunReportCommand;
#endif
    if (!global.empty() && !takes_global) {
      std::fprintf(stderr,
                   "crawlctl: %s before the command is for the online "
                   "commands; '%s' is offline\n",
                   global.front(), argv[first]);
      return 2;
    }
#endif
    // argv[first..] then the options given before the command.
    std::vector<char*> args(argv + first, argv + argc);
    args.insert(args.end(), global.begin(), global.end());
    args.push_back(nullptr);
    return g.run(static_cast<int>(args.size()) - 1, args.data());
  }
  std::fprintf(stderr, "crawlctl: unknown command '%s'\n", argv[first]);
  Usage(stderr);
  return 2;
}
