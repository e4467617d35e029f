// RenderSlackMessage: a Notification as the JSON body of a Slack incoming-webhook request, in
// Block Kit with a text fallback (docs/alerting.md sections 5.1 and 8.3).
//
// Slack rejects a message that breaks its limits (invalid_blocks, msg_blocks_too_long), so the
// rendering keeps them by construction, whatever the log text: a header of at most 150
// characters, sections of at most 3,000, fields of at most 2,000 and at most 10 per section, at
// most 50 blocks, and at most 12,000 characters over all blocks (Slack's documented limits are
// higher, but messages fail at about 13,000 in practice). Log excerpts are cut at line
// boundaries with "…(N more lines)"; a line longer than the room left is cut at a character.
// `text`, the push-notification and fallback text, is never empty. mrkdwn's control characters
// `& < >` are escaped in all text taken from logs and rules, so a log line cannot inject a link
// or a mention; triple backquotes in an excerpt cannot end its code block.
//
// One item renders in full (header, facts, excerpt, root cause and fix, how to mute or mark it
// fixed); several (a group_wait batch, a digest) render as one section each, with excerpts while
// the budget lasts, and "…and N more" for the rest. A test notification says [TEST] in the header
// and the text.
//
// Pure; thread-safe; never throws.
#ifndef FAULTLINE_ALERT_SLACK_MESSAGE_H_
#define FAULTLINE_ALERT_SLACK_MESSAGE_H_

#include <cstddef>
#include <string>

#include "agent/alert/notification.h"

namespace faultline {

struct SlackLimits {
  static constexpr std::size_t kMaxHeaderChars = 150;
  static constexpr std::size_t kMaxSectionChars = 3000;
  static constexpr std::size_t kMaxFieldChars = 2000;
  static constexpr std::size_t kMaxFieldsPerSection = 10;
  static constexpr std::size_t kMaxBlocks = 50;
  static constexpr std::size_t kMaxTotalChars = 12000;
  // The fallback text is what a phone shows; a line or two.
  static constexpr std::size_t kMaxFallbackChars = 1000;
};

std::string RenderSlackMessage(const Notification& notification);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_SLACK_MESSAGE_H_
