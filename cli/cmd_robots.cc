// crawlctl robots: check URLs against a robots.txt file (offline), and show
// the rules a live host's robots.txt gives us.
//
//   crawlctl robots check --robots FILE --agent NAME [--why]
//     Reads URLs (absolute, or path+query) from stdin, one per line, and
//     prints one line per input: "allowed" or "disallowed"; with --why, a
//     TAB and the deciding rule ("line N: Disallow: /x") or "default".
//     Diagnostics about the robots.txt go to stderr.
//   crawlctl robots show URL [--agent NAME] [--allow-private]
//                            [--resolve HOST:PORT:ADDR]... [--timeout-ms N]
//                            [--overrides FILE]
//     Fetches URL's robots.txt the way the worker does (daemon/worker.cc:
//     up to 5 redirects, 500 KiB, RFC 9309 2.3.1 outcomes), prints the
//     outcome and Rules::Describe(). libcurl easy: crawlctl is not the
//     crawler loop, one blocking fetch is what an operator wants here.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "conf/overrides.h"
#include "dns/dns.h"
#include "robots/robots.h"
#include "url/url.h"

namespace crawld::cli {
namespace {

constexpr char kGroupHelp[] =
    "usage: crawlctl robots <subcommand> [args...]\n"
    "\n"
    "subcommands:\n"
    "  check --robots FILE --agent NAME [--why]\n"
    "        check URLs read from stdin against a robots.txt file\n"
    "  show URL [--agent NAME] [--allow-private] [--resolve H:P:A]\n"
    "       [--timeout-ms N]\n"
    "        fetch URL's robots.txt and show the rules that apply to NAME\n"
    "\n"
    "Run 'crawlctl robots <subcommand> --help' for details.\n";

constexpr char kCheckHelp[] =
    "usage: crawlctl robots check --robots FILE --agent NAME [--why]\n"
    "\n"
    "Reads URLs from stdin, one per line: absolute URLs\n"
    "(https://host/path?query) or a path with its query (/path?query).\n"
    "Prints one line per input line: 'allowed' or 'disallowed' for the\n"
    "product token NAME, as Google's robots.txt parser (the reference\n"
    "implementation of RFC 9309) decides; see docs/ROBOTS.md. The whole\n"
    "file is read (up to 64 MiB); the crawler reads its first 500 KiB.\n"
    "\n"
    "  --robots FILE  the robots.txt file to read\n"
    "  --agent NAME   our product token, e.g. crawld (case-insensitive,\n"
    "                 compared as given)\n"
    "  --why          append a TAB and the deciding rule, as\n"
    "                 'line N: Disallow: /x', or 'default' when no rule\n"
    "                 matched\n"
    "\n"
    "Skipped robots.txt lines are reported on stderr.\n"
    "Exit codes: 0 done, 2 usage or I/O error.\n";

constexpr char kShowHelp[] =
    "usage: crawlctl robots show URL [--agent NAME] [--allow-private]\n"
    "                            [--resolve HOST:PORT:ADDR]... "
    "[--timeout-ms N]\n"
    "                            [--overrides FILE]\n"
    "\n"
    "Fetches the robots.txt of URL's origin as crawld does (User-Agent\n"
    "'NAME/0.1 (+https://github.com/crawld/crawld)', up to 5 redirects,\n"
    "the first 500 KiB) and prints the outcome, then the rules that apply\n"
    "to NAME in match order (RFC 9309 2.3.1):\n"
    "  outcome: parsed (robots.txt status 200, N bytes)\n"
    "  outcome: allow all (robots.txt status 404)      any 4xx\n"
    "  outcome: disallow all (unreachable: ...)        5xx, timeout, network\n"
    "                                                  error, >5 redirects\n"
    "\n"
    "  --agent NAME      our product token (default crawld)\n"
    "  --allow-private   allow loopback and private addresses, which are\n"
    "                    refused by default as crawld refuses them\n"
    "  --resolve H:P:A   connect to address A for host H and port P instead\n"
    "                    of asking DNS (curl's --resolve); repeatable\n"
    "  --timeout-ms N    give up after N ms (default 10000)\n"
    "  --overrides FILE  apply FILE's overrides for the host\n"
    "                    (docs/OVERRIDES.md): ignore-robots skips the\n"
    "                    fetch, disallows are added to the rules, and the\n"
    "                    deciding lines are printed as 'override: ...'\n"
    "\n"
    "Exit codes: 0 an outcome was printed (4xx and unreachable included),\n"
    "2 usage error.\n";

bool IsHelp(std::string_view arg) { return arg == "--help" || arg == "-h"; }

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
  // The whole file, as Google's robots_check reads it (the crawler reads the
  // first 500 KiB, RFC 9309 2.5).
  robots::Options options;
  options.max_bytes = std::numeric_limits<size_t>::max();  // clamped: 64 MiB
  const robots::Rules rules = robots::Rules::Parse(body.str(), agent, options);
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
    const robots::Verdict v = rules.Check(robots::PathFromUrl(line));
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

constexpr size_t kRobotsCap = 500 * 1024;  // as the worker, RFC 9309 2.5
constexpr long kDefaultTimeoutMs = 10000;
constexpr long kMaxTimeoutMs = 600000;

struct ShowArgs {
  std::string url;
  std::string agent = "crawld";
  bool allow_private = false;
  std::vector<std::string> resolve;
  long timeout_ms = kDefaultTimeoutMs;
  std::string overrides;  // override file, conf/overrides.h
};

struct Fetch {
  bool allow_private = false;
  std::string body;
  bool capped = false;
  std::string blocked;  // the first private address refused
};

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* f = static_cast<Fetch*>(user);
  const size_t n = size * nmemb;
  // One byte past the cap, so that Rules::Parse can tell whether the cap
  // cut a line; then stop the transfer (a gzip bomb ends here too).
  const size_t room = kRobotsCap + 1 - f->body.size();
  if (n > room) {
    f->body.append(data, room);
    f->capped = true;
    return 0;
  }
  f->body.append(data, n);
  return n;
}

// The private-network guard on every address curl connects to, including
// after a redirect and for every address of a name.
curl_socket_t OnOpenSocket(void* user, curlsocktype, curl_sockaddr* addr) {
  auto* f = static_cast<Fetch*>(user);
  char ip[INET6_ADDRSTRLEN] = "";
  if (addr->family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr->addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
  } else if (addr->family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr->addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
  }
  if (!f->allow_private && dns::IsPrivateAddress(ip)) {
    if (f->blocked.empty()) f->blocked = ip[0] != '\0' ? ip : "unknown";
    return CURL_SOCKET_BAD;
  }
  return socket(addr->family, addr->socktype, addr->protocol);
}

bool IsIpLiteral(std::string_view s) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    s = s.substr(1, s.size() - 2);
  }
  const std::string z(s);
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, z.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, z.c_str(), buf) == 1;
}

// Checks one --resolve value; returns an error text, empty if fine.
std::string CheckResolve(std::string_view v, bool allow_private) {
  const size_t c1 = v.find(':');
  const size_t c2 = c1 == std::string_view::npos ? c1 : v.find(':', c1 + 1);
  if (c1 == 0 || c2 == std::string_view::npos) {
    return "--resolve '" + std::string(v) + "': expected HOST:PORT:ADDR";
  }
  const std::string_view port = v.substr(c1 + 1, c2 - c1 - 1);
  const std::string_view addr = v.substr(c2 + 1);
  long p = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || p > 65535) {
      p = -1;
      break;
    }
    p = p * 10 + (c - '0');
  }
  if (port.empty() || p < 1 || p > 65535) {
    return "--resolve '" + std::string(v) + "': bad port";
  }
  if (!IsIpLiteral(addr)) {
    return "--resolve '" + std::string(v) + "': '" + std::string(addr) +
           "' is not an IP address";
  }
  if (!allow_private && dns::IsPrivateAddress(addr)) {
    return "--resolve '" + std::string(v) + "': " + std::string(addr) +
           " is a private or loopback address; add --allow-private";
  }
  return {};
}

int ShowUsage(const std::string& what) {
  std::fprintf(stderr, "robots show: %s\n\n%s", what.c_str(), kShowHelp);
  return 2;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// Fetches robots_url and maps the result to Rules as the worker does
// (RFC 9309 2.3.1); appends the "fetched:" and "outcome:" lines to
// *out_text. Returns 0, or 2 when libcurl cannot be set up.
int FetchRobots(const ShowArgs& args, const std::string& robots_url,
                std::string* out_text, robots::Rules* rules_out) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    std::fprintf(stderr, "robots show: libcurl initialisation failed\n");
    return 2;
  }
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  std::unique_ptr<curl_slist, SlistDeleter> resolve;
  for (const std::string& r : args.resolve) {
    curl_slist* l = curl_slist_append(resolve.get(), r.c_str());
    if (l == nullptr) {
      std::fprintf(stderr, "robots show: out of memory\n");
      return 2;
    }
    (void)resolve.release();
    resolve.reset(l);
  }
  if (!curl) {
    std::fprintf(stderr, "robots show: libcurl initialisation failed\n");
    return 2;
  }
  Fetch fetch;
  fetch.allow_private = args.allow_private;
  char errbuf[CURL_ERROR_SIZE] = "";
  const std::string user_agent =
      args.agent + "/0.1 (+https://github.com/crawld/crawld)";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, robots_url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);  // RFC 9309 2.3.1.2
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, args.timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  // The crawler connects directly; so do we, whatever http_proxy says.
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &fetch);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &fetch);
  if (resolve) curl_easy_setopt(c, CURLOPT_RESOLVE, resolve.get());

  const CURLcode rc = curl_easy_perform(c);
  std::string& out = *out_text;
  long status = 0;
  long redirects = 0;
  char* effective = nullptr;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(c, CURLINFO_REDIRECT_COUNT, &redirects);
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective);

  if (redirects > 0 && effective != nullptr) {
    std::string where(effective);
    // From a Location header: no control characters on the terminal.
    for (char& ch : where) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) ch = '?';
    }
    out += "fetched: " + where + " (after " + std::to_string(redirects) +
           (redirects == 1 ? " redirect)\n" : " redirects)\n");
  }
  robots::Rules& rules = *rules_out;
  rules = robots::Rules::DisallowAll();
  const bool complete =
      rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && fetch.capped);
  if (complete && status >= 200 && status < 300) {
    rules = robots::Rules::Parse(fetch.body, args.agent);
    out +=
        "outcome: parsed (robots.txt status " + std::to_string(status) + ", " +
        (fetch.capped
             ? "first " + std::to_string(kRobotsCap) + " bytes of a larger file"
             : std::to_string(fetch.body.size()) + " bytes") +
        ")\n";
  } else if (complete && status >= 400 && status < 500) {
    rules = robots::Rules::AllowAll();
    out += "outcome: allow all (robots.txt status " + std::to_string(status) +
           ")\n";
  } else {
    std::string why;
    if (!fetch.blocked.empty()) {
      why =
          "private address blocked: " + fetch.blocked + "; see --allow-private";
    } else if (rc == CURLE_TOO_MANY_REDIRECTS) {
      why = "more than 5 redirects";
    } else if (rc != CURLE_OK) {
      why = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    } else {
      why = "robots.txt status " + std::to_string(status);
    }
    out += "outcome: disallow all (unreachable: " + why + ")\n";
  }
  return 0;
}

int RunShow(int argc, char** argv) {
  ShowArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (IsHelp(arg)) {
      std::fputs(kShowHelp, stdout);
      return 0;
    }
    const bool has_value = i + 1 < argc;
    if (arg == "--agent" && has_value) {
      args.agent = argv[++i];
    } else if (arg == "--allow-private") {
      args.allow_private = true;
    } else if (arg == "--overrides" && has_value) {
      args.overrides = argv[++i];
    } else if (arg == "--resolve" && has_value) {
      args.resolve.emplace_back(argv[++i]);
    } else if (arg == "--timeout-ms" && has_value) {
      const std::string_view v = argv[++i];
      long ms = 0;
      for (char c : v) {
        if (c < '0' || c > '9' || ms > kMaxTimeoutMs) {
          ms = -1;
          break;
        }
        ms = ms * 10 + (c - '0');
      }
      if (v.empty() || ms < 1 || ms > kMaxTimeoutMs) {
        return ShowUsage("--timeout-ms: expected 1 to 600000");
      }
      args.timeout_ms = ms;
    } else if (!arg.starts_with("-") && args.url.empty()) {
      args.url = std::string(arg);
    } else {
      return ShowUsage("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (args.url.empty()) return ShowUsage("a URL is required");
  const std::string_view token = args.agent;
  if (token.empty() ||
      token.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                              "TUVWXYZ_-") != std::string_view::npos) {
    return ShowUsage("--agent: a product token is letters, '_' and '-'");
  }
  for (const std::string& r : args.resolve) {
    const std::string what = CheckResolve(r, args.allow_private);
    if (!what.empty()) return ShowUsage(what);
  }
  Result<url::Url> parsed = url::Parse(args.url);
  if (!parsed.ok() || !parsed->is_http() || parsed->host().empty()) {
    return ShowUsage(
        "'" + args.url + "' is not an absolute http(s) URL" +
        (parsed.ok() ? std::string() : " (" + parsed.status().message() + ")"));
  }
  const url::Url& u = *parsed;
  std::string robots_url =
      std::string(u.scheme()) + "://" + std::string(u.host());
  if (u.has_explicit_port()) robots_url += ":" + std::to_string(u.port());
  robots_url += "/robots.txt";

  std::unique_ptr<conf::Overrides> overrides = conf::Overrides::None();
  if (!args.overrides.empty()) {
    auto loaded = conf::Overrides::Load(args.overrides);
    if (!loaded.ok()) {
      std::fprintf(stderr, "robots show: %s\n",
                   loaded.status().message().c_str());
      return 2;
    }
    overrides = std::move(loaded).value();
  }
  const conf::HostOverride o = overrides->For(u.host());

  std::string out = "robots.txt: " + robots_url + "\n";
  robots::Rules rules;
  if (o.ignore_robots) {
    out += "outcome: not fetched (ignore-robots override)\n";
  } else if (const int rc = FetchRobots(args, robots_url, &out, &rules);
             rc != 0) {
    return rc;
  }
  if (!o.empty()) {
    out += "override: " + overrides->Describe(o) + "\n";
    for (const conf::OverrideDisallow& d : o.disallow) {
      rules.AddDisallow(d.pattern, overrides->Where(d.line));
    }
  }
  out += rules.Describe();
  if (rules.diagnostic_count() > 0) {
    out += "diagnostics: " + std::to_string(rules.diagnostic_count()) + "\n";
    for (const std::string& d : rules.diagnostics()) out += "  " + d + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "robots show: I/O error\n");
    return 2;
  }
  return 0;
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
