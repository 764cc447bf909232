// crawlctl report: crawl reports computed from a data directory (offline;
// report/report.h does the work, docs/OPERATIONS.md says what each holds).
//
//   crawlctl report list
//   crawlctl report NAME --data DIR [--csv] [--seeds FILE]
#include <cstdio>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "report/report.h"

namespace crawld::cli {

namespace {

constexpr char kUsage[] =
    "usage: crawlctl report list\n"
    "       crawlctl report NAME --data DIR [--csv] [--seeds FILE]\n"
    "\n"
    "Computes a crawl report from the data directory DIR (its CDXJ index,\n"
    "WARC files, seed list and event logs); crawld need not be running.\n"
    "The output is one JSON object {report, columns, rows, notes}, or with\n"
    "--csv an RFC 4180 table (a header line, then one line per row).\n"
    "\n"
    "list          the report names, one per line, with what each holds\n"
    "--data DIR    the crawl's data directory (required)\n"
    "--csv         CSV instead of JSON\n"
    "--seeds FILE  the seed list to report on, instead of DIR/run/seeds.txt\n"
    "              (the list crawld records when it starts)\n"
    "\n"
    "A running crawld serves the same reports: GET /api/reports/NAME.\n"
    "exit codes: 0 success, 2 usage error (an unknown report), a data\n"
    "directory that does not exist, or an I/O error\n";

int Usage(FILE* out, int code) {
  std::fputs(kUsage, out);
  return code;
}

int List() {
  for (const report::ReportInfo& r : report::Reports()) {
    std::printf("%-8s %.*s\n", std::string(r.name).c_str(),
                static_cast<int>(r.description.size()), r.description.data());
  }
  return 0;
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  if (argc < 2) return Usage(stderr, 2);
  const std::string_view first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    return Usage(stdout, 0);
  }
  if (first == "list") {
    if (argc > 2) {
      std::fprintf(stderr, "crawlctl report list: takes no arguments\n");
      return 2;
    }
    return List();
  }
  std::string name;
  report::Options options;
  bool csv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "crawlctl report: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") return Usage(stdout, 0);
    if (a == "--data") {
      const char* v = value("--data");
      if (v == nullptr) return 2;
      options.data_dir = v;
    } else if (a == "--seeds") {
      const char* v = value("--seeds");
      if (v == nullptr) return 2;
      options.seeds_file = v;
    } else if (a == "--csv") {
      csv = true;
    } else if (a == "--api") {
      std::fprintf(stderr,
                   "crawlctl report: reads the data directory (--data DIR); "
                   "a running crawld serves GET /api/reports/NAME\n");
      return 2;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "crawlctl report: unknown option %s\n", argv[i]);
      return Usage(stderr, 2);
    } else if (name.empty()) {
      name = std::string(a);
    } else {
      std::fprintf(stderr, "crawlctl report: one report at a time (%s, %s)\n",
                   name.c_str(), argv[i]);
      return 2;
    }
  }
  if (name.empty()) {
    std::fprintf(stderr,
                 "crawlctl report: which report? (crawlctl report "
                 "list)\n");
    return 2;
  }
  if (options.data_dir.empty()) {
    std::fprintf(stderr, "crawlctl report: --data DIR is required\n");
    return 2;
  }
  auto table = report::Compute(name, options);
  if (!table.ok()) {
    std::fprintf(stderr, "crawlctl report: %s\n",
                 table.status().message().c_str());
    return 2;
  }
  const std::string out = csv ? report::ToCsv(*table) : report::ToJson(*table);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() ||
      std::fflush(stdout) != 0) {
    std::fprintf(stderr, "crawlctl report: cannot write the output\n");
    return 2;
  }
  return 0;
}

}  // namespace crawld::cli
