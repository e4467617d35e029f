#include "agent/discover/template_miner.h"

#include <algorithm>
#include <cstdio>

#include "agent/discover/masker.h"

namespace faultline {

struct TemplateMiner::Node {
  std::unordered_map<std::string, std::unique_ptr<Node>> children;
  std::vector<uint32_t> clusters;  // at the last level only
};

namespace {

bool IsVar(const std::string& token) { return token == kVariable; }

std::size_t Words(std::span<const std::string> tokens) {
  return static_cast<std::size_t>(std::count_if(
      tokens.begin(), tokens.end(), [](const std::string& t) { return !IsVariableLike(t); }));
}

}  // namespace

std::string TemplateId(std::string_view template_text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : template_text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(out, 12);
}

TemplateMiner::TemplateMiner(MinerOptions options) : options_(options) {}
TemplateMiner::~TemplateMiner() = default;

std::string TemplateMiner::Text(uint32_t slot) const {
  std::string text;
  for (const std::string& token : clusters_[slot].tokens) {
    if (!text.empty()) text.push_back(' ');
    text.append(token);
  }
  return text;
}

std::vector<uint32_t>* TemplateMiner::Leaf(std::span<const std::string> tokens, bool create) {
  auto found = by_length_.find(tokens.size());
  if (found == by_length_.end()) {
    if (!create) return nullptr;
    found = by_length_.emplace(tokens.size(), std::make_unique<Node>()).first;
  }
  Node* node = found->second.get();
  const std::size_t levels =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(options_.depth - 2, 0)), tokens.size());
  const std::string variable(kVariable);
  for (std::size_t i = 0; i < levels; ++i) {
    const std::string& key = IsVariableLike(tokens[i]) ? variable : tokens[i];
    auto child = node->children.find(key);
    if (child == node->children.end()) {
      // A full node sends every other token to its `<*>` branch.
      const bool full = node->children.size() >= options_.max_children;
      if (full) child = node->children.find(variable);
      if (child == node->children.end()) {
        if (!create) return nullptr;
        child = node->children.emplace(full ? variable : key, std::make_unique<Node>()).first;
      }
    }
    node = child->second.get();
  }
  return &node->clusters;
}

int64_t TemplateMiner::MatchByPosition(const std::vector<uint32_t>& leaf,
                                       std::span<const std::string> tokens) const {
  int64_t best = -1;
  double best_score = -1;
  const double n = static_cast<double>(tokens.size());
  for (uint32_t slot : leaf) {
    const Cluster& c = clusters_[slot];
    if (c.flex) continue;
    std::size_t equal = 0, variable = 0, soft = 0, hard = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::string& t = c.tokens[i];
      if (t == tokens[i]) {
        ++equal;
      } else if (IsVar(t)) {
        ++variable;
      } else if (IsVariableLike(t) && IsVariableLike(tokens[i])) {
        ++soft;
      } else {
        ++hard;
      }
    }
    bool joins = false;
    double score = 0;
    if (hard == 0) {
      const std::size_t constants = tokens.size() - variable;
      joins = soft == 0 || static_cast<double>(equal) >=
                               options_.similarity * static_cast<double>(std::max<std::size_t>(constants, 1));
      score = n == 0 ? 1.0 : static_cast<double>(equal + variable) / n;
    } else {
      score = static_cast<double>(equal) / n;
      joins = score >= options_.word_similarity;
    }
    if (joins && score > best_score) {
      best = slot;
      best_score = score;
    }
  }
  return best;
}

namespace {

// Aligns `tmpl` with `line` by their longest common subsequence of equal constant tokens.
// Returns the number of aligned tokens, or -1 when a gap breaks the rules of the header; fills
// `merged` with the aligned tokens and one `<*>` per gap.
int64_t Align(std::span<const std::string> tmpl, std::span<const std::string> line,
              const MinerOptions& options, std::vector<uint16_t>& table,
              std::vector<std::string>& merged) {
  const std::size_t n = tmpl.size();
  const std::size_t m = line.size();
  const std::size_t width = m + 1;
  table.assign((n + 1) * width, 0);
  auto at = [&](std::size_t i, std::size_t j) -> uint16_t& { return table[i * width + j]; };
  auto same = [&](std::size_t i, std::size_t j) { return tmpl[i] == line[j] && !IsVar(tmpl[i]); };
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      at(i, j) = same(i, j) ? static_cast<uint16_t>(at(i + 1, j + 1) + 1)
                            : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  merged.clear();
  int64_t anchors = 0;
  std::size_t gap_tmpl = 0, gap_line = 0, words_tmpl = 0, words_line = 0;
  bool gap_variable = false;
  bool ok = true;
  auto close_gap = [&]() {
    if (gap_tmpl == 0 && gap_line == 0) return;
    if (!gap_variable || gap_tmpl > options.flex_max_gap || gap_line > options.flex_max_gap ||
        words_tmpl > options.flex_max_gap_words || words_line > options.flex_max_gap_words) {
      ok = false;
    }
    merged.emplace_back(kVariable);
    gap_tmpl = gap_line = words_tmpl = words_line = 0;
    gap_variable = false;
  };
  auto skip = [&](const std::string& token, std::size_t& count, std::size_t& words) {
    ++count;
    if (IsVariableLike(token)) {
      gap_variable = true;
    } else {
      ++words;
    }
  };
  std::size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (same(i, j)) {
      close_gap();
      merged.push_back(tmpl[i]);
      ++anchors;
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      skip(tmpl[i++], gap_tmpl, words_tmpl);
    } else {
      skip(line[j++], gap_line, words_line);
    }
  }
  while (i < n) skip(tmpl[i++], gap_tmpl, words_tmpl);
  while (j < m) skip(line[j++], gap_line, words_line);
  close_gap();
  return ok ? anchors : -1;
}

}  // namespace

int64_t TemplateMiner::MatchByAlignment(std::span<const std::string> tokens,
                                        std::vector<std::string>& merged) const {
  int64_t best = -1;
  double best_score = -1;
  std::vector<uint16_t> table;
  std::vector<std::string> candidate;
  const std::size_t line_words = Words(tokens);
  std::size_t looked = 0;
  for (uint32_t slot : lru_) {
    if (looked >= kMaxAlignCandidates) break;
    const Cluster& c = clusters_[slot];
    const std::size_t length = c.tokens.size();
    const std::size_t difference =
        length > tokens.size() ? length - tokens.size() : tokens.size() - length;
    if (difference > options_.flex_max_length_difference) continue;
    if (length == tokens.size() && !c.flex) continue;  // the search by position has seen it
    ++looked;
    const int64_t anchors = Align(c.tokens, tokens, options_, table, candidate);
    if (anchors < 0) continue;
    const double score = static_cast<double>(anchors) /
                         static_cast<double>(std::max<std::size_t>(
                             std::max(Words(c.tokens), line_words), 1));
    if (score >= options_.flex_similarity && score > best_score) {
      best = slot;
      best_score = score;
      merged.swap(candidate);
    }
  }
  return best;
}

void TemplateMiner::Touch(uint32_t slot) {
  lru_.splice(lru_.begin(), lru_, clusters_[slot].lru);
}

uint32_t TemplateMiner::NewCluster(std::span<const std::string> tokens, AddResult& result) {
  uint32_t slot;
  if (lru_.size() >= options_.max_templates && !lru_.empty()) {
    slot = lru_.back();
    lru_.pop_back();
    Cluster& old = clusters_[slot];
    if (old.leaf != nullptr) std::erase(*old.leaf, slot);
    old = Cluster{};
    ++evictions_;
    result.evicted = true;
  } else {
    slot = static_cast<uint32_t>(clusters_.size());
    clusters_.emplace_back();
  }
  Cluster& c = clusters_[slot];
  c.tokens.assign(tokens.begin(), tokens.end());
  c.live = true;
  c.leaf = Leaf(tokens, /*create=*/true);
  c.leaf->push_back(slot);
  lru_.push_front(slot);
  c.lru = lru_.begin();
  result.created = true;
  return slot;
}

TemplateMiner::AddResult TemplateMiner::Add(std::span<const std::string> all_tokens) {
  const std::span<const std::string> tokens =
      all_tokens.subspan(0, std::min(all_tokens.size(), kMaxTokens));
  AddResult result;
  if (const std::vector<uint32_t>* leaf = Leaf(tokens, /*create=*/false)) {
    if (const int64_t slot = MatchByPosition(*leaf, tokens); slot >= 0) {
      Cluster& c = clusters_[slot];
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (c.tokens[i] != tokens[i] && !IsVar(c.tokens[i])) {
          c.tokens[i] = std::string(kVariable);
          result.changed = true;
        }
      }
      result.slot = static_cast<uint32_t>(slot);
      Touch(result.slot);
      return result;
    }
  }
  std::vector<std::string> merged;
  if (const int64_t slot = MatchByAlignment(tokens, merged); slot >= 0) {
    Cluster& c = clusters_[slot];
    c.flex = true;
    if (merged != c.tokens) {
      c.tokens.swap(merged);
      result.changed = true;
    }
    result.slot = static_cast<uint32_t>(slot);
    Touch(result.slot);
    return result;
  }
  result.slot = NewCluster(tokens, result);
  return result;
}

std::size_t TemplateMiner::ApproximateBytes() const {
  std::size_t bytes = clusters_.capacity() * sizeof(Cluster);
  for (const Cluster& c : clusters_) {
    bytes += c.tokens.capacity() * sizeof(std::string);
    for (const std::string& t : c.tokens) {
      if (t.capacity() > 15) bytes += t.capacity() + 1;  // beyond the small-string buffer
    }
  }
  bytes += lru_.size() * (sizeof(uint32_t) + 2 * sizeof(void*));
  // The tree: one node per distinct (length, prefix) path; counted by walking it.
  std::vector<const Node*> stack;
  for (const auto& [length, node] : by_length_) stack.push_back(node.get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    bytes += sizeof(Node) + node->clusters.capacity() * sizeof(uint32_t);
    for (const auto& [key, child] : node->children) {
      bytes += key.capacity() + sizeof(void*) * 4;
      stack.push_back(child.get());
    }
  }
  return bytes;
}

}  // namespace faultline
