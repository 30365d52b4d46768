#include "engine/vk/device_probe.hpp"

#include "engine/vk/device_select.hpp"
#include "engine/vk/error.hpp"
#include "engine/vk/instance.hpp"
#include "engine/vk/pipeline.hpp"
#include "probe/selftest.hpp"

#include <cstdio>
#include <string>

namespace helios::vk {

namespace {

Instance createInstance() {
  try {
    return Instance::create({.appName = "helios-probe"});
  } catch (const VulkanError& e) {
    if (e.result() != VK_ERROR_INCOMPATIBLE_DRIVER) throw;
    throw NoDevice("The Vulkan loader found no usable driver (vkCreateInstance returned "
                   "VK_ERROR_INCOMPATIBLE_DRIVER): install one, e.g. `apt-get install mesa-vulkan-drivers`.");
  }
}

VkPhysicalDeviceType toVk(probe::DeviceType type) {
  switch (type) {
  case probe::DeviceType::IntegratedGpu:
    return VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  case probe::DeviceType::DiscreteGpu:
    return VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  case probe::DeviceType::VirtualGpu:
    return VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
  case probe::DeviceType::Cpu:
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

std::vector<probe::DeviceCaps> probeDevices() {
  const Instance instance = createInstance();
  const auto physical = instance.physicalDevices();
  if (physical.empty())
    throw NoDevice("The Vulkan loader found no physical device (no driver is installed or none can run on "
                   "this machine).");
  std::vector<probe::DeviceCaps> out;
  for (VkPhysicalDevice device : physical) {
    probe::DeviceCaps caps = probe::queryCaps(instance.handle(), device);
    const probe::SelfTestKey key =
        probe::selfTestKey(caps.vendor_id, caps.device_id, caps.driver_version_raw, caps.device_uuid);
    if (!caps.coop_khr.empty())
      caps.coop_self_test = probe::readSelfTestCache(probe::selfTestCacheFile(cacheDirectory(), key), key)
                                .value_or(probe::SelfTestResult{});
    out.push_back(std::move(caps));
  }
  return out;
}

std::vector<std::size_t> selectProbedDevices(const std::vector<probe::DeviceCaps>& devices,
                                             std::string_view selector) {
  std::vector<std::size_t> picked;
  if (selector.empty()) {
    for (std::size_t i = 0; i < devices.size(); ++i)
      picked.push_back(i);
    return picked;
  }
  std::vector<DeviceCandidate> candidates;
  for (std::size_t i = 0; i < devices.size(); ++i)
    candidates.push_back({static_cast<uint32_t>(i), devices[i].name, toVk(devices[i].type),
                          parseApiVersion(devices[i].api_version)});
  return {matchDevice(candidates, selector)};
}

} // namespace helios::vk
