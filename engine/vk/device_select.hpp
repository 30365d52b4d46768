#pragma once
// Choosing a physical device: by index, by case-insensitive name substring, or the best one
// (discrete > integrated > virtual > CPU). Pure functions over plain data, so they are unit-testable.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <volk.h>

namespace helios::vk {

struct DeviceCandidate {
  uint32_t index = 0;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t apiVersion = 0;
};

const char* deviceTypeName(VkPhysicalDeviceType type);

// Index or case-insensitive name-substring match, without judging whether the device is usable. Throws
// NoDevice with a sentence listing the devices when nothing matches. `selector` must not be empty.
size_t matchDevice(const std::vector<DeviceCandidate>& candidates, std::string_view selector);

// Returns the index into `candidates` of the chosen device. `selector` is "" (best), a decimal index, or a
// name substring. Throws NoDevice with a sentence listing the devices when nothing matches. With no selector,
// `slot` picks among the usable devices of the best type, modulo their count (data-parallel ranks pass their
// rank on the host, so a host's GPUs are shared out and a lone GPU is shared by all; slot 0 is the best); a
// name that several usable devices contain is shared out the same way (slot 0: the first).
size_t selectDevice(const std::vector<DeviceCandidate>& candidates, std::string_view selector,
                    uint32_t slot = 0);

// The device selector: `given` (--device, ContextOptions::device) when not empty, else HELIOS_DEVICE, else ""
// (the best device). The one reader of HELIOS_DEVICE.
std::string deviceSelector(std::string_view given);

std::vector<DeviceCandidate> describeDevices(const std::vector<VkPhysicalDevice>& devices);

} // namespace helios::vk
