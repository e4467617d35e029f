// The masker: turns one log line into the tokens the template miner groups, with the parts that
// vary from one occurrence of a message to the next replaced by the variable token "<*>".
//
// A line is split at whitespace, and a `key=value` token into `key=` and `value`. Masked, when
// they start where no word character (or '.') precedes them and end before a word character:
//   - date-times: `Sat Jul  9 11:35:59 2005`, ISO `2024-06-01 12:00:00,123` / `...T12:00:00Z`
//   - UUIDs, URLs (`scheme://...`), MAC and IPv6 addresses, IPv4 addresses with an optional
//     `:port`, host names with a `:port`, `0x` hex numbers
//   - paths of at least two segments (`/usr/lib/x.so`, `C:\build\x.obj`, URL paths with queries)
//   - quoted strings without whitespace inside (`'aio.lib'`, `"cuda:0"`, `` `foo` ``)
//   - hex identifiers of 8 or more digits with at least one decimal digit (`54fadb412c4e40cd`)
//   - numbers, signed or decimal, with `.`, `,` or `:` groups and a unit suffix of up to four
//     letters (`42`, `-9`, `0.25`, `11:35:59`, `12ms`, `3.5GiB`, `50%`)
// What is left is kept as written, so codes that name a failure (`LNK1181`, `sm_86`, `E0501`)
// stay part of the template; the miner may still generalise a token that holds a digit.
//
// Pure functions, thread-safe; they never fail. Cost is linear in the line.
#ifndef FAULTLINE_DISCOVER_MASKER_H_
#define FAULTLINE_DISCOVER_MASKER_H_

#include <string>
#include <string_view>
#include <vector>

namespace faultline {

// The variable token, as templates print it.
inline constexpr std::string_view kVariable = "<*>";

// Replaces `tokens` with the masked tokens of `line`.
void MaskLine(std::string_view line, std::vector<std::string>& tokens);

// Whether a token is variable-like: it holds a masked part or a decimal digit. The miner lets
// such tokens differ between lines of one template more freely than words.
bool IsVariableLike(std::string_view token);

}  // namespace faultline

#endif  // FAULTLINE_DISCOVER_MASKER_H_
