// Version: package versions as logs print them, parsed and ordered so that "is this occurrence
// newer than the fix?" has one answer (docs/alerting.md section 7, behaviours 3 and 5).
//
// Two schemes are understood:
//   - PEP 440, the versions of Python packages (deepspeed, torch): epoch `1!`, release `0.14.0`,
//     pre-releases `0.15.0rc1` / `a` / `b` (with the spellings `alpha`, `beta`, `c`, `pre`,
//     `preview` and separators `-_.`), post-releases `.post1` / `-1`, dev releases `.dev0`, and
//     local versions `+cu121`; ordered exactly as packaging.version orders them.
//   - Semantic Versioning 2.0.0 (`1.2.3-beta.2+build.5`), for what PEP 440 does not take.
// A monotonic build number (`4711`) is a one-segment PEP 440 release.
//
// Compare(a, b) orders two versions when both parse in the same scheme, PEP 440 first (the
// scheme of the packages the rules name: `1.0.0-1` is a post-release there, a pre-release in
// semver, and a Python package means the former). Anything else (a git hash, `unknown`, one
// PEP 440 and one semver-only string) has no order: callers treat "no order" as "not newer",
// never as a regression.
//
// Pure functions of their arguments; thread-safe; never throw.
#ifndef FAULTLINE_ALERT_VERSION_H_
#define FAULTLINE_ALERT_VERSION_H_

#include <compare>
#include <optional>
#include <string_view>

namespace faultline {

enum class VersionScheme { kAuto, kPep440, kSemver };

// Whether `text` is a version in `scheme` (kAuto: in either).
bool IsVersion(std::string_view text, VersionScheme scheme = VersionScheme::kAuto);

// The order of `a` and `b`, or nullopt when they cannot be ordered (see above). Leading and
// trailing white space is ignored; letters are case-insensitive in PEP 440.
std::optional<std::strong_ordering> CompareVersions(std::string_view a, std::string_view b,
                                                    VersionScheme scheme = VersionScheme::kAuto);

// Convenience: true only when both parse and `a` is strictly newer than `b`.
bool IsNewerVersion(std::string_view a, std::string_view b,
                    VersionScheme scheme = VersionScheme::kAuto);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_VERSION_H_
