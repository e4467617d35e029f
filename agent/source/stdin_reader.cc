#include "agent/source/stdin_reader.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline {

StdinReader::StdinReader(asio::io_context& io, std::chrono::milliseconds quiet_after,
                         StreamConsumerFactory consumers, std::function<void()> on_end)
    : io_(io),
      consumers_(std::move(consumers)),
      on_end_(std::move(on_end)),
      quiet_(io, quiet_after, [this] {
        if (consumer_) consumer_->OnQuiet();
      }) {}

StdinReader::~StdinReader() { Stop(); }

void StdinReader::Start() {
  consumer_ = consumers_("-");
  const int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) {
    spdlog::warn("standard input cannot be read ({}); its stream is empty", std::strerror(errno));
    asio::post(io_, [this] { End(); });
    return;
  }
  reader_ = std::make_unique<DescriptorReader>(
      io_, fd, DescriptorReader::Options{},
      [this](std::string_view bytes) {
        quiet_.Touch();
        consumer_->OnBytes(bytes);
      },
      [this](const std::string& error) {
        if (!error.empty()) spdlog::error("reading standard input: {}; it ends here", error);
        End();
      });
  reader_->Start();
  spdlog::info("reading standard input ({})",
               reader_->pollable() ? "a pipe or terminal" : "a file, read to its end");
}

void StdinReader::End() {
  if (!consumer_) return;
  quiet_.Cancel();
  consumer_->OnEnd();
  consumer_.reset();
  spdlog::info("standard input closed");
  on_end_();
}

void StdinReader::Stop() {
  quiet_.Cancel();
  if (reader_) reader_->Close();
  if (consumer_) {
    consumer_->OnEnd();
    consumer_.reset();
  }
}

}  // namespace faultline
