#pragma once
// What every helios-bench subcommand shares: options, the JSON header (device, driver, commit) and median.
#include "engine/vk/context.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace helios::bench {

struct CommonOptions {
  std::string device;
  std::string jsonOut;    // "" = print JSON to stdout only
  std::string tuningFile; // --tuning FILE (ops::setTuningFile)
  std::string commit;     // recorded in the JSON (default: $HELIOS_COMMIT)
  std::string label;      // recorded in the JSON: which configuration this run is (e.g. "coop2", "khr")
  uint32_t warmup = 3;
  uint32_t repeat = 10;
  // GPUs idle at low clocks and ramp up under load: keep re-running the warm-up until this much wall time has
  // passed, so the timed runs see the clocks a long-running job (and the PyTorch side) sees.
  double warmupMs = 300;
  uint32_t windows = 9;
};

nlohmann::json header(const vk::Context& ctx, const CommonOptions& options, const std::string& benchmark);
void emit(const nlohmann::json& result, const CommonOptions& options);

} // namespace helios::bench
