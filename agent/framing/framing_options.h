// FramingOptions: how the bytes of a stream become lines, as the config's `framing:` section and
// `scan --input-format` set it. A plain value.
//
// The line format says what a line of the stream is:
//   plain  every "\n", "\r\n" or "\r" ends a line (line_framer.h).
//   cri    the container runtime's log file format (Kubernetes CRI, written by containerd and
//          CRI-O under /var/log/pods): `<RFC 3339 time> <stdout|stderr> <P|F> <message>`, one
//          record per line, a long message split into P (partial) records ended by an F one.
//          The prefix is removed and the records of one message are joined, so rules see what
//          the program printed (cri_record.h). A line without the prefix is kept whole.
//   docker Docker's json-file log driver (/var/lib/docker/containers/<id>/<id>-json.log):
//          `{"log":"<message>\n","stream":"stderr","time":"..."}`, one record per line, a long
//          line split into records whose message has no "\n" (docker_json_record.h). The message
//          is unescaped and the records of one line joined; a line that is not such a record is
//          kept whole.
//   auto   the first line of the stream decides: cri when it has the CRI prefix, docker when it
//          begins as a Docker json-file record, else plain. The default: a container log is read
//          as what the program printed, with no config.
#ifndef FAULTLINE_FRAMING_FRAMING_OPTIONS_H_
#define FAULTLINE_FRAMING_FRAMING_OPTIONS_H_

#include <cstddef>
#include <optional>
#include <string_view>

namespace faultline {

inline constexpr size_t kDefaultMaxLineBytes = 1 << 20;

enum class LineFormat { kAuto, kPlain, kCri, kDocker };

struct FramingOptions {
  size_t max_line_bytes = kDefaultMaxLineBytes;
  LineFormat format = LineFormat::kAuto;
  bool operator==(const FramingOptions&) const = default;
};

// "auto" | "plain" | "cri" | "docker"; nullopt for anything else.
std::optional<LineFormat> ParseLineFormat(std::string_view name);
std::string_view LineFormatName(LineFormat format);
// For error messages: the accepted names.
inline constexpr std::string_view kLineFormatNames = "auto, plain, cri, docker";

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_FRAMING_OPTIONS_H_
