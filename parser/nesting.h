// parser/nesting.h (private to parser/): a linear pre-scan that estimates
// the element nesting depth Gumbo would build, so that hostile, deeply
// nested markup is cut before Gumbo's O(depth)-per-tag tree building turns
// it into minutes of CPU. See parser.h, "Deliberate deviations".
#ifndef CRAWLD_PARSER_NESTING_H_
#define CRAWLD_PARSER_NESTING_H_

#include <cstddef>
#include <string_view>

namespace crawld::parser::internal {

// Returns the byte offset of the start tag ('<') that would take the
// estimated depth past max_depth, or std::string_view::npos if none does.
//
// The estimate follows the tokenizer loosely (comments, raw-text elements,
// quoted attribute values) and counts only elements that can nest without
// bound: void elements, elements with implied end tags (p, li, td, option,
// ...), headings and <a> are not counted. An end tag pops up to the nearest
// open element of the same name, or nothing. Self-closing "/>" is honoured
// only in SVG and MathML, as in the HTML parser.
size_t NestingCutOffset(std::string_view html, size_t max_depth);

}  // namespace crawld::parser::internal

#endif  // CRAWLD_PARSER_NESTING_H_
