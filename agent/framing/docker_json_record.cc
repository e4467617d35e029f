#include "agent/framing/docker_json_record.h"

namespace faultline {
namespace {

constexpr uint32_t kReplacementCodePoint = 0xFFFD;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsHighSurrogate(uint32_t code) { return code >= 0xD800 && code <= 0xDBFF; }
bool IsLowSurrogate(uint32_t code) { return code >= 0xDC00 && code <= 0xDFFF; }

}  // namespace

void DockerJsonRecord::Begin() { *this = DockerJsonRecord(); }

// Decoded bytes go through here: a "\r" and a "\n" are held, because a final "\n" (or "\r\n")
// ends the message and is not part of it, while one inside the string becomes a space.
void DockerJsonRecord::PutDecoded(char c, std::string& out) {
  if (high_surrogate_ != 0) {
    high_surrogate_ = 0;
    PutCodePoint(kReplacementCodePoint, out);
  }
  if (newline_pending_) {
    out += ' ';
    newline_pending_ = cr_pending_ = false;
  }
  if (c == '\n') {
    newline_pending_ = true;
    return;
  }
  if (cr_pending_) {
    out += '\r';
    cr_pending_ = false;
  }
  if (c == '\r') {
    cr_pending_ = true;
    return;
  }
  out += c;
}

void DockerJsonRecord::PutCodePoint(uint32_t code, std::string& out) {
  if (code < 0x80) {
    PutDecoded(static_cast<char>(code), out);
    return;
  }
  char bytes[4];
  size_t n = 0;
  if (code < 0x800) {
    bytes[n++] = static_cast<char>(0xC0 | (code >> 6));
  } else if (code < 0x10000) {
    bytes[n++] = static_cast<char>(0xE0 | (code >> 12));
    bytes[n++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
  } else {
    bytes[n++] = static_cast<char>(0xF0 | (code >> 18));
    bytes[n++] = static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    bytes[n++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
  }
  bytes[n++] = static_cast<char>(0x80 | (code & 0x3F));
  for (size_t i = 0; i < n; ++i) PutDecoded(bytes[i], out);
}

void DockerJsonRecord::Feed(std::string_view bytes, std::string& out) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    switch (state_) {
      case State::kPrefix:
        if (c == kDockerJsonPrefix[prefix_matched_]) {
          if (++prefix_matched_ == kDockerJsonPrefix.size()) state_ = State::kString;
          break;
        }
        out.append(kDockerJsonPrefix.substr(0, prefix_matched_));
        state_ = State::kRaw;
        out.append(bytes.substr(i));
        return;
      case State::kRaw:
        out.append(bytes.substr(i));
        return;
      case State::kString:
        if (c != '"' && c != '\\' && c != '\n' && c != '\r' && !cr_pending_ && !newline_pending_ &&
            high_surrogate_ == 0) {
          // Most of a message is plain bytes: take the run up to the next byte that needs care.
          size_t run = i + 1;
          while (run < bytes.size() && bytes[run] != '"' && bytes[run] != '\\' &&
                 bytes[run] != '\n' && bytes[run] != '\r') {
            ++run;
          }
          out.append(bytes.substr(i, run - i));
          i = run - 1;
        } else if (c == '"') {
          if (high_surrogate_ != 0) {
            high_surrogate_ = 0;
            PutCodePoint(kReplacementCodePoint, out);
          }
          state_ = State::kAfterString;
        } else if (c == '\\') {
          state_ = State::kEscape;
        } else {
          PutDecoded(c, out);
        }
        break;
      case State::kEscape:
        state_ = State::kString;
        switch (c) {
          case 'n':
            PutDecoded('\n', out);
            break;
          case 'r':
            PutDecoded('\r', out);
            break;
          case 't':
            PutDecoded('\t', out);
            break;
          case 'b':
            PutDecoded('\b', out);
            break;
          case 'f':
            PutDecoded('\f', out);
            break;
          case 'u':
            state_ = State::kUnicode;
            code_ = 0;
            hex_digits_ = 0;
            break;
          default:
            PutDecoded(c, out);
            break;  // \" \\ \/, and leniently anything else
        }
        break;
      case State::kUnicode: {
        const int value = HexValue(c);
        if (value < 0) {  // a broken escape: replaced, and the byte read as string
          state_ = State::kString;
          high_surrogate_ = 0;
          PutCodePoint(kReplacementCodePoint, out);
          --i;
          break;
        }
        code_ = code_ * 16 + static_cast<uint32_t>(value);
        if (++hex_digits_ < 4) break;
        state_ = State::kString;
        if (high_surrogate_ != 0 && IsLowSurrogate(code_)) {
          const uint32_t high = high_surrogate_;
          high_surrogate_ = 0;
          PutCodePoint(0x10000 + ((high - 0xD800) << 10) + (code_ - 0xDC00), out);
        } else if (IsHighSurrogate(code_)) {
          if (high_surrogate_ != 0) {  // two high halves: the first is lone
            high_surrogate_ = 0;
            PutCodePoint(kReplacementCodePoint, out);
          }
          high_surrogate_ = code_;
        } else {
          PutCodePoint(IsLowSurrogate(code_) ? kReplacementCodePoint : code_, out);
        }
        break;
      }
      case State::kAfterString:
        return;  // the other fields: stream, time, attrs
    }
  }
}

void DockerJsonRecord::FlushPending(std::string& out) {
  if (high_surrogate_ != 0) {
    high_surrogate_ = 0;
    PutCodePoint(kReplacementCodePoint, out);
  }
  if (cr_pending_ && !newline_pending_) out += '\r';
  cr_pending_ = false;
}

bool DockerJsonRecord::End(std::string& out) {
  switch (state_) {
    case State::kPrefix:
      out.append(kDockerJsonPrefix.substr(0, prefix_matched_));
      return true;
    case State::kRaw:
      return true;
    case State::kAfterString: {
      const bool ended = newline_pending_;
      FlushPending(out);
      newline_pending_ = false;
      return ended;
    }
    default:  // the record was cut inside its string: what it holds is the whole message
      FlushPending(out);
      newline_pending_ = false;
      return true;
  }
}

void DockerJsonRecord::TakeHeld(std::string& out) {
  if (state_ == State::kPrefix) {
    out.append(kDockerJsonPrefix.substr(0, prefix_matched_));
    state_ = State::kRaw;
  }
  if (cr_pending_ && !newline_pending_) {
    out += '\r';
    cr_pending_ = false;
  }
}

}  // namespace faultline
