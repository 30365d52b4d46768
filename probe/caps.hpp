#pragma once
// What a physical device can do for compute kernels, as plain data: filled either from the live device
// (queryCaps) or from a captured fixture (probe/json.hpp), so scoring and formatting never touch Vulkan.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <volk.h>

#include "probe/selftest.hpp"

namespace helios::probe {

enum class DeviceType { Other, IntegratedGpu, DiscreteGpu, VirtualGpu, Cpu };

// "integrated-gpu", "discrete-gpu", "virtual-gpu", "cpu", "other".
std::string_view deviceTypeName(DeviceType type);
// Inverse of deviceTypeName; false when `name` is not one of those.
bool parseDeviceType(std::string_view name, DeviceType& out);
DeviceType deviceTypeFromVk(VkPhysicalDeviceType type);

// One entry of vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR. Component types and scope are the
// names from componentTypeName / scopeName ("float16", "subgroup", ...).
struct CoopMatrixProperty {
  uint32_t M = 0, N = 0, K = 0;
  std::string A, B, C, Result;
  bool saturating = false;
  std::string scope;
  bool operator==(const CoopMatrixProperty&) const = default;
};

// One entry of vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV
// (VK_NV_cooperative_matrix2).
struct FlexibleDimensionsProperty {
  uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  std::string A, B, C, Result;
  bool saturatingAccumulation = false;
  std::string scope;
  uint32_t workgroupInvocations = 0;
  bool operator==(const FlexibleDimensionsProperty&) const = default;
};

// VkPhysicalDeviceCooperativeMatrix2FeaturesNV (VK_NV_cooperative_matrix2): which of its parts the device
// has. Helios' attention keeps its per-row maths on the accumulators only with reductions, conversions and
// per-element operations together.
struct CoopMatrix2Features {
  bool known = false; // queried live, or present in the capture (older captures lack it)
  bool workgroupScope = false, flexibleDimensions = false, reductions = false, conversions = false,
       perElementOperations = false, tensorAddressing = false, blockLoads = false;
  bool operator==(const CoopMatrix2Features&) const = default;
};

// VkPhysicalDeviceShaderBfloat16FeaturesKHR (VK_KHR_shader_bfloat16): the bf16 type in shaders, bf16 dot
// products, and bf16 components in cooperative matrices (whose configurations then list "bfloat16").
struct ShaderBFloat16 {
  bool known = false; // queried live, or present in the capture
  bool type = false, dotProduct = false, cooperativeMatrix = false;
  bool operator==(const ShaderBFloat16&) const = default;
};

// The device extensions the probe reports on, in report order.
inline constexpr std::array<std::string_view, 10> kRelevantExtensions = {
    "VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2",
    "VK_KHR_shader_bfloat16",    "VK_KHR_shader_float16_int8",
    "VK_KHR_16bit_storage",      "VK_EXT_subgroup_size_control",
    "VK_KHR_timeline_semaphore", "VK_KHR_pipeline_executable_properties",
    "VK_EXT_memory_budget",      "VK_KHR_push_descriptor"};

// The device's compute units (NVIDIA SMs, AMD compute units, Arm shader cores) and how many subgroups each
// holds at once, from whichever vendor extension reports them: VK_NV_shader_sm_builtins,
// VK_AMD_shader_core_properties(2), VK_ARM_shader_core_builtins. Intel's drivers (Mesa ANV) have none, nor
// does lavapipe: `source` stays "" and the counts 0 (the engine then assumes a default; matmul_policy.hpp).
struct ShaderCores {
  std::string source;            // the extension the counts came from; "" when none reports them
  uint32_t computeUnits = 0;     // SMs / active CUs / shader cores; 0 when unknown
  uint32_t subgroupsPerUnit = 0; // resident warps or wavefronts per unit; 0 when unreported
  // VK_AMD_shader_core_properties' layout (0 on other vendors).
  uint32_t shaderEngines = 0, arraysPerEngine = 0, unitsPerArray = 0, simdPerUnit = 0, wavefrontsPerSimd = 0;
  bool known() const { return computeUnits != 0; }
  bool operator==(const ShaderCores&) const = default;
};

struct DeviceCaps {
  std::string name;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  DeviceType type = DeviceType::Other;
  std::string driver;      // one line for display: "<driver name> <driver info>", or as captured
  std::string driver_name; // VkPhysicalDeviceDriverProperties::driverName ("" when unknown)
  std::string driver_info; // VkPhysicalDeviceDriverProperties::driverInfo
  uint32_t driver_version_raw = 0;
  std::string driver_version; // decoded per vendor (decodeDriverVersion)
  std::string api_version;    // "1.4.309"
  uint32_t subgroup_size = 0, min_subgroup_size = 0, max_subgroup_size = 0;
  uint32_t max_compute_shared_memory = 0; // bytes
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  std::vector<std::string> extensions; // the members of kRelevantExtensions the device has
  bool shader_float16 = false;         // shaderFloat16 feature
  bool storage_buffer_16bit = false;   // storageBuffer16BitAccess feature
  std::vector<CoopMatrixProperty> coop_khr;
  std::vector<FlexibleDimensionsProperty> coop_nv2;
  CoopMatrix2Features coop_nv2_features; // all false without VK_NV_cooperative_matrix2
  ShaderBFloat16 shader_bfloat16;        // all false without VK_KHR_shader_bfloat16
  ShaderCores shader_cores;              // unknown without a vendor extension (or in older captures)
  std::string device_uuid;               // VkPhysicalDeviceIDProperties::deviceUUID, 32 hex digits
  SelfTestResult coop_self_test;         // the cached coop self-test result (live: the cache file's)
  std::string source;                    // where captured data came from; "" for a live query

  bool hasExtension(std::string_view ext) const;
  bool operator==(const DeviceCaps&) const = default;
};

// VkComponentTypeKHR -> "float16", "bfloat16", "uint8", ...; unlisted values give "unknown(<n>)".
std::string componentTypeName(uint32_t vkComponentType);
// True for every name componentTypeName can return (including "unknown(<n>)").
bool isComponentTypeName(std::string_view name);
// VkScopeKHR -> "device", "workgroup", "subgroup", "queuefamily"; others "unknown(<n>)".
std::string scopeName(uint32_t vkScope);
bool isScopeName(std::string_view name);

// NVIDIA packs driverVersion as 10.8.8.6 bits ("580.159.4.0"); everyone else as VK_MAKE_VERSION.
std::string decodeDriverVersion(uint32_t vendorId, uint32_t raw);
// VK_API_VERSION_MAJOR.MINOR.PATCH.
std::string apiVersionString(uint32_t apiVersion);
// "0x10de".
std::string hexId(uint32_t id);

// Reads everything above from a live device. volkLoadInstance(instance) must have run (helios::vk::Instance
// does it); only structures whose extension or core version the device has are chained.
DeviceCaps queryCaps(VkInstance instance, VkPhysicalDevice device);
// The device's VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2 lists (empty when the entry point is
// missing). The entry points come from volk, else from vkGetInstanceProcAddr(instance).
std::vector<CoopMatrixProperty> queryCoopMatrixProperties(VkInstance instance, VkPhysicalDevice device);
std::vector<FlexibleDimensionsProperty> queryFlexibleDimensions(VkInstance instance, VkPhysicalDevice device);
// VkPhysicalDeviceIDProperties::deviceUUID as 32 hex digits ("" before Vulkan 1.1).
std::string queryDeviceUuid(VkInstance instance, VkPhysicalDevice device);
// The device's compute units from the first vendor extension it has (NV, then AMD, then Arm); properties
// only, so the extensions need not be enabled on a VkDevice.
ShaderCores queryShaderCores(VkInstance instance, VkPhysicalDevice device);

} // namespace helios::probe
