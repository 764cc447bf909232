// Tests for conf/: the TOML schema, its defaults, its error messages, and
// the documentation that must not drift from it.
//
// TomlV1_* tests pin behaviour the TOML v1.0.0 spec requires
// (https://toml.io/en/v1.0.0); CrawldConf_* tests pin our own schema rules.
#include "conf/conf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace crawld::conf {
namespace {

const std::string kSourceDir = CRAWLD_SOURCE_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The error message of a parse that must fail.
std::string ErrorOf(std::string_view text, std::string_view source = "t.toml") {
  Result<Config> r = ParseConfig(text, source);
  EXPECT_FALSE(r.ok()) << "unexpectedly parsed:\n" << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  return r.status().message();
}

// Every field by name, so a failure says which one; then operator== to catch
// fields added later and not listed here.
void ExpectSameValues(const Config& a, const Config& b) {
  EXPECT_EQ(a.crawl.user_agent, b.crawl.user_agent);
  EXPECT_EQ(a.crawl.robots_token, b.crawl.robots_token);
  EXPECT_EQ(a.crawl.data_dir, b.crawl.data_dir);
  EXPECT_EQ(a.crawl.max_pages, b.crawl.max_pages);
  EXPECT_EQ(a.crawl.max_duration_s, b.crawl.max_duration_s);
  EXPECT_EQ(a.crawl.max_depth, b.crawl.max_depth);
  EXPECT_EQ(a.crawl.progress_interval_s, b.crawl.progress_interval_s);
  EXPECT_EQ(a.fetch.connect_timeout_ms, b.fetch.connect_timeout_ms);
  EXPECT_EQ(a.fetch.total_timeout_ms, b.fetch.total_timeout_ms);
  EXPECT_EQ(a.fetch.low_speed_bytes_per_s, b.fetch.low_speed_bytes_per_s);
  EXPECT_EQ(a.fetch.low_speed_time_s, b.fetch.low_speed_time_s);
  EXPECT_EQ(a.fetch.max_body_bytes, b.fetch.max_body_bytes);
  EXPECT_EQ(a.fetch.max_redirects, b.fetch.max_redirects);
  EXPECT_EQ(a.fetch.max_connections, b.fetch.max_connections);
  EXPECT_EQ(a.fetch.memory_body_bytes, b.fetch.memory_body_bytes);
  EXPECT_EQ(a.fetch.verify_tls, b.fetch.verify_tls);
  EXPECT_EQ(a.fetch.ca_file, b.fetch.ca_file);
  EXPECT_EQ(a.fetch.accept_encoding, b.fetch.accept_encoding);
  EXPECT_EQ(a.fetch.http2, b.fetch.http2);
  EXPECT_EQ(a.politeness.min_delay_ms, b.politeness.min_delay_ms);
  EXPECT_EQ(a.politeness.max_delay_ms, b.politeness.max_delay_ms);
  EXPECT_EQ(a.politeness.delay_factor, b.politeness.delay_factor);
  EXPECT_EQ(a.politeness.max_crawl_delay_ms, b.politeness.max_crawl_delay_ms);
  EXPECT_EQ(a.politeness.respect_robots, b.politeness.respect_robots);
  EXPECT_EQ(a.politeness.robots_ttl_s, b.politeness.robots_ttl_s);
  EXPECT_EQ(a.dns.servers, b.dns.servers);
  EXPECT_EQ(a.dedupe.earlier, b.dedupe.earlier);
  EXPECT_EQ(a.dns.min_ttl_s, b.dns.min_ttl_s);
  EXPECT_EQ(a.dns.max_ttl_s, b.dns.max_ttl_s);
  EXPECT_EQ(a.dns.negative_ttl_s, b.dns.negative_ttl_s);
  EXPECT_EQ(a.dns.timeout_ms, b.dns.timeout_ms);
  EXPECT_EQ(a.dns.tries, b.dns.tries);
  EXPECT_EQ(a.network.allow_private, b.network.allow_private);
  EXPECT_EQ(a.store.warc_prefix, b.store.warc_prefix);
  EXPECT_EQ(a.store.rotate_bytes, b.store.rotate_bytes);
  EXPECT_EQ(a.store.gzip_level, b.store.gzip_level);
  EXPECT_EQ(a.workers.count, b.workers.count);
  Config a2 = a;
  a2.source = b.source;
  EXPECT_TRUE(a2 == b) << "a field missing from ExpectSameValues differs";
}

// A config where every field differs from its default.
Config NonDefault() {
  Config c;
  c.crawl.user_agent = "ExampleBot/2.3 (+http://bot.example.org/ \"q\" \\)";
  c.crawl.robots_token = "Example-Bot_x";
  c.crawl.data_dir = "/var/lib/crawl \"d\" \\ caf\xC3\xA9 \xF0\x9F\x95\xB7";
  c.crawl.max_pages = 123456789012;
  c.crawl.max_duration_s = 0.1 + 0.2;  // not exactly representable in text
  c.crawl.max_depth = 17;
  c.crawl.progress_interval_s = 2.5;
  c.fetch.connect_timeout_ms = 1234;
  c.fetch.total_timeout_ms = 98765;
  c.fetch.low_speed_bytes_per_s = 0;
  c.fetch.low_speed_time_s = 7;
  c.fetch.max_body_bytes = 4294967296;
  c.fetch.max_redirects = 0;
  c.fetch.max_connections = 9;
  c.fetch.memory_body_bytes = 0;
  c.fetch.verify_tls = false;
  c.fetch.ca_file = "tests/ca.pem";
  c.fetch.accept_encoding = "";
  c.fetch.http2 = false;
  c.politeness.min_delay_ms = 0;
  c.politeness.max_delay_ms = 0;
  c.politeness.delay_factor = 1e-7;
  c.politeness.max_crawl_delay_ms = 86400000;
  c.politeness.respect_robots = false;
  c.politeness.robots_ttl_s = 60;
  c.dns.servers = {"127.0.0.1:5353", "[::1]:53", "[2001:db8::1]:65535"};
  c.dedupe.earlier = {"/srv/crawls/2026-10", "old/one.cdxj"};
  c.dns.min_ttl_s = 0;
  c.dns.max_ttl_s = 604800;
  c.dns.negative_ttl_s = 1;
  c.dns.timeout_ms = 100;
  c.dns.tries = 10;
  c.network.allow_private = true;
  c.store.warc_prefix = "my.crawl-2026_x";
  c.store.rotate_bytes = 1ull << 40;
  c.store.gzip_level = 0;
  c.workers.count = 256;
  c.source = "frozen.toml";
  return c;
}

// Splits "lo .. hi" from KeyInfo::range.
std::pair<std::string, std::string> Bounds(const KeyInfo& k) {
  size_t dots = k.range.find(" .. ");
  return {k.range.substr(0, dots), k.range.substr(dots + 4)};
}

// For a key at an extreme of its range, the partner of an ordered pair that
// keeps the pair consistent ("" when the key is in no pair).
const std::map<std::string, std::pair<std::string, std::string>>& Partners() {
  // key -> (partner key, partner value that is always compatible)
  static const auto* m =
      new std::map<std::string, std::pair<std::string, std::string>>{
          {"fetch.connect_timeout_ms", {"total_timeout_ms", "3600000"}},
          {"fetch.total_timeout_ms", {"connect_timeout_ms", "100"}},
          {"politeness.min_delay_ms", {"max_delay_ms", "86400000"}},
          {"politeness.max_delay_ms", {"min_delay_ms", "0"}},
          {"dns.min_ttl_s", {"max_ttl_s", "604800"}},
          {"dns.max_ttl_s", {"min_ttl_s", "0"}},
      };
  return *m;
}

// "[table]\n<key> = <value>\n" plus the pair partner if any; the key is on
// line 2.
std::string OneKey(const KeyInfo& k, std::string_view value) {
  std::string text = "[" + std::string(k.table) + "]\n" + std::string(k.key) +
                     " = " + std::string(value) + "\n";
  auto it = Partners().find(std::string(k.table) + "." + std::string(k.key));
  if (it != Partners().end()) {
    text += it->second.first + " = " + it->second.second + "\n";
  }
  return text;
}

// ---------------------------------------------------------------------------
// Defaults and the shipped files.

TEST(CrawldConf, EmptyFileIsDefaults) {
  Result<Config> r = ParseConfig("", "empty.toml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, "empty.toml");
  ExpectSameValues(*r, Defaults());
  // Comments and blank lines only: still the defaults.
  Result<Config> c = ParseConfig("# nothing\n\n   \n# at all\n", "c.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectSameValues(*c, Defaults());
}

TEST(CrawldConf, DefaultsHaveEmptySourceAndPassValidate) {
  EXPECT_EQ(Defaults().source, "");
  EXPECT_TRUE(Validate(Defaults()).ok()) << Validate(Defaults()).ToString();
  Result<Config> r = ParseConfig("", "");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r == Defaults());
}

TEST(CrawldConf, EmptyTablesAreDefaults) {
  Result<Config> r = ParseConfig(
      "[crawl]\n[fetch]\n[politeness]\n[dns]\n[network]\n[store]\n[workers]\n",
      "t.toml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectSameValues(*r, Defaults());
}

TEST(CrawldConf, CrawlerTomlParsesToDefaults) {
  const std::string path = kSourceDir + "/conf/crawler.toml";
  Result<Config> r = LoadConfigFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, path);
  ExpectSameValues(*r, Defaults());
}

// Every key of the schema is written out in crawler.toml (not merely left
// to its default), under its own table, so the documented file cannot drift.
TEST(CrawldConf, CrawlerTomlListsEveryKey) {
  std::istringstream in(ReadFile(kSourceDir + "/conf/crawler.toml"));
  std::set<std::string> present;
  std::string table;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      table = line.substr(1, line.find(']') - 1);
      continue;
    }
    size_t eq = line.find(" = ");
    ASSERT_NE(eq, std::string::npos) << line;
    present.insert(table + "." + line.substr(0, eq));
  }
  std::set<std::string> schema;
  for (const KeyInfo& k : Schema()) {
    schema.insert(std::string(k.table) + "." + std::string(k.key));
  }
  EXPECT_EQ(present, schema);
}

// docs/CONFIG.md names every key as `table.key`, once, together with its
// default and its range, exactly as the schema has them.
TEST(CrawldConf, ConfigMdDocumentsEveryKey) {
  const std::string doc = ReadFile(kSourceDir + "/docs/CONFIG.md");
  ASSERT_FALSE(doc.empty());
  for (const KeyInfo& k : Schema()) {
    const std::string name =
        "`" + std::string(k.table) + "." + std::string(k.key) + "`";
    size_t row = doc.find("| " + name + " |");
    ASSERT_NE(row, std::string::npos) << name << " missing from CONFIG.md";
    EXPECT_EQ(doc.find("| " + name + " |", row + 1), std::string::npos)
        << name << " documented twice (tools/update-config-docs.py)";
    std::string line = doc.substr(row, doc.find('\n', row) - row);
    EXPECT_NE(line.find("`" + k.default_toml + "`"), std::string::npos)
        << name << ": default " << k.default_toml << " not in: " << line;
    EXPECT_NE(line.find(k.range), std::string::npos)
        << name << ": range " << k.range << " not in: " << line;
  }
}

TEST(CrawldConf, SchemaDescribesEveryKeyOnce) {
  std::vector<KeyInfo> schema = Schema();
  // 103 + admin.console (issue 18) + [recrawl] and fetch.http2 (issue 17)
  // + politeness.host_record_idle_s and store.near_duplicate_entries
  // (issue 16)
  EXPECT_EQ(schema.size(), 116u);
  std::set<std::string> names;
  for (const KeyInfo& k : schema) {
    EXPECT_TRUE(
        names.insert(std::string(k.table) + "." + std::string(k.key)).second);
    EXPECT_FALSE(k.doc.empty());
    EXPECT_FALSE(k.range.empty());
    EXPECT_FALSE(k.default_toml.empty());
  }
}

// ---------------------------------------------------------------------------
// TOML syntax (the toml++ parser), reported with our file:line prefix.

// TOML v1.0.0, Keys: "Defining a key multiple times is invalid."
TEST(TomlV1, Keys_DuplicateKeyIsErrorOnItsLine) {
  std::string msg =
      ErrorOf("[fetch]\nmax_redirects = 3\n\nmax_redirects = 4\n", "dup.toml");
  EXPECT_TRUE(msg.starts_with("dup.toml:4: syntax error: ")) << msg;
  EXPECT_NE(msg.find("max_redirects"), std::string::npos) << msg;
}

// TOML v1.0.0, Table: "you cannot define any key or table more than once."
TEST(TomlV1, Table_DefinedTwiceIsErrorOnItsLine) {
  std::string msg = ErrorOf("[fetch]\n[crawl]\n[fetch]\n", "t.toml");
  EXPECT_TRUE(msg.starts_with("t.toml:3: syntax error: ")) << msg;
}

TEST(TomlV1, SyntaxErrorReportsTheParserLine) {
  EXPECT_TRUE(ErrorOf("[crawl]\nmax_depth = 1\nmax_pages = \n")
                  .starts_with("t.toml:3: syntax error: "));
  EXPECT_TRUE(
      ErrorOf("\n\n\n\n[crawl\n").starts_with("t.toml:5: syntax error: "));
  EXPECT_TRUE(ErrorOf("[crawl]\nuser_agent = \"unterminated\n")
                  .starts_with("t.toml:2: syntax error: "));
}

// TOML v1.0.0, Spec: "A TOML file must be a valid UTF-8 encoded Unicode
// document."
TEST(TomlV1, Spec_InvalidUtf8IsSyntaxError) {
  EXPECT_TRUE(ErrorOf("[crawl]\ndata_dir = \"a\xff\"\n")
                  .starts_with("t.toml:2: syntax error: "));
}

// TOML v1.0.0, Integer: "Arbitrary 64-bit signed integers ... should be
// accepted and handled losslessly. If an integer cannot be represented
// losslessly, an error must be thrown."
TEST(TomlV1, Integer_OverflowIsSyntaxError) {
  EXPECT_TRUE(ErrorOf("[crawl]\nmax_pages = 9223372036854775808\n")
                  .starts_with("t.toml:2: syntax error: "));
}

// Dotted keys and inline tables define the same tables as [headers].
TEST(TomlV1, Keys_DottedKeysAndInlineTablesWork) {
  Result<Config> a = ParseConfig("fetch.max_redirects = 3\n", "t.toml");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->fetch.max_redirects, 3);
  Result<Config> b =
      ParseConfig("dns = { tries = 4, servers = [\"127.0.0.1:53\"] }\n", "t");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->dns.tries, 4);
  EXPECT_EQ(b->dns.servers, std::vector<std::string>{"127.0.0.1:53"});
  // An unknown key inside an inline table is still reported.
  EXPECT_EQ(ErrorOf("\ndns = { trys = 4 }\n"),
            "t.toml:2: dns.trys: unknown key (did you mean dns.tries?)");
}

// ---------------------------------------------------------------------------
// Unknown keys and tables.

TEST(CrawldConf, UnknownKeyNamesFileLineAndKey) {
  EXPECT_EQ(ErrorOf("# c\n[crawl]\nmax_depth = 2\n\nfavourite_colour = 1\n",
                    "crawl.toml"),
            "crawl.toml:5: crawl.favourite_colour: unknown key");
}

TEST(CrawldConf, UnknownKeySuggestsTheNearestKnownKey) {
  EXPECT_EQ(ErrorOf("[fetch]\nmax_redirect = 3\n"),
            "t.toml:2: fetch.max_redirect: unknown key (did you mean "
            "fetch.max_redirects?)");
  EXPECT_EQ(ErrorOf("[crawl]\nmax_redirects = 3\n"),
            "t.toml:2: crawl.max_redirects: unknown key (it belongs in "
            "[fetch])");
}

TEST(CrawldConf, UnknownTableIsError) {
  EXPECT_EQ(ErrorOf("[crawl]\n[fetcher]\nmax_redirects = 3\n"),
            "t.toml:2: fetcher: unknown table (did you mean [fetch]?)");
  EXPECT_EQ(ErrorOf("\n[supervisor]\nport = 1\n"),
            "t.toml:2: supervisor: unknown table");
  // Sub-tables of known tables are unknown keys of that table.
  EXPECT_EQ(ErrorOf("[fetch.limits]\nx = 1\n"),
            "t.toml:1: fetch.limits: unknown key");
}

TEST(CrawldConf, KeyOutsideAnyTableIsError) {
  EXPECT_EQ(ErrorOf("user_agent = \"a (+https://x.org)\"\n"),
            "t.toml:1: user_agent: unknown key outside any table (it belongs "
            "in [crawl])");
  EXPECT_EQ(ErrorOf("\nverbose = true\n"),
            "t.toml:2: verbose: unknown key outside any table");
}

TEST(CrawldConf, TableThatIsNotATableIsError) {
  EXPECT_EQ(ErrorOf("fetch = 5\n"),
            "t.toml:1: fetch: must be a table, got integer");
  EXPECT_EQ(ErrorOf("[[fetch]]\nmax_redirects = 1\n"),
            "t.toml:1: fetch: must be a table, got array");
}

// ---------------------------------------------------------------------------
// Types.

// Every key rejects a value of a type it cannot take (a date fits no key),
// naming the key and the line.
TEST(CrawldConf, WrongTypeIsErrorForEveryKey) {
  for (const KeyInfo& k : Schema()) {
    std::string text = "[" + std::string(k.table) + "]\n" + std::string(k.key) +
                       " = 1979-05-27\n";
    EXPECT_EQ(ErrorOf(text),
              "t.toml:2: " + std::string(k.table) + "." + std::string(k.key) +
                  ": must be " +
                  (k.type[0] == 'i' || k.type[0] == 'a' ? "an " : "a ") +
                  std::string(k.type) + ", got date");
  }
}

TEST(CrawldConf, WrongTypeMessages) {
  EXPECT_EQ(ErrorOf("[fetch]\nverify_tls = \"yes\"\n"),
            "t.toml:2: fetch.verify_tls: must be a boolean, got string");
  EXPECT_EQ(ErrorOf("[fetch]\nverify_tls = 1\n"),
            "t.toml:2: fetch.verify_tls: must be a boolean, got integer");
  EXPECT_EQ(ErrorOf("[fetch]\nmax_redirects = \"5\"\n"),
            "t.toml:2: fetch.max_redirects: must be an integer, got string");
  EXPECT_EQ(ErrorOf("[crawl]\ndata_dir = 5\n"),
            "t.toml:2: crawl.data_dir: must be a string, got integer");
  EXPECT_EQ(ErrorOf("[dns]\nservers = \"127.0.0.1:53\"\n"),
            "t.toml:2: dns.servers: must be an array of strings, got string");
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\n  \"127.0.0.1:53\",\n  53,\n]\n"),
            "t.toml:4: dns.servers[1]: must be a string, got integer");
}

TEST(CrawldConf, FloatWhereIntegerExpectedIsError) {
  EXPECT_EQ(ErrorOf("[crawl]\nmax_depth = 3.0\n"),
            "t.toml:2: crawl.max_depth: must be an integer, got float");
  EXPECT_EQ(ErrorOf("[fetch]\nmax_body_bytes = 1e6\n"),
            "t.toml:2: fetch.max_body_bytes: must be an integer, got float");
}

TEST(CrawldConf, IntegerWhereFloatExpectedIsAccepted) {
  Result<Config> r = ParseConfig(
      "[politeness]\ndelay_factor = 3\n[crawl]\nmax_duration_s = 3600\n", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->politeness.delay_factor, 3.0);
  EXPECT_EQ(r->crawl.max_duration_s, 3600.0);
}

// ---------------------------------------------------------------------------
// Ranges.

TEST(CrawldConf, OutOfRangeMessageFormat) {
  EXPECT_EQ(
      ErrorOf("# line 1\n\n\n\n\n\n\n\n\n\n[fetch]\nmax_body_bytes = 10\n",
              "crawl.toml"),
      "crawl.toml:12: fetch.max_body_bytes: must be between 1024 and "
      "4294967296");
}

// Every numeric key accepts both ends of its documented range and rejects
// the values just outside it.
TEST(CrawldConf, EveryNumericKeyEnforcesItsRange) {
  int checked = 0;
  for (const KeyInfo& k : Schema()) {
    if (k.type != "integer" && k.type != "float") continue;
    const std::string name = std::string(k.table) + "." + std::string(k.key);
    auto [lo, hi] = Bounds(k);
    for (const std::string& v : {lo, hi}) {
      Result<Config> r = ParseConfig(OneKey(k, v), "t.toml");
      EXPECT_TRUE(r.ok()) << name << " = " << v << ": "
                          << r.status().ToString();
    }
    std::string below, above;
    if (k.type == "integer") {
      below = std::to_string(std::stoll(lo) - 1);
      above = std::to_string(std::stoll(hi) + 1);
    } else {
      below = std::to_string(std::stod(lo) - 0.001);
      above = std::to_string(std::stod(hi) + 0.001);
    }
    for (const std::string& v : {below, above}) {
      EXPECT_EQ(ErrorOf(OneKey(k, v)),
                "t.toml:2: " + name + ": must be between " + lo + " and " + hi)
          << name << " = " << v;
    }
    ++checked;
  }
  // 62 + [recrawl]'s 8 numeric keys + politeness.host_record_idle_s +
  // store.near_duplicate_entries
  EXPECT_EQ(checked, 72);
}

TEST(CrawldConf, FloatKeysRejectNanAndInfinity) {
  for (const char* v : {"nan", "+inf", "-inf", "-nan"}) {
    EXPECT_EQ(ErrorOf(std::string("[politeness]\ndelay_factor = ") + v + "\n"),
              "t.toml:2: politeness.delay_factor: must be between 0.0 and "
              "100.0")
        << v;
  }
}

TEST(CrawldConf, NegativeValueForUnsignedKeyIsError) {
  EXPECT_EQ(ErrorOf("[crawl]\nmax_pages = -1\n"),
            "t.toml:2: crawl.max_pages: must be between 0 and 1000000000000");
  EXPECT_EQ(ErrorOf("[crawl]\nmax_pages = -9223372036854775808\n"),
            "t.toml:2: crawl.max_pages: must be between 0 and 1000000000000");
}

TEST(CrawldConf, LargeValuesAreStoredExactly) {
  Result<Config> r = ParseConfig(
      "[fetch]\nmax_body_bytes = 0x1_0000_0000\n[store]\nrotate_bytes = "
      "1_099_511_627_776\n[crawl]\nmax_pages = 999_999_999_999\n",
      "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->fetch.max_body_bytes, 4294967296u);
  EXPECT_EQ(r->store.rotate_bytes, 1ull << 40);
  EXPECT_EQ(r->crawl.max_pages, 999999999999u);
}

// ---------------------------------------------------------------------------
// Ordered pairs: the error goes to the second key (the later one in the file).

TEST(CrawldConf, MinDelayAboveMaxDelayReportsTheSecondKey) {
  EXPECT_EQ(ErrorOf("[politeness]\nmin_delay_ms = 5000\nmax_delay_ms = 4000\n"),
            "t.toml:3: politeness.max_delay_ms: must be >= "
            "politeness.min_delay_ms (5000)");
  EXPECT_EQ(ErrorOf("[politeness]\nmax_delay_ms = 4000\nmin_delay_ms = 5000\n"),
            "t.toml:3: politeness.min_delay_ms: must be <= "
            "politeness.max_delay_ms (4000)");
  // Only one key set: it clashes with the other's default.
  EXPECT_EQ(ErrorOf("[politeness]\n\nmin_delay_ms = 70000\n"),
            "t.toml:3: politeness.min_delay_ms: must be <= "
            "politeness.max_delay_ms (60000)");
  EXPECT_EQ(ErrorOf("[politeness]\nmax_delay_ms = 999\n"),
            "t.toml:2: politeness.max_delay_ms: must be >= "
            "politeness.min_delay_ms (1000)");
  // Equal is fine.
  EXPECT_TRUE(
      ParseConfig("[politeness]\nmin_delay_ms = 7\nmax_delay_ms = 7\n", "t")
          .ok());
}

TEST(CrawldConf, MinTtlAboveMaxTtlReportsTheSecondKey) {
  EXPECT_EQ(ErrorOf("[dns]\nmin_ttl_s = 600\nmax_ttl_s = 300\n"),
            "t.toml:3: dns.max_ttl_s: must be >= dns.min_ttl_s (600)");
  EXPECT_EQ(ErrorOf("[dns]\nmin_ttl_s = 7200\n"),
            "t.toml:2: dns.min_ttl_s: must be <= dns.max_ttl_s (3600)");
}

TEST(CrawldConf, ConnectTimeoutAboveTotalTimeoutIsError) {
  EXPECT_EQ(ErrorOf("[fetch]\ntotal_timeout_ms = 5000\n"),
            "t.toml:2: fetch.total_timeout_ms: must be >= "
            "fetch.connect_timeout_ms (10000)");
}

// A key that is itself invalid is reported once, not again as a pair error.
TEST(CrawldConf, InvalidKeyIsNotAlsoReportedAsPairError) {
  EXPECT_EQ(ErrorOf("[politeness]\nmin_delay_ms = -5\nmax_delay_ms = 0\n"),
            "t.toml:2: politeness.min_delay_ms: must be between 0 and 3600000");
}

// ---------------------------------------------------------------------------
// Formats of string keys.

TEST(CrawldConf, UserAgentWithoutContactUrlIsError) {
  const std::string want =
      "t.toml:2: crawl.user_agent: must contain a contact URL, e.g. "
      "\"mybot/1.0 (+https://example.org/bot)\"";
  for (const char* ua :
       {"crawld/0.1", "crawld/0.1 (bot@example.org)", "crawld/0.1 (+https://)",
        "crawld (http:// x)", "crawld (+ftp://example.org)"}) {
    EXPECT_EQ(ErrorOf(std::string("[crawl]\nuser_agent = '") + ua + "'\n"),
              want)
        << ua;
  }
  for (const char* ua : {"crawld/0.1 (+https://example.org/bot)", "x +http://a",
                         "Mozilla/5.0 (compatible; x/1; HTTPS://EXAMPLE.ORG)",
                         "bot https://example.org/about"}) {
    Result<Config> r =
        ParseConfig(std::string("[crawl]\nuser_agent = '") + ua + "'\n", "t");
    ASSERT_TRUE(r.ok()) << ua << ": " << r.status().ToString();
    EXPECT_EQ(r->crawl.user_agent, ua);
  }
}

TEST(CrawldConf, UserAgentMustBePrintableAscii) {
  // A CR/LF would inject a header line.
  EXPECT_EQ(ErrorOf("[crawl]\nuser_agent = \"a (+https://x.org)\\r\\nX: y\"\n"),
            "t.toml:2: crawl.user_agent: must be printable ASCII (it is sent "
            "as an HTTP header)");
  EXPECT_EQ(ErrorOf("[crawl]\nuser_agent = \"\"\n"),
            "t.toml:2: crawl.user_agent: must not be empty");
  EXPECT_EQ(ErrorOf("[crawl]\nuser_agent = \"+https://x.org/" +
                    std::string(500, 'a') + "\"\n"),
            "t.toml:2: crawl.user_agent: must be at most 512 bytes");
}

TEST(CrawldConf, RobotsTokenMustBeAProductToken) {
  for (const char* bad : {"", "crawl d", "crawld/1.0", "cr4wld", "cr\\u00e9"}) {
    std::string msg =
        ErrorOf(std::string("[crawl]\nrobots_token = \"") + bad + "\"\n");
    EXPECT_TRUE(msg.starts_with("t.toml:2: crawl.robots_token: ")) << msg;
  }
  Result<Config> r = ParseConfig("[crawl]\nrobots_token = 'My_Bot-x'\n", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->crawl.robots_token, "My_Bot-x");
}

TEST(CrawldConf, DnsServersMustBeIpColonPort) {
  for (const char* good : {"127.0.0.1:53", "10.0.0.1:5353", "[::1]:53",
                           "[2001:db8::53]:65535", "[::ffff:1.2.3.4]:1"}) {
    Result<Config> r =
        ParseConfig(std::string("[dns]\nservers = [\"") + good + "\"]\n", "t");
    ASSERT_TRUE(r.ok()) << good << ": " << r.status().ToString();
    EXPECT_EQ(r->dns.servers, std::vector<std::string>{good});
  }
  for (const char* bad :
       {"x", "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1:+53", "127.0.0.1:5x", "256.1.1.1:53", "1.2.3:53",
        "01.2.3.4:53", "localhost:53", "[::1]53", "[::1]:", "[1::2::3]:53",
        "[127.0.0.1]:53", "1.2.3.4\\u0000:53", " 1.2.3.4:53"}) {
    std::string msg =
        ErrorOf(std::string("[dns]\nservers = [\"") + bad + "\"]\n");
    EXPECT_TRUE(
        msg.starts_with("t.toml:2: dns.servers[0]: must be \"ip:port\""))
        << bad << " -> " << msg;
  }
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\"::1:53\"]\n"),
            "t.toml:2: dns.servers[0]: must put an IPv6 address in brackets, "
            "e.g. \"[::1]:53\", got \"::1:53\"");
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\"x\"]\n"),
            "t.toml:2: dns.servers[0]: must be \"ip:port\" (e.g. "
            "\"127.0.0.1:53\" or \"[::1]:53\"), got \"x\"");
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\"1.2.3.256:53\"]\n"),
            "t.toml:2: dns.servers[0]: must be \"ip:port\" (e.g. "
            "\"127.0.0.1:53\" or \"[::1]:53\"): bad IPv4 address, got "
            "\"1.2.3.256:53\"");
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\"[::g]:53\"]\n"),
            "t.toml:2: dns.servers[0]: must be \"ip:port\" (e.g. "
            "\"127.0.0.1:53\" or \"[::1]:53\"): bad IPv6 address, got "
            "\"[::g]:53\"");
  EXPECT_EQ(ErrorOf("[dns]\nservers = [\"1.2.3.4:99999\"]\n"),
            "t.toml:2: dns.servers[0]: must be \"ip:port\" (e.g. "
            "\"127.0.0.1:53\" or \"[::1]:53\"): port must be 1 .. 65535, got "
            "\"1.2.3.4:99999\"");
}

TEST(CrawldConf, DnsServersAreLimitedInNumber) {
  std::string list;
  for (int i = 0; i < 17; ++i) list += "\"127.0.0.1:53\",";
  EXPECT_EQ(ErrorOf("[dns]\nservers = [" + list + "]\n"),
            "t.toml:2: dns.servers: must have at most 16 entries");
}

TEST(CrawldConf, WarcPrefixMustBeAFileNamePart) {
  for (const char* bad : {"", "a/b", ".hidden", "a b", "../x"}) {
    std::string msg =
        ErrorOf(std::string("[store]\nwarc_prefix = \"") + bad + "\"\n");
    EXPECT_TRUE(msg.starts_with("t.toml:2: store.warc_prefix: ")) << msg;
  }
}

TEST(CrawldConf, PathsRejectControlCharacters) {
  EXPECT_EQ(ErrorOf("[crawl]\ndata_dir = \"a\\nb\"\n"),
            "t.toml:2: crawl.data_dir: must not contain control characters");
  EXPECT_EQ(ErrorOf("[crawl]\ndata_dir = \"\"\n"),
            "t.toml:2: crawl.data_dir: must not be empty");
  EXPECT_EQ(ErrorOf("[fetch]\nca_file = \"x\\u0000y\"\n"),
            "t.toml:2: fetch.ca_file: must not contain control characters");
}

// ---------------------------------------------------------------------------
// Several errors.

TEST(CrawldConf, AllErrorsAreReportedInFileOrder) {
  // toml++ keeps keys sorted by name; the report is sorted by line.
  EXPECT_EQ(ErrorOf("[workers]\ncount = -1\n[fetch]\nzzz = 1\naaa = 2\n"),
            "t.toml:2: workers.count: must be between 0 and 256\n"
            "t.toml:4: fetch.zzz: unknown key\n"
            "t.toml:5: fetch.aaa: unknown key");
}

// One line per error even when a key or the parser's complaint holds a
// newline (found by config_fuzz).
TEST(CrawldConf, EachErrorStaysOnOneLine) {
  EXPECT_EQ(ErrorOf("[crawl]\n\"a\\nb\" = 1\n"),
            "t.toml:2: crawl.\"a\\nb\": unknown key");
  EXPECT_EQ(ErrorOf("\"x y\" = 1\n"),
            "t.toml:1: \"x y\": unknown key outside any table");
  std::string msg = ErrorOf("[crawl]\nx = f\n");
  EXPECT_TRUE(msg.starts_with("t.toml:2: syntax error: ")) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(CrawldConf, ErrorListIsCapped) {
  std::string text = "[crawl]\n";
  for (int i = 0; i < 30; ++i) text += "k" + std::to_string(i) + " = 1\n";
  std::string msg = ErrorOf(text);
  EXPECT_TRUE(msg.starts_with("t.toml:2: crawl.k0: unknown key\n")) << msg;
  EXPECT_TRUE(msg.ends_with("\n(10 more errors)")) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 20);
}

// ---------------------------------------------------------------------------
// Serialization.

TEST(CrawldConf, ToTomlRoundTripsNonDefaultValues) {
  const Config c = NonDefault();
  ASSERT_TRUE(Validate(c).ok()) << Validate(c).ToString();
  const std::string text = ToToml(c);
  Result<Config> r = ParseConfig(text, c.source);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << text;
  ExpectSameValues(*r, c);
  EXPECT_TRUE(*r == c);
  // And it is a fixed point.
  EXPECT_EQ(ToToml(*r), text);
}

TEST(CrawldConf, ToTomlRoundTripsDefaults) {
  Config d = Defaults();
  d.source = "x";
  Result<Config> r = ParseConfig(ToToml(d), "x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r == d);
}

TEST(CrawldConf, ToTomlWritesEveryKeyAndMarksChangedOnes) {
  Config c = Defaults();
  c.fetch.max_redirects = 9;
  c.source = "in.toml";
  const std::string text = ToToml(c);
  EXPECT_NE(text.find("# Frozen from in.toml\n"), std::string::npos);
  EXPECT_NE(text.find("# Default: 5\nmax_redirects = 9\n"), std::string::npos)
      << text;
  for (const KeyInfo& k : Schema()) {
    EXPECT_NE(text.find("\n" + std::string(k.key) + " = "), std::string::npos)
        << k.key;
  }
  // A source with a newline cannot break out of its comment, and one that
  // is not UTF-8 (paths are bytes) cannot make the file invalid TOML.
  c.source = "evil\n[crawl]\nmax_depth = 3";
  Result<Config> r = ParseConfig(ToToml(c), "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->crawl.max_depth, 0);
  c.source = "/srv/caf\xE9\\x.toml";
  const std::string latin1 = ToToml(c);
  EXPECT_NE(latin1.find("# Frozen from /srv/caf\\xE9\\x5Cx.toml\n"),
            std::string::npos)
      << latin1;
  EXPECT_TRUE(ParseConfig(latin1, "t").ok());
}

// Issue 19 item 9: the server refused to start instead, which exited 1
// without file:line (and the unit restarted crawld forever).
TEST(CrawldConf, Issue19_AdminOffLoopbackWithoutTokenIsAConfigError) {
  EXPECT_EQ(ErrorOf("[admin]\nport = 8181\naddress = \"0.0.0.0\"\n"),
            "t.toml:3: admin.address: '0.0.0.0' is not a loopback address, "
            "so admin.token must be set (or listen on 127.0.0.1)");
  EXPECT_EQ(ErrorOf("[admin]\naddress = \"::\"\n"),
            "t.toml:2: admin.address: '::' is not a loopback address, so "
            "admin.token must be set (or listen on 127.0.0.1)");
  for (const char* ok :
       {"[admin]\naddress = \"0.0.0.0\"\ntoken = \"t0k\"\n",
        "[admin]\naddress = \"127.0.0.2\"\n", "[admin]\naddress = \"::1\"\n",
        "[admin]\naddress = \"::ffff:127.0.0.1\"\n",
        // Nothing listens.
        "[admin]\nenabled = false\naddress = \"10.0.0.1\"\n"}) {
    EXPECT_TRUE(ParseConfig(ok, "t").ok()) << ok;
  }
  Config c = Defaults();
  c.admin.address = "192.0.2.1";
  EXPECT_EQ(Validate(c).message(),
            "admin.address: '192.0.2.1' is not a loopback address, so "
            "admin.token must be set (or listen on 127.0.0.1)");
  c.admin.token = "t0k";
  EXPECT_TRUE(Validate(c).ok());
}

TEST(CrawldConf, ValidateReportsWithoutLineNumbers) {
  Config c = Defaults();
  c.fetch.max_body_bytes = 1;
  c.crawl.user_agent = "nobody";
  c.dns.servers = {"127.0.0.1:53", "bad"};
  c.politeness.min_delay_ms = 5;
  c.politeness.max_delay_ms = 4;
  c.crawl.progress_interval_s = std::nan("");
  c.store.rotate_bytes = ~0ull;  // above INT64_MAX
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "crawl.user_agent: must contain a contact URL, e.g. \"mybot/1.0 "
            "(+https://example.org/bot)\"\n"
            "crawl.progress_interval_s: must be between 0.1 and 3600.0\n"
            "fetch.max_body_bytes: must be between 1024 and 4294967296\n"
            "dns.servers[1]: must be \"ip:port\" (e.g. \"127.0.0.1:53\" or "
            "\"[::1]:53\"), got \"bad\"\n"
            "store.rotate_bytes: must be between 1048576 and 1099511627776\n"
            "politeness.max_delay_ms: must be >= politeness.min_delay_ms (5)");
}

// ---------------------------------------------------------------------------
// Files.

class ConfFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("conf_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfFileTest, LoadsAFileWithItsPathAsSource) {
  std::string path = Write("a.toml", "[workers]\ncount = 3\n");
  Result<Config> r = LoadConfigFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workers.count, 3);
  EXPECT_EQ(r->source, path);
}

TEST_F(ConfFileTest, ErrorsNameTheFilePath) {
  std::string path = Write("b.toml", "[workers]\n\ncount = 1000\n");
  Result<Config> r = LoadConfigFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            path + ":3: workers.count: must be between 0 and 256");
}

TEST_F(ConfFileTest, UnreadableFileIsIOErrorWithStrerror) {
  std::string missing = (dir_ / "missing.toml").string();
  Result<Config> r = LoadConfigFile(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
  EXPECT_EQ(r.status().message(), missing + ": No such file or directory");

  Result<Config> d = LoadConfigFile(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kIOError);
  EXPECT_EQ(d.status().message(), dir_.string() + ": Is a directory");
}

TEST_F(ConfFileTest, OversizedFileIsRejected) {
  std::string path = Write("big.toml", std::string((4u << 20) + 1, '#'));
  Result<Config> r = LoadConfigFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIOError);
  EXPECT_EQ(r.status().message(), path + ": larger than 4194304 bytes");
}

}  // namespace
TEST(CrawldConf, RedisUrlIsCheckedAndSplit) {
  EXPECT_EQ(ErrorOf("[cluster]\nredis = \"http://h:1\"\n"),
            "t.toml:2: cluster.redis: must be empty or redis://HOST:PORT");
  EXPECT_EQ(ErrorOf("[cluster]\nredis = \"redis://h:70000\"\n"),
            "t.toml:2: cluster.redis: must be empty or redis://HOST:PORT");
  Result<Config> c =
      ParseConfig("[cluster]\nredis = \"redis://127.0.0.1:6380\"\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const RedisAddress a = ParseRedisUrl(c->cluster.redis);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6380);
}

}  // namespace crawld::conf
