#include "engine/tuning/resolve.hpp"

#include <iostream>

#include "engine/tuning/defaults.hpp"
#include "engine/tuning/file.hpp"

namespace helios::tuning {

Tuning resolveTuning(const DeviceFacts& facts, const ResolveOptions& options) {
  std::ostream& warn = options.warn ? *options.warn : std::cerr;
  Tuning t = defaultTuning(facts);
  if (!options.cacheDir.empty())
    readTuningFile(t, tuningFilePath(options.cacheDir, t.key), Source::File, warn, /*warnMissing=*/false);
  if (!options.explicitFile.empty())
    readTuningFile(t, options.explicitFile, Source::Explicit, warn, /*warnMissing=*/true);
  if (options.env) applyEnvironment(t, options.env);
  return t;
}

} // namespace helios::tuning
