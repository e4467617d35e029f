// Rule drafts: `faultline rules suggest` turns an unrecognised template (agent/discover/) into
// the YAML of a rule for a person to finish.
//
// The draft's pattern starts at the template's anchor, the token that names the failure (the
// exception name, the diagnostic, the level word, the signal), so prefixes such as timestamps
// and `[rank3]:` do not narrow it; each fixed token is escaped, each variable becomes a bounded
// wildcard (`.{0,256}?` for a whole token, which may stand for several or none, `\S{1,128}`
// inside a token), at most kMaxPatternTokens tokens. The id and title come from the anchor and
// the words after it; the template's lines (valid UTF-8 ones) are its match examples, and
// DraftRule checks that the pattern matches every one of them. Root cause and fix are the
// kDraftPlaceholder text, which the rule loader rejects until a person writes them.
// Pure functions; nothing here fails.
#ifndef FAULTLINE_CMD_RULE_DRAFT_H_
#define FAULTLINE_CMD_RULE_DRAFT_H_

#include <span>
#include <string>
#include <string_view>

#include "agent/discover/discovery.h"

namespace faultline {

struct RuleDraft {
  std::string id;
  std::string pattern;
  std::string yaml;
};

inline constexpr size_t kMaxPatternTokens = 16;

// `log` names the file the template came from, for the draft's header comment.
RuleDraft DraftRule(const TemplateStats& t, std::string_view log);

// The pattern alone, from a template's tokens (exposed for tests).
std::string DraftPattern(std::span<const std::string> tokens, ErrorCue cue);

}  // namespace faultline

#endif  // FAULTLINE_CMD_RULE_DRAFT_H_
