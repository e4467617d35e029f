// Fuzzes LineFramer: the same bytes cut into random reads (empty reads too) must give exactly the
// lines of a reference framing of the whole stream written the obvious way, in the format fuzzed
// (plain, CRI, Docker or auto), no line may exceed max_line_bytes, and the truncation count must
// match; StripAnsiInPlace must agree with StripAnsi, and a CRI prefix must be decided by a record's
// first kMaxCriPrefixBytes bytes as by the whole record. Input: byte 0 picks max_line_bytes, byte 1
// seeds the read sizes (low 6 bits) and picks the format (high 2 bits), the rest is the stream.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/framing/ansi.h"
#include "agent/framing/cri_record.h"
#include "agent/framing/docker_json_record.h"
#include "agent/framing/line_framer.h"

namespace faultline {
namespace {

struct Framed {
  std::vector<std::string> lines;
  uint64_t truncated = 0;
};

// A line ends: it is cut at max_line_bytes, and escape sequences are removed from what is kept.
void EndReferenceLine(std::string& raw, size_t max_line_bytes, Framed& out) {
  if (raw.size() > max_line_bytes) {
    raw.resize(max_line_bytes);
    ++out.truncated;
  }
  out.lines.push_back(StripAnsi(raw));
  raw.clear();
}

// The framing contract of line_framer.h written the obvious way: "\n", "\r\n" and "\r" end a
// line.
Framed ReferenceFraming(std::string_view stream, size_t max_line_bytes) {
  Framed out;
  std::string raw;
  auto emit = [&] { EndReferenceLine(raw, max_line_bytes, out); };
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

// The container record contract: "\n" ends a record; `decode(record, message)` appends the
// record's message bytes to the line being joined and says whether the line ends with the record;
// a stream that ends inside a line ends it.
template <typename Decode>
Framed ReferenceRecordFraming(std::string_view stream, size_t max_line_bytes, Decode decode) {
  Framed out;
  std::string message;
  bool open = false;
  for (size_t at = 0; at < stream.size();) {
    const size_t end = std::min(stream.find('\n', at), stream.size());
    open = true;
    if (decode(stream.substr(at, end - at), message)) {
      EndReferenceLine(message, max_line_bytes, out);
      open = false;
    }
    at = end + 1;
  }
  if (open) EndReferenceLine(message, max_line_bytes, out);
  return out;
}

// CRI: a record with the prefix adds its message and ends the line unless tagged P; a record
// without it is a whole line.
bool DecodeCriRecord(std::string_view record, std::string& message) {
  const CriPrefix prefix = ParseCriPrefix(record);
  message.append(record.substr(prefix.content_offset));
  return !prefix.valid || !prefix.partial;
}

// What a Docker record's message is, from an independent JSON parser: the "log" string, its final
// "\n" (or "\r\n") removed, a newline inside it a space. Nothing when nlohmann::json does not
// read the record as an object whose first key is a string "log", or when the record does not
// begin with kDockerJsonPrefix or has "log" twice (Docker writes neither; nlohmann keeps the last
// value, the decoder the first).
std::optional<std::string> DockerMessageByJson(std::string_view record, bool& ended) {
  if (!record.starts_with(kDockerJsonPrefix) ||  // JSON allows whitespace first; Docker does not
      record.find("\"log\"", kDockerJsonPrefix.size()) != std::string_view::npos) {
    return std::nullopt;
  }
  const auto doc = nlohmann::ordered_json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.empty() || doc.begin().key() != "log" ||
      !doc.begin().value().is_string()) {
    return std::nullopt;
  }
  std::string log = doc.begin().value().get<std::string>();
  ended = !log.empty() && log.back() == '\n';
  if (ended) {
    log.pop_back();
    if (!log.empty() && log.back() == '\r') log.pop_back();
  }
  std::string out;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i] == '\r' && i + 1 < log.size() && log[i + 1] == '\n') continue;
    out += log[i] == '\n' ? ' ' : log[i];
  }
  return out;
}

// Docker: a record's decoded message is added to the line, which it ends unless its "log" string
// had no final "\n"; the decoder, given the record whole, must agree with a JSON parser wherever
// that parser reads the record.
bool DecodeDockerRecord(std::string_view record, std::string& message) {
  DockerJsonRecord decoder;
  decoder.Begin();
  std::string decoded;
  decoder.Feed(record, decoded);
  const bool ended = decoder.End(decoded);
  bool json_ended = false;
  if (const auto by_json = DockerMessageByJson(record, json_ended);
      by_json && (*by_json != decoded || json_ended != ended)) {
    std::abort();
  }
  message += decoded;
  return ended;
}

// Auto: the stream's first line (up to its first "\n" or "\r") decides.
Framed ReferenceFraming(std::string_view stream, size_t max_line_bytes, LineFormat format) {
  if (format == LineFormat::kAuto) {
    const std::string_view first = stream.substr(0, stream.find_first_of("\n\r"));
    format = ParseCriPrefix(first).valid            ? LineFormat::kCri
             : first.starts_with(kDockerJsonPrefix) ? LineFormat::kDocker
                                                    : LineFormat::kPlain;
  }
  if (format == LineFormat::kCri) {
    return ReferenceRecordFraming(stream, max_line_bytes, DecodeCriRecord);
  }
  if (format == LineFormat::kDocker) {
    return ReferenceRecordFraming(stream, max_line_bytes, DecodeDockerRecord);
  }
  return ReferenceFraming(stream, max_line_bytes);
}

Framed ChunkedFraming(std::string_view stream, size_t max_line_bytes, LineFormat format,
                      uint32_t seed) {
  LineFramer framer(max_line_bytes, format);
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
  const uint32_t seed = data[1] & 0x3f;
  constexpr faultline::LineFormat kFormats[] = {
      faultline::LineFormat::kPlain, faultline::LineFormat::kDocker, faultline::LineFormat::kCri,
      faultline::LineFormat::kAuto};
  const faultline::LineFormat format = kFormats[data[1] >> 6];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const faultline::Framed expected = faultline::ReferenceFraming(stream, max_line_bytes, format);
  const faultline::Framed actual = faultline::ChunkedFraming(stream, max_line_bytes, format, seed);
  for (const std::string& line : actual.lines) {
    if (line.size() > max_line_bytes || line.find('\n') != std::string::npos) std::abort();
  }
  if (actual.lines != expected.lines || actual.truncated != expected.truncated) std::abort();
  // Long lines are stripped in place; it must remove exactly what StripAnsi removes.
  std::string in_place(stream);
  faultline::StripAnsiInPlace(in_place);
  if (in_place != faultline::StripAnsi(stream)) std::abort();
  const faultline::CriPrefix whole = faultline::ParseCriPrefix(stream);
  const faultline::CriPrefix head =
      faultline::ParseCriPrefix(stream.substr(0, faultline::kMaxCriPrefixBytes));
  if (whole.valid != head.valid || whole.partial != head.partial ||
      whole.content_offset != head.content_offset) {
    std::abort();
  }
  return 0;
}
