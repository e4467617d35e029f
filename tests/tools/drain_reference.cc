#include "tests/tools/drain_reference.h"

#include <map>
#include <sstream>

namespace faultline {

struct DrainReference::Node {
  std::map<std::string, std::unique_ptr<Node>> children;  // an inner node
  std::vector<Cluster*> clusters;                          // a leaf
  bool leaf = false;
};

const DrainSettings* PublishedDrainSettings(std::string_view dataset) {
  static const std::map<std::string, DrainSettings, std::less<>> kSettings = {
      {"HDFS", {{R"(blk_-?\d+)", R"((\d+\.){3}\d+(:\d+)?)"}, 0.5, 4}},
      {"Hadoop", {{R"((\d+\.){3}\d+)"}, 0.5, 4}},
      {"Spark", {{R"((\d+\.){3}\d+)", R"(\b[KGTM]?B\b)", R"(([\w-]+\.){2,}[\w-]+)"}, 0.5, 4}},
      {"Zookeeper", {{R"((/|)(\d+\.){3}\d+(:\d+)?)"}, 0.5, 4}},
      {"BGL", {{R"(core\.\d+)"}, 0.5, 4}},
      {"HPC", {{R"(=\d+)"}, 0.5, 4}},
      {"Thunderbird", {{R"((\d+\.){3}\d+)"}, 0.5, 4}},
      {"Windows", {{R"(0x.*?\s)"}, 0.7, 5}},
      {"Linux", {{R"((\d+\.){3}\d+)", R"(\d{2}:\d{2}:\d{2})"}, 0.39, 6}},
      {"Android",
       {{R"((/[\w-]+)+)", R"(([\w-]+\.){2,}[\w-]+)",
         R"(\b(\-?\+?\d+)\b|\b0[Xx][a-fA-F\d]+\b|\b[a-fA-F\d]{4,}\b)"},
        0.2,
        6}},
      {"HealthApp", {{}, 0.2, 4}},
      {"Apache", {{R"((\d+\.){3}\d+)"}, 0.5, 4}},
      {"Proxifier",
       {{R"(<\d+\ssec)", R"(([\w-]+\.)+[\w-]+(:\d+)?)", R"(\d{2}:\d{2}(:\d{2})*)", R"([KGTM]B)"},
        0.6,
        3}},
      {"OpenSSH", {{R"((\d+\.){3}\d+)", R"(([\w-]+\.){2,}[\w-]+)"}, 0.6, 5}},
      {"OpenStack", {{R"(((\d+\.){3}\d+,?)+)", R"(/.+?\s)", R"(\d+)"}, 0.5, 5}},
      {"Mac", {{R"(([\w-]+\.){2,}[\w-]+)"}, 0.7, 6}},
  };
  const auto it = kSettings.find(dataset);
  return it == kSettings.end() ? nullptr : &it->second;
}

namespace {

bool HasNumbers(const std::string& s) {
  for (char c : s) {
    if (c >= '0' && c <= '9') return true;
  }
  return false;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string token;
  while (in >> token) out.push_back(token);
  return out;
}

}  // namespace

DrainReference::DrainReference(const DrainSettings& settings)
    : st_(settings.st), depth_(settings.depth - 2), root_(std::make_unique<Node>()) {
  for (const std::string& r : settings.regex) regex_.push_back(std::make_unique<RE2>(r));
}

DrainReference::~DrainReference() = default;

// treeSearch + fastMatch.
DrainReference::Cluster* DrainReference::Search(const std::vector<std::string>& seq) {
  const std::string length = std::to_string(seq.size());
  auto first = root_->children.find(length);
  if (first == root_->children.end()) return nullptr;
  Node* parent = first->second.get();
  int current_depth = 1;
  for (const std::string& token : seq) {
    if (current_depth >= depth_ || current_depth > static_cast<int>(seq.size())) break;
    auto child = parent->children.find(token);
    if (child == parent->children.end()) child = parent->children.find("<*>");
    if (child == parent->children.end()) return nullptr;
    parent = child->second.get();
    ++current_depth;
  }
  if (!parent->leaf) return nullptr;  // Drain.py iterates an empty dict here
  Cluster* best = nullptr;
  double best_sim = -1;
  int best_params = -1;
  for (Cluster* c : parent->clusters) {
    int same = 0;
    int params = 0;
    for (size_t i = 0; i < seq.size(); ++i) {
      if (c->tokens[i] == "<*>") {
        ++params;
      } else if (c->tokens[i] == seq[i]) {
        ++same;
      }
    }
    const double sim = static_cast<double>(same) / static_cast<double>(seq.size());
    if (sim > best_sim || (sim == best_sim && params > best_params)) {
      best_sim = sim;
      best_params = params;
      best = c;
    }
  }
  return best_sim >= st_ ? best : nullptr;
}

// addSeqToPrefixTree.
void DrainReference::Insert(Cluster* cluster) {
  const size_t length = cluster->tokens.size();
  auto& first = root_->children[std::to_string(length)];
  if (!first) first = std::make_unique<Node>();
  Node* parent = first.get();
  int current_depth = 1;
  for (const std::string& token : cluster->tokens) {
    if (current_depth >= depth_ || current_depth > static_cast<int>(length)) {
      parent->leaf = true;
      parent->clusters.push_back(cluster);
      break;
    }
    auto& children = parent->children;
    if (children.find(token) == children.end()) {
      auto add = [&](const std::string& key) {
        auto& node = children[key];
        node = std::make_unique<Node>();
        parent = node.get();
      };
      if (!HasNumbers(token)) {
        if (children.contains("<*>")) {
          if (children.size() < max_child_) {
            add(token);
          } else {
            parent = children["<*>"].get();
          }
        } else if (children.size() + 1 < max_child_) {
          add(token);
        } else if (children.size() + 1 == max_child_) {
          add("<*>");
        } else {
          parent = children["<*>"].get();
        }
      } else if (!children.contains("<*>")) {
        add("<*>");
      } else {
        parent = children["<*>"].get();
      }
    } else {
      parent = children[token].get();
    }
    ++current_depth;
  }
}

size_t DrainReference::Add(std::string_view content) {
  std::string line(content);
  for (const auto& re : regex_) RE2::GlobalReplace(&line, *re, "<*>");
  const std::vector<std::string> seq = Split(line);
  Cluster* match = Search(seq);
  if (match == nullptr) {
    clusters_.push_back(std::make_unique<Cluster>(Cluster{seq}));
    match = clusters_.back().get();
    index_[match] = clusters_.size() - 1;
    Insert(match);
  } else {
    for (size_t i = 0; i < seq.size(); ++i) {
      if (match->tokens[i] != seq[i]) match->tokens[i] = "<*>";
    }
  }
  return index_.at(match);
}

std::string DrainReference::Template(size_t index) const {
  std::string out;
  for (const std::string& t : clusters_[index]->tokens) {
    if (!out.empty()) out.push_back(' ');
    out += t;
  }
  return out;
}

}  // namespace faultline
