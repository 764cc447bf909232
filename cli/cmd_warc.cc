// crawlctl warc: verify, list and extract records of WARC files
// (store/store.h does the work; layout in docs/STORE.md).
//
//   crawlctl warc verify FILE...      OK/BAD per file; exit 0, 1 defects, 2 I/O
//   crawlctl warc ls [--json] FILE    one line per record
//   crawlctl warc get URL FILE...     block of the first response for URL
//   crawlctl warc get URL --data DIR  the same, found through the CDXJ index
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "store/store.h"

namespace crawld::cli {

namespace {

constexpr char kUsage[] =
    "usage: crawlctl warc verify FILE...\n"
    "       crawlctl warc ls [--json] FILE\n"
    "       crawlctl warc get URL FILE...\n"
    "       crawlctl warc get URL --data DIR\n"
    "\n"
    "verify  check structure, lengths, digests and record ids of each file;\n"
    "        prints 'OK <file> <n> records' or one 'BAD <file>: <defect>'\n"
    "        line per defect (warnings go to stderr as 'WARN <file>: ...')\n"
    "ls      one line per record: offset length type target-uri date\n"
    "        http-status content-length ('-' when absent); --json prints one\n"
    "        JSON object per line instead\n"
    "get     writes the block (HTTP head + payload) of the first response\n"
    "        record whose WARC-Target-URI is URL to stdout; with --data DIR\n"
    "        the CDXJ index in DIR/index finds it without reading whole files\n"
    "\n"
    "exit codes: 0 success, 1 defects found (verify, ls) or URL not found\n"
    "(get), 2 usage or I/O error\n";

bool IsHelp(std::string_view a) { return a == "--help" || a == "-h"; }

int Usage(FILE* out, int code) {
  std::fputs(kUsage, out);
  return code;
}

int Verify(const std::vector<std::string>& files) {
  int rc = 0;
  for (const std::string& file : files) {
    auto report = store::VerifyFile(file);
    if (!report.ok()) {
      std::fprintf(stderr, "crawlctl warc verify: %s\n",
                   report.status().ToString().c_str());
      rc = 2;
      continue;
    }
    for (const auto& w : report->warnings)
      std::fprintf(stderr, "WARN %s: %s\n", file.c_str(), w.c_str());
    if (report->ok()) {
      std::printf("OK %s %llu records\n", file.c_str(),
                  static_cast<unsigned long long>(report->records));
    } else {
      for (const auto& d : report->defects)
        std::printf("BAD %s: %s\n", file.c_str(), d.c_str());
      if (rc == 0) rc = 1;
    }
  }
  return rc;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

// "HTTP/1.1 200 OK" -> 200; -1 when the block is not an HTTP response.
int HttpStatusOf(const store::Record& r) {
  if (r.type() != "response" && r.type() != "revisit") return -1;
  std::string_view b = r.block;
  if (b.substr(0, 5) != "HTTP/") return -1;
  size_t sp = b.find(' ');
  if (sp == std::string_view::npos || b.size() < sp + 4) return -1;
  int code = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (b[i] < '0' || b[i] > '9') return -1;
    code = code * 10 + (b[i] - '0');
  }
  return code;
}

int List(const std::string& file, bool json) {
  auto reader = store::WarcReader::Open(file);
  if (!reader.ok()) {
    std::fprintf(stderr, "crawlctl warc ls: %s\n",
                 reader.status().ToString().c_str());
    return 2;
  }
  store::Record rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    if (!more.ok()) {
      std::fprintf(stderr, "crawlctl warc ls: %s: %s\n", file.c_str(),
                   more.status().ToString().c_str());
      return more.status().code() == Status::Code::kIOError ? 2 : 1;
    }
    if (!*more) return 0;
    const int status = HttpStatusOf(rec);
    std::string uri = rec.Header("WARC-Target-URI");
    std::string date = rec.Header("WARC-Date");
    if (json) {
      std::printf(
          "{\"offset\":%llu,\"length\":%llu,\"type\":%s,\"uri\":%s,"
          "\"date\":%s,\"status\":%s,\"content_length\":%zu}\n",
          static_cast<unsigned long long>(rec.offset),
          static_cast<unsigned long long>(rec.length),
          JsonString(rec.type()).c_str(),
          uri.empty() ? "null" : JsonString(uri).c_str(),
          date.empty() ? "null" : JsonString(date).c_str(),
          status < 0 ? "null" : std::to_string(status).c_str(),
          rec.block.size());
    } else {
      std::string type = rec.type();
      std::printf(
          "%llu %llu %s %s %s %s %zu\n",
          static_cast<unsigned long long>(rec.offset),
          static_cast<unsigned long long>(rec.length),
          type.empty() ? "-" : type.c_str(), uri.empty() ? "-" : uri.c_str(),
          date.empty() ? "-" : date.c_str(),
          status < 0 ? "-" : std::to_string(status).c_str(), rec.block.size());
    }
  }
}

int Get(const std::string& url, const std::vector<std::string>& files) {
  int rc = 1;
  for (const std::string& file : files) {
    auto reader = store::WarcReader::Open(file);
    if (!reader.ok()) {
      std::fprintf(stderr, "crawlctl warc get: %s\n",
                   reader.status().ToString().c_str());
      rc = 2;
      continue;
    }
    store::Record rec;
    for (;;) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok()) {
        std::fprintf(stderr, "crawlctl warc get: %s: %s\n", file.c_str(),
                     more.status().ToString().c_str());
        break;
      }
      if (!*more) break;
      if (rec.type() == "response" && rec.Header("WARC-Target-URI") == url) {
        std::fwrite(rec.block.data(), 1, rec.block.size(), stdout);
        return std::fflush(stdout) == 0 ? 0 : 2;
      }
    }
  }
  if (rc == 1)
    std::fprintf(stderr, "crawlctl warc get: no response record for %s\n",
                 url.c_str());
  return rc;
}

// With a data directory: the CDXJ index names the file and offset of the
// URL's records, so one gzip member is read instead of whole files.
int GetIndexed(const std::string& url, const std::string& data) {
  std::vector<std::string> indexes;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(data + "/index", ec)) {
    if (e.path().extension() == ".cdxj") indexes.push_back(e.path().string());
  }
  if (ec) {
    std::fprintf(stderr, "crawlctl warc get: %s/index: %s\n", data.c_str(),
                 ec.message().c_str());
    return 2;
  }
  std::sort(indexes.begin(), indexes.end());
  for (const std::string& index : indexes) {
    auto entries = store::LookupCdxj(index, url);
    if (!entries.ok()) {
      std::fprintf(stderr, "crawlctl warc get: %s\n",
                   entries.status().ToString().c_str());
      continue;
    }
    for (const store::CdxjEntry& e : *entries) {
      if (e.revisit || e.url != url) continue;
      const std::string path = data + "/warc/" + e.filename;
      Result<store::Record> rec = store::ReadRecordAt(path, e.offset, e.length);
      if (!rec.ok() && rec.status().code() == Status::Code::kIOError) {
        std::fprintf(stderr, "crawlctl warc get: %s\n",
                     rec.status().ToString().c_str());
        return 2;
      }
      if (!rec.ok() || rec->type() != "response" ||
          rec->Header("WARC-Target-URI") != url) {
        std::fprintf(stderr,
                     "crawlctl warc get: %s: the index points at no "
                     "response record for %s at %llu\n",
                     path.c_str(), url.c_str(),
                     static_cast<unsigned long long>(e.offset));
        return 1;
      }
      std::fwrite(rec->block.data(), 1, rec->block.size(), stdout);
      return std::fflush(stdout) == 0 ? 0 : 2;
    }
  }
  std::fprintf(stderr, "crawlctl warc get: no response record for %s\n",
               url.c_str());
  return 1;
}

}  // namespace

int RunWarcCommand(int argc, char** argv) {
  if (argc < 2) return Usage(stderr, 2);
  std::string_view sub = argv[1];
  if (IsHelp(sub)) return Usage(stdout, 0);
  std::vector<std::string> args;
  bool json = false;
  std::string data;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (IsHelp(a)) return Usage(stdout, 0);
    if (a == "--json" && sub == "ls") {
      json = true;
    } else if (a == "--data" && sub == "get" && i + 1 < argc) {
      data = argv[++i];
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      std::fprintf(stderr, "crawlctl warc %s: unknown option %s\n", argv[1],
                   argv[i]);
      return Usage(stderr, 2);
    } else {
      args.emplace_back(a);
    }
  }
  if (sub == "verify") {
    if (args.empty()) return Usage(stderr, 2);
    return Verify(args);
  }
  if (sub == "ls") {
    if (args.size() != 1) return Usage(stderr, 2);
    return List(args[0], json);
  }
  if (sub == "get") {
    if (!data.empty()) {
      if (args.size() != 1) return Usage(stderr, 2);
      return GetIndexed(args[0], data);
    }
    if (args.size() < 2) return Usage(stderr, 2);
    return Get(args[0], {args.begin() + 1, args.end()});
  }
  std::fprintf(stderr, "crawlctl warc: unknown subcommand '%s'\n", argv[1]);
  return Usage(stderr, 2);
}

}  // namespace crawld::cli
