#include "engine/ops/compute_units.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "engine/ops/matmul_policy.hpp"
#include "probe/caps.hpp"

namespace helios::ops {

uint32_t deviceComputeUnits(const vk::Device& device) {
  static std::mutex mutex;
  static std::map<VkPhysicalDevice, uint32_t> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(device.physical());
  if (it != cache.end()) return it->second;
  // A CPU device runs workgroups on a few threads, where many small tiles only add per-workgroup overhead.
  const uint32_t fallback = device.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                                ? std::max(4u, std::thread::hardware_concurrency())
                                : kDefaultComputeUnits;
  const uint32_t units = computeUnitsOr(probe::queryShaderCores(VK_NULL_HANDLE, device.physical()), fallback);
  return cache.emplace(device.physical(), units).first->second;
}

} // namespace helios::ops
