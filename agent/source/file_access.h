// File access for FileTailer (file_tailer.h): how a followed path is opened (never blocking,
// never through a link swapped in), which folder it is in, what a symbolic link resolves through,
// and which rotated names are compressed. Small free functions, no state, any thread; failures
// are answered (-1, an empty list), never thrown.
#ifndef FAULTLINE_SOURCE_FILE_ACCESS_H_
#define FAULTLINE_SOURCE_FILE_ACCESS_H_

#include <time.h>

#include <string>
#include <vector>

namespace faultline {

// Links followed through at most this many hops (a loop of links ends there).
inline constexpr int kMaxLinkHops = 8;

// The folder `path` is in ("." for a bare name, "/" for a name at the root).
std::string ParentOf(const std::string& path);
bool SameTime(const timespec& a, const timespec& b);
// Opens `path` to read it, -1 with errno on failure. O_NONBLOCK: opening a FIFO swapped in for a
// log must not wait for a writer. O_NOFOLLOW unless the path is meant to be a link: a regular
// file swapped for a link between finding and opening is looked at again instead of being
// followed blindly.
int OpenForReading(const std::string& path, bool is_link);
// The paths a symbolic link resolves through, in order, the last one being the file (or what
// should be). Empty when `path` is not a link.
std::vector<std::string> ResolveLinkHops(const std::string& path);
// Compressed rotated copies (app.log.2.gz) hold other bytes than the log: never read as lines.
bool IsCompressedName(const std::string& path);

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FILE_ACCESS_H_
