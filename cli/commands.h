// cli/commands.h: the crawlctl command groups. Each group lives in its own
// file (cmd_<group>.cc) and is called with argv[0] == the group name.
//
// Contract for every Run*Command: parse its own flags, print `--help` text
// to stdout, write results to stdout and diagnostics to stderr, and return
// the process exit code: 0 success, 1 the checked input has defects (e.g.
// `warc verify` found a bad record), 2 usage or I/O error.
//
// The online commands (RunAdminCommand, cmd_admin.cc) talk to a running
// crawld's admin API and use their own codes (docs/CRAWLCTL.md): 0 ok,
// 1 the server answered an error, 2 usage or local I/O error, 3 cannot
// reach the server.
#ifndef CRAWLD_CLI_COMMANDS_H_
#define CRAWLD_CLI_COMMANDS_H_

namespace crawld::cli {

int RunUrlCommand(int argc, char** argv);     // url resolve | url canon
int RunLinksCommand(int argc, char** argv);   // links --base URL
int RunRobotsCommand(int argc, char** argv);  // robots check | robots show
int RunWarcCommand(int argc, char** argv);    // warc verify | ls | get
int RunFilterCommand(int argc, char** argv);  // filter test --rules FILE
// sitemap FILE [--url URL] [--cross-submitted HOST]... [--json]
int RunSitemapCommand(int argc, char** argv);
int RunReportCommand(int argc, char** argv);  // report list | report NAME
// status | metrics | pause | resume | stop | seeds | rules | host | docs;
// argv[0] says which.
int RunAdminCommand(int argc, char** argv);
// For the online commands' common options given before the command
// (`crawlctl --data DIR status`): 1 for an option that takes a value
// (--api, --data, --token, --timeout-ms), 0 for a switch (--json), -1 for
// anything else.
int CommonOptionArity(const char* arg);

}  // namespace crawld::cli

#endif  // CRAWLD_CLI_COMMANDS_H_
