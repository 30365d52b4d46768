#pragma once
// Loads one device from tests/fixtures/coopmat (HELIOS_COOPMAT_FIXTURE_DIR, set by CMake).
#include "probe/json.hpp"

#include <string>

namespace helios::probe::test {

inline std::string fixturePath(const std::string& name) {
  return std::string(HELIOS_COOPMAT_FIXTURE_DIR) + "/" + name;
}

inline DeviceCaps loadFixture(const std::string& name) {
  auto devices = loadCapsFile(fixturePath(name));
  return devices.at(0);
}

} // namespace helios::probe::test
