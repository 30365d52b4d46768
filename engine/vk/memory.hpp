#pragma once
// Sub-allocation of buffers from a few large VkDeviceMemory blocks (one VkBuffer spans each block), so that
// tensors cost an offset, not an allocation. First-fit free lists with coalescing; oversized requests get a
// block of their own.
#include "engine/vk/device.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

namespace helios::vk {

enum class MemoryKind {
  DeviceLocal, // kernels' storage
  Upload,      // host-visible, written by the CPU, read by the GPU (staging in)
  Readback,    // host-visible and preferably cached, written by the GPU, read by the CPU (staging out)
};

const char* memoryKindName(MemoryKind kind);

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE; // the block's buffer
  VkDeviceSize offset = 0;          // where this allocation starts inside it
  VkDeviceSize size = 0;
  std::byte* mapped = nullptr; // host pointer when the memory is host-visible, else null
  uint32_t block = UINT32_MAX;
  MemoryKind kind = MemoryKind::DeviceLocal;
  explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

// Counts over every kind, and over the allocations whose memory lies in a device-local heap ("device
// memory": all of it on a CPU device or an integrated GPU; on a discrete GPU not the Upload and Readback
// buffers, which live in host memory).
struct MemoryStats {
  uint64_t bytesInUse = 0;
  uint64_t peakBytesInUse = 0;
  uint64_t bytesReserved = 0; // sum of block sizes (what the driver sees)
  uint64_t largestBlock = 0;  // the largest single allocation made so far
  uint32_t blocks = 0;
  uint64_t allocations = 0; // total allocate() calls so far
  uint64_t deviceBytesInUse = 0, devicePeakBytesInUse = 0, deviceBytesReserved = 0;
};

// Where each kind of buffer lives on a device: what an estimate of its device memory counts.
struct MemoryPlacement {
  bool deviceLocalMapped = false; // DeviceLocal buffers are host-visible: copies need no staging
  bool uploadOnDevice = false;    // Upload buffers come from a device-local heap
  bool readbackOnDevice = false;  // Readback buffers come from a device-local heap
};

class Allocator {
public:
  explicit Allocator(const Device& device, VkDeviceSize blockSize = 256ull << 20);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator();

  // `what` names the request in errors ("allocating 512 MiB device-local buffer for <what>: ...").
  Allocation allocate(VkDeviceSize size, MemoryKind kind, std::string_view what);
  void free(const Allocation& allocation);
  const MemoryStats& stats() const { return stats_; }
  VkDeviceSize alignment() const { return alignment_; }
  // Whether memory of `kind` is host-visible here (then its buffers are mapped and copies need no staging).
  bool hostVisible(MemoryKind kind) const;
  // Whether memory of `kind` comes from a device-local heap (or the heap DeviceLocal buffers come from).
  bool onDevice(MemoryKind kind) const;
  MemoryPlacement placement() const;

private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    MemoryKind kind = MemoryKind::DeviceLocal;
    bool onDevice = true; // in a device-local heap (MemoryStats' device counts)
    std::byte* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> freeRanges; // offset -> size
  };
  uint32_t createBlock(VkDeviceSize size, MemoryKind kind, std::string_view what);
  uint32_t memoryTypeFor(uint32_t typeBits, MemoryKind kind) const;
  void count(const Block& block, int64_t bytes); // bytes in use change by `bytes` (negative: freed)

  const Device& device_;
  VkDeviceSize blockSize_;
  VkDeviceSize alignment_;
  VkPhysicalDeviceMemoryProperties memoryProperties_{};
  std::vector<std::unique_ptr<Block>> blocks_;
  MemoryStats stats_;
};

} // namespace helios::vk
