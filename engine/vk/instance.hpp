#pragma once
// The Vulkan instance: loads the loader through volk and lists physical devices.
#include <cstdint>
#include <string>
#include <vector>
#include <volk.h>

namespace helios::vk {

struct InstanceOptions {
  std::string appName = "helios";
  bool validation = false; // VK_LAYER_KHRONOS_validation, an error when missing (also: HELIOS_VALIDATION=1)
};

class Instance {
public:
  // Throws LoaderMissing when no Vulkan loader is installed, VulkanError when creation fails.
  static Instance create(const InstanceOptions& options = {});

  Instance(Instance&& other) noexcept;
  Instance& operator=(Instance&& other) noexcept;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance();

  VkInstance handle() const { return instance_; }
  uint32_t apiVersion() const { return apiVersion_; }
  std::vector<VkPhysicalDevice> physicalDevices() const;

private:
  Instance() = default;
  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t apiVersion_ = 0;
};

} // namespace helios::vk
