// ScanReport: what `faultline scan` found, one entry per rule, grouped into root causes and their
// consequences, and how it is printed.
//
// It is the FindingSink of a scan: each finding adds to its rule's entry (count of matching lines,
// the first hit at the highest severity seen, which is the one to read first, and the ranks and
// hosts the hits came from, line_origin.h). At the end the entries are grouped
// (rules/README.md, "Root cause and consequences"): a finding of a symptom rule becomes a
// consequence of the root finding its consequence_of names, the earliest such root before it in
// the input, else the earliest after it; a symptom that no root explains stays a root, as it is
// all the log says. The report also names the first failure: the earliest root at error severity
// or worse, with its rank and host when the log says them.
// After the findings come the unrecognised errors, when the scan ran discovery (ShowUnrecognised):
// error lines no rule explained, one entry per template (agent/discover/discovery.h).
// Rendering is for people (text) or machines (JSON, schema in docs/commands.md); every log byte
// that reaches either is sanitised to valid UTF-8 with control characters escaped. Not
// thread-safe.
#ifndef FAULTLINE_CMD_SCAN_REPORT_H_
#define FAULTLINE_CMD_SCAN_REPORT_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/discover/discovery.h"
#include "agent/match/finding.h"
#include "agent/match/line_origin.h"

namespace faultline {

class ScanReport : public FindingSink {
 public:
  // Distinct ranks and hosts listed per finding; more are counted as "more", not listed, so a
  // 4096-rank job's report stays readable and its memory bounded.
  static constexpr size_t kMaxRanks = 64;
  static constexpr size_t kMaxHosts = 32;
  // Ranks whose host the log named, kept to name the host of the first failure.
  static constexpr size_t kMaxRankHosts = 4096;
  // Unrecognised templates the text report lists; JSON lists them all.
  static constexpr size_t kMaxTextTemplates = 20;

  // A report holds one line per signature; a 100 MB line is shown by its start, as the agent's
  // pending hits keep it.
  static constexpr size_t kFirstTextBytes = 4096;

  struct Entry {
    const Rule* rule = nullptr;
    Severity severity = Severity::kInfo;  // the highest effective severity of its hits
    uint64_t count = 0;                   // lines that raised it, at any severity
    std::string first_file;               // first hit at `severity`
    size_t first_file_index = 0;
    uint64_t first_line = 0;
    std::string first_text;  // at most kFirstTextBytes of the line
    bool first_text_truncated = false;
    std::vector<std::string> first_labels;
    int first_rank = LineOrigin::kNoRank;  // where the first hit came from, when it says
    std::string first_host;
    std::vector<int> ranks;          // of all its hits: distinct, ascending, at most kMaxRanks
    std::vector<std::string> hosts;  // distinct, in the order seen, at most kMaxHosts
    bool ranks_truncated = false;
    bool hosts_truncated = false;
  };

  // A root cause and the findings it explains, in input order.
  struct Group {
    const Entry* root = nullptr;
    std::vector<const Entry*> consequences;
  };

  struct FirstFailure {
    const Entry* entry = nullptr;  // a root; its first hit is where the failure shows first
    int rank = LineOrigin::kNoRank;
    std::string host;  // empty when unknown
  };

  // Subsequent findings come from `file` (as the user named it; "-" is stdin).
  void BeginFile(const std::string& file);
  void EndFile(uint64_t lines, uint64_t truncated_lines);

  void OnFinding(const Finding& finding) override;

  // Entries by severity (worst first), then by where in the input they first appeared.
  std::vector<const Entry*> Sorted() const;
  // Root causes in the order of Sorted(), each with its consequences.
  std::vector<Group> Grouped() const;
  // The earliest root of error severity or worse in `groups`; nothing when there is none.
  std::optional<FirstFailure> FirstFailureOf(const std::vector<Group>& groups) const;
  bool HasFailure() const;
  // Lists the templates of `discovery` (which must outlive the report) after the findings.
  void ShowUnrecognised(const Discovery* discovery) { discovery_ = discovery; }
  bool HasUnrecognised() const { return discovery_ != nullptr && discovery_->size() > 0; }
  uint64_t lines() const { return lines_; }
  uint64_t truncated_lines() const { return truncated_lines_; }
  const std::vector<std::string>& files() const { return files_; }

  void PrintText(std::ostream& out) const;
  void PrintJson(std::ostream& out) const;

 private:
  // torchrun's summary entry [0], "Root Cause (first observed failure)", when a finding showed it.
  struct ObservedFirst {
    int rank = LineOrigin::kNoRank;
    std::string host;
  };

  void AddOrigin(Entry& e, const LineOrigin& origin);
  void PrintUnrecognisedText(std::ostream& out) const;

  std::vector<std::string> files_;
  uint64_t lines_ = 0;
  uint64_t truncated_lines_ = 0;
  std::map<uint32_t, Entry> entries_;  // by rule index
  std::map<int, std::string> host_of_rank_;
  std::optional<ObservedFirst> torchrun_first_;
  const Discovery* discovery_ = nullptr;
};

}  // namespace faultline

#endif  // FAULTLINE_CMD_SCAN_REPORT_H_
