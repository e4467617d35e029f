// PatternSet: many RE2 patterns compiled once and matched against a LineBatch in one pass.
//
// Matching has two stages. A Vectorscan (Hyperscan API) database of every pattern scans the whole
// batch buffer at once and reports candidate (line, pattern) pairs; each candidate is then
// confirmed by the pattern's own RE2 on its line, so RE2 stays the semantics of record (and
// extracts captures where a caller wants them). A pattern Vectorscan rejects is retried in its
// approximate prefilter mode, and if that fails too it is matched by an RE2::Set over every line:
// slower, but never wrong. Compiled databases can be cached on disk between runs
// (database_cache.h), since compiling is the slow part of loading a large rule pack. Scanning
// cost therefore grows with the bytes of the batch and barely with the number of patterns, and
// lines with no candidate cost no RE2 work at all.
//
// Matching never fails silently. When Vectorscan cannot scan a batch (no scratch memory, an
// hs_scan error, a database that reports patterns this set does not have), every prefiltered
// pattern is run by its own RE2 on every line of that batch; when the RE2::Set fails on a line
// (its DFA out of memory) or could not be built within its memory at all, every fallback pattern
// is run by its own RE2 on that line. Either way nothing is missed, only slower, and the
// MatchScratch counts the engine error (errors()) so the agent can export it. (RE2 2022-06's
// Set reserves room for 20 DFA states when it compiles and resets its cache rather than fail,
// so with it the error shows as a set that does not compile; the check at match time is kept
// for the RE2 versions that can fail there.)
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
#include "agent/match/match_errors.h"
#include "agent/rules/pattern_syntax.h"

struct hs_database;
struct hs_scratch;

namespace faultline {

class PatternSet;

// Per-thread working memory for PatternSet::Match, and the count of engine errors it met. Reused
// across batches so matching allocates only when a batch has more hits than any batch before it.
// Made for one PatternSet; used with another, its Vectorscan scratch may not fit, which Match
// handles as an engine error.
class MatchScratch {
 public:
  explicit MatchScratch(const PatternSet& set);
  ~MatchScratch();
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  // Engine errors Match met with this scratch (see match_errors.h).
  const MatchErrors& errors() const { return errors_; }

 private:
  friend class PatternSet;
  // Null when allocation failed; Match tries again on the next batch.
  hs_scratch* hs_scratch_ = nullptr;
  std::vector<uint32_t> last_line_plus_one_;  // per pattern: dedupes repeated reports on a line
  std::vector<int> set_matches_;              // RE2::Set results for the fallback patterns
  MatchErrors errors_;
};

struct PatternSetOptions {
  // Where compiled databases are kept between runs (database_cache.h); empty for none.
  std::string cache_dir;
  // Memory of the RE2::Set over the patterns Vectorscan cannot take (RE2::Options::max_mem).
  // A set that does not fit is not an error: its patterns are matched one by one (see Match).
  int64_t fallback_set_max_mem = RulePatternOptions().max_mem();
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

  static Result<std::unique_ptr<PatternSet>> Compile(const std::vector<std::string>& patterns,
                                                     const PatternSetOptions& options);
  // `cache_dir`: see PatternSetOptions.
  static Result<std::unique_ptr<PatternSet>> Compile(const std::vector<std::string>& patterns,
                                                     const std::string& cache_dir = "");
  ~PatternSet();

  // Replaces `hits` with every confirmed match in `batch`, sorted by line then pattern; each pair
  // appears once however often the pattern matches on the line. Engine errors are counted in
  // `scratch` and their lines matched by RE2 (see the top). Never throws.
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

  // Runs the Vectorscan database over the batch and confirms its candidates; false on an engine
  // error, with `hits` then holding nothing usable.
  bool ScanPrefiltered(const LineBatch& batch, MatchScratch& scratch, std::vector<Hit>& hits) const;
  void MatchFallbackSet(const LineBatch& batch, MatchScratch& scratch,
                        std::vector<Hit>& hits) const;
  // Appends a hit for each line in [first_line, end_line) of `batch` and each of `ids` whose own
  // RE2 matches it.
  void MatchEach(const LineBatch& batch, size_t first_line, size_t end_line,
                 const std::vector<uint32_t>& ids, std::vector<Hit>& hits) const;

  std::vector<std::unique_ptr<RE2>> regexes_;
  hs_database* database_ = nullptr;  // null when no pattern could be prefiltered
  bool from_cache_ = false;
  std::unique_ptr<RE2::Set> fallback_set_;  // null when it did not fit its memory
  std::vector<uint32_t> fallback_ids_;      // fallback_set_ index -> pattern id
  std::vector<uint32_t> prefiltered_ids_;   // the patterns in database_
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_PATTERN_SET_H_
