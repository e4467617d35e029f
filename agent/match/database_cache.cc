#include "agent/match/database_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <hs/hs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>

namespace faultline {
namespace {

namespace fs = std::filesystem;

// The format tag; a new layout gets a new tag, so old entries are misses, not misreadings.
constexpr std::string_view kMagic = "faultline-hs-cache-3\n";
constexpr size_t kChecksumBytes = 8;
// Far above any real pack (1,000 patterns serialise to a few MiB); a larger file is not ours.
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;
// A temporary file this old was left by a process that died while writing it.
constexpr time_t kStaleTempSeconds = 10 * 60;
constexpr std::string_view kTempInfix = ".tmp.";

// FNV-1a: stable across builds and machines, unlike std::hash. Each step (xor a byte, multiply
// by an odd number modulo 2^64) is a bijection of the state, so two inputs that differ in one
// byte always end in different hashes.
uint64_t Fnv1a(uint64_t hash, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Reads the fields of an entry in order; any read past the end leaves ok() false.
class EntryReader {
 public:
  explicit EntryReader(std::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }
  std::string_view Bytes(uint64_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return {};
    }
    const std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t Uint(int bytes) {
    const std::string_view b = Bytes(static_cast<uint64_t>(bytes));
    uint64_t v = 0;
    for (int i = 0; i < static_cast<int>(b.size()); ++i) {
      v |= uint64_t{static_cast<unsigned char>(b[i])} << (8 * i);
    }
    return v;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Says once per folder and process why a cache folder is not used.
void WarnOnce(const std::string& dir, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(dir).second) return;
  std::fprintf(stderr,
               "faultline: warning: not using the compiled-pattern cache folder %s: %s; patterns "
               "are compiled on every start\n",
               dir.c_str(), why.c_str());
}

bool ReadAll(int fd, size_t size, std::string* out) {
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out->data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Closes a descriptor when it goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string DatabaseCache::DefaultDir() {
  if (const char* dir = std::getenv("FAULTLINE_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/faultline";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/faultline";
  }
  return "";
}

std::string DatabaseCache::NameFor(const std::vector<std::string>& patterns) const {
  uint64_t hash = kFnvBasis;
  const char* version = hs_version();
  hash = Fnv1a(hash, version, std::strlen(version) + 1);
  hash = Fnv1a(hash, kMagic.data(), kMagic.size());
  for (const std::string& p : patterns) hash = Fnv1a(hash, p.c_str(), p.size() + 1);
  char name[40];
  std::snprintf(name, sizeof name, "hs-%016llx.db", static_cast<unsigned long long>(hash));
  return name;
}

int DatabaseCache::OpenDir(bool create) const {
  if (dir_.empty()) return -1;
  if (create) {
    std::error_code ec;
    if (fs::create_directories(dir_, ec)) {
      fs::permissions(dir_, fs::perms::owner_all, ec);  // compiled rules are nobody else's business
    }
  }
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;  // absent or unreadable: simply no cache
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return -1;
  }
  std::string why;
  if (st.st_uid != ::geteuid()) {
    why = "it is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
          std::to_string(::geteuid()) + ")";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = std::string("others can write to it (mode ") + mode + ")";
  }
  if (!why.empty()) {
    WarnOnce(dir_, why);
    ::close(fd);
    return -1;
  }
  return fd;
}

bool DatabaseCache::Load(const std::vector<std::string>& patterns,
                         CompiledPatterns* compiled) const {
  std::string data;
  {
    const ScopedFd dir(OpenDir(/*create=*/false));
    if (dir.get() < 0) return false;
    // No symlink at the name, and no FIFO that would block the open.
    const ScopedFd file(::openat(dir.get(), NameFor(patterns).c_str(),
                                 O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (file.get() < 0) return false;
    struct stat st {};
    if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        static_cast<uint64_t>(st.st_size) > kMaxEntryBytes ||
        static_cast<size_t>(st.st_size) < kMagic.size() + kChecksumBytes ||
        !ReadAll(file.get(), static_cast<size_t>(st.st_size), &data)) {
      return false;
    }
  }
  // The checksum first: nothing of an entry is believed before all of it is known intact.
  const std::string_view body(data.data(), data.size() - kChecksumBytes);
  EntryReader checksum(std::string_view(data).substr(body.size()));
  if (checksum.Uint(8) != Fnv1a(kFnvBasis, body.data(), body.size())) return false;

  EntryReader in(body);
  if (in.Bytes(kMagic.size()) != kMagic) return false;
  const std::string_view version(hs_version());
  if (in.Bytes(version.size() + 1) != std::string_view(version.data(), version.size() + 1)) {
    return false;
  }
  if (in.Uint(4) != patterns.size()) return false;
  CompiledPatterns out;
  bool any_prefiltered = false;
  for (const std::string& pattern : patterns) {
    if (in.Bytes(in.Uint(4)) != pattern) return false;
    const uint64_t mode = in.Uint(1);
    if (mode > static_cast<uint8_t>(PatternMode::kFallback)) return false;
    out.modes.push_back(static_cast<PatternMode>(mode));
    out.flags.push_back(static_cast<uint32_t>(in.Uint(4)));
    any_prefiltered |= out.modes.back() != PatternMode::kFallback;
  }
  const std::string_view database = in.Bytes(in.Uint(8));
  if (!in.ok() || !in.at_end() || any_prefiltered == database.empty()) return false;
  if (any_prefiltered &&
      hs_deserialize_database(database.data(), database.size(), &out.database) != HS_SUCCESS) {
    return false;
  }
  *compiled = std::move(out);
  return true;
}

void DatabaseCache::Store(const std::vector<std::string>& patterns,
                          const CompiledPatterns& compiled) const {
  const ScopedFd dir(OpenDir(/*create=*/true));
  if (dir.get() < 0) return;
  char* bytes = nullptr;
  size_t length = 0;
  if (compiled.database != nullptr &&
      hs_serialize_database(compiled.database, &bytes, &length) != HS_SUCCESS) {
    return;
  }
  std::string entry(kMagic);
  entry.append(hs_version()).push_back('\0');
  PutU32(entry, static_cast<uint32_t>(patterns.size()));
  for (size_t i = 0; i < patterns.size(); ++i) {
    PutU32(entry, static_cast<uint32_t>(patterns[i].size()));
    entry.append(patterns[i]);
    entry.push_back(static_cast<char>(compiled.modes[i]));
    PutU32(entry, compiled.flags[i]);
  }
  PutU64(entry, length);
  if (bytes != nullptr) entry.append(bytes, length);
  std::free(bytes);
  PutU64(entry, Fnv1a(kFnvBasis, entry.data(), entry.size()));

  const std::string name = NameFor(patterns);
  std::string path = dir_ + "/" + name + std::string(kTempInfix) + "XXXXXX";
  const ScopedFd temp(::mkostemp(path.data(), O_CLOEXEC | O_NOFOLLOW));
  if (temp.get() < 0) return;
  const std::string temp_name = path.substr(dir_.size() + 1);
  // mkostemp went by path: make sure the file is in the folder that was checked, not in one
  // swapped in since, before anything is renamed there.
  struct stat by_fd {};
  struct stat by_name {};
  if (::fstat(temp.get(), &by_fd) != 0 ||
      ::fstatat(dir.get(), temp_name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) != 0 ||
      by_fd.st_dev != by_name.st_dev || by_fd.st_ino != by_name.st_ino) {
    return;
  }
  if (!WriteAll(temp.get(), entry) ||
      ::renameat(dir.get(), temp_name.c_str(), dir.get(), name.c_str()) != 0) {
    ::unlinkat(dir.get(), temp_name.c_str(), 0);
    return;
  }
  Prune(dir.get());
}

void DatabaseCache::Prune(int dir_fd) const {
  const int listing_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (listing_fd < 0) return;
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return;
  }
  const time_t now = std::time(nullptr);
  std::vector<std::pair<std::pair<time_t, long>, std::string>> entries;
  while (const dirent* e = ::readdir(listing)) {
    const std::string_view name(e->d_name);
    if (!name.starts_with("hs-")) continue;
    struct stat st {};
    if (::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (name.find(kTempInfix) != std::string_view::npos) {
      if (now - st.st_mtim.tv_sec > kStaleTempSeconds) ::unlinkat(dir_fd, e->d_name, 0);
    } else if (name.ends_with(".db")) {
      entries.push_back({{st.st_mtim.tv_sec, st.st_mtim.tv_nsec}, std::string(name)});
    }
  }
  ::closedir(listing);
  if (entries.size() <= static_cast<size_t>(kMaxEntries)) return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + kMaxEntries < entries.size(); ++i) {
    ::unlinkat(dir_fd, entries[i].second.c_str(), 0);
  }
}

}  // namespace faultline
