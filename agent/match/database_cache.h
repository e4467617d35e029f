// DatabaseCache: compiled Vectorscan databases kept on disk between runs.
//
// Compiling a Vectorscan database is the one slow step of loading a rule pack (about 0.3 s for 200
// patterns and 1.5 s for 1000 on the CI machine, far more than scanning a typical log), so
// `faultline scan` in a CI step or an editor would pay it on every call. The compiled database is
// therefore serialised (Vectorscan's own hs_serialize_database) under a key that hashes the
// library version and every pattern, and the entry holds the patterns themselves, checked on load;
// a later load of the same patterns deserialises it in milliseconds. A cache entry also records which patterns needed prefilter mode or the RE2
// fallback, so a cached load behaves exactly like a fresh compile.
//
// The cache is an optimisation only: any failure (no folder, unwritable, truncated or foreign
// file, another platform) means "compile as if there were no cache", never an error. Entries are
// written to a temporary file and renamed, so concurrent agents never read half a file; the
// folder keeps at most kMaxEntries files, the oldest removed first. Thread-compatible.
#ifndef FAULTLINE_MATCH_DATABASE_CACHE_H_
#define FAULTLINE_MATCH_DATABASE_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

struct hs_database;

namespace faultline {

// How a pattern is matched, as decided at compile time.
enum class PatternMode : uint8_t { kExact = 0, kPrefilter = 1, kFallback = 2 };

class DatabaseCache {
 public:
  static constexpr int kMaxEntries = 16;

  // `dir` empty disables the cache.
  explicit DatabaseCache(std::string dir) : dir_(std::move(dir)) {}

  // On a hit, sets *database (owned by the caller) and `modes`, and returns true.
  bool Load(const std::vector<std::string>& patterns, hs_database** database,
            std::vector<PatternMode>& modes) const;
  // Best effort; `database` may be null when every pattern falls back to RE2.
  void Store(const std::vector<std::string>& patterns, const hs_database* database,
             const std::vector<PatternMode>& modes) const;

  // $FAULTLINE_CACHE_DIR (empty: no cache), else $XDG_CACHE_HOME/faultline, else
  // $HOME/.cache/faultline, else no cache.
  static std::string DefaultDir();

 private:
  std::string PathFor(const std::vector<std::string>& patterns) const;
  void Prune() const;

  const std::string dir_;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_DATABASE_CACHE_H_
