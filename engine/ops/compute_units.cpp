#include "engine/ops/compute_units.hpp"

#include <algorithm>
#include <thread>

#include "engine/ops/matmul_policy.hpp"
#include "probe/caps.hpp"

namespace helios::ops {

uint32_t deviceComputeUnits(const vk::Device& device) {
  // A CPU device runs workgroups on a few threads, where many small tiles only add per-workgroup overhead.
  const uint32_t fallback = device.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                                ? std::max(4u, std::thread::hardware_concurrency())
                                : kDefaultComputeUnits;
  return computeUnitsOr(probe::queryShaderCores(VK_NULL_HANDLE, device.physical()), fallback);
}

} // namespace helios::ops
