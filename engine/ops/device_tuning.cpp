#include "engine/ops/device_tuning.hpp"

#include <helios/kernel_version.hpp>
#include <map>
#include <mutex>
#include <stdexcept>

#include "engine/ops/compute_units.hpp"
#include "engine/tuning/resolve.hpp"
#include "engine/vk/pipeline.hpp"

namespace helios::ops {

namespace {

std::mutex& tuningMutex() {
  static std::mutex m;
  return m;
}
std::map<VkPhysicalDevice, tuning::Tuning>& records() {
  static std::map<VkPhysicalDevice, tuning::Tuning> r;
  return r;
}
std::filesystem::path& explicitFile() {
  static std::filesystem::path f;
  return f;
}

// Sets `dst` from `f` where a file, --tuning or the environment set it.
template <class T, class U> void take(U& dst, const tuning::Field<T>& f) {
  if (f.source != tuning::Source::Default) dst = static_cast<U>(f.value);
}

} // namespace

void setTuningFile(const std::filesystem::path& file) {
  std::lock_guard lock(tuningMutex());
  if (!records().empty())
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

namespace {

tuning::Tuning resolveFor(const vk::Device& device) {
  tuning::ResolveOptions o;
  o.cacheDir = vk::cacheDirectory();
  o.explicitFile = explicitFile();
  o.env = tuning::processEnvironment();
  return tuning::resolveTuning(deviceFacts(device), o);
}

} // namespace

const tuning::Tuning& deviceTuning(const vk::Device& device) {
  std::lock_guard lock(tuningMutex());
  auto it = records().find(device.physical());
  if (it == records().end()) it = records().emplace(device.physical(), resolveFor(device)).first;
  return it->second; // std::map nodes stay put
}

const tuning::Tuning& reloadDeviceTuning(const vk::Device& device) {
  tuning::Tuning fresh = resolveFor(device);
  std::lock_guard lock(tuningMutex());
  return records()[device.physical()] = std::move(fresh);
}

void setDeviceTuning(const vk::Device& device, tuning::Tuning record) {
  std::lock_guard lock(tuningMutex());
  records()[device.physical()] = std::move(record);
}

void applyTuning(CoopPolicyConfig& c, const tuning::Tuning& t) {
  const tuning::GemmTuning& g = t.gemm;
  take(c.fillWorkgroups, g.fillWorkgroups);
  take(c.paddingCap, g.paddingCap);
  take(c.minFlops, g.minFlops);
  take(c.allowPadding, g.allowPadding);
  take(c.allowRewrite, g.allowRewrite);
  take(c.allowSplitK, g.allowSplitK);
  take(c.boundedMinFlops, g.boundedMinFlops);
  take(c.boundedMaxFlops, g.boundedMaxFlops);
  take(c.boundedCrosswiseA, g.crosswiseA);
  take(c.boundedCrosswiseB, g.crosswiseB);
  take(c.underWaveSubgroups, g.underWaveSubgroups);
  take(c.edgeShift, g.edgeShift);
  take(c.edgeShiftScalar, g.edgeShiftScalar);
  take(c.maxKSlices, g.maxKSlices);
  take(c.minSlicedSteps, g.minSlicedSteps);
  take(c.minSliceSteps, g.minSliceSteps);
  take(c.busySliceSteps, g.busySliceSteps);
  take(c.scalarBusySliceSteps, g.scalarBusySliceSteps);
  take(c.smallTileBK, g.smallTileBK);
  take(c.bandRows, g.bandRows);
  take(c.bandMinTiles, g.bandMinTiles);
  if (g.tilings.source != tuning::Source::Default) {
    c.tilings.clear();
    for (const tuning::CoopTile& tile : g.tilings.value)
      c.tilings.push_back(
          codegen::GemmCoopParams{}.setTiling(tile.bm, tile.bn, tile.bk, tile.rows, tile.cols, tile.stages));
  }
  using tuning::BoundedMode;
  if (g.bounded.value == BoundedMode::Never) c.allowBounded = false;
  if (g.bounded.value == BoundedMode::Always || g.bounded.value == BoundedMode::All ||
      g.bounded.value == BoundedMode::AllVectors)
    c.allowBounded = true, c.boundedMinFlops = 0, c.boundedMaxFlops = 1e300;
}

tuning::GemmShape gemmShape(uint32_t M, uint32_t N, uint32_t K, uint32_t batch, bool transA, bool transB,
                            bool f16Out) {
  return {M, N, K, std::max(batch, 1u), transA, transB, f16Out};
}

} // namespace helios::ops
