// queryCaps: reads a live physical device through volk's function pointers.
#include "probe/caps.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace helios::probe {

namespace {

std::vector<std::string> deviceExtensions(VkPhysicalDevice device) {
  uint32_t count = 0;
  if (vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkExtensionProperties> props(count);
  if (vkEnumerateDeviceExtensionProperties(device, nullptr, &count, props.data()) < 0) return {};
  props.resize(count);
  std::vector<std::string> names;
  for (const auto& p : props)
    names.emplace_back(p.extensionName);
  return names;
}

template <typename Fn> Fn instanceFn(VkInstance instance, Fn loaded, const char* name) {
  if (loaded) return loaded;
  return reinterpret_cast<Fn>(vkGetInstanceProcAddr(instance, name));
}

// Appends `s` to the pNext chain that `tail` ends.
template <typename S> void chain(void**& tail, S& s) {
  *tail = &s;
  tail = &s.pNext;
}

} // namespace

std::vector<CoopMatrixProperty> queryCoopMatrixProperties(VkInstance instance, VkPhysicalDevice device) {
  auto fn = instanceFn(instance, vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR,
                       "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  if (!fn) return {};
  uint32_t count = 0;
  if (fn(device, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkCooperativeMatrixPropertiesKHR> raw(count,
                                                    {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  if (fn(device, &count, raw.data()) < 0) return {};
  raw.resize(count);
  std::vector<CoopMatrixProperty> out;
  for (const auto& p : raw)
    out.push_back({p.MSize, p.NSize, p.KSize, componentTypeName(p.AType), componentTypeName(p.BType),
                   componentTypeName(p.CType), componentTypeName(p.ResultType),
                   p.saturatingAccumulation == VK_TRUE, scopeName(p.scope)});
  return out;
}

std::vector<FlexibleDimensionsProperty> queryFlexibleDimensions(VkInstance instance,
                                                                VkPhysicalDevice device) {
  auto fn = instanceFn(instance, vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV,
                       "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  if (!fn) return {};
  uint32_t count = 0;
  if (fn(device, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> raw(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
  if (fn(device, &count, raw.data()) < 0) return {};
  raw.resize(count);
  std::vector<FlexibleDimensionsProperty> out;
  for (const auto& p : raw)
    out.push_back({p.MGranularity, p.NGranularity, p.KGranularity, componentTypeName(p.AType),
                   componentTypeName(p.BType), componentTypeName(p.CType), componentTypeName(p.ResultType),
                   p.saturatingAccumulation == VK_TRUE, scopeName(p.scope), p.workgroupInvocations});
  return out;
}

std::string queryDeviceUuid(VkInstance instance, VkPhysicalDevice device) {
  auto getProps2 = instanceFn(instance, vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
  if (!getProps2) return {};
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &id};
  getProps2(device, &props);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : id.deviceUUID)
    out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

ShaderCores queryShaderCores(VkInstance instance, VkPhysicalDevice device) {
  auto getProps2 = instanceFn(instance, vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
  if (!getProps2) return {};
  const auto all = deviceExtensions(device);
  auto has = [&](std::string_view ext) {
    for (const auto& e : all)
      if (e == ext) return true;
    return false;
  };
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceShaderCoreProperties2AMD amd2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
  VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
  const bool hasNv = has("VK_NV_shader_sm_builtins"), hasAmd = has("VK_AMD_shader_core_properties"),
             hasAmd2 = has("VK_AMD_shader_core_properties2"), hasArm = has("VK_ARM_shader_core_builtins");
  if (!hasNv && !hasAmd && !hasArm) return {};
  void** tail = &props.pNext;
  if (hasNv) chain(tail, nv);
  if (hasAmd) chain(tail, amd);
  if (hasAmd2) chain(tail, amd2);
  if (hasArm) chain(tail, arm);
  getProps2(device, &props);

  ShaderCores c;
  if (hasNv && nv.shaderSMCount) {
    c.source = "VK_NV_shader_sm_builtins";
    c.computeUnits = nv.shaderSMCount;
    c.subgroupsPerUnit = nv.shaderWarpsPerSM;
  } else if (hasAmd && amd.computeUnitsPerShaderArray) {
    // The layout's product counts harvested units too; properties2 gives the active ones.
    c.source = hasAmd2 && amd2.activeComputeUnitCount ? "VK_AMD_shader_core_properties2"
                                                      : "VK_AMD_shader_core_properties";
    c.computeUnits =
        hasAmd2 && amd2.activeComputeUnitCount
            ? amd2.activeComputeUnitCount
            : amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
    c.subgroupsPerUnit = amd.simdPerComputeUnit * amd.wavefrontsPerSimd;
    c.shaderEngines = amd.shaderEngineCount;
    c.arraysPerEngine = amd.shaderArraysPerEngineCount;
    c.unitsPerArray = amd.computeUnitsPerShaderArray;
    c.simdPerUnit = amd.simdPerComputeUnit;
    c.wavefrontsPerSimd = amd.wavefrontsPerSimd;
  } else if (hasArm && arm.shaderCoreCount) {
    c.source = "VK_ARM_shader_core_builtins";
    c.computeUnits = arm.shaderCoreCount;
    c.subgroupsPerUnit = arm.shaderWarpsPerCore;
  }
  return c;
}

DeviceCaps queryCaps(VkInstance instance, VkPhysicalDevice device) {
  if (!vkGetPhysicalDeviceProperties) throw std::logic_error("queryCaps: volk has not loaded the instance");
  DeviceCaps caps;
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(device, &base);
  const uint32_t api = base.apiVersion;
  const auto all = deviceExtensions(device);
  auto has = [&](std::string_view ext) {
    for (const auto& e : all)
      if (e == ext) return true;
    return false;
  };

  caps.name = base.deviceName;
  caps.vendor_id = base.vendorID;
  caps.device_id = base.deviceID;
  caps.type = deviceTypeFromVk(base.deviceType);
  caps.driver_version_raw = base.driverVersion;
  caps.driver_version = decodeDriverVersion(base.vendorID, base.driverVersion);
  caps.api_version = apiVersionString(api);
  caps.max_compute_shared_memory = base.limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i)
    caps.max_workgroup_size[i] = base.limits.maxComputeWorkGroupSize[i];
  caps.max_workgroup_invocations = base.limits.maxComputeWorkGroupInvocations;
  for (auto ext : kRelevantExtensions)
    if (has(ext)) caps.extensions.emplace_back(ext);

  auto getProps2 = instanceFn(instance, vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
  auto getFeats2 = instanceFn(instance, vkGetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
  if (api >= VK_API_VERSION_1_1 && getProps2 && getFeats2) {
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties sizeControl{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    const bool hasDriver = api >= VK_API_VERSION_1_2 || has("VK_KHR_driver_properties");
    const bool hasSizeControl = api >= VK_API_VERSION_1_3 || has("VK_EXT_subgroup_size_control");
    void** tail = &props.pNext;
    chain(tail, subgroup);
    if (hasDriver) chain(tail, driver);
    if (hasSizeControl) chain(tail, sizeControl);
    getProps2(device, &props);

    caps.subgroup_size = subgroup.subgroupSize;
    caps.min_subgroup_size = hasSizeControl ? sizeControl.minSubgroupSize : subgroup.subgroupSize;
    caps.max_subgroup_size = hasSizeControl ? sizeControl.maxSubgroupSize : subgroup.subgroupSize;
    if (hasDriver) {
      caps.driver_name = driver.driverName;
      caps.driver_info = driver.driverInfo;
    }

    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceShaderFloat16Int8Features f16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    const bool hasF16 = api >= VK_API_VERSION_1_2 || has("VK_KHR_shader_float16_int8");
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
    const bool hasCoop2 = has("VK_NV_cooperative_matrix2");
    const bool hasBF16 = has("VK_KHR_shader_bfloat16");
    tail = &feats.pNext;
    chain(tail, storage16); // core in 1.1
    if (hasF16) chain(tail, f16);
    if (hasCoop2) chain(tail, coop2);
    if (hasBF16) chain(tail, bf16);
    getFeats2(device, &feats);
    if (hasBF16)
      caps.shader_bfloat16 = {true, bf16.shaderBFloat16Type == VK_TRUE,
                              bf16.shaderBFloat16DotProduct == VK_TRUE,
                              bf16.shaderBFloat16CooperativeMatrix == VK_TRUE};
    caps.shader_float16 = hasF16 && f16.shaderFloat16 == VK_TRUE;
    caps.storage_buffer_16bit = storage16.storageBuffer16BitAccess == VK_TRUE;
    if (hasCoop2)
      caps.coop_nv2_features = {true,
                                coop2.cooperativeMatrixWorkgroupScope == VK_TRUE,
                                coop2.cooperativeMatrixFlexibleDimensions == VK_TRUE,
                                coop2.cooperativeMatrixReductions == VK_TRUE,
                                coop2.cooperativeMatrixConversions == VK_TRUE,
                                coop2.cooperativeMatrixPerElementOperations == VK_TRUE,
                                coop2.cooperativeMatrixTensorAddressing == VK_TRUE,
                                coop2.cooperativeMatrixBlockLoads == VK_TRUE};
  }
  caps.driver = caps.driver_name.empty() ? caps.driver_version : caps.driver_name;
  if (!caps.driver_info.empty()) caps.driver += " " + caps.driver_info;

  if (has("VK_KHR_cooperative_matrix")) caps.coop_khr = queryCoopMatrixProperties(instance, device);
  if (has("VK_NV_cooperative_matrix2")) caps.coop_nv2 = queryFlexibleDimensions(instance, device);
  if (api >= VK_API_VERSION_1_1) {
    caps.shader_cores = queryShaderCores(instance, device);
    caps.device_uuid = queryDeviceUuid(instance, device);
  }
  return caps;
}

} // namespace helios::probe
