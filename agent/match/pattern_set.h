// PatternSet: many RE2 patterns compiled once and matched against a LineBatch in one pass.
//
// Matching has two stages. A Vectorscan (Hyperscan API) database of every pattern scans the whole
// batch buffer at once and reports candidate (line, pattern) pairs; each candidate is then
// confirmed by the pattern's own RE2 on its line, so RE2 stays the semantics of record (and
// extracts captures where a caller wants them). A pattern Vectorscan rejects is retried in its
// approximate prefilter mode, and if that fails too it is matched by an RE2::Set over every line:
// slower, but never wrong. Compiled databases can be cached on disk between runs
// (database_cache.h), since compiling is the slow part of loading a large rule pack. Scanning cost therefore grows with the bytes of the batch and barely
// with the number of patterns, and lines with no candidate cost no RE2 work at all.
//
// Both engines run in byte mode (RE2 Latin-1): a log line is matched as bytes whatever its
// encoding, and both engines see exactly the same text.
//
// A PatternSet is immutable after Compile and may be shared by threads; each thread matches with
// its own MatchScratch. Compile fails only when a pattern is invalid RE2.
#ifndef FAULTLINE_MATCH_PATTERN_SET_H_
#define FAULTLINE_MATCH_PATTERN_SET_H_

#include <re2/re2.h>
#include <re2/set.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/framing/line_batch.h"
#include "agent/match/database_cache.h"

struct hs_database;
struct hs_scratch;

namespace faultline {

class PatternSet;

// Per-thread working memory for PatternSet::Match. Reused across batches so matching allocates
// only when a batch has more hits than any batch before it.
class MatchScratch {
 public:
  explicit MatchScratch(const PatternSet& set);
  ~MatchScratch();
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

 private:
  friend class PatternSet;
  hs_scratch* hs_scratch_ = nullptr;
  std::vector<uint32_t> last_line_plus_one_;  // per pattern: dedupes repeated reports on a line
  std::vector<int> set_matches_;              // RE2::Set results for the fallback patterns
};

class PatternSet {
 public:
  // A confirmed match of pattern `pattern` on line `line` of a batch.
  struct Hit {
    uint32_t line;
    uint32_t pattern;
    bool operator<(const Hit& o) const {
      return line != o.line ? line < o.line : pattern < o.pattern;
    }
    bool operator==(const Hit& o) const = default;
  };

  // `cache_dir`: where compiled databases are kept between runs (database_cache.h); empty for
  // none.
  static Result<std::unique_ptr<PatternSet>> Compile(const std::vector<std::string>& patterns,
                                                     const std::string& cache_dir = "");
  ~PatternSet();

  // Replaces `hits` with every confirmed match in `batch`, sorted by line then pattern; each pair
  // appears once however often the pattern matches on the line. Never throws.
  void Match(const LineBatch& batch, MatchScratch& scratch, std::vector<Hit>& hits) const;

  size_t size() const { return regexes_.size(); }
  const RE2& regex(uint32_t pattern) const { return *regexes_[pattern]; }
  // How many patterns the fast prefilter takes; the rest are matched line by line.
  size_t prefiltered() const { return regexes_.size() - fallback_ids_.size(); }
  // Whether the Vectorscan database was loaded from the cache instead of compiled.
  bool from_cache() const { return from_cache_; }

 private:
  PatternSet() = default;
  friend class MatchScratch;

  std::vector<std::unique_ptr<RE2>> regexes_;
  hs_database* database_ = nullptr;  // null when no pattern could be prefiltered
  bool from_cache_ = false;
  std::unique_ptr<RE2::Set> fallback_set_;
  std::vector<uint32_t> fallback_ids_;  // fallback_set_ index -> pattern id
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_PATTERN_SET_H_
