// TemplateMiner: groups masked lines (masker.h) into templates as they arrive, online, in the
// manner of Drain (He et al., ICWS 2017) with three changes measured on the Loghub samples
// (tests/tools/discover_eval.cc prints both side by side):
//
//   1. Search, as in Drain: lines are bucketed by token count, then by their first depth-2
//      tokens (a token holding a digit or a variable goes to the `<*>` branch; a node keeps at
//      most max_children branches, the rest share `<*>`); the leaf's templates are compared
//      with the line position by position.
//   2. Similarity knows what a variable looks like. Positions are equal, already variable in the
//      template, *soft* (both tokens variable-like: a digit or a masked part) or *hard* (a word
//      differs). Without hard positions a line joins a template when at least `similarity` of
//      the template's constant positions are equal (or nothing but variables differ); with hard
//      positions only when `word_similarity` of all positions are equal, so `VM Paused` and
//      `VM Resumed` stay apart while one user name in a long message becomes a variable.
//      Drain counts template variables as unequal, which keeps fully-masked lines apart.
//   3. Lengths may differ. A line that joins no template of its length is aligned (longest
//      common subsequence of constant tokens) with the templates of nearby lengths; it joins
//      one when every gap between aligned tokens holds a variable-like token, at most
//      flex_max_gap tokens and flex_max_gap_words words on each side, and the aligned tokens
//      are at least flex_similarity of the words of either. Each gap becomes one `<*>`, and the
//      template is matched by alignment from then on (`bytes sent` and `bytes (28.2 KB) sent`).
//
// A template's text is its tokens joined by single spaces; its id is a hash of that text
// (TemplateId), so the same template has the same id on every node and across restarts.
// A template's text, and so its id, changes when a new line turns a position into a variable.
//
// Bounded: at most max_templates templates; making one more evicts the least recently used and
// reuses its slot (AddResult says so). Lines are capped at kMaxTokens tokens. The alignment
// pass looks at no more than kMaxAlignCandidates templates, most recently used first, so the
// cost of a line that starts a new template is bounded whatever the log holds.
//
// Not thread-safe; one miner per agent, on its event loop. Nothing here fails.
#ifndef FAULTLINE_DISCOVER_TEMPLATE_MINER_H_
#define FAULTLINE_DISCOVER_TEMPLATE_MINER_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace faultline {

struct MinerOptions {
  std::size_t max_templates = 1000;
  int depth = 4;  // as Drain's: the length level plus depth-2 token levels
  std::size_t max_children = 100;
  double similarity = 0.5;
  double word_similarity = 0.85;
  double flex_similarity = 0.6;
  std::size_t flex_max_gap = 4;
  std::size_t flex_max_gap_words = 1;
  std::size_t flex_max_length_difference = 8;
};

// 12 hex digits of the 64-bit FNV-1a hash of `template_text`.
std::string TemplateId(std::string_view template_text);

class TemplateMiner {
 public:
  static constexpr std::size_t kMaxTokens = 64;
  static constexpr std::size_t kMaxAlignCandidates = 200;

  explicit TemplateMiner(MinerOptions options = {});
  ~TemplateMiner();
  TemplateMiner(const TemplateMiner&) = delete;
  TemplateMiner& operator=(const TemplateMiner&) = delete;

  struct AddResult {
    uint32_t slot = 0;     // where the template lives; stable until it is evicted
    bool created = false;  // a new template (in a fresh slot, or one freed by eviction)
    bool evicted = false;  // creating it evicted the template that held `slot` before
    bool changed = false;  // an existing template's text changed
  };
  // Adds one masked line (only its first kMaxTokens tokens count).
  AddResult Add(std::span<const std::string> tokens);

  std::span<const std::string> tokens(uint32_t slot) const { return clusters_[slot].tokens; }
  std::string Text(uint32_t slot) const;
  bool live(uint32_t slot) const { return slot < clusters_.size() && clusters_[slot].live; }
  std::size_t size() const { return lru_.size(); }
  uint64_t evictions() const { return evictions_; }
  // Bytes held by templates and the search tree, for memory figures.
  std::size_t ApproximateBytes() const;

 private:
  struct Node;
  struct Cluster {
    std::vector<std::string> tokens;
    bool live = false;
    bool flex = false;  // matched by alignment, no longer by position
    std::vector<uint32_t>* leaf = nullptr;
    std::list<uint32_t>::iterator lru;
  };

  std::vector<uint32_t>* Leaf(std::span<const std::string> tokens, bool create);
  // The best template of `leaf` that `tokens` joins by position; -1 when none.
  int64_t MatchByPosition(const std::vector<uint32_t>& leaf,
                          std::span<const std::string> tokens) const;
  // The best template `tokens` joins by alignment, with the merged tokens; -1 when none.
  int64_t MatchByAlignment(std::span<const std::string> tokens,
                           std::vector<std::string>& merged) const;
  uint32_t NewCluster(std::span<const std::string> tokens, AddResult& result);
  void Touch(uint32_t slot);

  const MinerOptions options_;
  std::unordered_map<std::size_t, std::unique_ptr<Node>> by_length_;
  std::vector<Cluster> clusters_;
  std::list<uint32_t> lru_;  // live slots, most recently used first
  uint64_t evictions_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_DISCOVER_TEMPLATE_MINER_H_
