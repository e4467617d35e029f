#include "agent/source/input_reader.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace faultline {
namespace {

// The window being read from a mapping, for the SIGBUS handler. Lock-free atomics are safe to
// read in a signal handler.
std::atomic<bool> window_claimed{false};
std::atomic<char*> window_begin{nullptr};
std::atomic<char*> window_end{nullptr};
std::atomic<bool> window_faulted{false};
size_t page_bytes = 4096;  // set before the handler is installed, read-only after
struct sigaction previous_sigbus {};

void OnSigbus(int signal_number, siginfo_t* info, void* context) {
  char* const address = static_cast<char*>(info->si_addr);
  char* const begin = window_begin.load(std::memory_order_acquire);
  char* const end = window_end.load(std::memory_order_acquire);
  // si_code > 0: raised by the kernel for an access, not sent by kill().
  if (info->si_code > 0 && begin != nullptr && address >= begin && address < end) {
    char* const page = begin + (address - begin) / page_bytes * page_bytes;
    // Zero pages over the part of the window that vanished, so the faulting access completes.
    // mmap is a plain system call on Linux: safe here, though POSIX does not list it.
    if (mmap(page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      window_faulted.store(true, std::memory_order_release);
      return;
    }
  }
  if ((previous_sigbus.sa_flags & SA_SIGINFO) != 0 && previous_sigbus.sa_sigaction != nullptr) {
    previous_sigbus.sa_sigaction(signal_number, info, context);
    return;
  }
  if ((previous_sigbus.sa_flags & SA_SIGINFO) == 0 && previous_sigbus.sa_handler != SIG_DFL &&
      previous_sigbus.sa_handler != SIG_IGN) {
    previous_sigbus.sa_handler(signal_number);
    return;
  }
  // Nobody else handles it: with the default action back, returning repeats the faulting access,
  // which now ends the process with SIGBUS as it would have without this handler.
  signal(SIGBUS, SIG_DFL);
}

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    page_bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_sigbus);
  });
}

// Holds the process-wide window registration while one thread reads a mapping.
class WindowClaim {
 public:
  WindowClaim() {
    bool expected = false;
    claimed_ = window_claimed.compare_exchange_strong(expected, true);
  }
  ~WindowClaim() {
    if (claimed_) window_claimed.store(false);
  }
  bool claimed() const { return claimed_; }

  void Register(char* begin, size_t length) {
    window_faulted.store(false, std::memory_order_relaxed);
    window_end.store(begin + length, std::memory_order_release);
    window_begin.store(begin, std::memory_order_release);
  }
  void Unregister() {
    window_begin.store(nullptr, std::memory_order_release);
    window_end.store(nullptr, std::memory_order_release);
  }
  bool faulted() const { return window_faulted.load(std::memory_order_acquire); }

 private:
  bool claimed_ = false;
};

// Reads [offset, end of file) through mappings while the file is at least as long as what is
// mapped. Advances `offset` past what was handed over; read() continues from there.
void ReadMapped(int fd, off_t& offset, uint64_t known_size,
                const std::function<void(std::string_view)>& consume,
                const InputReadOptions& options, InputReadResult& result) {
  WindowClaim claim;
  if (!claim.claimed()) return;
  InstallSigbusHandler();
  const uint64_t page = page_bytes;
  const uint64_t window = std::max<uint64_t>(page, options.window_bytes / page * page);
  const uint64_t piece_bytes = std::max<size_t>(options.piece_bytes, 1);
  uint64_t pos = static_cast<uint64_t>(offset);
  bool stop = false;
  while (!stop && pos < known_size) {
    const uint64_t map_start = pos / page * page;
    const uint64_t length = std::min(window, known_size - map_start);
    void* mapping = mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd,
                         static_cast<off_t>(map_start));
    if (mapping == MAP_FAILED) break;  // read() takes over
    madvise(mapping, length, MADV_SEQUENTIAL);
    char* const base = static_cast<char*>(mapping);
    claim.Register(base, length);
    const uint64_t map_end = map_start + length;
    while (!stop && pos < map_end) {
      uint64_t piece_end = std::min(pos + piece_bytes, map_end);
      struct stat now {};
      if (fstat(fd, &now) == 0) {
        const uint64_t size = static_cast<uint64_t>(now.st_size);
        if (size < piece_end) {  // cut below what is mapped: hand over only what is still there
          piece_end = std::max(pos, size);
          result.shrank = true;
          stop = true;
        }
        known_size = std::max(known_size, size);
      }
      if (piece_end > pos) {
        consume(std::string_view(base + (pos - map_start), piece_end - pos));
        result.bytes += piece_end - pos;
        result.mapped_bytes += piece_end - pos;
        pos = piece_end;
      }
      if (claim.faulted()) {
        result.shrank = true;
        stop = true;
      }
    }
    claim.Unregister();
    munmap(mapping, length);
  }
  offset = static_cast<off_t>(pos);
}

void ReadRest(int fd, const std::function<void(std::string_view)>& consume, size_t buffer_bytes,
              InputReadResult& result) {
  std::string buffer(std::max<size_t>(buffer_bytes, 1), '\0');
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.error = std::strerror(errno);
      return;
    }
    if (n == 0) return;
    consume(std::string_view(buffer.data(), static_cast<size_t>(n)));
    result.bytes += static_cast<uint64_t>(n);
  }
}

}  // namespace

InputReadResult ReadInput(int fd, const std::function<void(std::string_view)>& consume,
                          const InputReadOptions& options) {
  InputReadResult result;
  struct stat st {};
  if (options.map && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    off_t offset = lseek(fd, 0, SEEK_CUR);
    if (offset >= 0 && offset < st.st_size) {
      ReadMapped(fd, offset, static_cast<uint64_t>(st.st_size), consume, options, result);
      if (lseek(fd, offset, SEEK_SET) < 0) {
        result.error = std::strerror(errno);
        return result;
      }
    }
  }
  ReadRest(fd, consume, options.piece_bytes, result);
  return result;
}

}  // namespace faultline
