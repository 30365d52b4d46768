#include "probe/select.hpp"

#include "engine/vk/device_select.hpp"
#include "engine/vk/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace helios::probe {

namespace {

VkPhysicalDeviceType toVk(DeviceType type) {
  switch (type) {
  case DeviceType::IntegratedGpu:
    return VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  case DeviceType::DiscreteGpu:
    return VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  case DeviceType::VirtualGpu:
    return VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
  case DeviceType::Cpu:
    return VK_PHYSICAL_DEVICE_TYPE_CPU;
  default:
    return VK_PHYSICAL_DEVICE_TYPE_OTHER;
  }
}

uint32_t parseApiVersion(const std::string& text) {
  unsigned major = 0, minor = 0, patch = 0;
  std::sscanf(text.c_str(), "%u.%u.%u", &major, &minor, &patch);
  return VK_MAKE_API_VERSION(0, major, minor, patch);
}

} // namespace

// The probe lists devices it cannot use too, so it matches with the engine's rules but skips its usability
// check.
std::vector<std::size_t> selectDevices(const std::vector<DeviceCaps>& devices, std::string_view selector) {
  std::vector<std::size_t> picked;
  if (selector.empty()) {
    for (std::size_t i = 0; i < devices.size(); ++i)
      picked.push_back(i);
    return picked;
  }
  std::vector<vk::DeviceCandidate> candidates;
  for (std::size_t i = 0; i < devices.size(); ++i)
    candidates.push_back({static_cast<uint32_t>(i), devices[i].name, toVk(devices[i].type),
                          parseApiVersion(devices[i].api_version)});
  try {
    return {vk::matchDevice(candidates, selector)};
  } catch (const vk::NoDevice& e) {
    throw DeviceSelectionError(e.what());
  }
}

std::string deviceSelector(const std::string& fromCommandLine) {
  if (!fromCommandLine.empty()) return fromCommandLine;
  const char* env = std::getenv("HELIOS_DEVICE");
  return env ? std::string(env) : std::string();
}

} // namespace helios::probe
