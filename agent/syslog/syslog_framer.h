// SyslogFramer: splits the bytes of one syslog connection (TCP or a Unix stream socket) into
// messages, as RFC 6587 frames them, deciding per message:
//   - octet counting: `MSG-LEN SP MSG`, MSG-LEN a decimal count (no leading zero) of the bytes
//     that follow. rsyslog's omfwd with `TCP_Framing="octet-counted"`, syslog-ng's `syslog()`
//     driver and RFC 5425 use it; a message may then hold newlines.
//   - non-transparent framing: a message ends at LF (a CR before it is dropped). What
//     `logger --tcp`, rsyslog's default TCP forwarding, nc and most devices send.
// A frame that begins with digits and a space is octet-counted; anything else is LF-framed, so a
// plain line in a syslog stream is still one message.
//
// Bounded memory: a message longer than max_message_bytes is cut there (the rest is skipped to
// the end of its frame) and counted in truncated_messages(); a count too large to be a length
// (more than kMaxCountDigits digits) is read as the start of a LF-framed message. Finish() hands
// out what is left of a frame cut short by the end of the stream (a last line without LF, an
// octet-counted message whose bytes stopped coming), so nothing received is lost.
// Never throws. Not thread-safe; one framer per stream.
#ifndef FAULTLINE_SYSLOG_SYSLOG_FRAMER_H_
#define FAULTLINE_SYSLOG_SYSLOG_FRAMER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace faultline {

class SyslogFramer {
 public:
  // Receives each complete message, without its frame; the view lives for the call.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void OnMessage(std::string_view message) = 0;
  };

  // Nine digits count up to 999,999,999 bytes, far above any max_message_bytes.
  static constexpr int kMaxCountDigits = 9;

  // REQUIRES: max_message_bytes >= 1.
  explicit SyslogFramer(size_t max_message_bytes);

  void Feed(std::string_view bytes, Sink& sink);
  // End of stream: a frame cut short becomes a message.
  void Finish(Sink& sink);

  uint64_t truncated_messages() const { return truncated_; }

 private:
  enum class State { kFrameStart, kCount, kOctets, kLine };

  // Appends to the message being assembled, up to the limit.
  void Keep(std::string_view bytes);
  void Emit(Sink& sink);
  // The digits read as a count are not followed by a space: they begin a LF-framed message, and
  // are its first bytes, under the same limit.
  void CountBeginsALine();

  const size_t max_message_bytes_;
  State state_ = State::kFrameStart;
  std::string message_;     // bytes of the message being assembled (or of the count, in kCount)
  bool cut_ = false;        // the message being assembled passed the limit
  bool held_cr_ = false;    // kLine: the last read ended in a CR, not yet kept
  uint64_t remaining_ = 0;  // kOctets: bytes of the frame still to come
  int count_digits_ = 0;
  uint64_t truncated_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SYSLOG_SYSLOG_FRAMER_H_
