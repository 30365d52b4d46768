#pragma once
// The process's cooperative-matrix overrides, read in one place:
//   HELIOS_COOP_EMULATE=MxNxK  run the coop kernels lowered to ordinary SPIR-V (spv::ModuleOptions::
//                              coopLowerSubgroup) with that shape, on a device without (or with)
//                              VK_KHR_cooperative_matrix;
//   HELIOS_COOP_SHAPE=MxNxK    use this one of the device's reported f16 x f16 -> f32 subgroup shapes.
// Unset (or empty): no override.
#include <cstdint>
#include <optional>
#include <string>

namespace helios::ops {

struct CoopShape {
  uint32_t m = 0, n = 0, k = 0;
  bool operator==(const CoopShape&) const = default;
};

struct CoopOverrides {
  std::optional<CoopShape> emulate;
  std::optional<CoopShape> shape;
};

// "16x8x16" -> {16, 8, 16}: sides multiples of 8 from 8 to 64. Throws std::invalid_argument naming `what`
// (the variable) and the bad value.
CoopShape parseCoopShape(const std::string& what, const std::string& value);
// Both variables' values (nullptr = unset).
CoopOverrides parseCoopOverrides(const char* emulate, const char* shape);
// From the environment, parsed on first use.
const CoopOverrides& coopOverrides();

std::string toString(const CoopShape& s); // "16x8x16"

} // namespace helios::ops
