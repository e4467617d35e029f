// VersionWatcher: the lines a stream prints that are not failures but matter to the lifecycle,
// found in every batch before it is matched (docs/alerting.md section 7, behaviours 3 and 5):
//   - package versions: `Successfully installed deepspeed-0.14.2 torch-2.3.1+cu121`,
//     `Collecting deepspeed==0.15.1`, ds_report's `deepspeed info ....... 0.14.2`,
//     `torch 2.3.1+cu121`. Which lines say a version is data in the rule folders
//     (`*.versions.yaml`, schema in rules/README.md), not code;
//   - a rule's `resolved_by` lines, which show its fix took effect.
//
// Cost: one RE2::Set pass over a batch's whole text finds which patterns occur at all; only
// those are then located line by line and confirmed with their own RE2. A batch without any of
// them costs the one pass.
//
// Version patterns: `match` is an RE2 with named groups `package` and `version`, or only
// `version` and a fixed `package:`; or, with `each:`, `match`'s first group is a list that `each`
// (with the same named groups) is applied to repeatedly. Package names are normalised as PEP 503
// does (NormalizePackageName).
//
// Build compiles everything at load time and reports a bad pattern with its file, line and key.
// Scan is const and thread-safe (RE2 is); it never throws and allocates only for hits.
#ifndef FAULTLINE_ALERT_VERSION_WATCHER_H_
#define FAULTLINE_ALERT_VERSION_WATCHER_H_

#include <re2/re2.h>
#include <re2/set.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/framing/line_batch.h"
#include "agent/rules/rule.h"

namespace faultline {

struct VersionPattern {
  std::string id;
  std::string match;
  std::string each;     // optional
  std::string package;  // optional: fixed package name
  std::string file;
  int line = 0;
};

// Every version pattern in `*.versions.yaml` files under `paths` (files or folders, like rule
// paths). A folder without such files gives none; malformed entries are errors with file, line
// and key.
Result<std::vector<VersionPattern>> LoadVersionPatterns(const std::vector<std::string>& paths);
// The entries of one file's text.
Result<std::vector<VersionPattern>> ParseVersionPatterns(std::string_view yaml,
                                                         const std::string& file);

class VersionWatcher {
 public:
  struct Hit {
    enum class Kind { kVersion, kResolved };
    Kind kind = Kind::kVersion;
    uint64_t line_number = 0;
    std::string package;  // kVersion
    std::string version;  // kVersion
    std::string rule_id;  // kResolved
  };

  // Compiles `versions` and the resolved_by patterns of `rules`.
  static Result<std::unique_ptr<VersionWatcher>> Build(const std::vector<VersionPattern>& versions,
                                                    const std::vector<Rule>& rules);

  // Appends the hits in `batch`, whose first line is number `first_line`, in line order per
  // pattern.
  void Scan(const LineBatch& batch, uint64_t first_line, std::vector<Hit>* out) const;

  bool empty() const { return patterns_.empty(); }

 private:
  struct Compiled {
    Hit::Kind kind;
    std::unique_ptr<RE2> in_text;  // (?m) over a batch, to find candidate lines
    std::unique_ptr<RE2> line;     // on one line, with the captures
    std::unique_ptr<RE2> each;     // optional
    std::string package;
    std::string rule_id;
    int package_group = -1;  // in `line`, or in `each` when set
    int version_group = -1;
  };
  VersionWatcher() = default;
  void Confirm(const Compiled& p, std::string_view line, uint64_t number,
               std::vector<Hit>* out) const;

  std::vector<Compiled> patterns_;
  std::unique_ptr<RE2::Set> set_;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_VERSION_WATCHER_H_
