#include "agent/match/pattern_set.h"

#include <hs/hs.h>

#include <algorithm>
#include <iterator>

#include "agent/match/line_local_expression.h"
#include "agent/rules/pattern_syntax.h"

namespace faultline {
namespace {

// Exact mode first; patterns Vectorscan cannot take exactly (some RE2 constructs) are retried in
// prefilter mode, which may report extra candidates. Both are confirmed by RE2 anyway.
constexpr unsigned kExactFlags = HS_FLAG_MULTILINE;
constexpr unsigned kPrefilterFlags = HS_FLAG_MULTILINE | HS_FLAG_PREFILTER;

struct ScanState {
  const LineBatch* batch;
  std::vector<PatternSet::Hit>* hits;
  uint32_t* last_line_plus_one;
  const uint32_t* ids;  // report id -> pattern id
  size_t id_count;
  size_t base;           // batch offset of the first scanned byte
  size_t limit;          // reports ending past this many scanned bytes are padding's: dropped
  size_t line;           // line of the previous report; reports come in increasing end offset
  bool foreign = false;  // the database reported a pattern this set does not have
};

// Vectorscan 5.4.9 (Debian 12) misses literal matches that end within the last few dozen bytes
// of a scanned buffer, depending on the buffer's address (3 of 64 alignments for a 152-byte
// buffer, 8 literals; tests/unit/match/pattern_set_test.cc reproduces it). A scan therefore never
// ends at the bytes it has to report on: it runs kScanPadding bytes past them, into the next lines
// or into '\n' padding, and what ends there is dropped.
constexpr size_t kScanPadding = 64;
// The last lines of a range (from the line holding this many bytes before its end) are scanned
// from a padded copy; the lines before them are scanned in place, running into those last lines.
constexpr size_t kPaddedTailBytes = 256;
// A last line longer than this (up to max_line_bytes) is not copied: the whole range is scanned
// in place, and then its last this many bytes from a padded copy. Only a match longer than that,
// ending in the line's last kScanPadding bytes, can still be missed.
constexpr size_t kMaxPaddedTailBytes = 4096;

// Vectorscan flags for a pattern of each mode; recorded in cache entries and checked on load.
uint32_t FlagsFor(PatternMode mode) {
  switch (mode) {
    case PatternMode::kExact:
      return kExactFlags;
    case PatternMode::kPrefilter:
      return kPrefilterFlags;
    case PatternMode::kFallback:
      return 0;
  }
  return 0;
}

int OnCandidate(unsigned int id, unsigned long long /*from*/, unsigned long long to,
                unsigned int /*flags*/, void* context) {
  auto* state = static_cast<ScanState*>(context);
  if (id >= state->id_count) {
    // Not this set's database (a cache entry gone wrong): nothing it reports can be trusted.
    state->foreign = true;
    return 1;  // stop scanning
  }
  if (to > state->limit) return 0;
  const LineBatch& batch = *state->batch;
  const size_t last_byte = state->base + (to == 0 ? 0 : static_cast<size_t>(to - 1));
  if (last_byte > batch.line_end(state->line) || last_byte < batch.line_begin(state->line)) {
    state->line = batch.LineAt(last_byte);
  }
  const auto line = static_cast<uint32_t>(state->line);
  const uint32_t pattern = state->ids[id];
  if (state->last_line_plus_one[pattern] != line + 1) {
    state->last_line_plus_one[pattern] = line + 1;
    state->hits->push_back(PatternSet::Hit{line, pattern});
  }
  return 0;
}

}  // namespace

namespace {

// Compiles the patterns Vectorscan can take, deciding each pattern's mode: exact first, then
// prefilter mode for patterns it cannot take exactly, then RE2 only. Returns null when no
// pattern is left for Vectorscan.
// Vectorscan scans a whole batch, where \A, \z and a ^ or $ with multi-line mode switched off
// mean the batch's ends, not the line's; RE2 sees one line. Such patterns go to the RE2 fallback.
bool AnchoredToText(const std::string& pattern) {
  if (pattern.find("\\A") != std::string::npos || pattern.find("\\z") != std::string::npos) {
    return true;
  }
  // A flag group that clears multi-line mode: (?-m), (?i-m:...), (?s-im) ...
  for (size_t at = pattern.find("(?"); at != std::string::npos; at = pattern.find("(?", at + 2)) {
    bool clearing = false;
    for (size_t i = at + 2; i < pattern.size() && pattern[i] != ')' && pattern[i] != ':'; ++i) {
      if (pattern[i] == '-') clearing = true;
      if (pattern[i] == 'm' && clearing) return true;
      if (std::string_view("imsU-").find(pattern[i]) == std::string_view::npos) break;
    }
  }
  return false;
}

hs_database_t* CompileDatabase(const std::vector<std::string>& patterns,
                               std::vector<PatternMode>& modes) {
  modes.assign(patterns.size(), PatternMode::kExact);
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (AnchoredToText(patterns[i])) modes[i] = PatternMode::kFallback;
  }
  while (true) {
    std::vector<const char*> expressions;
    std::vector<unsigned> ids;
    std::vector<unsigned> flags;
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (modes[i] == PatternMode::kFallback) continue;
      expressions.push_back(patterns[i].c_str());
      ids.push_back(static_cast<unsigned>(i));
      flags.push_back(modes[i] == PatternMode::kExact ? kExactFlags : kPrefilterFlags);
    }
    if (expressions.empty()) return nullptr;
    hs_database_t* database = nullptr;
    hs_compile_error_t* compile_error = nullptr;
    const hs_error_t rc = hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                                           static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK,
                                           nullptr, &database, &compile_error);
    if (rc == HS_SUCCESS) return database;
    const int failed = compile_error != nullptr ? compile_error->expression : -1;
    hs_free_compile_error(compile_error);
    if (failed < 0) {
      // Not one pattern's fault (e.g. the database is too large): match everything with RE2.
      std::fill(modes.begin(), modes.end(), PatternMode::kFallback);
      return nullptr;
    }
    PatternMode& mode = modes[ids[failed]];
    mode = mode == PatternMode::kExact ? PatternMode::kPrefilter : PatternMode::kFallback;
  }
}

// Whether a cache entry is one this build would have compiled, and can run here.
bool UsableFromCache(const CompiledPatterns& compiled) {
  for (size_t i = 0; i < compiled.modes.size(); ++i) {
    if (compiled.flags[i] != FlagsFor(compiled.modes[i])) return false;
  }
  if (compiled.database == nullptr) return true;
  // A database this library cannot run (another CPU, for a cache on a shared disk) would only
  // fail at every scan: check it can get scratch, else compile afresh.
  hs_scratch_t* probe = nullptr;
  const bool runs = hs_alloc_scratch(compiled.database, &probe) == HS_SUCCESS;
  hs_free_scratch(probe);
  return runs;
}

}  // namespace

Result<std::unique_ptr<PatternSet>> PatternSet::Compile(const std::vector<std::string>& patterns,
                                                        const std::string& cache_dir) {
  PatternSetOptions options;
  options.cache_dir = cache_dir;
  return Compile(patterns, options);
}

Result<std::unique_ptr<PatternSet>> PatternSet::Compile(const std::vector<std::string>& patterns,
                                                        const PatternSetOptions& options) {
  std::unique_ptr<PatternSet> set(new PatternSet());
  ErrorList errors;
  for (size_t i = 0; i < patterns.size(); ++i) {
    auto re = std::make_unique<RE2>(patterns[i], RulePatternOptions());
    if (!re->ok()) {
      errors.push_back(Error{"", 0, "", "",
                             "invalid pattern '" + patterns[i] + "': " + re->error() + " (at '" +
                                 re->error_arg() + "')"});
    }
    set->regexes_.push_back(std::move(re));
  }
  if (!errors.empty()) return errors;

  // Which database each pattern goes to: everywhere, or the narrowest window tier that holds it.
  constexpr size_t kTiers = std::size(kWindowTierBounds);
  std::vector<uint32_t> everywhere_ids;
  std::vector<Database> tiers(kTiers);
  for (size_t i = 0; i < patterns.size(); ++i) {
    const uint32_t window = i < options.windows.size() ? options.windows[i] : 0;
    size_t tier = 0;
    while (tier < kTiers && window > kWindowTierBounds[tier]) ++tier;
    if (window == 0 || tier == kTiers) {
      set->everywhere_.ids.push_back(static_cast<uint32_t>(i));
    } else {
      tiers[tier].ids.push_back(static_cast<uint32_t>(i));
      tiers[tier].width = std::max(tiers[tier].width, window);
    }
  }

  const DatabaseCache cache(options.cache_dir);
  std::vector<uint32_t> fallback_ids;
  set->from_cache_ = set->BuildDatabase(patterns, cache, set->everywhere_, fallback_ids);
  for (Database& tier : tiers) {
    if (tier.ids.empty()) continue;
    set->from_cache_ = set->BuildDatabase(patterns, cache, tier, fallback_ids) && set->from_cache_;
    if (tier.database != nullptr) set->window_databases_.push_back(std::move(tier));
  }
  std::sort(fallback_ids.begin(), fallback_ids.end());

  RE2::Options set_options = RulePatternOptions();
  set_options.set_max_mem(options.fallback_set_max_mem);
  RE2::Set fallback(set_options, RE2::UNANCHORED);
  for (uint32_t i : fallback_ids) {
    std::string error;
    if (fallback.Add(patterns[i], &error) < 0) {
      return Error{"", 0, "", "", "invalid pattern '" + patterns[i] + "': " + error};
    }
    set->fallback_ids_.push_back(i);
  }
  // A set too large for its memory is not a reason to refuse the rules: its patterns are then
  // matched one by one, and Match counts that as the set's engine error.
  if (!set->fallback_ids_.empty() && fallback.Compile()) {
    set->fallback_set_ = std::make_unique<RE2::Set>(std::move(fallback));
  }
  return set;
}

bool PatternSet::BuildDatabase(const std::vector<std::string>& patterns, const DatabaseCache& cache,
                               Database& database, std::vector<uint32_t>& fallback) {
  if (database.ids.empty()) return true;
  std::vector<std::string> texts;
  texts.reserve(database.ids.size());
  for (uint32_t id : database.ids) texts.push_back(LineLocalExpression(patterns[id]));
  CompiledPatterns compiled;
  const bool from_cache = cache.Load(texts, &compiled) && UsableFromCache(compiled);
  if (!from_cache) {
    hs_free_database(compiled.database);
    compiled = CompiledPatterns();
    compiled.database = CompileDatabase(texts, compiled.modes);
    for (PatternMode mode : compiled.modes) compiled.flags.push_back(FlagsFor(mode));
    cache.Store(texts, compiled);
  }
  database.database = compiled.database;
  // Report ids are positions in `texts`; a pattern left to RE2 keeps its slot, never reported.
  for (size_t i = 0; i < texts.size(); ++i) {
    if (compiled.modes[i] == PatternMode::kFallback) fallback.push_back(database.ids[i]);
  }
  return from_cache;
}

PatternSet::~PatternSet() {
  hs_free_database(everywhere_.database);
  for (Database& tier : window_databases_) hs_free_database(tier.database);
}

bool PatternSet::AllocateScratch(MatchScratch& scratch) const {
  // One scratch serves every database of the set: each call grows it to fit that one too.
  bool ok = true;
  if (everywhere_.database != nullptr) {
    ok = hs_alloc_scratch(everywhere_.database, &scratch.hs_scratch_) == HS_SUCCESS;
  }
  for (const Database& tier : window_databases_) {
    ok = ok && hs_alloc_scratch(tier.database, &scratch.hs_scratch_) == HS_SUCCESS;
  }
  if (!ok) {
    hs_free_scratch(scratch.hs_scratch_);
    scratch.hs_scratch_ = nullptr;
  }
  return ok;
}

MatchScratch::MatchScratch(const PatternSet& set) : last_line_plus_one_(set.size(), 0) {
  set.AllocateScratch(*this);
}

MatchScratch::~MatchScratch() { hs_free_scratch(hs_scratch_); }

void PatternSet::Match(const LineBatch& batch, MatchScratch& scratch,
                       std::vector<Hit>& hits) const {
  hits.clear();
  if (batch.empty()) return;
  ScanDatabase(everywhere_, batch, 0, batch.size(), scratch, hits);
  if (!fallback_ids_.empty()) MatchFallbackSet(batch, scratch, hits);
  std::sort(hits.begin(), hits.end());
}

void PatternSet::MatchWindow(const LineBatch& batch, size_t tier, size_t first_line,
                             size_t end_line, MatchScratch& scratch, std::vector<Hit>& hits) const {
  end_line = std::min(end_line, batch.size());
  if (first_line >= end_line) return;
  ScanDatabase(window_databases_[tier], batch, first_line, end_line, scratch, hits);
}

void PatternSet::ScanDatabase(const Database& database, const LineBatch& batch, size_t first_line,
                              size_t end_line, MatchScratch& scratch,
                              std::vector<Hit>& hits) const {
  if (database.database == nullptr) return;
  const size_t first_hit = hits.size();
  if (!ScanWithVectorscan(database, batch, first_line, end_line, scratch, hits)) {
    ++scratch.errors_.vectorscan;
    hits.resize(first_hit);
    MatchEach(batch, first_line, end_line, database.ids, hits);
  }
}

bool PatternSet::ScanWithVectorscan(const Database& database, const LineBatch& batch,
                                    size_t first_line, size_t end_line, MatchScratch& scratch,
                                    std::vector<Hit>& hits) const {
  if (scratch.hs_scratch_ == nullptr && !AllocateScratch(scratch)) return false;
  // A scratch made for another set may be short; only then does this allocate.
  if (scratch.last_line_plus_one_.size() < regexes_.size()) {
    scratch.last_line_plus_one_.resize(regexes_.size());
  }
  for (uint32_t id : database.ids) scratch.last_line_plus_one_[id] = 0;
  const size_t base = batch.line_begin(first_line);
  const std::string_view text = batch.text().substr(base, batch.line_end(end_line - 1) - base);
  // Where the padded tail begins: the start of the line holding the byte kPaddedTailBytes before
  // the end (0 when the range is short), or kMaxPaddedTailBytes before the end when that line
  // is longer.
  size_t tail = 0;
  if (text.size() > kPaddedTailBytes) {
    const size_t newline = text.rfind('\n', text.size() - kPaddedTailBytes);
    tail = newline == std::string_view::npos ? 0 : newline + 1;
  }
  bool tail_in_line = false;
  if (text.size() - tail > kMaxPaddedTailBytes) {
    tail = text.size() - kMaxPaddedTailBytes;
    tail_in_line = true;
  }
  ScanState state{&batch,
                  &hits,
                  scratch.last_line_plus_one_.data(),
                  database.ids.data(),
                  database.ids.size(),
                  base,
                  tail_in_line ? text.size() : tail,
                  first_line};
  const size_t first_hit = hits.size();
  if (tail > 0) {  // the tail's bytes follow, at least kScanPadding of them
    const size_t scanned = tail_in_line ? text.size() : tail + kScanPadding;
    const hs_error_t rc = hs_scan(database.database, text.data(), static_cast<unsigned>(scanned), 0,
                                  scratch.hs_scratch_, OnCandidate, &state);
    if (rc != HS_SUCCESS || state.foreign) return false;
  }
  scratch.padded_tail_.assign(text.substr(tail));
  scratch.padded_tail_.append(kScanPadding, '\n');
  state.base = base + tail;
  state.limit = text.size() - tail;
  const hs_error_t rc = hs_scan(database.database, scratch.padded_tail_.data(),
                                static_cast<unsigned>(scratch.padded_tail_.size()), 0,
                                scratch.hs_scratch_, OnCandidate, &state);
  if (rc != HS_SUCCESS || state.foreign) return false;
  // Confirm every candidate with RE2 on its own line.
  hits.erase(std::remove_if(hits.begin() + static_cast<std::ptrdiff_t>(first_hit), hits.end(),
                            [&](const Hit& hit) {
                              return !RE2::PartialMatch(batch.line(hit.line),
                                                        *regexes_[hit.pattern]);
                            }),
             hits.end());
  return true;
}

void PatternSet::MatchFallbackSet(const LineBatch& batch, MatchScratch& scratch,
                                  std::vector<Hit>& hits) const {
  if (fallback_set_ == nullptr) {  // it did not fit its memory
    scratch.errors_.re2_set += batch.size();
    MatchEach(batch, 0, batch.size(), fallback_ids_, hits);
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    scratch.set_matches_.clear();
    RE2::Set::ErrorInfo error{RE2::Set::kNoError};
    if (fallback_set_->Match(batch.line(i), &scratch.set_matches_, &error)) {
      for (int index : scratch.set_matches_) {
        hits.push_back(Hit{static_cast<uint32_t>(i), fallback_ids_[index]});
      }
    } else if (error.kind != RE2::Set::kNoError) {
      // Out of DFA memory: false means "don't know", not "no match".
      ++scratch.errors_.re2_set;
      MatchEach(batch, i, i + 1, fallback_ids_, hits);
    }
  }
}

void PatternSet::MatchEach(const LineBatch& batch, size_t first_line, size_t end_line,
                           const std::vector<uint32_t>& ids, std::vector<Hit>& hits) const {
  for (size_t line = first_line; line < end_line; ++line) {
    for (uint32_t id : ids) {
      if (RE2::PartialMatch(batch.line(line), *regexes_[id])) {
        hits.push_back(Hit{static_cast<uint32_t>(line), id});
      }
    }
  }
}

}  // namespace faultline
