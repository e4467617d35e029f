// Text budgets for chat messages: Slack counts characters (code points), not bytes, and rejects
// a message whose blocks break its limits, so every cut here is at a code point and, for log
// excerpts, at a line boundary with a note of what was left out.
//
// Pure functions of valid UTF-8 (notification text is sanitised before it gets here); they never
// split a character and never throw.
#ifndef FAULTLINE_ALERT_TEXT_BUDGET_H_
#define FAULTLINE_ALERT_TEXT_BUDGET_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

// Code points in `text`.
std::size_t CodePoints(std::string_view text);

// `text` cut to at most `max_code_points`, ending in "…" when cut (the "…" counts).
std::string CutToCodePoints(std::string_view text, std::size_t max_code_points);

// Slack mrkdwn escaping: & < > as entities. `escaped` text grows: budgets apply after escaping.
std::string EscapeMrkdwn(std::string_view text);

// Joins `lines` with '\n' into at most `max_code_points`, whole lines first; when they do not all
// fit, the last line is "…(N more lines)". A first line longer than the budget is cut itself.
// Each line is passed through `escape` first when it is not null.
std::string JoinLinesWithin(const std::vector<std::string>& lines, std::size_t max_code_points,
                            std::string (*escape)(std::string_view) = nullptr);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_TEXT_BUDGET_H_
