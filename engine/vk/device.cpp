#include "engine/vk/device.hpp"

#include "engine/vk/error.hpp"

#include <cstring>
#include <fmt/format.h>
#include <set>
#include <string>
#include <vector>

namespace helios::vk {

namespace {

std::set<std::string> deviceExtensions(VkPhysicalDevice physical) {
  uint32_t count = 0;
  check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr),
        "counting device extensions");
  std::vector<VkExtensionProperties> props(count);
  check(vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, props.data()),
        "listing device extensions");
  std::set<std::string> names;
  for (const auto& p : props)
    names.insert(p.extensionName);
  return names;
}

// Prefer a compute-only family (async compute on discrete GPUs), else any family with compute.
uint32_t pickComputeFamily(VkPhysicalDevice physical, uint32_t& timestampBits) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  int best = -1;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    bool computeOnly = !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best < 0 || (computeOnly && families[i].timestampValidBits > 0)) best = static_cast<int>(i);
  }
  if (best < 0) throw NoDevice("The selected Vulkan device has no compute queue.");
  timestampBits = families[static_cast<uint32_t>(best)].timestampValidBits;
  return static_cast<uint32_t>(best);
}

} // namespace

Device::Device(const Instance&, VkPhysicalDevice physical) : physical_(physical) {
  const auto extensions = deviceExtensions(physical);
  auto has = [&](const char* name) { return extensions.count(name) != 0; };

  // Query what the device supports, then enable the intersection with what Helios can use.
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR execProps{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  f11.pNext = &f12;
  f12.pNext = &f13;
  void** tail = &f13.pNext;
  auto chain = [&](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  if (has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) chain(coop);
  if (has(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)) chain(coop2);
  if (has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) chain(execProps);
  if (has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) chain(atomicFloat);
  if (has(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME)) chain(bf16);
  vkGetPhysicalDeviceFeatures2(physical, &f2);

  // Keep only what we use: copy the supported bits into fresh structs.
  VkPhysicalDeviceFeatures2 e2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features e13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  e2.pNext = &e11;
  e11.pNext = &e12;
  e12.pNext = &e13;
  e2.features.shaderInt64 = f2.features.shaderInt64;
  e2.features.shaderInt16 = f2.features.shaderInt16;
  e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
  e11.storagePushConstant16 = f11.storagePushConstant16;
  e12.shaderFloat16 = f12.shaderFloat16;
  e12.shaderInt8 = f12.shaderInt8;
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.timelineSemaphore = f12.timelineSemaphore;
  e12.vulkanMemoryModel = f12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
  e12.bufferDeviceAddress = f12.bufferDeviceAddress;
  e12.scalarBlockLayout = f12.scalarBlockLayout;
  // Subgroup operations on 8/16/64-bit types; the coop lowering shuffles 16-bit values as 32-bit words, so
  // it runs without this, but any kernel that asks for it is valid where the device has it.
  e12.shaderSubgroupExtendedTypes = f12.shaderSubgroupExtendedTypes;
  e13.subgroupSizeControl = f13.subgroupSizeControl;
  e13.computeFullSubgroups = f13.computeFullSubgroups;
  e13.synchronization2 = f13.synchronization2;
  e13.maintenance4 = f13.maintenance4;

  std::vector<const char*> enable;
  tail = &e13.pNext;
  if (has(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) {
    enable.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    features_.pushDescriptor = true;
  }
  if (coop.cooperativeMatrix) {
    enable.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    coop.pNext = nullptr;
    chain(coop);
    features_.coopMatrixKhr = true;
  }
  if (coop2.cooperativeMatrixWorkgroupScope || coop2.cooperativeMatrixFlexibleDimensions) {
    enable.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
    coop2.pNext = nullptr;
    chain(coop2);
    features_.coopMatrixNv2 = true;
    features_.coopMatrixNv2RowOps = coop2.cooperativeMatrixReductions && coop2.cooperativeMatrixConversions &&
                                    coop2.cooperativeMatrixPerElementOperations;
  }
  if (execProps.pipelineExecutableInfo) {
    enable.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    execProps.pNext = nullptr;
    chain(execProps);
    features_.pipelineExecutableInfo = true;
  }
  if (atomicFloat.shaderBufferFloat32AtomicAdd) {
    enable.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT only{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    atomicFloat = only;
    atomicFloat.shaderBufferFloat32AtomicAdd = VK_TRUE;
    chain(atomicFloat);
    features_.shaderAtomicFloatAdd = true;
  }
  if (bf16.shaderBFloat16Type) {
    // The bf16 type, and bf16 coop matrices where cooperative matrices are on (the bf16 GEMM and attention).
    enable.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
    VkPhysicalDeviceShaderBfloat16FeaturesKHR only{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
    only.shaderBFloat16Type = VK_TRUE;
    only.shaderBFloat16CooperativeMatrix = bf16.shaderBFloat16CooperativeMatrix && features_.coopMatrixKhr;
    bf16 = only;
    chain(bf16);
    features_.shaderBFloat16Type = true;
    features_.shaderBFloat16CooperativeMatrix = bf16.shaderBFloat16CooperativeMatrix == VK_TRUE;
  }
  if (has(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME)) {
    enable.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    features_.memoryBudget = true;
  }
  if (has(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
    enable.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    features_.externalMemoryHost = true;
  }

  features_.shaderFloat16 = e12.shaderFloat16;
  features_.storageBuffer16BitAccess = e11.storageBuffer16BitAccess;
  features_.shaderInt64 = e2.features.shaderInt64;
  features_.shaderInt8 = e12.shaderInt8;
  features_.shaderInt16 = e2.features.shaderInt16;
  features_.subgroupSizeControl = e13.subgroupSizeControl;
  features_.computeFullSubgroups = e13.computeFullSubgroups;
  features_.timelineSemaphore = e12.timelineSemaphore;
  features_.vulkanMemoryModel = e12.vulkanMemoryModel;
  features_.vulkanMemoryModelDeviceScope = e12.vulkanMemoryModelDeviceScope;

  VkPhysicalDeviceSubgroupSizeControlProperties sgc{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  sg.pNext = &sgc;
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostProps{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  if (features_.externalMemoryHost) sgc.pNext = &hostProps;
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  m3.pNext = &sg;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(physical, &p2);
  properties_ = p2.properties;
  maxMemoryAllocationSize_ = m3.maxMemoryAllocationSize;
  subgroupSize_ = sg.subgroupSize;
  minSubgroupSize_ = sgc.minSubgroupSize ? sgc.minSubgroupSize : sg.subgroupSize;
  maxSubgroupSize_ = sgc.maxSubgroupSize ? sgc.maxSubgroupSize : sg.subgroupSize;
  requiredSizeCompute_ = (sgc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  hostImportAlignment_ = features_.externalMemoryHost ? hostProps.minImportedHostPointerAlignment : 0;

  if (!features_.pushDescriptor)
    throw NoDevice(
        fmt::format("Device {} lacks VK_KHR_push_descriptor, which Helios needs.", properties_.deviceName));

  uint32_t timestampBits = 0;
  queueFamily_ = pickComputeFamily(physical, timestampBits);
  timestampPeriodNs_ = timestampBits > 0 ? static_cast<double>(properties_.limits.timestampPeriod) : 0.0;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = queueFamily_;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &e2;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queueInfo;
  info.enabledExtensionCount = static_cast<uint32_t>(enable.size());
  info.ppEnabledExtensionNames = enable.data();
  check(vkCreateDevice(physical, &info, nullptr, &device_),
        fmt::format("creating the logical device on {} (vkCreateDevice)", properties_.deviceName));
  volkLoadDevice(device_);
  vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);
}

Device::~Device() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
  }
}

} // namespace helios::vk
