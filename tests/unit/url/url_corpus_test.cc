// Drives url::Parse over the vendored corpus of (base, href) pairs whose
// expected serializations come from Node's WHATWG URL class
// (tools/update-url-corpus.js). Agreement must be at least 99%, and every
// disagreement must be listed in kKnownDifferences with its reason: a new
// difference, or a listed one that went away, fails the test.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "url/url.h"

namespace crawld::url {
namespace {

struct Case {
  std::string base, input, href;
};

// Just enough JSON for the corpus: an array of flat objects whose values are
// strings (with \uXXXX escapes, surrogate pairs included).
class MiniJson {
 public:
  explicit MiniJson(std::string text) : s_(std::move(text)) {}

  bool ParseCases(std::vector<Case>* out) {
    Skip();
    if (!Eat('[')) return false;
    Skip();
    if (Eat(']')) return true;
    while (true) {
      std::map<std::string, std::string> obj;
      Skip();
      if (!Eat('{')) return false;
      while (true) {
        Skip();
        std::string k, v;
        if (!String(&k)) return false;
        Skip();
        if (!Eat(':')) return false;
        Skip();
        if (!String(&v)) return false;
        obj[k] = v;
        Skip();
        if (Eat('}')) break;
        if (!Eat(',')) return false;
      }
      out->push_back({obj["base"], obj["input"], obj["href"]});
      Skip();
      if (Eat(']')) return true;
      if (!Eat(',')) return false;
    }
  }

 private:
  void Skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' ||
                              s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Hex4(unsigned* v) {
    if (i_ + 4 > s_.size()) return false;
    *v = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
    i_ += 4;
    return true;
  }
  static void Utf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'u': {
          unsigned cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && i_ + 6 <= s_.size() &&
              s_[i_] == '\\' && s_[i_ + 1] == 'u') {
            i_ += 2;
            unsigned lo;
            if (!Hex4(&lo)) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          Utf8(cp, out);
          break;
        }
        default:
          out->push_back(e);
          break;
      }
    }
    return false;
  }

  std::string s_;
  size_t i_ = 0;
};

std::vector<Case> LoadCorpus() {
  std::ifstream f(CRAWLD_URL_CORPUS, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::vector<Case> cases;
  MiniJson json(ss.str());
  if (!json.ParseCases(&cases)) cases.clear();
  return cases;
}

std::string Resolve(const Case& c) {
  Result<Url> base = Status::InvalidArgument("no base");
  if (!c.base.empty()) {
    base = Parse(c.base);
    if (!base.ok()) return "base invalid: " + base.status().message();
  }
  Result<Url> r = Parse(c.input, base.ok() ? &base.value() : nullptr);
  return r.ok() ? std::string(r->href()) : "invalid";
}

// Every (base, input) where we knowingly differ from Node 20 (ada 2.9.2),
// with our output and the reason. Keep in step with the corpus.
struct KnownDifference {
  const char* base;
  const char* input;
  const char* ours;
  const char* reason;
};
constexpr KnownDifference kKnownDifferences[] = {
    {"foo:/a/b", "../..", "foo:/",
     "ada 2.9.2 drops the final empty segment of a non-special URL without "
     "host. The standard's path state shortens [a] to [] on the first "
     "'..', then at EOF appends \"\" after the second '..', giving path "
     "[\"\"] = \"/\" (what the WPT expects for the same shape)."},
};

const KnownDifference* FindKnown(const Case& c) {
  for (const KnownDifference& k : kKnownDifferences) {
    if (c.base == k.base && c.input == k.input) return &k;
  }
  return nullptr;
}

TEST(WhatwgUrl, CorpusAgreesWithNodeUrl) {
  const std::vector<Case> cases = LoadCorpus();
  ASSERT_GE(cases.size(), 500u)
      << "corpus missing or unreadable: " << CRAWLD_URL_CORPUS;
  size_t agree = 0;
  std::vector<const KnownDifference*> seen;
  for (const Case& c : cases) {
    const std::string got = Resolve(c);
    const KnownDifference* known = FindKnown(c);
    if (got == c.href) {
      ++agree;
      EXPECT_EQ(known, nullptr)
          << "listed difference went away, remove it: " << c.base << " + "
          << c.input;
      continue;
    }
    if (known == nullptr) {
      ADD_FAILURE() << "new difference: base=" << c.base << " input=" << c.input
                    << "\n   node: " << c.href << "\n   ours: " << got;
    } else {
      EXPECT_EQ(got, known->ours) << c.base << " + " << c.input;
      seen.push_back(known);
    }
  }
  EXPECT_EQ(seen.size(), std::size(kKnownDifferences))
      << "a listed difference is no longer in the corpus";
  const double agreement = static_cast<double>(agree) / cases.size();
  EXPECT_GE(agreement, 0.99);
  std::printf("corpus: %zu of %zu agree (%.2f%%)\n", agree, cases.size(),
              100.0 * agreement);
}

}  // namespace
}  // namespace crawld::url
