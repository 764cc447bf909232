// Replays every verdict of Google's robots.txt parser recorded in
// tests/data/robots/google_verdicts.txt (tools/robots_corpus/generate.py,
// docs/ROBOTS.md) through robots::Rules, and through the literal model of
// tests/fuzz/robots_fuzz_reference.h that the fuzzer compares Rules with.
// Both must agree on every one. No network, no oracle binary: the verdicts
// are data in the tree.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "robots/robots.h"
#include "tests/fuzz/robots_fuzz_reference.h"

#ifndef CRAWLD_ROBOTS_CORPUS
#error "CRAWLD_ROBOTS_CORPUS must name tests/data/robots/google_verdicts.txt"
#endif

namespace crawld::robots {
namespace {

struct Query {
  std::string agent;
  std::vector<std::pair<std::string, bool>> verdicts;  // URL, allowed
};

struct Case {
  std::string family;
  std::string body;
  std::vector<Query> queries;
};

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The escaping of tools/robots_corpus/corpus.py. Returns false on a
// malformed field.
bool Unescape(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out->push_back(in[i]);
      continue;
    }
    if (++i == in.size()) return false;
    switch (in[i]) {
      case '\\':
        out->push_back('\\');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'x': {
        if (i + 2 >= in.size() || Hex(in[i + 1]) < 0 || Hex(in[i + 2]) < 0) {
          return false;
        }
        out->push_back(static_cast<char>(Hex(in[i + 1]) * 16 + Hex(in[i + 2])));
        i += 2;
        break;
      }
      case '{': {
        const size_t close = in.find('}', i);
        if (close == std::string_view::npos || out->empty()) return false;
        size_t n = 0;
        for (size_t k = i + 1; k < close; ++k) {
          if (in[k] < '0' || in[k] > '9') return false;
          n = n * 10 + static_cast<size_t>(in[k] - '0');
        }
        out->append(n, out->back());
        i = close;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

std::vector<Case> ReadCorpus(const std::string& path) {
  std::vector<Case> cases;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::string line;
  std::string field;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const std::string_view rest = std::string_view(line).substr(1);
    if (line[0] == 'R') {
      const size_t sp = rest.find(' ', 1);
      EXPECT_NE(sp, std::string_view::npos) << path << ":" << n;
      if (sp == std::string_view::npos) return {};
      Case c;
      c.family = std::string(rest.substr(1, sp - 1));
      EXPECT_TRUE(Unescape(rest.substr(sp + 1), &c.body)) << path << ":" << n;
      cases.push_back(std::move(c));
    } else if (line[0] == 'A' && !cases.empty()) {
      Query q;
      EXPECT_TRUE(Unescape(rest.substr(1), &q.agent)) << path << ":" << n;
      cases.back().queries.push_back(std::move(q));
    } else if ((line[0] == '+' || line[0] == '-') && !cases.empty() &&
               !cases.back().queries.empty()) {
      EXPECT_TRUE(Unescape(rest, &field)) << path << ":" << n;
      cases.back().queries.back().verdicts.emplace_back(field, line[0] == '+');
    } else {
      ADD_FAILURE() << path << ":" << n << ": unknown record";
      return {};
    }
  }
  return cases;
}

// Bytes of a failing case, printable, for the failure message.
std::string Show(std::string_view s, size_t max = 300) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

const std::vector<Case>& Corpus() {
  static const auto* cases =
      new std::vector<Case>(ReadCorpus(CRAWLD_ROBOTS_CORPUS));
  return *cases;
}

size_t VerdictCount() {
  size_t n = 0;
  for (const Case& c : Corpus()) {
    for (const Query& q : c.queries) n += q.verdicts.size();
  }
  return n;
}

// The whole body, as Google's robots_check and `crawlctl robots check` read
// it (the crawler reads 500 KiB; a few recorded bodies are longer).
Options ReadWhole() {
  Options o;
  o.max_bytes = std::numeric_limits<size_t>::max();  // clamped to 64 MiB
  return o;
}

// Issue 15: crawld's verdicts are Google's, on every recorded input.
TEST(GoogleCorpus, Issue15_RulesAgreeWithEveryRecordedVerdict) {
  ASSERT_GE(VerdictCount(), 20000u) << "the corpus is missing or truncated";
  std::map<std::string, std::pair<size_t, size_t>> by_family;  // bad, all
  int shown = 0;
  for (const Case& c : Corpus()) {
    for (const Query& q : c.queries) {
      const Rules rules = Rules::Parse(c.body, q.agent, ReadWhole());
      for (const auto& [url, allowed] : q.verdicts) {
        const std::string path = PathFromUrl(url);
        const bool got = rules.Allowed(path);
        EXPECT_EQ(rules.Check(path).allowed, got);
        auto& [bad, all] = by_family[c.family];
        ++all;
        if (got == allowed) continue;
        ++bad;
        if (++shown <= 20) {
          ADD_FAILURE() << c.family << ": Google says "
                        << (allowed ? "allowed" : "disallowed")
                        << "\n  agent: " << Show(q.agent)
                        << "\n  url:   " << Show(url)
                        << "\n  path:  " << Show(path)
                        << "\n  robots.txt: " << Show(c.body);
        }
      }
    }
  }
  size_t bad_total = 0;
  for (const auto& [family, counts] : by_family) {
    EXPECT_EQ(counts.first, 0u) << family << ": " << counts.first << " of "
                                << counts.second << " verdicts differ";
    bad_total += counts.first;
  }
  EXPECT_EQ(bad_total, 0u);
}

// The fuzzer's oracle is only as good as this: the model must agree with
// Google's binary on every recorded verdict too.
TEST(GoogleCorpus, ReferenceModelAgreesWithEveryRecordedVerdict) {
  ASSERT_GE(VerdictCount(), 20000u);
  int bad = 0;
  for (const Case& c : Corpus()) {
    for (const Query& q : c.queries) {
      std::vector<std::string> urls;
      for (const auto& v : q.verdicts) urls.push_back(v.first);
      const std::vector<bool> got =
          robots_reference::Verdicts(c.body, q.agent, urls);
      for (size_t i = 0; i < urls.size(); ++i) {
        if (got[i] == q.verdicts[i].second) continue;
        if (++bad <= 10) {
          ADD_FAILURE() << c.family << ": model differs on url "
                        << Show(urls[i]) << " agent " << Show(q.agent)
                        << " robots.txt " << Show(c.body);
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// The recorded paths agree with the model's transcription of Google's
// GetPathParamsQuery, NUL aside (the matcher reads the path as a C string).
TEST(GoogleCorpus, PathFromUrlIsGooglesGetPathParamsQuery) {
  size_t n = 0;
  for (const Case& c : Corpus()) {
    for (const Query& q : c.queries) {
      for (const auto& v : q.verdicts) {
        ASSERT_EQ(PathFromUrl(v.first),
                  robots_reference::PathParamsQuery(v.first))
            << Show(v.first);
        ++n;
      }
    }
  }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace crawld::robots
