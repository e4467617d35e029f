// UTF-8 safety at the edges: log bytes are matched as bytes, but anything that leaves the agent
// as text (JSON, Prometheus label values, a terminal, chat messages) must be valid UTF-8 and must
// not carry control characters that would corrupt a terminal or a payload.
//
// Pure functions; thread-safe.
#ifndef FAULTLINE_FRAMING_UTF8_H_
#define FAULTLINE_FRAMING_UTF8_H_

#include <string>
#include <string_view>

namespace faultline {

// Returns `bytes` with every invalid UTF-8 sequence (stray continuation bytes, truncated
// sequences, overlongs, surrogates, code points above U+10FFFF) replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

// SanitizeUtf8, plus C0 control characters other than tab and DEL shown as `\xNN`, and C1
// controls (U+0080-U+009F), bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069) and the line and paragraph separators (U+2028, U+2029) shown as `\uNNNN`, so a
// line with escape codes, NULs or a right-to-left override prints as one harmless line that reads
// as its bytes say.
std::string SanitizeForDisplay(std::string_view bytes);

bool IsValidUtf8(std::string_view bytes);

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_UTF8_H_
