#pragma once
// Host memory the process already has (memory another process maps too, say) used as a GPU buffer through
// VK_EXT_external_memory_host: the GPU reads and writes it over the bus, with no staging copy on the host.
#include "engine/vk/buffer.hpp"
#include "engine/vk/device.hpp"

#include <string_view>

namespace helios::vk {

class ImportedHostBuffer {
public:
  ImportedHostBuffer() = default;
  // `host` and `bytes` must be multiples of device.hostImportAlignment(); throws (VulkanError naming the
  // VkResult when the driver refuses the memory: some refuse file-backed mappings).
  ImportedHostBuffer(const Device& device, void* host, VkDeviceSize bytes, std::string_view what);
  ImportedHostBuffer(ImportedHostBuffer&& other) noexcept;
  ImportedHostBuffer& operator=(ImportedHostBuffer&& other) noexcept;
  ImportedHostBuffer(const ImportedHostBuffer&) = delete;
  ImportedHostBuffer& operator=(const ImportedHostBuffer&) = delete;
  ~ImportedHostBuffer();

  BufferRange range() const { return {buffer_, 0, bytes_}; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

private:
  void release();
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize bytes_ = 0;
};

// Whether [host, host + bytes) can be imported on `device` (extension present, both aligned).
bool canImportHost(const Device& device, const void* host, VkDeviceSize bytes);

} // namespace helios::vk
