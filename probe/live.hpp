#pragma once
// Capabilities of every physical device on this machine.
#include "probe/caps.hpp"

#include <vector>

namespace helios::probe {

// Creates a Vulkan instance, reads every physical device with queryCaps and destroys the instance.
// Throws helios::vk::LoaderMissing without a loader, helios::vk::NoDevice when there is no device.
std::vector<DeviceCaps> queryAllDevices();

} // namespace helios::probe
