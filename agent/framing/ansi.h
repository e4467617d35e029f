// ANSI escape removal: colour and cursor sequences are presentation, not content, and a rule
// must match `error` whether or not the tool coloured it.
//
// Removed: CSI (`ESC [` params, intermediates, a final byte 0x40-0x7E), OSC (`ESC ]` up to BEL or
// `ESC \`), and two-byte `ESC x` sequences. A sequence cut off by the end of the line is removed
// up to the end. Pure functions; thread-safe.
#ifndef FAULTLINE_FRAMING_ANSI_H_
#define FAULTLINE_FRAMING_ANSI_H_

#include <string>
#include <string_view>

namespace faultline {

inline constexpr char kEscape = '\x1b';

// Appends `line` without its escape sequences to `out`.
void AppendWithoutAnsi(std::string_view line, std::string& out);

// Removes the escape sequences of `line` where it is, without a second buffer: for a long line
// that would otherwise be copied whole.
void StripAnsiInPlace(std::string& line);

inline std::string StripAnsi(std::string_view line) {
  std::string out;
  AppendWithoutAnsi(line, out);
  return out;
}

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_ANSI_H_
