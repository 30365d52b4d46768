#pragma once
// What every helios-bench subcommand shares: options, the JSON header (device, driver, commit) and median.
#include "engine/vk/context.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace helios::bench {

struct CommonOptions {
  std::string device;
  std::string jsonOut; // "" = print JSON to stdout only
  std::string commit;  // recorded in the JSON (default: $HELIOS_COMMIT)
  uint32_t warmup = 3;
  uint32_t repeat = 10;
};

nlohmann::json header(const vk::Context& ctx, const CommonOptions& options, const std::string& benchmark);
void emit(const nlohmann::json& result, const CommonOptions& options);

} // namespace helios::bench
