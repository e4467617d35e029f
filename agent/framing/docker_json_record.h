// DockerJsonRecord: decodes one record of Docker's json-file log driver (the default: what
// `docker logs` reads, /var/lib/docker/containers/<id>/<id>-json.log) as its bytes arrive:
//
//   {"log":"Traceback (most recent call last):\n","stream":"stderr","time":"2024-05-01T..."}
//
// One record per "\n"-terminated line of the file. Its message is the JSON string of "log",
// which the driver always writes first: the line a program printed, with its "\n", or without one
// when the driver split a long line (at 16 KiB) and the next record continues it. The decoder
// outputs the message's bytes unescaped (\uXXXX as UTF-8, a lone surrogate as U+FFFD) without that
// final "\n" (or "\r\n"), and says at the record's end whether the message ended there. A record
// that does not begin with {"log":" is not a Docker one: its bytes are output as they are and it
// ends its message. A newline inside the string, which the driver never writes, is output as a
// space, so that a message stays one line.
// Pure state machine over the bytes given; no allocation beyond `out`; never throws.
#ifndef FAULTLINE_FRAMING_DOCKER_JSON_RECORD_H_
#define FAULTLINE_FRAMING_DOCKER_JSON_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace faultline {

// The bytes every Docker json-file record begins with.
inline constexpr std::string_view kDockerJsonPrefix = "{\"log\":\"";

class DockerJsonRecord {
 public:
  // A new record begins.
  void Begin();
  // The record's next bytes (none of them its "\n"): appends the message bytes they complete to
  // `out`.
  void Feed(std::string_view bytes, std::string& out);
  // The record ended: appends what was held to `out`; true when its message ends with this record.
  bool End(std::string& out);
  // The stream went quiet inside the record: appends what is held that is message (an unfinished
  // prefix is taken as the bytes of a record that is not Docker's).
  void TakeHeld(std::string& out);

 private:
  enum class State { kPrefix, kRaw, kString, kEscape, kUnicode, kAfterString };
  void PutDecoded(char c, std::string& out);
  void PutCodePoint(uint32_t code, std::string& out);
  void FlushPending(std::string& out);

  State state_ = State::kPrefix;
  size_t prefix_matched_ = 0;
  uint32_t code_ = 0;  // the \uXXXX being read
  int hex_digits_ = 0;
  uint32_t high_surrogate_ = 0;   // a \uD800-\uDBFF waiting for its low half
  bool cr_pending_ = false;       // a decoded "\r", held: it may be the "\r" of a final "\r\n"
  bool newline_pending_ = false;  // a decoded "\n", held: the string may end right after it
};

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_DOCKER_JSON_RECORD_H_
