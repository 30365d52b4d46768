#pragma once
// Human-readable report of DeviceCaps (vulkaninfo-like, aligned columns).
#include "probe/caps.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace helios::probe {

// One device: summary, extensions, cooperative-matrix tables and the f16 x f16 -> f32 choice.
std::string formatDevice(const DeviceCaps& caps, std::size_t index);

// Every device, separated by blank lines.
std::string formatDevices(const std::vector<DeviceCaps>& devices);

} // namespace helios::probe
