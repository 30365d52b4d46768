#pragma once
// How many compute units the live device has, for sizing grids (the coop policy's fill target, the tiled
// GEMM's target workgroup count).
#include <cstdint>

#include "engine/vk/device.hpp"

namespace helios::ops {

// The vendor extension's count (probe::queryShaderCores: NVIDIA SMs, AMD CUs, Arm cores); on a CPU device
// (lavapipe) the host's hardware threads, at least 4; else kDefaultComputeUnits (matmul_policy.hpp).
// Queried at each call: the device's profile (device_profile.hpp) keeps it.
uint32_t deviceComputeUnits(const vk::Device& device);

} // namespace helios::ops
