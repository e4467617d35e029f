#include "agent/source/glob.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace faultline {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> PlainGlob(const std::string& pattern, bool dirs_only) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_NOSORT | (dirs_only ? GLOB_ONLYDIR : 0), nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      const fs::path p(g.gl_pathv[i]);
      if (dirs_only ? fs::is_directory(p, ec) : fs::is_regular_file(p, ec)) {
        out.emplace_back(g.gl_pathv[i]);
      }
    }
  }
  globfree(&g);
  return out;
}

// Splits "base/**/rest" at the first "**": base has no "**", rest is matched below it.
bool SplitRecursive(const std::string& pattern, std::string& base, std::string& rest) {
  const size_t at = pattern.find("**");
  if (at == std::string::npos) return false;
  base = pattern.substr(0, at);
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.empty()) base.assign(1, pattern[0] == '/' ? '/' : '.');
  rest = pattern.substr(at);
  return true;
}

// fnmatch without FNM_PATHNAME lets `*` cross '/', which is what `**` means; "**/" may also
// match no folder at all.
bool MatchesRecursive(const std::string& rest, const std::string& relative) {
  if (fnmatch(rest.c_str(), relative.c_str(), 0) == 0) return true;
  if (rest.rfind("**/", 0) == 0) {
    return fnmatch(rest.substr(3).c_str(), relative.c_str(), FNM_PATHNAME) == 0;
  }
  return false;
}

// Folders deeper than this below a `**` are not searched: a guard against runaway trees.
constexpr int kMaxDepth = 32;

// Calls visit(path, is_directory, is_regular_file) for everything below `dir`, without following
// symbolic links. A folder that cannot be read (it vanished during the walk, or is not readable)
// is skipped; the rest of the walk goes on, so a churning tree never hides the files in it.
template <typename Visit>
void Walk(const fs::path& dir, const Visit& visit, int depth = 0) {
  if (depth > kMaxDepth) return;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    const fs::file_status status = it->symlink_status(type_ec);
    if (type_ec) continue;
    const bool is_dir = fs::is_directory(status);
    const bool is_file = fs::is_regular_file(it->status(type_ec)) && !type_ec;
    visit(it->path(), is_dir, is_file);
    if (is_dir) Walk(it->path(), visit, depth + 1);
  }
}

}  // namespace

bool HasGlobChars(const std::string& text) {
  return text.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> ExpandGlob(const std::string& pattern) {
  std::string base;
  std::string rest;
  std::vector<std::string> out;
  if (!SplitRecursive(pattern, base, rest)) {
    out = PlainGlob(pattern, /*dirs_only=*/false);
  } else {
    for (const std::string& dir : HasGlobChars(base) ? PlainGlob(base, true)
                                                     : std::vector<std::string>{base}) {
      Walk(dir, [&](const fs::path& path, bool /*is_dir*/, bool is_file) {
        if (!is_file) return;
        std::error_code ec;
        const std::string relative = fs::relative(path, dir, ec).string();
        if (!ec && MatchesRecursive(rest, relative)) out.push_back(path.string());
      });
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> GlobWatchDirs(const std::string& pattern) {
  std::string base;
  std::string rest;
  std::set<std::string> dirs;
  if (!SplitRecursive(pattern, base, rest)) {
    const fs::path parent = fs::path(pattern).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    if (HasGlobChars(dir)) {
      for (const std::string& d : PlainGlob(dir, true)) dirs.insert(d);
    } else {
      std::error_code ec;
      if (fs::is_directory(dir, ec)) dirs.insert(dir);
    }
  } else {
    for (const std::string& dir : HasGlobChars(base) ? PlainGlob(base, true)
                                                     : std::vector<std::string>{base}) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      dirs.insert(dir);
      Walk(dir, [&](const fs::path& path, bool is_dir, bool /*is_file*/) {
        if (is_dir) dirs.insert(path.string());
      });
    }
  }
  return {dirs.begin(), dirs.end()};
}

}  // namespace faultline
