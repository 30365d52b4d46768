#pragma once
// The logical device: one compute queue, and every optional feature the kernels can use, enabled when
// present.
#include "engine/vk/instance.hpp"

#include <string>

namespace helios::vk {

// What was enabled on the logical device (each only when the physical device supports it).
struct DeviceFeatures {
  bool shaderFloat16 = false;
  bool storageBuffer16BitAccess = false;
  bool shaderInt64 = false;
  bool shaderInt8 = false;                      // 8-bit integer arithmetic (int8 cooperative matrices)
  bool shaderInt16 = false;                     // 16-bit integers (bf16 storage is held as uint16 bits)
  bool shaderBFloat16Type = false;              // VK_KHR_shader_bfloat16: the bf16 type in shaders
  bool shaderBFloat16CooperativeMatrix = false; // ... and bf16 components in cooperative matrices
  bool subgroupSizeControl = false;
  bool computeFullSubgroups = false;
  bool timelineSemaphore = false;
  bool vulkanMemoryModel = false;
  bool vulkanMemoryModelDeviceScope = false; // Device-scope synchronisation under it (the K-sliced coop GEMM)
  bool coopMatrixKhr = false;                // VK_KHR_cooperative_matrix
  bool coopMatrixNv2 = false;                // VK_NV_cooperative_matrix2
  bool coopMatrixNv2RowOps = false;          // its reductions, per-element operations and use conversions
  bool pipelineExecutableInfo = false;       // VK_KHR_pipeline_executable_properties
  bool memoryBudget = false;                 // VK_EXT_memory_budget
  bool pushDescriptor = false;               // VK_KHR_push_descriptor (required)
  bool shaderAtomicFloatAdd = false;         // VK_EXT_shader_atomic_float (buffer float32 atomic add)
  bool externalMemoryHost = false;           // VK_EXT_external_memory_host (host memory imported as buffers)
};

class Device {
public:
  Device(const Instance& instance, VkPhysicalDevice physical);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queueFamily() const { return queueFamily_; }
  const DeviceFeatures& features() const { return features_; }
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  const VkPhysicalDeviceLimits& limits() const { return properties_.limits; }
  // The most one VkDeviceMemory may hold (Vulkan 1.1's maintenance3 limit; iGPU drivers set 2-4 GiB).
  VkDeviceSize maxMemoryAllocationSize() const { return maxMemoryAllocationSize_; }
  // Dry runs only (helios-train --plan-only --plan-binding-limit): plan memory as for a device whose kernel
  // bindings, and single allocations, span `bytes`. Nothing may be dispatched afterwards: the driver's real
  // limits still hold.
  void planAsBindingLimit(uint32_t bytes) {
    properties_.limits.maxStorageBufferRange = bytes;
    maxMemoryAllocationSize_ = bytes;
  }
  std::string name() const { return properties_.deviceName; }
  uint32_t subgroupSize() const { return subgroupSize_; }
  uint32_t minSubgroupSize() const { return minSubgroupSize_; }
  uint32_t maxSubgroupSize() const { return maxSubgroupSize_; }
  // Compute pipelines can require a subgroup size (VK_EXT_subgroup_size_control for the compute stage)...
  bool subgroupSizeControllable() const { return features_.subgroupSizeControl && requiredSizeCompute_; }
  // ... and `size` lies in [min, max].
  bool canRequireSubgroupSize(uint32_t size) const {
    return subgroupSizeControllable() && size >= minSubgroupSize_ && size <= maxSubgroupSize_;
  }
  // Alignment of host pointers and sizes imported through VK_EXT_external_memory_host (0 without it).
  VkDeviceSize hostImportAlignment() const { return hostImportAlignment_; }
  // Nanoseconds per timestamp tick; 0 when the queue cannot write timestamps.
  double timestampPeriodNs() const { return timestampPeriodNs_; }

private:
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  DeviceFeatures features_;
  VkPhysicalDeviceProperties properties_{};
  uint32_t subgroupSize_ = 0, minSubgroupSize_ = 0, maxSubgroupSize_ = 0;
  VkDeviceSize maxMemoryAllocationSize_ = ~VkDeviceSize(0);
  bool requiredSizeCompute_ = false; // requiredSubgroupSizeStages includes compute
  double timestampPeriodNs_ = 0;
  VkDeviceSize hostImportAlignment_ = 0;
};

} // namespace helios::vk
