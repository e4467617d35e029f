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

// SanitizeUtf8, plus C0 control characters other than tab and DEL shown as `\xNN`, so a line with
// escape codes or NULs prints as one harmless line.
std::string SanitizeForDisplay(std::string_view bytes);

bool IsValidUtf8(std::string_view bytes);

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_UTF8_H_
