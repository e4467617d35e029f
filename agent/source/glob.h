// Path globs for file sources: `*`, `?`, `[...]` within one path component, and `**` for any
// number of folders (including none).
//
// Pure functions over the file system as it is at the call; thread-safe. Errors (unreadable
// folders, a pattern that matches nothing) are not errors here: a file source waits for its files
// to appear.
#ifndef FAULTLINE_SOURCE_GLOB_H_
#define FAULTLINE_SOURCE_GLOB_H_

#include <string>
#include <vector>

namespace faultline {

// Regular files that match `pattern` (absolute or relative), sorted.
std::vector<std::string> ExpandGlob(const std::string& pattern);

// Folders to watch so that a new file matching `pattern` is noticed: the existing folders its
// parent part can match (every folder below the `**` for a recursive pattern).
std::vector<std::string> GlobWatchDirs(const std::string& pattern);

bool HasGlobChars(const std::string& text);

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_GLOB_H_
