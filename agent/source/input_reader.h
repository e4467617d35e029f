// ReadInput: reads one finished input (a log file, a pipe, standard input) from its current
// position to its end and hands the bytes to a callback, for `faultline scan`.
//
// A regular file is read through read-only private mappings of a few MiB at a time
// (madvise(MADV_SEQUENTIAL), pages populated when mapped), unmapped behind the reader, so the
// bytes reach the callback without the copy into a buffer that read() makes and resident memory
// stays near one window. Pipes, terminals and whatever cannot be mapped are read with read().
// Bytes appended while the file is read are read with read() once the mapped part is done.
//
// A file that shrinks while it is mapped (truncated, copytruncate) must not kill the process:
// touching a mapped page past the new end of file raises SIGBUS. So:
//   - before each piece is handed over, fstat() clips it to the file's current size; once the
//     file is shorter than the mapping, reading continues with read() from there, which gives
//     what read() would have given (usually end of file);
//   - a SIGBUS on the window being read (the file cut between that fstat and the callback's
//     access) is caught: the vanished pages are replaced by zero pages, the faulting access
//     completes, and reading stops mapping as above. In that race only, the callback has seen
//     zero bytes where the cut-off bytes were. A SIGBUS anywhere else goes to the handler that
//     was installed before (or kills the process as it would have).
// The SIGBUS handler is installed once per process on first use. One window is registered at a
// time: a call made while another thread is reading a mapping reads with read() instead, so the
// function is safe to call from several threads. Never throws; the callback must not either.
#ifndef FAULTLINE_SOURCE_INPUT_READER_H_
#define FAULTLINE_SOURCE_INPUT_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace faultline {

struct InputReadOptions {
  // Mapped at a time. Resident memory grows by about this much; one mmap/munmap pair per window.
  size_t window_bytes = 4 << 20;
  // Handed to the callback at a time (and checked against the file size before): the same
  // granularity as the read() path, fine enough for a progress bar.
  size_t piece_bytes = 1 << 20;
  // false: read() only (for comparisons and for tests of the read() path).
  bool map = true;
};

struct InputReadResult {
  uint64_t bytes = 0;         // handed to the callback
  uint64_t mapped_bytes = 0;  // of which were read from a mapping
  bool shrank = false;        // the file got shorter than the part already mapped
  std::string error;          // empty when the input was read to its end
  bool ok() const { return error.empty(); }
};

// Reads `fd` (not closed, left at an unspecified position) to its end. `consume` gets consecutive
// pieces; a view is valid only during the call.
InputReadResult ReadInput(int fd, const std::function<void(std::string_view)>& consume,
                          const InputReadOptions& options = {});

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_INPUT_READER_H_
