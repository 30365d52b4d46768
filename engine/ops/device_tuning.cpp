#include "engine/ops/device_tuning.hpp"

#include <helios/kernel_version.hpp>
#include <stdexcept>

#include "engine/ops/compute_units.hpp"
#include "engine/ops/device_profile.hpp"
#include "engine/tuning/resolve.hpp"
#include "engine/vk/pipeline.hpp"

namespace helios::ops {

namespace {

std::filesystem::path& explicitFile() {
  static std::filesystem::path f;
  return f;
}

} // namespace

void setTuningFile(const std::filesystem::path& file) {
  if (anyDeviceProfile())
    throw std::logic_error("setTuningFile(" + file.string() +
                           "): a device's tuning record is already in use");
  explicitFile() = file;
}

const std::filesystem::path& tuningFile() {
  return explicitFile();
}

tuning::DeviceFacts deviceFacts(const vk::Device& device) {
  const VkPhysicalDeviceProperties& p = device.properties();
  tuning::DeviceFacts f;
  f.key = {p.vendorID, p.deviceID, p.driverVersion, HELIOS_KERNEL_VERSION};
  f.name = p.deviceName;
  f.computeUnits = deviceComputeUnits(device);
  f.minSubgroup = device.minSubgroupSize();
  f.maxSubgroup = device.maxSubgroupSize();
  f.maxSharedBytes = device.limits().maxComputeSharedMemorySize;
  return f;
}

tuning::Tuning resolveDeviceTuning(const vk::Device& device, uint32_t computeUnits) {
  tuning::ResolveOptions o;
  o.cacheDir = vk::cacheDirectory();
  o.explicitFile = explicitFile();
  o.env = tuning::processEnvironment();
  tuning::DeviceFacts facts = deviceFacts(device);
  facts.computeUnits = computeUnits;
  return tuning::resolveTuning(facts, o);
}

const tuning::Tuning& deviceTuning(const vk::Device& device) {
  return *storedDeviceProfile(device).tuning;
}

const tuning::Tuning& reloadDeviceTuning(const vk::Device& device) {
  return deviceRecord(device) = resolveDeviceTuning(device, deviceComputeUnits(device));
}

void setDeviceTuning(const vk::Device& device, tuning::Tuning record) {
  deviceRecord(device) = std::move(record);
}

tuning::GemmShape gemmShape(uint32_t M, uint32_t N, uint32_t K, uint32_t batch, bool transA, bool transB,
                            bool f16Out) {
  return {M, N, K, std::max(batch, 1u), transA, transB, f16Out};
}

} // namespace helios::ops
