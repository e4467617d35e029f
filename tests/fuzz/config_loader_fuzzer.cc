// Fuzzes the config loader: LoadConfig on a file of arbitrary bytes must return a config or its
// errors without crashing, hanging or exhausting memory. LoadConfig reads a path, so each input
// is written to one scratch file first.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/config/config_loader.h"

namespace {

// A scratch file made once per process, removed at exit.
const std::string& ScratchPath() {
  static const std::string path = [] {
    std::string pattern = "/tmp/faultline_config_fuzz_XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd < 0) std::abort();
    close(fd);
    std::atexit([] { unlink(ScratchPath().c_str()); });
    return pattern;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ScratchPath();
  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr || std::fwrite(data, 1, size, out) != size || std::fclose(out) != 0) {
    std::abort();
  }
  faultline::Result<faultline::Config> config = faultline::LoadConfig(path);
  if (!config.ok() && config.errors().empty()) std::abort();
  return 0;
}
