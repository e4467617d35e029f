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
// Patterns a caller needs only near some lines (a rule's context conditions, read within a few
// lines of the rule's own hit) can be given a window (PatternSetOptions::windows). They are kept
// out of the everywhere database, in a few window tiers of their own, and matched only on the line
// ranges the caller asks for (MatchWindow): a context pattern then costs nothing on the lines far
// from any hit, which are nearly all of them. Which ranges cover a window is the caller's
// business (StreamMatcher: around its hits and the tail of every batch). A windowed pattern that
// Vectorscan cannot take goes to the RE2 fallback, which runs on every line.
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
  std::string padded_tail_;  // a range's last lines and padding (see ScanWithVectorscan)
  MatchErrors errors_;
};

struct PatternSetOptions {
  // Where compiled databases are kept between runs (database_cache.h); empty for none.
  std::string cache_dir;
  // Memory of the RE2::Set over the patterns Vectorscan cannot take (RE2::Options::max_mem).
  // A set that does not fit is not an error: its patterns are matched one by one (see Match).
  int64_t fallback_set_max_mem = RulePatternOptions().max_mem();
  // Per pattern (by index; missing entries are 0): 0 when the pattern is needed on every line,
  // else the most lines away from a line the caller names at which it is needed. Windowed
  // patterns go to the tier of the smallest bound in kWindowTierBounds that holds their window;
  // a window wider than all of them is matched on every line.
  std::vector<uint32_t> windows;
};

class PatternSet {
 public:
  // Upper bounds of the window tiers, in lines. Each tier is one more Vectorscan database: a few
  // tiers keep a context pattern with a window of 3 from being scanned over a 500-line window.
  static constexpr uint32_t kWindowTierBounds[] = {8, 32, 128, 512};
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

  // Window tiers that hold patterns, and the widest window of the patterns in tier `tier`.
  size_t window_tiers() const { return window_databases_.size(); }
  uint32_t window_width(size_t tier) const { return window_databases_[tier].width; }
  // Appends, unsorted, every confirmed match of window tier `tier`'s patterns on lines
  // [first_line, end_line) of `batch`, each (line, pattern) pair once. Engine errors are counted
  // in `scratch` and the range matched by RE2 (see the top). Never throws.
  void MatchWindow(const LineBatch& batch, size_t tier, size_t first_line, size_t end_line,
                   MatchScratch& scratch, std::vector<Hit>& hits) const;

  size_t size() const { return regexes_.size(); }
  const RE2& regex(uint32_t pattern) const { return *regexes_[pattern]; }
  // How many patterns the fast prefilter takes; the rest are matched line by line.
  size_t prefiltered() const { return regexes_.size() - fallback_ids_.size(); }
  // Whether every Vectorscan database was loaded from the cache instead of compiled.
  bool from_cache() const { return from_cache_; }

 private:
  PatternSet() = default;
  friend class MatchScratch;

  // Allocates (or grows) the scratch's Vectorscan scratch for every database; false when that
  // failed, leaving none.
  bool AllocateScratch(MatchScratch& scratch) const;
  // One Vectorscan database and the patterns it holds: its report ids index `ids`.
  struct Database {
    hs_database* database = nullptr;
    std::vector<uint32_t> ids;  // database report id -> pattern id
    uint32_t width = 0;         // for a window tier: the widest window of its patterns
  };

  // Compiles (or loads from `cache`) a database of `ids`; patterns it cannot take are appended to
  // `fallback`. Returns whether it came from the cache.
  bool BuildDatabase(const std::vector<std::string>& patterns, const DatabaseCache& cache,
                     Database& database, std::vector<uint32_t>& fallback);
  // Appends the confirmed matches of `database` on lines [first_line, end_line) of the batch,
  // falling back to RE2 on an engine error.
  void ScanDatabase(const Database& database, const LineBatch& batch, size_t first_line,
                    size_t end_line, MatchScratch& scratch, std::vector<Hit>& hits) const;
  // Runs `database` over the lines and confirms its candidates; false on an engine error, with
  // the hits it appended then unusable.
  bool ScanWithVectorscan(const Database& database, const LineBatch& batch, size_t first_line,
                          size_t end_line, MatchScratch& scratch, std::vector<Hit>& hits) const;
  void MatchFallbackSet(const LineBatch& batch, MatchScratch& scratch,
                        std::vector<Hit>& hits) const;
  // Appends a hit for each line in [first_line, end_line) of `batch` and each of `ids` whose own
  // RE2 matches it.
  void MatchEach(const LineBatch& batch, size_t first_line, size_t end_line,
                 const std::vector<uint32_t>& ids, std::vector<Hit>& hits) const;

  std::vector<std::unique_ptr<RE2>> regexes_;
  Database everywhere_;  // the patterns matched on every line; null database when none
  std::vector<Database> window_databases_;  // the window tiers that hold patterns, narrowest first
  bool from_cache_ = false;
  std::unique_ptr<RE2::Set> fallback_set_;  // null when it did not fit its memory
  std::vector<uint32_t> fallback_ids_;      // fallback_set_ index -> pattern id
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_PATTERN_SET_H_
