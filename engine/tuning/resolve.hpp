#pragma once
// Fills a Tuning record in its one order: defaults from the device's facts -> the device's tuning file in
// the cache directory -> an explicit file (`--tuning FILE`) -> the environment. A missing device file is
// silent; a missing explicit file, or any corrupt or mismatched one, gives one warning and leaves the
// layer out. A bad environment value throws std::invalid_argument naming the variable.
#include <filesystem>
#include <iosfwd>

#include "engine/tuning/overrides.hpp"
#include "engine/tuning/tuning.hpp"

namespace helios::tuning {

struct ResolveOptions {
  std::filesystem::path cacheDir;     // the device's file is tuningFilePath(cacheDir, key); empty: none
  std::filesystem::path explicitFile; // --tuning FILE; empty: none
  EnvLookup env;                      // empty: no environment layer
  std::ostream* warn = nullptr;       // warnings (nullptr: std::cerr)
};

Tuning resolveTuning(const DeviceFacts& facts, const ResolveOptions& options);

} // namespace helios::tuning
