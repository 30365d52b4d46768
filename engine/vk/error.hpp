#pragma once
// Vulkan errors that say what was being done: "allocating 512 MiB device-local buffer:
// VK_ERROR_OUT_OF_DEVICE_MEMORY".
#include <stdexcept>
#include <string>
#include <string_view>
#include <volk.h>

namespace helios::vk {

const char* resultName(VkResult result);

class VulkanError : public std::runtime_error {
public:
  VulkanError(VkResult result, std::string_view what);
  VkResult result() const { return result_; }

private:
  VkResult result_;
};

// No Vulkan loader on the machine (libvulkan.so.1 could not be opened).
class LoaderMissing : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The loader works but no usable device matches (none at all, bad index, no name match, too old).
class NoDevice : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throwVulkanError(VkResult result, std::string_view what);

inline void check(VkResult result, std::string_view what) {
  if (result != VK_SUCCESS) throwVulkanError(result, what);
}

} // namespace helios::vk
