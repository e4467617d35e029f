// LineLocalExpression: the Vectorscan expression for a rule pattern, rewritten so that it cannot
// match across a line break.
//
// Why: Vectorscan scans a whole batch of lines at once, where `[^']+`, `\s+`, `\W` or `\D` may
// run from one line into the next ones. Such a match is never a finding (every candidate is
// confirmed by RE2 on its own line, which holds no '\n'), but it is costly, and Vectorscan 5.4.9
// gets it wrong: on the real corpus, `\berror: command\s+'[^']+'\s+failed ...` reports a line or
// not depending on the batch buffer's address (1 of 2 lines found at 61 of 64 alignments of one
// 64 KiB batch), so a real failure was missed at random. Taking '\n' out of what those pieces
// match keeps every match that lies within one line, so the findings are unchanged, and no
// state runs across lines (tests/unit/match/pattern_set_test.cc checks the whole pack over the
// corpus at every alignment against RE2 line by line).
//
// What it rewrites, outside \Q...\E: `\s` to `[\t\f\r \x0b]`, `\W` to `[^\w\n]`, `\D` to
// `[^\d\n]`, `\s` inside a class to its members but '\n', and a negated class `[^...]` to
// `[^...\n]`. A class it cannot rewrite safely (one starting with ']' or '-', ending with '-',
// or holding a POSIX `[:name:]`) is left as it is, as is everything else: a pattern left as it
// was still matches exactly as before.
//
// It also drops the word-boundary assertions `\b` and `\B` (outside \Q...\E). Vectorscan only
// proposes candidates, which RE2 confirms with the rule's own pattern, so an expression without
// them proposes a few more candidates (a name inside a longer word) and loses none; and they were
// more than half of what compiling the pack cost (2.4 s for its 1,043 match patterns in one
// database, 1.1 s without them), which is a first start's wait. Pure function; never throws.
#ifndef FAULTLINE_MATCH_LINE_LOCAL_EXPRESSION_H_
#define FAULTLINE_MATCH_LINE_LOCAL_EXPRESSION_H_

#include <string>
#include <string_view>

namespace faultline {

std::string LineLocalExpression(std::string_view pattern);

}  // namespace faultline

#endif  // FAULTLINE_MATCH_LINE_LOCAL_EXPRESSION_H_
