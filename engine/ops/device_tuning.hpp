#pragma once
// The Tuning record (engine/tuning) of a live device: resolved once per physical device, on first use, and
// held for the process by its profile (device_profile.hpp); every op reads its choices from it. Tools call
// setTuningFile() for `--tuning FILE` before the first kernel runs.
#include <filesystem>

#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"
#include "engine/vk/device.hpp"

namespace helios::ops {

// The explicit tuning file every device's record reads after its own (empty: none). Throws
// std::logic_error once a record has been resolved (it would not apply).
void setTuningFile(const std::filesystem::path& file);
const std::filesystem::path& tuningFile();

// Vendor, device, driver, HELIOS_KERNEL_VERSION and the limits the defaults derive from.
tuning::DeviceFacts deviceFacts(const vk::Device& device);

// The device's record: defaults -> the device's file in vk::cacheDirectory() -> tuningFile() -> environment,
// resolved for a device of `computeUnits` units. deviceTuning: the one its profile (device_profile.hpp)
// holds.
tuning::Tuning resolveDeviceTuning(const vk::Device& device, uint32_t computeUnits);
const tuning::Tuning& deviceTuning(const vk::Device& device);

// Re-reads the device's record through every layer (after a tuner wrote its file).
const tuning::Tuning& reloadDeviceTuning(const vk::Device& device);
// Replaces the device's record for the rest of the process (the tuner's candidates; a test's record).
void setDeviceTuning(const vk::Device& device, tuning::Tuning record);

// The record's key for a GEMM of these sizes and layout.
tuning::GemmShape gemmShape(uint32_t M, uint32_t N, uint32_t K, uint32_t batch, bool transA, bool transB,
                            bool f16Out);

} // namespace helios::ops
