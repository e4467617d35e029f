#include "agent/match/database_cache.h"

#include <hs/hs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "faultline-hs-cache-2\n";

// The patterns an entry was compiled from, stored in it so that a hash collision or a foreign
// file can never pass for this pattern set.
std::string PatternBlock(const std::vector<std::string>& patterns) {
  std::string block;
  for (const std::string& p : patterns) block.append(p).push_back('\0');
  return block;
}

// FNV-1a: stable across builds and machines, unlike std::hash.
uint64_t Fnv1a(uint64_t hash, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

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

std::string DatabaseCache::PathFor(const std::vector<std::string>& patterns) const {
  uint64_t hash = 0xcbf29ce484222325ull;
  const char* version = hs_version();
  hash = Fnv1a(hash, version, std::strlen(version) + 1);
  hash = Fnv1a(hash, kMagic, sizeof kMagic);
  for (const std::string& p : patterns) hash = Fnv1a(hash, p.c_str(), p.size() + 1);
  char name[40];
  std::snprintf(name, sizeof name, "hs-%016llx.db", static_cast<unsigned long long>(hash));
  return dir_ + "/" + name;
}

bool DatabaseCache::Load(const std::vector<std::string>& patterns, hs_database** database,
                         std::vector<PatternMode>& modes) const {
  if (dir_.empty()) return false;
  std::ifstream in(PathFor(patterns), std::ios::binary);
  if (!in) return false;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string block = PatternBlock(patterns);
  const size_t header = sizeof kMagic - 1 + block.size();
  if (data.size() < header + patterns.size() || data.compare(0, sizeof kMagic - 1, kMagic) != 0 ||
      data.compare(sizeof kMagic - 1, block.size(), block) != 0) {
    return false;
  }
  modes.clear();
  bool any_prefiltered = false;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const auto mode = static_cast<uint8_t>(data[header + i]);
    if (mode > static_cast<uint8_t>(PatternMode::kFallback)) return false;
    modes.push_back(static_cast<PatternMode>(mode));
    any_prefiltered |= modes.back() != PatternMode::kFallback;
  }
  const size_t offset = header + patterns.size();
  *database = nullptr;
  if (!any_prefiltered) return data.size() == offset;
  return hs_deserialize_database(data.data() + offset, data.size() - offset, database) ==
         HS_SUCCESS;
}

void DatabaseCache::Store(const std::vector<std::string>& patterns, const hs_database* database,
                          const std::vector<PatternMode>& modes) const {
  if (dir_.empty()) return;
  std::error_code ec;
  if (fs::create_directories(dir_, ec)) {
    fs::permissions(dir_, fs::perms::owner_all, ec);  // compiled rules are nobody else's business
  }
  if (ec) return;
  char* bytes = nullptr;
  size_t length = 0;
  if (database != nullptr && hs_serialize_database(database, &bytes, &length) != HS_SUCCESS) {
    return;
  }
  const std::string path = PathFor(patterns);
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, sizeof kMagic - 1);
    const std::string block = PatternBlock(patterns);
    out.write(block.data(), static_cast<std::streamsize>(block.size()));
    for (PatternMode m : modes) out.put(static_cast<char>(m));
    if (bytes != nullptr) out.write(bytes, static_cast<std::streamsize>(length));
    out.close();
    if (!out) {
      std::free(bytes);
      fs::remove(temp, ec);
      return;
    }
  }
  std::free(bytes);
  fs::rename(temp, path, ec);
  if (ec) fs::remove(temp, ec);
  Prune();
}

void DatabaseCache::Prune() const {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("hs-", 0) != 0 || entry.path().extension() != ".db") continue;
    entries.emplace_back(entry.last_write_time(ec), entry.path());
  }
  if (entries.size() <= static_cast<size_t>(kMaxEntries)) return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + kMaxEntries < entries.size(); ++i) fs::remove(entries[i].second, ec);
}

}  // namespace faultline
