// ScanReport: what `faultline scan` found, one entry per rule, and how it is printed.
//
// It is the FindingSink of a scan: each finding adds to its rule's entry (count of matching lines
// and the first hit at the highest severity seen, which is the one to read first). Rendering is
// for people (text) or machines (JSON, schema in README.md); every log byte that reaches either is
// sanitised to valid UTF-8 with control characters escaped. Not thread-safe.
#ifndef FAULTLINE_APP_SCAN_REPORT_H_
#define FAULTLINE_APP_SCAN_REPORT_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "agent/match/finding.h"

namespace faultline {

class ScanReport : public FindingSink {
 public:
  struct Entry {
    const Rule* rule = nullptr;
    Severity severity = Severity::kInfo;  // the highest effective severity of its hits
    uint64_t count = 0;                   // lines that raised it, at any severity
    std::string first_file;               // first hit at `severity`
    size_t first_file_index = 0;
    uint64_t first_line = 0;
    std::string first_text;
    std::vector<std::string> first_labels;
  };

  // Subsequent findings come from `file` (as the user named it; "-" is stdin).
  void BeginFile(const std::string& file);
  void EndFile(uint64_t lines, uint64_t truncated_lines);

  void OnFinding(const Finding& finding) override;

  // Entries by severity (worst first), then by where in the input they first appeared.
  std::vector<const Entry*> Sorted() const;
  bool HasFailure() const;
  uint64_t lines() const { return lines_; }
  uint64_t truncated_lines() const { return truncated_lines_; }
  const std::vector<std::string>& files() const { return files_; }

  void PrintText(std::ostream& out) const;
  void PrintJson(std::ostream& out) const;

 private:
  std::vector<std::string> files_;
  uint64_t lines_ = 0;
  uint64_t truncated_lines_ = 0;
  std::map<uint32_t, Entry> entries_;  // by rule index
};

}  // namespace faultline

#endif  // FAULTLINE_APP_SCAN_REPORT_H_
