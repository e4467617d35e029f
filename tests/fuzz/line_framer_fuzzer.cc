// Fuzzes LineFramer: the same bytes cut into random reads (empty reads too) must give exactly the
// lines of a plain reference framing of the whole stream, no line may exceed max_line_bytes, and
// the truncation count must match; StripAnsiInPlace must agree with StripAnsi. Input: byte 0 picks max_line_bytes, byte 1 seeds the read
// sizes, the rest is the stream.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agent/framing/ansi.h"
#include "agent/framing/line_framer.h"

namespace faultline {
namespace {

struct Framed {
  std::vector<std::string> lines;
  uint64_t truncated = 0;
};

// The framing contract of line_framer.h written the obvious way: "\n", "\r\n" and "\r" end a
// line, a line is cut at max_line_bytes, escape sequences are removed from what is kept.
Framed ReferenceFraming(std::string_view stream, size_t max_line_bytes) {
  Framed out;
  std::string raw;
  auto emit = [&] {
    if (raw.size() > max_line_bytes) {
      raw.resize(max_line_bytes);
      ++out.truncated;
    }
    out.lines.push_back(StripAnsi(raw));
    raw.clear();
  };
  for (size_t i = 0; i < stream.size(); ++i) {
    const char c = stream[i];
    if (c == '\n' || c == '\r') {
      emit();
      if (c == '\r' && i + 1 < stream.size() && stream[i + 1] == '\n') ++i;
    } else {
      raw += c;
    }
  }
  if (!raw.empty()) emit();
  return out;
}

Framed ChunkedFraming(std::string_view stream, size_t max_line_bytes, uint32_t seed) {
  LineFramer framer(max_line_bytes);
  LineBatch batch;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t at = 0; at < stream.size();) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min<size_t>(state % 33, stream.size() - at);  // empty reads too
    framer.Feed(stream.substr(at, n), batch);
    at += n;
  }
  framer.Finish(batch);
  Framed out;
  out.truncated = framer.truncated_lines();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch.text()[batch.line_end(i)] != '\n') std::abort();
    out.lines.emplace_back(batch.line(i));
  }
  return out;
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // Mostly small limits, so that cutting and skipping are exercised; sometimes the default.
  const size_t max_line_bytes = data[0] < 192 ? 1 + data[0] % 64 : faultline::kDefaultMaxLineBytes;
  const uint32_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const faultline::Framed expected = faultline::ReferenceFraming(stream, max_line_bytes);
  const faultline::Framed actual = faultline::ChunkedFraming(stream, max_line_bytes, seed);
  for (const std::string& line : actual.lines) {
    if (line.size() > max_line_bytes || line.find('\n') != std::string::npos) std::abort();
  }
  if (actual.lines != expected.lines || actual.truncated != expected.truncated) std::abort();
  // Long lines are stripped in place; it must remove exactly what StripAnsi removes.
  std::string in_place(stream);
  faultline::StripAnsiInPlace(in_place);
  if (in_place != faultline::StripAnsi(stream)) std::abort();
  return 0;
}
