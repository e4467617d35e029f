#include "agent/alert/slack_message.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "agent/alert/text_budget.h"

namespace faultline {
namespace {

using nlohmann::json;
using L = SlackLimits;

constexpr std::string_view kFence = "```";
// Blocks kept free for the closing "…and N more" section.
constexpr std::size_t kReservedBlocks = 1;
// An excerpt in a several-item message: the hit and a line or two, not a wall of text.
constexpr std::size_t kGroupExcerptChars = 600;

std::string_view Emoji(AlertKind kind) {
  switch (kind) {
    case AlertKind::kNew:
      return ":new:";
    case AlertKind::kRegression:
      return ":rotating_light:";
    case AlertKind::kRecurrence:
      return ":repeat:";
    case AlertKind::kOngoing:
      return ":hourglass:";
    case AlertKind::kResolved:
      return ":white_check_mark:";
    case AlertKind::kMuteEnded:
      return ":bell:";
    case AlertKind::kReceiverDisabled:
      return ":warning:";
  }
  return ":bell:";
}

// Inside a code block: escaped, and a ``` in the log cannot close the block early.
std::string EscapeCode(std::string_view text) {
  std::string escaped = EscapeMrkdwn(text);
  std::string out;
  out.reserve(escaped.size());
  std::size_t run = 0;
  for (char c : escaped) {
    run = c == '`' ? run + 1 : 0;
    if (run == 3) {
      out += "\xE2\x80\x8B";  // a zero-width space breaks the fence
      run = 1;
    }
    out.push_back(c);
  }
  return out;
}

// Blocks within the message budget.
class Blocks {
 public:
  std::size_t chars_left() const { return L::kMaxTotalChars - chars_; }
  std::size_t blocks_left() const { return L::kMaxBlocks - blocks_.size(); }

  // Adds a block whose text totals `chars` code points; false when it does not fit.
  bool Add(json block, std::size_t chars) {
    if (blocks_.size() >= L::kMaxBlocks || chars > chars_left()) return false;
    blocks_.push_back(std::move(block));
    chars_ += chars;
    return true;
  }
  bool AddHeader(std::string_view text) {
    const std::string cut = CutToCodePoints(text, L::kMaxHeaderChars);
    return Add(json{{"type", "header"},
                    {"text", {{"type", "plain_text"}, {"text", cut}, {"emoji", true}}}},
               CodePoints(cut));
  }
  // A mrkdwn section; `text` is already escaped and cut to fit the section.
  bool AddSection(const std::string& text) {
    if (text.empty()) return true;
    return Add(json{{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", text}}}},
               CodePoints(text));
  }
  bool AddFields(const std::vector<std::string>& fields) {
    json array = json::array();
    std::size_t chars = 0;
    for (const std::string& f : fields) {
      if (array.size() == L::kMaxFieldsPerSection) break;
      const std::string cut = CutToCodePoints(f, L::kMaxFieldChars);
      array.push_back({{"type", "mrkdwn"}, {"text", cut}});
      chars += CodePoints(cut);
    }
    if (array.empty()) return true;
    return Add(json{{"type", "section"}, {"fields", array}}, chars);
  }
  bool AddContext(const std::string& text) {
    const std::string cut = CutToCodePoints(text, L::kMaxSectionChars);
    return Add(json{{"type", "context"}, {"elements", {{{"type", "mrkdwn"}, {"text", cut}}}}},
               CodePoints(cut));
  }
  bool AddDivider() { return Add(json{{"type", "divider"}}, 0); }

  json Take() { return std::move(blocks_); }

 private:
  json blocks_ = json::array();
  std::size_t chars_ = 0;
};

std::string Code(std::string_view text) { return "`" + EscapeCode(text) + "`"; }

std::string Versions(const AlertItem& item) {
  std::string seen = item.seen_in_version.empty()
                         ? std::string("version unknown")
                         : EscapeMrkdwn(item.package + " " + item.seen_in_version);
  if (item.kind == AlertKind::kRegression) {
    std::string fixed =
        item.fixed_in_version.empty()
            ? "marked fixed " + FormatTimestampMs(item.fixed_at_ms)
            : "fixed in " + EscapeMrkdwn(item.package + " " + item.fixed_in_version);
    if (!item.fixed_by.empty()) fixed += " by " + EscapeMrkdwn(item.fixed_by);
    if (!item.fix_note.empty()) fixed += ": _" + EscapeMrkdwn(item.fix_note) + "_";
    return "seen in " + seen + "\n" + fixed;
  }
  return seen;
}

std::vector<std::string> Facts(const AlertItem& item) {
  std::vector<std::string> facts;
  facts.push_back("*Signature*\n" + Code(item.signature));
  std::string where = EscapeMrkdwn(item.source.empty() ? "-" : item.source);
  if (!item.host.empty()) where += " on " + EscapeMrkdwn(item.host);
  facts.push_back("*Source*\n" + where);
  if (!item.file.empty()) {
    facts.push_back("*Where*\n" + EscapeMrkdwn(item.file) + ":" + std::to_string(item.line));
  }
  std::string count = std::to_string(item.count) + " total";
  if (item.count_since_last > 0 && item.count_since_last != item.count) {
    count += ", " + std::to_string(item.count_since_last) + " since the last message";
  }
  facts.push_back("*Occurrences*\n" + count);
  if (item.first_seen_ms != 0) {
    facts.push_back("*First / last seen*\n" + FormatTimestampMs(item.first_seen_ms) + "\n" +
                    FormatTimestampMs(item.last_seen_ms));
  }
  if (!item.package.empty() || item.kind == AlertKind::kRegression) {
    facts.push_back("*Version*\n" + Versions(item));
  }
  if (!item.labels.empty()) {
    std::string labels;
    for (const auto& [name, value] : item.labels) {
      if (!labels.empty()) labels += ", ";
      labels += EscapeMrkdwn(name + "=" + value);
    }
    facts.push_back("*Labels*\n" + labels);
  }
  facts.push_back("*Severity*\n" + std::string(SeverityName(item.severity)));
  if (!item.consequences.empty()) {
    std::string consequences;
    for (const std::string& signature : item.consequences) {
      consequences += (consequences.empty() ? "" : "\n") + Code(signature);
    }
    facts.push_back("*Consequences*\n" + consequences);
  }
  return facts;
}

std::vector<std::string> ExcerptLines(const AlertItem& item) {
  std::vector<std::string> lines = item.context_before;
  lines.push_back(item.hit);
  lines.insert(lines.end(), item.context_after.begin(), item.context_after.end());
  return lines;
}

// The excerpt as a code block within `budget` code points (fences included); empty if no room.
std::string Excerpt(const AlertItem& item, std::size_t budget) {
  const std::size_t fences = 2 * kFence.size() + 2;
  if (item.hit.empty() || budget <= fences + 16) return "";
  const std::string body = JoinLinesWithin(ExcerptLines(item), budget - fences, &EscapeCode);
  return std::string(kFence) + "\n" + body + "\n" + std::string(kFence);
}

std::string Advice(const AlertItem& item) {
  std::string text;
  if (!item.root_cause.empty()) text += "*Root cause*\n" + EscapeMrkdwn(item.root_cause);
  if (!item.fix.empty()) text += (text.empty() ? "" : "\n") + ("*Fix*\n" + EscapeMrkdwn(item.fix));
  if (!item.fix_command.empty()) text += "\n" + Code(item.fix_command);
  return CutToCodePoints(text, L::kMaxSectionChars);
}

std::string Headline(const Notification& n, const AlertItem& item) {
  std::string headline(Emoji(item.kind));
  headline += " ";
  if (n.test) headline += "[TEST] ";
  headline += KindHeadline(item.kind);
  if (!item.title.empty()) headline += " - " + item.title;
  return headline;
}

void RenderOne(const Notification& n, const AlertItem& item, Blocks& blocks) {
  blocks.AddHeader(Headline(n, item));
  if (!item.detail.empty()) {
    blocks.AddSection(CutToCodePoints(EscapeMrkdwn(item.detail), L::kMaxSectionChars));
  }
  blocks.AddFields(Facts(item));
  // What the excerpt may take: a section's limit, minus room for the advice and the hint.
  const std::string advice = Advice(item);
  const std::string hint =
      "mute: " + Code("faultline mute " + item.signature + " --for 8h --reason ...") +
      " · mark fixed: " + Code("faultline fix " + item.signature + " --version V --note ...");
  const std::size_t after = CodePoints(advice) + CodePoints(hint);
  const std::size_t left = blocks.chars_left() > after ? blocks.chars_left() - after : 0;
  blocks.AddSection(Excerpt(item, std::min(left, L::kMaxSectionChars)));
  blocks.AddSection(advice);
  blocks.AddContext(hint);
}

void RenderMany(const Notification& n, Blocks& blocks) {
  const AlertItem& first = n.items.front();
  bool one_kind = true;
  bool one_source = true;
  for (const AlertItem& item : n.items) {
    one_kind = one_kind && item.kind == first.kind;
    one_source = one_source && item.source == first.source;
  }
  const std::size_t total = n.items.size() + n.more;
  std::string headline(Emoji(first.kind));
  headline += " ";
  if (n.test) headline += "[TEST] ";
  headline += std::to_string(total) + " " +
              (one_kind ? std::string(AlertKindName(first.kind)) + " " : std::string()) +
              "signatures";
  if (one_source && !first.source.empty()) headline += " from " + first.source;
  blocks.AddHeader(headline);

  std::size_t shown = 0;
  for (const AlertItem& item : n.items) {
    // Two blocks per item (summary, excerpt) plus a divider; keep one for "…and N more".
    if (blocks.blocks_left() < 3 + kReservedBlocks) break;
    std::string summary = "*" + KindHeadline(item.kind) + "* " + Code(item.signature);
    if (!item.title.empty()) summary += " - " + EscapeMrkdwn(item.title);
    summary += "\n" + EscapeMrkdwn(item.source);
    if (!item.file.empty())
      summary += " · " + EscapeMrkdwn(item.file) + ":" + std::to_string(item.line);
    summary += " · " + std::to_string(item.count) + " occurrence(s)";
    if (item.kind == AlertKind::kRegression) summary += "\n" + Versions(item);
    summary = CutToCodePoints(summary, L::kMaxSectionChars);
    // Stop while there is still room for the closing note.
    if (CodePoints(summary) + 64 > blocks.chars_left()) break;
    blocks.AddSection(summary);
    const std::size_t room = blocks.chars_left() > 64 ? blocks.chars_left() - 64 : 0;
    blocks.AddSection(Excerpt(item, std::min(room, kGroupExcerptChars)));
    blocks.AddDivider();
    ++shown;
  }
  const std::size_t rest = total - shown;
  if (rest > 0) {
    blocks.AddSection("…and " + std::to_string(rest) + " more" +
                      (one_kind ? " " + std::string(AlertKindName(first.kind)) : std::string()) +
                      " signatures; `faultline signatures` lists them all.");
  }
}

std::string FallbackText(const Notification& n) {
  std::string text = n.test ? "[TEST] " : "";
  if (n.items.empty()) return text + "faultline notification";
  text += ItemSummary(n.items.front());
  const std::size_t others = n.items.size() - 1 + n.more;
  if (others > 0) text += " and " + std::to_string(others) + " more";
  return CutToCodePoints(EscapeMrkdwn(text), L::kMaxFallbackChars);
}

}  // namespace

std::string RenderSlackMessage(const Notification& n) {
  Blocks blocks;
  if (n.items.size() == 1 && n.more == 0) {
    RenderOne(n, n.items.front(), blocks);
  } else if (!n.items.empty()) {
    RenderMany(n, blocks);
  }
  const json message{{"text", FallbackText(n)},
                     {"blocks", blocks.Take()},
                     {"unfurl_links", false},
                     {"unfurl_media", false}};
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace faultline
