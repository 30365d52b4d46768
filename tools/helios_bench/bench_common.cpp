#include "bench_common.hpp"

#include "engine/io/atomic_file.hpp"
#include "timing_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

namespace helios::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

nlohmann::json header(const vk::Context& ctx, const CommonOptions& options, const std::string& benchmark) {
  const auto& p = ctx.device().properties();
  std::string commit = options.commit;
  if (commit.empty())
    if (const char* env = std::getenv("HELIOS_COMMIT")) commit = env;
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &driver;
  vkGetPhysicalDeviceProperties2(ctx.device().physical(), &p2);
  return {{"benchmark", benchmark},
          {"device", p.deviceName},
          {"driver", fmt::format("{} {}", driver.driverName, driver.driverInfo)},
          {"vulkan_api", fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(p.apiVersion),
                                     VK_API_VERSION_MINOR(p.apiVersion), VK_API_VERSION_PATCH(p.apiVersion))},
          {"commit", commit},
          {"date", date},
          {"label", options.label},
          {"warmup", options.warmup},
          {"warmup_ms", options.warmupMs},
          {"windows", options.windows},
          {"repeat", options.repeat}};
}

void emit(const nlohmann::json& result, const CommonOptions& options) {
  if (!options.jsonOut.empty()) {
    io::writeFileAtomically(options.jsonOut, result.dump(1) + "\n");
  }
}

} // namespace helios::bench
