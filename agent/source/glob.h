// Glob: one path pattern of a file source, compiled once, that answers "does this file match?"
// and "can matches lie in or below this folder?" without touching the file system, plus WalkGlob,
// which lists folders for matches. Together they let the tailer expand a glob incrementally: walk
// it once, then look only at the names inotify reports.
//
// Syntax, per path component: `*`, `?` and `[...]` as in fnmatch(3), never crossing '/'; a
// component that is exactly `**` matches any number of folders (none included, at most
// kMaxGlobDepth). Wildcards do not match a leading '.', so hidden files and folders are only
// matched when the pattern names the dot (as shells do). A trailing `**` means `**/*`. A pattern
// without wildcards names one path.
//
// Glob is an immutable value, thread-safe. WalkGlob reads the file system as it is at the call;
// folders that cannot be read (permissions, vanished mid-walk) are skipped, never an error: a
// file source waits for its files to appear.
#ifndef FAULTLINE_SOURCE_GLOB_H_
#define FAULTLINE_SOURCE_GLOB_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

// `**` descends at most this many folders: a guard against runaway or looping trees.
inline constexpr int kMaxGlobDepth = 32;

class Glob {
 public:
  // How a folder can hold matches: below an explicit component of the pattern (a link to a folder
  // there is followed, as glob(3) does), or only under `**` (links not followed, which keeps a
  // recursive walk out of loops).
  enum class FolderMatch { kNo, kExplicit, kUnderDoubleStar };

  explicit Glob(std::string pattern);

  const std::string& pattern() const { return pattern_; }
  // No wildcard: the pattern names one path.
  bool literal() const { return literal_; }
  // The deepest folder the pattern names literally; every match lies below it, and a walk
  // starts there.
  const std::string& root() const { return root_; }

  bool Matches(std::string_view path) const;
  // For a folder at or below root(): whether files matching may lie in it or below it.
  FolderMatch MatchFolder(std::string_view dir) const;

 private:
  // The components below root_, relative; split on '/' once at construction.
  bool Relative(std::string_view path, std::vector<std::string_view>* segments) const;

  std::string pattern_;
  std::string root_;
  std::vector<std::string> parts_;
  bool literal_ = false;
};

// Lists `dir`, a folder the glob may match in. For each entry: a folder that may hold matches is
// passed to on_folder, and walked too when on_folder returns true; anything else that matches
// (a regular file or a link to one, or a link whose target does not exist yet) is passed to
// on_file. FIFOs, sockets and devices are skipped.
void WalkGlob(const Glob& glob, const std::string& dir,
              const std::function<bool(const std::string&)>& on_folder,
              const std::function<void(const std::string&)>& on_file);

// Every file the glob matches now, sorted: the whole walk from root().
std::vector<std::string> ExpandGlob(const Glob& glob);

// `dir/name` without doubling the '/' of the root folder.
std::string JoinPath(std::string_view dir, std::string_view name);

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_GLOB_H_
