#include "agent/source/syslog_streams.h"

#include <algorithm>
#include <ctime>

namespace faultline {
namespace {

// A stream's buffer that held one long message is given back rather than kept.
constexpr std::size_t kRetainedBytes = 64 * 1024;

std::string_view WithoutLineEnd(std::string_view message) {
  if (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  if (!message.empty() && message.back() == '\r') message.remove_suffix(1);
  return message;
}

}  // namespace

std::optional<int64_t> BoundedSenderTime(int64_t sender_ms, int64_t arrival_ms) {
  if (sender_ms > arrival_ms + SyslogStreams::kMaxAheadMs) return std::nullopt;
  if (sender_ms < arrival_ms - SyslogStreams::kMaxBehindMs) return std::nullopt;
  return sender_ms;
}

CivilTime LocalCivilTimeNow() {
  thread_local time_t cached_second = -1;
  thread_local CivilTime cached;
  const time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm t{};
    localtime_r(&now, &t);
    cached = CivilTime{t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                       t.tm_hour,        t.tm_min,     std::min(t.tm_sec, 60)};
    cached_second = now;
  }
  return cached;
}

SyslogStreams::SyslogStreams(std::string name, SyslogStreamsOptions options,
                             LabeledStreamConsumerFactory factory)
    : name_(std::move(name)),
      options_(std::move(options)),
      factory_(std::move(factory)),
      framer_(options_.max_message_bytes) {}

SyslogStreams::~SyslogStreams() = default;

void SyslogStreams::OnBytes(std::string_view bytes) {
  if (ended_) return;
  now_ = options_.now ? options_.now() : LocalCivilTimeNow();
  arrival_ms_ = UnixMs(options_.clock());
  if (options_.datagrams) {
    OnMessage(WithoutLineEnd(bytes.substr(0, options_.max_message_bytes)));
  } else {
    framer_.Feed(bytes, *this);
  }
  Flush();
}

void SyslogStreams::OnQuiet() {
  for (Stream& stream : streams_) stream.consumer->OnQuiet();
}

void SyslogStreams::OnEnd() {
  if (ended_) return;
  ended_ = true;
  if (!options_.datagrams) framer_.Finish(*this);
  Flush();
  for (Stream& stream : streams_) stream.consumer->OnEnd();
  streams_.clear();
  by_key_.clear();
}

void SyslogStreams::OnMessage(std::string_view message) {
  ++messages_;
  const SyslogMessage parsed = ParseSyslogMessage(message, now_);
  Stream& stream = StreamFor(parsed.host.empty() ? options_.default_host : parsed.host, parsed.app);
  if (stream.pending.empty()) touched_.push_back(&stream);
  stream.pending.append(parsed.text);
  stream.pending.push_back('\n');
  const std::optional<int64_t> time = TimeOf(parsed);
  if (!stream.runs.empty() && stream.runs.back().time_ms == time) {
    stream.runs.back().end = stream.pending.size();
  } else {
    stream.runs.push_back(TimedRun{stream.pending.size(), time});
  }
}

std::optional<int64_t> SyslogStreams::TimeOf(const SyslogMessage& message) {
  if (!message.time) return std::nullopt;
  const SyslogTime& t = *message.time;
  int64_t seconds = 0;
  if (t.utc_offset_minutes) {
    seconds = UtcSecondsOf(t.civil) - int64_t{*t.utc_offset_minutes} * 60;
  } else {
    if (!local_cached_ || !(local_civil_ == t.civil)) {
      std::tm tm{};
      tm.tm_year = t.civil.year - 1900;
      tm.tm_mon = t.civil.month - 1;
      tm.tm_mday = t.civil.day;
      tm.tm_hour = t.civil.hour;
      tm.tm_min = t.civil.minute;
      tm.tm_sec = t.civil.second;
      tm.tm_isdst = -1;
      const std::time_t local = mktime(&tm);
      if (local == static_cast<std::time_t>(-1)) return std::nullopt;
      local_civil_ = t.civil;
      local_seconds_ = local;
      local_cached_ = true;
    }
    seconds = local_seconds_;
  }
  return BoundedSenderTime(seconds * 1000 + t.nanoseconds / 1000000, arrival_ms_);
}

void SyslogStreams::HandOn(Stream& stream) {
  stream.consumer->OnTimedBytes(stream.pending, stream.runs);
  stream.pending.clear();
  stream.runs.clear();
  if (stream.pending.capacity() > kRetainedBytes) std::string().swap(stream.pending);
}

SyslogStreams::Stream& SyslogStreams::StreamFor(std::string_view host, std::string_view app) {
  key_.assign(host);
  key_.push_back('\n');  // neither field can hold one
  key_.append(app);
  if (!streams_.empty() && streams_.front().key == key_) return streams_.front();
  if (const auto it = by_key_.find(key_); it != by_key_.end()) {
    streams_.splice(streams_.begin(), streams_, it->second);
    return streams_.front();
  }
  if (streams_.size() >= std::max<std::size_t>(1, options_.max_streams)) {
    Stream& oldest = streams_.back();
    if (!oldest.pending.empty()) {
      HandOn(oldest);
      touched_.erase(std::find(touched_.begin(), touched_.end(), &oldest));
    }
    oldest.consumer->OnEnd();
    by_key_.erase(oldest.key);
    streams_.pop_back();
  }
  const StreamLabels labels = {{"host", std::string(host)}, {"app", std::string(app)}};
  streams_.push_front(Stream{key_, factory_(name_, labels), {}, {}});
  by_key_.emplace(key_, streams_.begin());
  return streams_.front();
}

void SyslogStreams::Flush() {
  for (Stream* stream : touched_) HandOn(*stream);
  touched_.clear();
}

}  // namespace faultline
