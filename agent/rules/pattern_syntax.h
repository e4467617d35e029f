// The RE2 options every rule pattern is compiled with, in one place: the loader checks patterns
// with them and the matcher runs them, so a pattern that loads is a pattern that matches the same
// way. Patterns match bytes (Latin-1), see rules/README.md "How patterns are matched".
#ifndef FAULTLINE_RULES_PATTERN_SYNTAX_H_
#define FAULTLINE_RULES_PATTERN_SYNTAX_H_

#include <re2/re2.h>

namespace faultline {

inline RE2::Options RulePatternOptions() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  return options;
}

}  // namespace faultline

#endif  // FAULTLINE_RULES_PATTERN_SYNTAX_H_
