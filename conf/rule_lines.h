// conf/rule_lines.h (private to conf/): the line format shared by the URL
// filter rules (rules.h) and the overrides file (overrides.h): one
// directive a line, tokens separated by spaces and tabs, '#' comments,
// errors named "<source>:<line>: <what>".
#ifndef CRAWLD_CONF_RULE_LINES_H_
#define CRAWLD_CONF_RULE_LINES_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::conf::internal {

// Splits a line into tokens separated by spaces, tabs and CRs; a '#' at the
// start of a token starts a comment (so "a#b" inside a regex stays).
[[nodiscard]] std::vector<std::string_view> Tokenize(std::string_view line);

// The tokens joined by single spaces: a directive as it is shown back.
[[nodiscard]] std::string JoinTokens(const std::vector<std::string_view>& t);

// True for an IPv4 literal or a bracketed IPv6 one (no public suffix).
[[nodiscard]] bool LooksLikeIp(std::string_view host);

// Walks the lines of a rules-style text that hold tokens:
//   RuleLines lines(text, source_name);
//   while (lines.Next()) { ... lines.tokens() ..., return lines.Error(...) }
//   if (!lines.status().ok()) return lines.status();
class RuleLines {
 public:
  // REQUIRES: text and source outlive this.
  RuleLines(std::string_view text, std::string_view source)
      : text_(text), source_(source) {}

  // Moves to the next line with tokens; false at the end of the text, or
  // at a line holding a NUL byte (status() then says where).
  bool Next();
  // The current line's number, from 1.
  [[nodiscard]] int number() const { return number_; }
  [[nodiscard]] const std::vector<std::string_view>& tokens() const {
    return tokens_;
  }
  // InvalidArgument "<source>:<number>: <what>".
  [[nodiscard]] Status Error(std::string_view what) const;
  // Ok, or the error that ended the walk.
  [[nodiscard]] const Status& status() const { return status_; }

 private:
  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  int number_ = 0;
  std::vector<std::string_view> tokens_;
  Status status_;
};

}  // namespace crawld::conf::internal

#endif  // CRAWLD_CONF_RULE_LINES_H_
