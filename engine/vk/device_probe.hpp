#pragma once
// This machine's devices as probe facts (probe/caps.hpp), read through a Vulkan instance of their own: what
// helios-probe and helios::devices() list, and picking among them with the engine's selection rules.
// probe/ itself only reads facts from handles it is given; the live parts are here, so the include graph
// runs one way (engine -> probe).
#include "probe/caps.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace helios::vk {

// Creates an instance, reads every physical device with probe::queryCaps (and the coop self-test's cached
// result where the device has cooperative matrices), then destroys the instance. Throws LoaderMissing
// without a loader, NoDevice when there is no driver or no device.
std::vector<probe::DeviceCaps> probeDevices();

// The indices `selector` picks: "" gives every device; otherwise the one matchDevice picks (a decimal index,
// or the first name containing it, ignoring case), usable or not: the probe lists devices Helios cannot use
// too. Throws NoDevice (a sentence listing the devices) when nothing matches.
std::vector<std::size_t> selectProbedDevices(const std::vector<probe::DeviceCaps>& devices,
                                             std::string_view selector);

} // namespace helios::vk
