// The live device's profile (device_profile.hpp), built once per physical device and kept for the process:
// the one place that holds what the engine derives from a device (its Tuning record, compute units, coop
// facts, limits, subgroup arithmetic). The self-test's verdict is kept by coop_selftest.cpp: its checks run
// GEMMs on the very device whose profile asks for it.
#include "engine/ops/device_profile.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <volk.h>

#include "engine/ops/compute_units.hpp"
#include "engine/ops/coop_selftest.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/tuning/values.hpp"

namespace helios::ops {

namespace {

std::string toString(const tuning::MatShape& s) {
  return tuning::text(s);
}

// gemm.coopShape (HELIOS_COOP_SHAPE): the device's own f16 x f16 -> f32 subgroup shape `s` instead of the
// best one.
void forceShape(CoopDeviceInfo& info, const std::vector<probe::CoopMatrixProperty>& props,
                const tuning::MatShape& s) {
  const bool reported = std::any_of(props.begin(), props.end(), [&](const probe::CoopMatrixProperty& p) {
    return p.A == "float16" && p.B == "float16" && p.C == "float32" && p.Result == "float32" &&
           p.scope == "subgroup" && p.M == s.m && p.N == s.n && p.K == s.k;
  });
  if (!reported)
    throw std::invalid_argument("HELIOS_COOP_SHAPE=" + toString(s) +
                                ": the device reports no such f16 x f16 -> f32 subgroup shape");
  info.coopM = s.m, info.coopN = s.n, info.coopK = s.k;
}

// The live device's coop facts with the record's device-wide switches (gemm.coop2, coopShape, coopEmulate,
// coopSubgroup) applied; no self-test.
CoopDeviceInfo queryCoopDevice(const vk::Device& device, const tuning::GemmTuning& tuned,
                               uint32_t computeUnits) {
  // The probe's list readers; the live instance's entry points are already loaded into volk.
  std::vector<probe::CoopMatrixProperty> props;
  if (device.features().coopMatrixKhr)
    props = probe::queryCoopMatrixProperties(VK_NULL_HANDLE, device.physical());
  // The subgroup size both coop families are generated for and the pipelines require.
  const uint32_t subgroupSize = coopSubgroupSize(device.subgroupSize(), device.minSubgroupSize(),
                                                 device.maxSubgroupSize(), device.subgroupSizeControllable());
  CoopDeviceInfo info =
      coopDeviceFromProperties(props, subgroupSize, device.limits().maxComputeSharedMemorySize);
  info.computeUnits = computeUnits;
  if (info.coopMatrix) {
    if (device.features().coopMatrixNv2)
      info.workgroupShapes =
          workgroupShapesFromProperties(probe::queryFlexibleDimensions(VK_NULL_HANDLE, device.physical()));
    if (!info.workgroupShapes.empty()) {
      VkPhysicalDeviceCooperativeMatrix2PropertiesNV p2{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
      VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p2};
      vkGetPhysicalDeviceProperties2(device.physical(), &props2);
      info.workgroupMaxDimension = p2.cooperativeMatrixFlexibleDimensionsMaxDimension;
      std::erase_if(info.workgroupShapes, [&](const codegen::WorkgroupCoopShape& s) {
        return s.invocations > p2.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
      });
    }
    // Opt-in (gemm.coop2, HELIOS_COOP2=1): on the H100 the workgroup-scope kernel ran slower than the
    // subgroup-scope one (bench/results/2026-11-25-h100-gemm-final.json).
    info.nv2Shapes = info.workgroupShapes;
    if (!tuned.coop2.value) info.workgroupShapes.clear();
  }
  const std::optional<tuning::MatShape>& shape = tuned.coopShape.value;
  if (shape && info.coopMatrix) forceShape(info, props, *shape);
  if (shape && !info.coopMatrix)
    throw std::invalid_argument("HELIOS_COOP_SHAPE=" + toString(*shape) +
                                ": the device has no cooperative matrices");
  // bf16 coop matrices at the shape in use, where the device enables them (VK_KHR_shader_bfloat16).
  const auto& f = device.features();
  info.bf16 = info.coopMatrix && f.shaderBFloat16CooperativeMatrix && f.shaderInt16 &&
              listsBF16At(props, info.coopM, info.coopN, info.coopK);
  info.deviceScope = f.vulkanMemoryModelDeviceScope;
  if (tuned.coopEmulate.value) lowerCoop(info, *tuned.coopEmulate.value);
  // The kernels need f16 storage, and a subgroup size they support that the pipeline can count on.
  if (!f.shaderFloat16 || !f.storageBuffer16BitAccess || !subgroupSize) info.coopMatrix = false;
  info = withRegisterPlan(info, device.properties().vendorID, device.minSubgroupSize(),
                          device.maxSubgroupSize());
  if (const uint32_t sg = tuned.coopSubgroup.value; sg && info.coopMatrix) info.subgroupSize = sg;
  return info;
}

bool querySubgroupArithmetic(const vk::Device& device) {
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sg};
  vkGetPhysicalDeviceProperties2(device.physical(), &p2);
  return (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
         (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
         (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
}

struct Stored {
  tuning::Tuning record;
  DeviceProfile profile; // profile.tuning points at record
};

std::mutex& storeMutex() {
  static std::mutex m;
  return m;
}
std::map<VkPhysicalDevice, Stored>& store() {
  static std::map<VkPhysicalDevice, Stored> s;
  return s;
}

// Everything the profile holds, queried once (nothing here runs a kernel).
void build(Stored& s, const vk::Device& device) {
  const uint32_t units = deviceComputeUnits(device);
  s.record = resolveDeviceTuning(device, units);
  DeviceProfile& p = s.profile;
  p.name = device.properties().deviceName;
  p.tuning = &s.record;
  p.coop = queryCoopDevice(device, s.record.gemm, units);
  const VkPhysicalDeviceLimits& l = device.limits();
  p.limits.maxSharedBytes = l.maxComputeSharedMemorySize;
  p.limits.maxInvocations = std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0]);
  p.limits.subgroupSize = device.subgroupSize();
  p.limits.targetWorkgroups = units;
  p.subgroupArithmetic = querySubgroupArithmetic(device);
}

} // namespace

const DeviceProfile& storedDeviceProfile(const vk::Device& device) {
  std::lock_guard lock(storeMutex());
  auto [it, fresh] = store().try_emplace(device.physical());
  if (fresh) {
    try {
      build(it->second, device);
    } catch (...) {
      store().erase(it);
      throw;
    }
  }
  return it->second.profile;
}

DeviceProfile deviceProfile(const vk::Device& device) {
  DeviceProfile p = storedDeviceProfile(device);
  // HELIOS_COOP and the per-device self-test (coop_selftest.hpp), outside the lock: the test runs GEMMs.
  if (p.coop.coopMatrix && !coopTrusted(device, p.coop)) p.coop.coopMatrix = false;
  return p;
}

CoopDeviceInfo coopDeviceInfo(const vk::Device& device) {
  return deviceProfile(device).coop;
}

tuning::Tuning& deviceRecord(const vk::Device& device) {
  storedDeviceProfile(device);
  std::lock_guard lock(storeMutex());
  return store().at(device.physical()).record;
}

bool anyDeviceProfile() {
  std::lock_guard lock(storeMutex());
  return !store().empty();
}

} // namespace helios::ops
