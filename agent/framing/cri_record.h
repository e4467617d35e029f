// ParseCriPrefix: reads the prefix the container runtime writes before every line a container
// printed, in the CRI log format (Kubernetes' kubelet/kuberuntime/logs, containerd's and CRI-O's
// log writers):
//
//   2024-05-01T12:00:00.123456789Z stderr F Traceback (most recent call last):
//   <RFC 3339 time, nanoseconds> <stream> <tags> <message>
//
// The stream is stdout or stderr. The tags are ':'-separated; the first is P (partial: the
// runtime split a long message, at 16 KiB in containerd, and the next record continues it) or F
// (full: the message ends here). An empty message is written with nothing after the tags.
// Anything else (no time, another stream name, a first tag that is neither P nor F) is not a CRI
// record: `valid` is false and the line is the program's own.
// Pure function of its input; never throws.
#ifndef FAULTLINE_FRAMING_CRI_RECORD_H_
#define FAULTLINE_FRAMING_CRI_RECORD_H_

#include <cstddef>
#include <string_view>

namespace faultline {

struct CriPrefix {
  bool valid = false;
  bool partial = false;       // the P tag: the message goes on in the next record
  size_t content_offset = 0;  // where the message begins in the record (0 when not valid)
};

// The longest prefix ParseCriPrefix accepts: a time with nanoseconds and a "+07:00" offset, the
// stream, a few tags. A reader needs at most this many bytes of a record to parse its prefix.
inline constexpr size_t kMaxCriPrefixBytes = 64;

// `head`: the start of one record (without its "\n"); the whole record or its first
// kMaxCriPrefixBytes bytes at least. The answer is the same for both: a prefix that does not end
// within kMaxCriPrefixBytes is not one.
CriPrefix ParseCriPrefix(std::string_view head);

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_CRI_RECORD_H_
