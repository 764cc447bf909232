// crawlctl url: show what the url component does with one input per line.
//
//   crawlctl url resolve [--base BASE]   WHATWG serialization or "invalid"
//   crawlctl url canon [options]         canonical form or "invalid\t<reason>"
//
// Exactly one output line per input line, so the output can be pasted next
// to the input (paste(1)). Exit code 1 when at least one line was invalid.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "url/url.h"

namespace crawld::cli {
namespace {

constexpr char kUrlHelp[] =
    "usage: crawlctl url <subcommand> [options] < lines\n"
    "\n"
    "subcommands:\n"
    "  resolve   resolve each href against a base (WHATWG URL Standard)\n"
    "  canon     print the crawler's canonical form of each URL\n"
    "\n"
    "Run 'crawlctl url <subcommand> --help' for its options.\n";

constexpr char kResolveHelp[] =
    "usage: crawlctl url resolve [--base BASE] < hrefs\n"
    "\n"
    "Reads one href per line on stdin and prints, for each, what\n"
    "`new URL(href, BASE).href` gives, or `invalid`.\n"
    "\n"
    "options:\n"
    "  --base BASE   absolute URL to resolve against (default: none, so\n"
    "                relative hrefs are invalid)\n"
    "  --help        this text\n"
    "\n"
    "exit codes: 0 all lines valid, 1 some line invalid, 2 usage error\n";

constexpr char kCanonHelp[] =
    "usage: crawlctl url canon [options] < urls\n"
    "\n"
    "Reads one URL per line on stdin and prints its canonical form (the\n"
    "string the crawler fingerprints), or `invalid<TAB>reason`.\n"
    "\n"
    "options:\n"
    "  --base BASE        resolve relative input against BASE first\n"
    "  --keep-fragment    do not drop #fragments\n"
    "  --keep-params      do not strip session/tracking parameters\n"
    "  --strip LIST       comma-separated parameter names to strip instead\n"
    "                     of the defaults (a trailing * means prefix)\n"
    "  --sort-query       sort query parameters by key\n"
    "  --max-length N     longest accepted URL in bytes (default 2048)\n"
    "  --fingerprint      append TAB and the 16-hex-digit fingerprint\n"
    "  --help             this text\n"
    "\n"
    "exit codes: 0 all lines valid, 1 some line invalid, 2 usage error\n";

bool IsHelp(std::string_view a) { return a == "--help" || a == "-h"; }

int Usage(const char* text, const char* error) {
  std::fprintf(stderr, "crawlctl url: %s\n%s", error, text);
  return 2;
}

int ResolveCommand(int argc, char** argv) {
  std::string base_text;
  bool have_base = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (IsHelp(a)) {
      std::fputs(kResolveHelp, stdout);
      return 0;
    }
    if (a == "--base" && i + 1 < argc) {
      base_text = argv[++i];
      have_base = true;
    } else {
      return Usage(kResolveHelp, "bad argument");
    }
  }
  Result<url::Url> base = Status::InvalidArgument("no base");
  if (have_base) {
    base = url::Parse(base_text);
    if (!base.ok()) {
      std::fprintf(stderr, "crawlctl url resolve: invalid --base: %s\n",
                   base.status().message().c_str());
      return 2;
    }
  }
  const url::Url* base_ptr = base.ok() ? &base.value() : nullptr;
  int rc = 0;
  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    Result<url::Url> r = url::Parse(line, base_ptr);
    out.clear();
    if (r.ok()) {
      out.append(r->href());
    } else {
      out.append("invalid");
      rc = 1;
    }
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return rc;
}

int CanonCommand(int argc, char** argv) {
  url::Options options;
  std::string base_text;
  bool have_base = false;
  bool fingerprint = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (IsHelp(a)) {
      std::fputs(kCanonHelp, stdout);
      return 0;
    }
    const bool has_value = i + 1 < argc;
    if (a == "--base" && has_value) {
      base_text = argv[++i];
      have_base = true;
    } else if (a == "--keep-fragment") {
      options.drop_fragment = false;
    } else if (a == "--keep-params") {
      options.strip_session_params = false;
    } else if (a == "--strip" && has_value) {
      options.strip_params.clear();
      std::string_view list = argv[++i];
      while (!list.empty()) {
        const size_t comma = list.find(',');
        const std::string_view name = list.substr(0, comma);
        if (!name.empty()) options.strip_params.emplace_back(name);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (a == "--sort-query") {
      options.sort_query_params = true;
    } else if (a == "--max-length" && has_value) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0' || n == 0) {
        return Usage(kCanonHelp, "bad --max-length");
      }
      options.max_length = static_cast<size_t>(n);
    } else if (a == "--fingerprint") {
      fingerprint = true;
    } else {
      return Usage(kCanonHelp, "bad argument");
    }
  }
  Result<url::Url> base = Status::InvalidArgument("no base");
  if (have_base) {
    base = url::Parse(base_text);
    if (!base.ok()) {
      std::fprintf(stderr, "crawlctl url canon: invalid --base: %s\n",
                   base.status().message().c_str());
      return 2;
    }
  }
  const url::Url* base_ptr = base.ok() ? &base.value() : nullptr;
  const url::Canonicalizer canon(options);
  int rc = 0;
  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    Result<url::Url> r = canon.Canonicalize(line, base_ptr);
    out.clear();
    if (r.ok()) {
      out.append(r->href());
      if (fingerprint) {
        char hex[20];
        std::snprintf(
            hex, sizeof hex, "\t%016llx",
            static_cast<unsigned long long>(url::Fingerprint(r->href())));
        out.append(hex);
      }
    } else {
      out.append("invalid\t");
      out.append(r.status().message());
      rc = 1;
    }
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return rc;
}

}  // namespace

int RunUrlCommand(int argc, char** argv) {
  if (argc < 2) return Usage(kUrlHelp, "missing subcommand");
  const std::string_view sub = argv[1];
  if (IsHelp(sub)) {
    std::fputs(kUrlHelp, stdout);
    return 0;
  }
  if (sub == "resolve") return ResolveCommand(argc - 1, argv + 1);
  if (sub == "canon") return CanonCommand(argc - 1, argv + 1);
  return Usage(kUrlHelp, "unknown subcommand");
}

}  // namespace crawld::cli
