// DrainReference: Drain (He et al., ICWS 2017) as published in logpai/logparser (Drain/Drain.py
// and the per-dataset settings of Drain/benchmark.py), re-implemented step for step so that
// discover_eval can compare the template miner with it in the same run, on the same files.
//
// Faithful to the original, including what it does with lines shorter than the tree depth (they
// are never added to the tree, so each starts a template of its own) and to the evaluation, which
// groups lines by their final template text. Test-side only; not part of the agent.
#ifndef FAULTLINE_TESTS_TOOLS_DRAIN_REFERENCE_H_
#define FAULTLINE_TESTS_TOOLS_DRAIN_REFERENCE_H_

#include <re2/re2.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

struct DrainSettings {
  std::vector<std::string> regex;  // preprocessing: each match becomes <*>
  double st = 0.4;
  int depth = 4;
};

// The settings benchmark.py gives each Loghub dataset; nothing for an unknown name.
const DrainSettings* PublishedDrainSettings(std::string_view dataset);

class DrainReference {
 public:
  explicit DrainReference(const DrainSettings& settings);
  ~DrainReference();
  // Parses one message; returns its cluster's index.
  size_t Add(std::string_view content);
  // The final template text of cluster `index`.
  std::string Template(size_t index) const;

 private:
  struct Node;
  struct Cluster {
    std::vector<std::string> tokens;
  };
  Cluster* Search(const std::vector<std::string>& seq);
  void Insert(Cluster* cluster);

  std::vector<std::unique_ptr<RE2>> regex_;
  const double st_;
  const int depth_;  // Drain.py's self.depth: the depth setting minus 2
  const size_t max_child_ = 100;
  std::unique_ptr<Node> root_;
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::map<const Cluster*, size_t> index_;
};

}  // namespace faultline

#endif  // FAULTLINE_TESTS_TOOLS_DRAIN_REFERENCE_H_
