// DatabaseCache: compiled Vectorscan databases kept on disk between runs.
//
// Compiling a Vectorscan database is the one slow step of loading a rule pack (about 0.3 s for 200
// patterns and 1.5 s for 1000 on the CI machine, far more than scanning a typical log), so
// `faultline scan` in a CI step or an editor would pay it on every call. The compiled database is
// therefore serialised (Vectorscan's own hs_serialize_database) under a name that hashes the
// library version and every pattern.
//
// An entry is one checksummed unit: the format tag, the library version, every pattern with the
// mode and Vectorscan flags it was compiled with, and the database, followed by a 64-bit FNV-1a
// of all of it. Any changed byte, anywhere, makes the entry a miss (a change of one byte always
// changes FNV-1a), as does a pattern list that is not exactly the caller's, so a cached load
// behaves exactly like a fresh compile or does not happen.
//
// The folder must be trusted: it is used only when it is a directory owned by the effective
// user and writable by nobody else (one warning on stderr per folder and process otherwise, and
// no cache). Entries are opened without following symlinks and must be regular files of the
// same owner. An entry is written to a temporary file with an unpredictable name (mkostemp:
// O_CREAT|O_EXCL, so never through a planted symlink), checked to be in that folder, and renamed
// over the final name (rename replaces a symlink there, it does not follow it), so concurrent
// agents never read half a file. The folder keeps at most kMaxEntries entries, the oldest
// removed first, and stale temporary files are removed.
//
// The cache is an optimisation only: any failure (no folder, unwritable, truncated or foreign
// file, another platform) means "compile as if there were no cache", never an error.
// Thread-compatible; concurrent processes are safe.
#ifndef FAULTLINE_MATCH_DATABASE_CACHE_H_
#define FAULTLINE_MATCH_DATABASE_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

struct hs_database;

namespace faultline {

// How a pattern is matched, as decided at compile time.
enum class PatternMode : uint8_t { kExact = 0, kPrefilter = 1, kFallback = 2 };

// What a compile decided for a pattern set: per pattern its mode and the Vectorscan flags it was
// compiled with (0 for kFallback), and the database (null when every pattern falls back).
struct CompiledPatterns {
  std::vector<PatternMode> modes;
  std::vector<uint32_t> flags;
  hs_database* database = nullptr;  // owned by whoever holds the struct; see Load and Store
};

class DatabaseCache {
 public:
  static constexpr int kMaxEntries = 64;

  // `dir` empty disables the cache.
  explicit DatabaseCache(std::string dir) : dir_(std::move(dir)) {}

  // On a hit, fills *compiled (its database then owned by the caller) and returns true.
  bool Load(const std::vector<std::string>& patterns, CompiledPatterns* compiled) const;
  // Best effort; never takes ownership of compiled.database.
  void Store(const std::vector<std::string>& patterns, const CompiledPatterns& compiled) const;

  // $FAULTLINE_CACHE_DIR (empty: no cache), else $XDG_CACHE_HOME/faultline, else
  // $HOME/.cache/faultline, else no cache.
  static std::string DefaultDir();

 private:
  // The folder, opened, when it can be trusted; -1 when it is absent (and not `create`d) or
  // untrusted (after the one warning).
  int OpenDir(bool create) const;
  std::string NameFor(const std::vector<std::string>& patterns) const;
  void Prune(int dir_fd) const;

  const std::string dir_;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_DATABASE_CACHE_H_
