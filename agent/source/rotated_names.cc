#include "agent/source/rotated_names.h"

#include <fnmatch.h>

#include <string_view>

namespace faultline {
namespace {

// The suffixes logrotate (numbered, dateext, compressed), Python's RotatingFileHandler and the
// kubelet (`0.log.<timestamp>`) give rotated copies.
constexpr std::string_view kRotatedSuffixes[] = {
    ".1", ".12", ".1.gz", ".gz", ".zst", ".xz", ".bz2", "-20240131", ".20240131-120000",
};

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A path the glob `pattern` matches: each wildcard replaced by a plain character.
std::string ExampleName(std::string_view part) {
  std::string out;
  for (size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (c == '*') {
      // Nothing where that still names a file (app.log* -> app.log), a name where the star is
      // all there is before an extension (*.log -> app.log).
      if (out.empty() || out.back() == '/') out += "app";
    } else if (c == '?') {
      out += 'x';
    } else if (c == '\\' && i + 1 < part.size()) {
      out += part[++i];
    } else if (c == '[') {
      const size_t close = part.find(']', i + 2);
      if (close == std::string_view::npos) return "";
      const bool negated = part[i + 1] == '!' || part[i + 1] == '^';
      out += negated ? '\x01' : part[i + 1];
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool ExcludeList::Excludes(const std::string& path) const {
  const std::string name(BaseName(path));
  for (const std::string& pattern : patterns_) {
    const bool whole_path = pattern.find('/') != std::string::npos;
    if (fnmatch(pattern.c_str(), whole_path ? path.c_str() : name.c_str(),
                whole_path ? FNM_PATHNAME : 0) == 0) {
      return true;
    }
  }
  return false;
}

bool IsRotatedNameOf(std::string_view copy, std::string_view original) {
  const std::string_view c = BaseName(copy);
  const std::string_view o = BaseName(original);
  if (c.size() <= o.size()) return false;
  if (c.substr(0, o.size()) == o) return true;
  const size_t dot = o.rfind('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  const std::string_view stem = o.substr(0, dot);
  const std::string_view extension = o.substr(dot);
  const char separator = c[stem.size()];
  return c.substr(0, stem.size()) == stem &&
         (separator == '-' || separator == '_' || separator == '.') &&
         c.substr(c.size() - extension.size()) == extension;
}

std::vector<std::string> RotatedNamesMatchedBy(const Glob& glob) {
  std::vector<std::string> out;
  if (glob.literal()) return out;
  const std::string live = ExampleName(glob.pattern());
  if (live.empty() || !glob.Matches(live)) return out;
  for (std::string_view suffix : kRotatedSuffixes) {
    std::string path = live + std::string(suffix);
    if (glob.Matches(path)) out.push_back(std::move(path));
  }
  return out;
}

}  // namespace faultline
