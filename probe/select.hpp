#pragma once
// --device / HELIOS_DEVICE: picking one device out of a list of DeviceCaps.
#include "probe/caps.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace helios::probe {

class DeviceSelectionError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The indices `selector` picks: "" gives every device; a decimal number gives that index; anything else
// gives the first device whose name contains it, ignoring case. Throws DeviceSelectionError (a sentence
// listing the devices) when nothing matches.
std::vector<std::size_t> selectDevices(const std::vector<DeviceCaps>& devices, std::string_view selector);

// --device when given, else HELIOS_DEVICE, else "".
std::string deviceSelector(const std::string& fromCommandLine);

} // namespace helios::probe
