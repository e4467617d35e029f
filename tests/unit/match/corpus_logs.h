// Where matcher tests find the shared corpus (../shared/corpus beside the source tree) and its
// logs: every *.log below it, sorted so that a test walks them in the same order on every machine.
#ifndef FAULTLINE_TESTS_UNIT_MATCH_CORPUS_LOGS_H_
#define FAULTLINE_TESTS_UNIT_MATCH_CORPUS_LOGS_H_

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace faultline {

inline std::filesystem::path CorpusDir() {
  return std::filesystem::path(FAULTLINE_SOURCE_DIR).parent_path() / "shared" / "corpus";
}

inline std::filesystem::path BundledRulesDir() {
  return std::filesystem::path(FAULTLINE_SOURCE_DIR) / "rules";
}

inline std::vector<std::filesystem::path> CorpusLogPaths() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CorpusDir())) {
    if (entry.is_regular_file() && entry.path().extension() == ".log") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace faultline

#endif  // FAULTLINE_TESTS_UNIT_MATCH_CORPUS_LOGS_H_
