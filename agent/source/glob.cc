#include "agent/source/glob.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace faultline {
namespace {

bool HasWildcard(std::string_view text) {
  return text.find_first_of("*?[") != std::string_view::npos;
}

// Non-empty components of `path`; "." components are dropped.
std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(at, end - at);
    if (!part.empty() && part != ".") out.push_back(part);
    at = end + 1;
  }
  return out;
}

bool MatchPart(const std::string& part, std::string_view segment) {
  if (!HasWildcard(part)) return part == segment;
  const std::string text(segment);
  return fnmatch(part.c_str(), text.c_str(), FNM_PERIOD) == 0;
}

constexpr int kExplicitBit = 1;
constexpr int kDoubleStarBit = 2;

// Matches segments [si..] against parts [pi..]. For a file every segment must be consumed and
// every part used; for a folder every segment must be consumed with a part left over (the file
// part, at least). Returns how the last segment was consumed (bits above), 0 for no match.
// `**` consumes folders only: never the file segment, never a hidden folder.
int MatchFrom(const std::vector<std::string>& parts, size_t pi,
              const std::vector<std::string_view>& segments, size_t si, int depth, bool folder,
              int last_kind) {
  if (si == segments.size()) {
    if (folder) return pi < parts.size() ? last_kind : 0;
    while (pi < parts.size() && parts[pi] == "**") ++pi;
    return pi == parts.size() ? last_kind : 0;
  }
  if (pi == parts.size()) return 0;
  if (parts[pi] == "**") {
    int kinds = MatchFrom(parts, pi + 1, segments, si, depth, folder, last_kind);
    const bool is_folder_segment = folder || si + 1 < segments.size();
    if (is_folder_segment && segments[si].front() != '.' && depth < kMaxGlobDepth) {
      kinds |= MatchFrom(parts, pi, segments, si + 1, depth + 1, folder, kDoubleStarBit);
    }
    return kinds;
  }
  if (!MatchPart(parts[pi], segments[si])) return 0;
  return MatchFrom(parts, pi + 1, segments, si + 1, depth, folder, kExplicitBit);
}

}  // namespace

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir == ".") return std::string(name);
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

Glob::Glob(std::string pattern) : pattern_(std::move(pattern)) {
  const bool absolute = !pattern_.empty() && pattern_.front() == '/';
  const std::vector<std::string_view> components = Split(pattern_);
  size_t first_wild = 0;
  while (first_wild < components.size() && !HasWildcard(components[first_wild])) ++first_wild;
  literal_ = first_wild == components.size();
  // A literal pattern is matched in its parent folder, so its root stops before the last part.
  const size_t root_len =
      literal_ ? (components.empty() ? 0 : components.size() - 1) : first_wild;
  std::string root = absolute ? "/" : "";
  for (size_t i = 0; i < root_len; ++i) root = root.empty() ? std::string(components[i])
                                                            : JoinPath(root, components[i]);
  root_ = root.empty() ? "." : root;
  for (size_t i = root_len; i < components.size(); ++i) parts_.emplace_back(components[i]);
  if (!parts_.empty() && parts_.back() == "**") parts_.emplace_back("*");
}

bool Glob::Relative(std::string_view path, std::vector<std::string_view>* segments) const {
  if (root_ == ".") {
    if (!path.empty() && path.front() == '/') return false;
    *segments = Split(path);
    return true;
  }
  if (path.substr(0, root_.size()) != root_) return false;
  const std::string_view rest = path.substr(root_.size());
  if (root_ != "/" && !rest.empty() && rest.front() != '/') return false;
  *segments = Split(rest);
  return true;
}

bool Glob::Matches(std::string_view path) const {
  std::vector<std::string_view> segments;
  if (parts_.empty() || !Relative(path, &segments) || segments.empty()) return false;
  return MatchFrom(parts_, 0, segments, 0, 0, /*folder=*/false, kExplicitBit) != 0;
}

Glob::FolderMatch Glob::MatchFolder(std::string_view dir) const {
  std::vector<std::string_view> segments;
  if (parts_.empty() || !Relative(dir, &segments)) return FolderMatch::kNo;
  const int kinds = MatchFrom(parts_, 0, segments, 0, 0, /*folder=*/true, kExplicitBit);
  if (kinds & kExplicitBit) return FolderMatch::kExplicit;
  if (kinds & kDoubleStarBit) return FolderMatch::kUnderDoubleStar;
  return FolderMatch::kNo;
}

void WalkGlob(const Glob& glob, const std::string& dir,
              const std::function<bool(const std::string&)>& on_folder,
              const std::function<void(const std::string&)>& on_file) {
  const std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
  if (listing == nullptr) return;
  std::vector<std::string> folders;  // walked after the listing is closed: one DIR open at a time
  while (const dirent* entry = readdir(listing.get())) {
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    std::string path = JoinPath(dir, name);
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (lstat(path.c_str(), &st) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK
                                          : S_ISREG(st.st_mode) ? DT_REG
                                                                : DT_FIFO;
    }
    if (type == DT_LNK) {
      struct stat st {};
      const bool resolved = stat(path.c_str(), &st) == 0;
      if (resolved && S_ISDIR(st.st_mode)) {
        if (glob.MatchFolder(path) == Glob::FolderMatch::kExplicit) folders.push_back(path);
        continue;
      }
      // A link to a file, or to nothing yet (its target may appear later): the caller decides.
      const bool may_be_file = resolved ? S_ISREG(st.st_mode) : errno == ENOENT;
      if (may_be_file && glob.Matches(path)) on_file(path);
      continue;
    }
    if (type == DT_DIR) {
      if (glob.MatchFolder(path) != Glob::FolderMatch::kNo) folders.push_back(path);
    } else if (type == DT_REG && glob.Matches(path)) {
      on_file(path);
    }
  }
  for (const std::string& folder : folders) {
    if (on_folder(folder)) WalkGlob(glob, folder, on_folder, on_file);
  }
}

std::vector<std::string> ExpandGlob(const Glob& glob) {
  std::vector<std::string> out;
  WalkGlob(
      glob, glob.root(), [](const std::string&) { return true; },
      [&](const std::string& path) { out.push_back(path); });
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace faultline
