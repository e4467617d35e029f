#include "agent/source/fifo_reader.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline {
namespace {

// Only the agent's own user may write lines into a pipe the agent made.
constexpr mode_t kCreatedMode = 0600;

bool IsLineEnd(char c) { return c == '\n' || c == '\r'; }

}  // namespace

FifoReader::FifoReader(asio::io_context& io, std::string path,
                       std::chrono::milliseconds quiet_after, StreamConsumerFactory consumers)
    : io_(io),
      path_(std::move(path)),
      consumers_(std::move(consumers)),
      quiet_(io, quiet_after, [this] {
        // A writer that was there before the pipe was opened leaves without a HUP: ask.
        if (mid_line_ && reader_) reader_->ReadNow();
        if (consumer_) consumer_->OnQuiet();
      }) {}

FifoReader::~FifoReader() { Stop(); }

Result<int> FifoReader::Open() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st {};
      if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        close(fd);
        return Failure(path_ + " is not a named pipe; remove it, or let the agent create the pipe");
      }
      return fd;
    }
    if (errno != ENOENT) return Failure("cannot open " + path_ + ": " + std::strerror(errno));
    // EEXIST: a writer or another process made it between the open and here; open that one.
    if (mkfifo(path_.c_str(), kCreatedMode) != 0 && errno != EEXIST) {
      return Failure("cannot create the named pipe " + path_ + ": " + std::strerror(errno));
    }
    created_ = true;
  }
  return Failure("cannot open " + path_ + ": it vanished right after it was created");
}

Result<void> FifoReader::Start() {
  Result<int> fd = Open();
  if (!fd.ok()) return fd.errors();
  if (created_) spdlog::info("created the named pipe {}", path_);
  consumer_ = consumers_(path_);
  Read(fd.value());
  return {};
}

void FifoReader::Read(int fd) {
  DescriptorReader::Options options;
  options.wait_first = true;
  reader_ = std::make_unique<DescriptorReader>(
      io_, fd, options,
      [this](std::string_view bytes) {
        mid_line_ = !IsLineEnd(bytes.back());
        quiet_.Touch();
        consumer_->OnBytes(bytes);
      },
      [this](const std::string& error) { OnWritersGone(error); });
  reader_->Start();
}

// Called by the reader at end of file, before it closes its descriptor.
void FifoReader::OnWritersGone(const std::string& error) {
  ++writer_ends_;
  if (mid_line_) {  // the writer is gone: its last line has ended
    mid_line_ = false;
    consumer_->OnBytes("\n");
  }
  Result<int> fd = error.empty() ? Open() : Result<int>(Failure(error));
  if (!fd.ok()) {
    spdlog::error("named pipe {}: {}; no longer reading it", path_, JoinErrors(fd.errors()));
    Stop();
    return;
  }
  Read(fd.value());  // destroys the old reader, which closes the old descriptor now that fd holds
                     // the pipe
}

void FifoReader::Stop() {
  if (stopped_) return;
  stopped_ = true;
  quiet_.Cancel();
  if (reader_) reader_->Close();
  if (consumer_) {
    consumer_->OnEnd();
    consumer_.reset();
  }
}

}  // namespace faultline
