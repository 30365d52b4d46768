#include "probe/live.hpp"

#include "engine/vk/error.hpp"
#include "engine/vk/instance.hpp"
#include "engine/vk/pipeline.hpp"

namespace helios::probe {

namespace {

helios::vk::Instance createInstance() {
  try {
    return helios::vk::Instance::create({.appName = "helios-probe"});
  } catch (const helios::vk::VulkanError& e) {
    if (e.result() != VK_ERROR_INCOMPATIBLE_DRIVER) throw;
    throw helios::vk::NoDevice("The Vulkan loader found no usable driver (vkCreateInstance returned "
                               "VK_ERROR_INCOMPATIBLE_DRIVER): install one, e.g. `apt-get install "
                               "mesa-vulkan-drivers`.");
  }
}

} // namespace

std::vector<DeviceCaps> queryAllDevices() {
  const auto instance = createInstance();
  const auto physical = instance.physicalDevices();
  if (physical.empty())
    throw helios::vk::NoDevice("The Vulkan loader found no physical device (no driver is installed or none "
                               "can run on this machine).");
  std::vector<DeviceCaps> out;
  for (VkPhysicalDevice device : physical) {
    DeviceCaps caps = queryCaps(instance.handle(), device);
    const SelfTestKey key =
        selfTestKey(caps.vendor_id, caps.device_id, caps.driver_version_raw, caps.device_uuid);
    if (!caps.coop_khr.empty())
      caps.coop_self_test = readSelfTestCache(selfTestCacheFile(helios::vk::cacheDirectory(), key), key)
                                .value_or(SelfTestResult{});
    out.push_back(std::move(caps));
  }
  return out;
}

} // namespace helios::probe
