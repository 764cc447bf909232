// parser/prescan.h (private to parser/): one linear pass over the UTF-8
// HTML before Gumbo, which makes Gumbo's tree match a browser's where Gumbo
// differs, and bounds the work Gumbo can be made to do. See parser.h
// ("Bounds") and docs/LINKS.md.
//
// The pass follows the HTML tokenizer (tags and their attributes exactly,
// comments, raw text and RCDATA elements, CDATA in foreign content) and
// estimates the tree builder's stack of open elements. It rewrites:
//  - <noscript> as a browser with scripting enabled parses it: its content
//    is raw text up to the next </noscript>, so the whole element becomes
//    "<noframes></noframes>", the one raw text element Gumbo inserts by the
//    same rules (no reconstruction of formatting elements, head or body).
//    Which <noscript> start tags reach the tree builder is the tree
//    builder's business (not in <select>, foreign content or a frameset):
//    the pass guesses, and the caller checks the guess against Gumbo's tree
//    and runs the pass again with the decisions forced (NoscriptDecisions).
//  - control characters in attribute values, which Gumbo replaces with
//    U+FFFD where the HTML standard keeps them: C0 controls, DEL and
//    noncharacters become numeric character references (decoded back to
//    the same code point); the C1 controls that references cannot express
//    become U+10FF80..U+10FF9F (RestoreC1 maps them back).
//  - attributes past Limits::max_attributes on one element (Gumbo checks
//    duplicates in quadratic time), except the first of each name the
//    parser or the tree builder reads (href, rel, src, ...); all attributes
//    of end tags (the tree builder ignores them).
//  - everything from the start tag past Limits::max_elements on (Gumbo
//    costs a few microseconds per element: a flat page of millions of tiny
//    elements would take seconds).
//  - start tags that would take the estimated depth past Limits::max_depth
//    (and their end tags), for elements that only group their content
//    (div, span, b, ul, custom elements, plain SVG/MathML elements, ...):
//    their content stays, one level up. Gumbo's tree building costs
//    O(depth) per tag, so unbounded depth is quadratic. Elements that
//    change how their content is parsed (a, table, select, template, svg,
//    math, integration points, raw text) are never removed.
#ifndef CRAWLD_PARSER_PRESCAN_H_
#define CRAWLD_PARSER_PRESCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crawld::parser::internal {

struct PrescanLimits {
  // Attributes kept per element (see the file comment). >= 1.
  size_t max_attributes = 256;
  // Estimated open elements beyond which grouping elements are flattened.
  size_t max_depth = 512;
  // Start tags handed to Gumbo; the document is cut before the next one.
  size_t max_elements = 100000;
  // <noscript> content is raw text (a browser with scripting enabled).
  bool scripting = true;
};

// Which <noscript> start tags (input offsets of their '<') are raw text.
// Unforced, the pass guesses from its own estimate of the tree.
struct NoscriptDecisions {
  bool forced = false;
  std::vector<size_t> raw;  // sorted; used when forced
};

struct Prescan {
  // The HTML to parse: the input itself when nothing was rewritten, else
  // the storage passed to RunPrescan.
  std::string_view html;
  size_t attributes_dropped = 0;
  size_t elements_flattened = 0;
  // The document was cut at Limits::max_elements start tags.
  bool elements_cut = false;
  // Input offsets of the <noscript> start tags made raw text, and the
  // output offsets of the "<noframes>" that replaced each.
  std::vector<size_t> noscript_in;
  std::vector<size_t> noscript_out;
  // (output offset, input offset) at each point where the copy restarts;
  // sorted by output offset.
  std::vector<std::pair<size_t, size_t>> segments;

  // The input offset of an output offset.
  size_t ToInput(size_t out_offset) const;
};

// Runs the pass over `html`. `storage` is reused (cleared, capacity kept)
// and `*out` overwritten. REQUIRES: storage != nullptr, out != nullptr.
void RunPrescan(std::string_view html, const PrescanLimits& limits,
                const NoscriptDecisions& decisions, std::string* storage,
                Prescan* out);

// Maps the code points U+10FF80..U+10FF9F in `*s` (UTF-8) back to the C1
// controls U+0080..U+009F they stand for. Returns true if it changed `*s`.
bool RestoreC1(std::string* s);

}  // namespace crawld::parser::internal

#endif  // CRAWLD_PARSER_PRESCAN_H_
