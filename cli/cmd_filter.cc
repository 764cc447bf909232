// crawlctl filter: try URL filter rules (conf/rules.h, docs/RULES.md)
// offline.
//
//   crawlctl filter test --rules FILE [--seed-host H] [--depth N]
//     Reads URLs from stdin, one per line, and prints one line per input:
//     "accept" or "reject", a TAB, and the deciding rule as FILE:LINE,
//     "default" (no rule matched) or "invalid url"; with recrawl lines in
//     the file, a TAB and "recrawl FILE:LINE" or "recrawl default".
#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "conf/rules.h"

namespace crawld::cli {
namespace {

constexpr char kGroupHelp[] =
    "usage: crawlctl filter <subcommand> [args...]\n"
    "\n"
    "subcommands:\n"
    "  test --rules FILE [--seed-host H] [--depth N]\n"
    "        decide URLs read from stdin with a URL filter rule file\n"
    "\n"
    "Run 'crawlctl filter <subcommand> --help' for details.\n";

constexpr char kTestHelp[] =
    "usage: crawlctl filter test --rules FILE [--seed-host H] [--depth N]\n"
    "\n"
    "Reads absolute URLs from stdin, one per line, and prints one line per\n"
    "input: 'accept' or 'reject', a TAB, and the deciding rule as\n"
    "FILE:LINE, or 'default' when no rule matched, or 'invalid url' when\n"
    "the URL does not parse (always rejected). Grammar: docs/RULES.md.\n"
    "\n"
    "  --rules FILE      the rule file\n"
    "  --seed-host H     host of the seed (for 'scope' rules); default none\n"
    "  --depth N         links followed from the seed (for 'depth' rules);\n"
    "                    default 0\n"
    "\n"
    "Exit codes: 0 done, 2 usage or I/O error or invalid rule file (the\n"
    "first bad line is reported on stderr as FILE:LINE: what).\n";

bool IsHelp(std::string_view arg) { return arg == "--help" || arg == "-h"; }

int Usage(const char* what, const char* arg) {
  std::fprintf(stderr, "filter test: %s%s%s\n\n%s", what, arg ? " " : "",
               arg ? arg : "", kTestHelp);
  return 2;
}

int RunTest(int argc, char** argv) {
  std::string rules_file;
  std::string seed_host;
  int depth = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (IsHelp(arg)) {
      std::fputs(kTestHelp, stdout);
      return 0;
    }
    if (i + 1 >= argc ||
        (arg != "--rules" && arg != "--seed-host" && arg != "--depth")) {
      return Usage("unexpected argument", argv[i]);
    }
    const std::string_view value = argv[++i];
    if (arg == "--rules") {
      rules_file = value;
    } else if (arg == "--seed-host") {
      seed_host = value;
    } else {
      const auto [end, ec] =
          std::from_chars(value.data(), value.data() + value.size(), depth);
      if (ec != std::errc() || end != value.data() + value.size() ||
          depth < 0) {
        return Usage("--depth needs a non-negative integer, got", argv[i]);
      }
    }
  }
  if (rules_file.empty()) return Usage("--rules is required", nullptr);

  auto loaded = conf::RuleSet::Load(rules_file);
  if (!loaded.ok()) {
    std::fprintf(stderr, "filter test: %s\n",
                 loaded.status().message().c_str());
    return 2;
  }
  const conf::RuleSet& rules = **loaded;

  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const conf::RuleVerdict v = rules.Decide({line, depth, seed_host});
    out = v.accept ? "accept\t" : "reject\t";
    if (v.line > 0) {
      out += rules_file + ":" + std::to_string(v.line);
    } else {
      out += v.rule;  // "default" or "invalid url"
    }
    if (rules.recrawl_size() > 0) {
      // The interval's rule too, for a file that has recrawl lines (a file
      // without them prints what it always did).
      const auto r = rules.Recrawl({line, depth, seed_host});
      out += r.has_value()
                 ? "\trecrawl " + rules_file + ":" + std::to_string(r->line)
                 : std::string("\trecrawl default");
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (std::cin.bad() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "filter test: I/O error\n");
    return 2;
  }
  return 0;
}

}  // namespace

int RunFilterCommand(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kGroupHelp, stderr);
    return 2;
  }
  const std::string_view sub = argv[1];
  if (IsHelp(sub)) {
    std::fputs(kGroupHelp, stdout);
    return 0;
  }
  if (sub == "test") return RunTest(argc - 1, argv + 1);
  std::fprintf(stderr, "filter: unknown subcommand '%s'\n\n%s", argv[1],
               kGroupHelp);
  return 2;
}

}  // namespace crawld::cli
