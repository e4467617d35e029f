// LoadConfig: reads the agent's YAML config file (schema and defaults documented in
// config/faultline.yaml) into a validated Config.
//
// The whole file is checked before anything starts: every unknown key, wrong type and
// out-of-range value becomes one Error naming the file, the 1-based line and the key as a dotted
// path (`sources[0].start_at`), and a load with any error returns all of them together, so a user
// fixes a config in one round trip. A missing or unreadable file and a YAML syntax error are
// reported the same way. Relative paths (rule folders, source paths and globs) are resolved
// against the folder of the config file, not the working directory, so a config means the same
// thing wherever the agent is started from.
//
// This is the only user of yaml-cpp for config; its exceptions never escape. Load-time only; the
// function keeps no state and is safe to call from any thread.
#ifndef FAULTLINE_CONFIG_CONFIG_LOADER_H_
#define FAULTLINE_CONFIG_CONFIG_LOADER_H_

#include <string>

#include "agent/config/config.h"
#include "agent/core/result.h"

namespace faultline {

// Loads and validates the config file at `path`. Errors carry `path` exactly as given.
Result<Config> LoadConfig(const std::string& path);

}  // namespace faultline

#endif  // FAULTLINE_CONFIG_CONFIG_LOADER_H_
