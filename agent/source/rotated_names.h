// Rotated names: the `exclude` list of a file source, and the check that warns, once, when a glob
// would also match the names rotation gives old copies of a log (app.log.1, app.log.2.gz,
// app.log-20240131, 0.log.20240131-120000). Those copies hold lines already counted under the
// live name; following them too counts every line again.
//
// An exclude entry is an fnmatch(3) pattern matched against the file's name, or against its whole
// path when the entry contains '/'. Exclusion applies to what globs find, never to a path named
// literally, and never to a file already followed that is renamed (a rotated file is still
// drained under any name). Immutable values; thread-safe.
#ifndef FAULTLINE_SOURCE_ROTATED_NAMES_H_
#define FAULTLINE_SOURCE_ROTATED_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/source/glob.h"

namespace faultline {

class ExcludeList {
 public:
  ExcludeList() = default;
  explicit ExcludeList(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

  bool Excludes(const std::string& path) const;
  bool empty() const { return patterns_.empty(); }

 private:
  std::vector<std::string> patterns_;
};

// Whether `copy`'s file name is one rotation gives a copy of `original`: the original's name plus
// a suffix (app.log.1, app.log-20240131, 0.log.20240131-120000), or its stem plus a separator and
// a suffix, keeping the extension (app-20240131.log for app.log). Folders are not compared
// (logrotate's olddir).
bool IsRotatedNameOf(std::string_view copy, std::string_view original);

// Example rotated names (in the glob's own folder) that `glob` also matches: what the one-time
// warning quotes. Empty for a literal path and for globs that only match live names (`*.log`).
std::vector<std::string> RotatedNamesMatchedBy(const Glob& glob);

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_ROTATED_NAMES_H_
