#include "engine/vk/error.hpp"

#include <fmt/format.h>

namespace helios::vk {

const char* resultName(VkResult result) {
  switch (result) {
#define HELIOS_CASE(x)                                                                                       \
  case x:                                                                                                    \
    return #x;
    HELIOS_CASE(VK_SUCCESS)
    HELIOS_CASE(VK_NOT_READY)
    HELIOS_CASE(VK_TIMEOUT)
    HELIOS_CASE(VK_EVENT_SET)
    HELIOS_CASE(VK_EVENT_RESET)
    HELIOS_CASE(VK_INCOMPLETE)
    HELIOS_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    HELIOS_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    HELIOS_CASE(VK_ERROR_INITIALIZATION_FAILED)
    HELIOS_CASE(VK_ERROR_DEVICE_LOST)
    HELIOS_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    HELIOS_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    HELIOS_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    HELIOS_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    HELIOS_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    HELIOS_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    HELIOS_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    HELIOS_CASE(VK_ERROR_FRAGMENTED_POOL)
    HELIOS_CASE(VK_ERROR_UNKNOWN)
    HELIOS_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    HELIOS_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    HELIOS_CASE(VK_ERROR_FRAGMENTATION)
    HELIOS_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    HELIOS_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    HELIOS_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef HELIOS_CASE
  default:
    return "VK_RESULT_UNKNOWN";
  }
}

VulkanError::VulkanError(VkResult result, std::string_view what)
    : std::runtime_error(fmt::format("{}: {} ({})", what, resultName(result), static_cast<int>(result))),
      result_(result) {}

void throwVulkanError(VkResult result, std::string_view what) {
  throw VulkanError(result, what);
}

} // namespace helios::vk
