// Fuzzes the syslog library: SyslogFramer on a stream cut into random reads must give exactly the
// messages of one read of the whole stream, none longer than the limit; ParseSyslogMessage on
// each of them must keep every view inside the message, keep host, app, proc id and msg id
// printable US-ASCII within RFC 5424's lengths, give a real date when it gives a timestamp, and
// keep the whole message as text when it finds no header. Input: byte 0 picks
// max_message_bytes, byte 1 seeds the read sizes and the receiver's date (any month, around New
// Year too), the rest is the stream.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agent/syslog/syslog_framer.h"
#include "agent/syslog/syslog_message.h"

namespace faultline {
namespace {

class Collect : public SyslogFramer::Sink {
 public:
  void OnMessage(std::string_view message) override { messages.emplace_back(message); }
  std::vector<std::string> messages;
};

void Check(bool condition) {
  if (!condition) std::abort();
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void CheckField(std::string_view field, size_t max, std::string_view message) {
  Check(Inside(field, message));
  Check(field.size() <= max);
  for (char c : field) Check(c >= 33 && c <= 126);
}

void CheckParse(std::string_view message, const CivilTime& now) {
  const SyslogMessage m = ParseSyslogMessage(message, now);
  Check(Inside(m.text, message));
  CheckField(m.host, SyslogMessage::kMaxHostBytes, message);
  CheckField(m.app, SyslogMessage::kMaxAppBytes, message);
  CheckField(m.proc_id, SyslogMessage::kMaxProcIdBytes, message);
  CheckField(m.msg_id, SyslogMessage::kMaxMsgIdBytes, message);
  Check(Inside(m.structured_data, message));
  Check(m.priority >= SyslogMessage::kNoPriority && m.priority <= 191);
  if (m.format == SyslogFormat::kNone) {
    Check(m.text == message && m.host.empty() && m.app.empty() && !m.time);
  }
  if (m.time) {
    const CivilTime& t = m.time->civil;
    Check(t.month >= 1 && t.month <= 12 && t.day >= 1 && t.day <= 31 && t.hour <= 23 &&
          t.minute <= 59 && t.second <= 60 && m.time->nanoseconds < 1000000000u);
    // A yearless timestamp's year is the receiver's or a neighbour; an RFC 3339 one in a BSD
    // message (as rsyslog forwards) keeps the year it gives.
    if (m.time->year_inferred) {
      Check(m.format == SyslogFormat::kRfc3164 && !m.time->utc_offset_minutes);
      Check(t.year >= now.year - 1 && t.year <= now.year + 1);
    }
  }
  // A pure function: the same input gives the same answer.
  const SyslogMessage again = ParseSyslogMessage(message, now);
  Check(again.format == m.format && again.text == m.text && again.host == m.host &&
        again.app == m.app && again.time == m.time);
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  if (size < 2) return 0;
  const size_t max_message_bytes = 1 + data[0] % 128 + (data[0] >= 128 ? 4096 : 0);
  const uint32_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  // Around New Year half the time; else some day of the year.
  const CivilTime now =
      (seed & 1) != 0
          ? CivilTime{2026, 12, 31, 23, 59, 50}
          : CivilTime{
                2027, 1 + static_cast<int>(seed / 2 % 12), 1 + static_cast<int>(seed % 28), 0, 0,
                3};

  Collect whole;
  SyslogFramer at_once(max_message_bytes);
  at_once.Feed(stream, whole);
  at_once.Finish(whole);

  Collect chunked;
  SyslogFramer in_reads(max_message_bytes);
  uint32_t state = seed * 2654435761u + 1;
  for (size_t at = 0; at < stream.size();) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min<size_t>(state % 40, stream.size() - at);  // empty reads too
    in_reads.Feed(stream.substr(at, n), chunked);
    at += n;
  }
  in_reads.Finish(chunked);

  Check(whole.messages == chunked.messages);
  Check(at_once.truncated_messages() == in_reads.truncated_messages());
  for (const std::string& message : whole.messages) {
    Check(message.size() <= max_message_bytes);
    CheckParse(message, now);
  }
  // A datagram is one message, whatever it holds.
  CheckParse(stream, now);
  return 0;
}
