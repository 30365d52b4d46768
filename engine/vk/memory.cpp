#include "engine/vk/memory.hpp"

#include "engine/vk/error.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::vk {

namespace {

VkDeviceSize alignUp(VkDeviceSize value, VkDeviceSize alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::string humanBytes(VkDeviceSize bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20)) return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.0f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

// The most one allocation may hold: maxStorageBufferRange (what one kernel binding can span) or the driver's
// maxMemoryAllocationSize, whichever is smaller, aligned down.
VkDeviceSize maxBufferBytes(const Device& device, VkDeviceSize alignment) {
  return std::min<VkDeviceSize>(device.limits().maxStorageBufferRange, device.maxMemoryAllocationSize()) /
         alignment * alignment;
}

// "memory heap 0 (16 GiB, device-local)" for the heap that memory of `kind` comes from; its size in heapSize.
std::string heapOf(const VkPhysicalDeviceMemoryProperties& mp, uint32_t type, VkDeviceSize& heapSize) {
  if (type == UINT32_MAX) {
    heapSize = ~VkDeviceSize(0); // createBlock reports the missing memory type
    return "no heap";
  }
  const uint32_t heap = mp.memoryTypes[type].heapIndex;
  heapSize = mp.memoryHeaps[heap].size;
  return fmt::format("memory heap {} ({}{})", heap, humanBytes(heapSize),
                     mp.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? ", device-local" : "");
}

// A request larger than its whole heap, or than one kernel binding can span, is refused with
// std::length_error naming the size, the request, the heap or the limit -- before the driver is asked.
void refuseImpossible(const Device& device, const std::string& heap, VkDeviceSize heapSize,
                      VkDeviceSize maxBytes, VkDeviceSize size, MemoryKind kind, std::string_view what) {
  const std::string context = fmt::format("allocating {} ({} bytes) {} buffer for {}", humanBytes(size), size,
                                          memoryKindName(kind), what);
  if (size > heapSize)
    throw std::length_error(
        fmt::format("{}: larger than the whole {} of {}; it cannot succeed", context, heap, device.name()));
  if (size > maxBytes && size > device.maxMemoryAllocationSize())
    throw std::length_error(
        fmt::format("{}: above the device's maxMemoryAllocationSize of {} bytes ({}), the "
                    "most one allocation may hold; split the tensor or shrink the shapes",
                    context, device.maxMemoryAllocationSize(), humanBytes(device.maxMemoryAllocationSize())));
  if (size > maxBytes)
    throw std::length_error(fmt::format("{}: above the device's maxStorageBufferRange of {} bytes ({}), the "
                                        "most one kernel binding can span; "
                                        "split the tensor or shrink the shapes",
                                        context, device.limits().maxStorageBufferRange,
                                        humanBytes(device.limits().maxStorageBufferRange)));
}

} // namespace

const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::DeviceLocal:
    return "device-local";
  case MemoryKind::Upload:
    return "upload";
  case MemoryKind::Readback:
    return "readback";
  }
  return "?";
}

Allocator::Allocator(const Device& device, VkDeviceSize blockSize) : device_(device), blockSize_(blockSize) {
  vkGetPhysicalDeviceMemoryProperties(device.physical(), &memoryProperties_);
  // 16 bytes at least so that vector loads of any offset are aligned.
  alignment_ = std::max<VkDeviceSize>(device.limits().minStorageBufferOffsetAlignment, 16);
  // Every block is bound whole by some kernel, so no block may outgrow what one binding can span.
  blockSize_ = std::min(blockSize_, maxBufferBytes(device, alignment_));
}

Allocator::~Allocator() {
  for (auto& block : blocks_) {
    if (block->mapped) vkUnmapMemory(device_.handle(), block->memory);
    vkDestroyBuffer(device_.handle(), block->buffer, nullptr);
    vkFreeMemory(device_.handle(), block->memory, nullptr);
  }
}

uint32_t Allocator::memoryTypeFor(uint32_t typeBits, MemoryKind kind) const {
  const VkMemoryPropertyFlags hostVisible =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  std::vector<VkMemoryPropertyFlags> wanted;
  switch (kind) {
  case MemoryKind::DeviceLocal:
    wanted = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0};
    break;
  case MemoryKind::Upload:
    wanted = {hostVisible};
    break;
  case MemoryKind::Readback:
    wanted = {hostVisible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, hostVisible};
    break;
  }
  for (VkMemoryPropertyFlags flags : wanted)
    for (uint32_t i = 0; i < memoryProperties_.memoryTypeCount; ++i)
      if ((typeBits & (1u << i)) && (memoryProperties_.memoryTypes[i].propertyFlags & flags) == flags)
        return i;
  return UINT32_MAX;
}

bool Allocator::hostVisible(MemoryKind kind) const {
  const uint32_t type = memoryTypeFor(~0u, kind);
  return type != UINT32_MAX &&
         (memoryProperties_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
}

bool Allocator::onDevice(MemoryKind kind) const {
  const uint32_t type = memoryTypeFor(~0u, kind), deviceType = memoryTypeFor(~0u, MemoryKind::DeviceLocal);
  if (type == UINT32_MAX) return false;
  const uint32_t heap = memoryProperties_.memoryTypes[type].heapIndex;
  return (memoryProperties_.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ||
         (deviceType != UINT32_MAX && memoryProperties_.memoryTypes[deviceType].heapIndex == heap);
}

MemoryPlacement Allocator::placement() const {
  return {.deviceLocalMapped = hostVisible(MemoryKind::DeviceLocal),
          .uploadOnDevice = onDevice(MemoryKind::Upload),
          .readbackOnDevice = onDevice(MemoryKind::Readback)};
}

void Allocator::count(const Block& block, int64_t bytes) {
  stats_.bytesInUse += bytes;
  stats_.peakBytesInUse = std::max(stats_.peakBytesInUse, stats_.bytesInUse);
  if (!block.onDevice) return;
  stats_.deviceBytesInUse += bytes;
  stats_.devicePeakBytesInUse = std::max(stats_.devicePeakBytesInUse, stats_.deviceBytesInUse);
}

uint32_t Allocator::createBlock(VkDeviceSize size, MemoryKind kind, std::string_view what) {
  auto block = std::make_unique<Block>();
  block->size = size;
  block->kind = kind;
  block->onDevice = onDevice(kind);
  VkDeviceSize heapSize = 0;
  const std::string context =
      fmt::format("allocating {} {} buffer for {} from {}", humanBytes(size), memoryKindName(kind), what,
                  heapOf(memoryProperties_, memoryTypeFor(~0u, kind), heapSize));

  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_.handle(), &info, nullptr, &block->buffer), context);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_.handle(), block->buffer, &req);
  uint32_t type = memoryTypeFor(req.memoryTypeBits, kind);
  if (type == UINT32_MAX) {
    vkDestroyBuffer(device_.handle(), block->buffer, nullptr);
    throw VulkanError(VK_ERROR_FEATURE_NOT_PRESENT, context + " (no suitable memory type)");
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkResult result = vkAllocateMemory(device_.handle(), &alloc, nullptr, &block->memory);
  if (result != VK_SUCCESS) {
    vkDestroyBuffer(device_.handle(), block->buffer, nullptr);
    throwVulkanError(result, context);
  }
  check(vkBindBufferMemory(device_.handle(), block->buffer, block->memory, 0), context);
  if (memoryProperties_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    void* ptr = nullptr;
    result = vkMapMemory(device_.handle(), block->memory, 0, VK_WHOLE_SIZE, 0, &ptr);
    // lavapipe (Mesa 25.0) answers VK_SUCCESS with MAP_FAILED when its mmap fails (the address space left
    // under ulimit -v): a write through it would crash, so it is refused as the failure it is.
    if (result == VK_SUCCESS && (ptr == nullptr || ptr == reinterpret_cast<void*>(intptr_t(-1))))
      result = VK_ERROR_MEMORY_MAP_FAILED; // vkFreeMemory below unmaps what is mapped
    if (result != VK_SUCCESS) {
      vkDestroyBuffer(device_.handle(), block->buffer, nullptr);
      vkFreeMemory(device_.handle(), block->memory, nullptr);
      throwVulkanError(result,
                       context + " (mapping it: the driver gave no address; out of host address space?)");
    }
    block->mapped = static_cast<std::byte*>(ptr);
  }
  block->freeRanges[0] = size;
  stats_.bytesReserved += size;
  stats_.largestBlock = std::max<uint64_t>(stats_.largestBlock, size);
  if (block->onDevice) stats_.deviceBytesReserved += size;
  stats_.blocks++;
  blocks_.push_back(std::move(block));
  return static_cast<uint32_t>(blocks_.size() - 1);
}

Allocation Allocator::allocate(VkDeviceSize size, MemoryKind kind, std::string_view what) {
  VkDeviceSize heapSize = 0;
  const std::string heap = heapOf(memoryProperties_, memoryTypeFor(~0u, kind), heapSize);
  refuseImpossible(device_, heap, heapSize, maxBufferBytes(device_, alignment_), size, kind,
                   what); // before alignUp can wrap
  size = alignUp(std::max<VkDeviceSize>(size, 1), alignment_);
  auto tryBlock = [&](uint32_t index) -> Allocation {
    Block& block = *blocks_[index];
    if (block.kind != kind) return {};
    for (auto it = block.freeRanges.begin(); it != block.freeRanges.end(); ++it) {
      if (it->second < size) continue;
      VkDeviceSize offset = it->first, rest = it->second - size;
      block.freeRanges.erase(it);
      if (rest) block.freeRanges[offset + size] = rest;
      return {block.buffer, offset, size, block.mapped ? block.mapped + offset : nullptr, index, kind};
    }
    return {};
  };
  Allocation result;
  for (uint32_t i = 0; i < blocks_.size() && !result; ++i)
    result = tryBlock(i);
  if (!result) result = tryBlock(createBlock(std::max(size, blockSize_), kind, what));
  count(*blocks_[result.block], static_cast<int64_t>(size));
  stats_.allocations++;
  return result;
}

void Allocator::free(const Allocation& a) {
  if (!a) return;
  auto& ranges = blocks_.at(a.block)->freeRanges;
  auto [it, inserted] = ranges.emplace(a.offset, a.size);
  // Coalesce with the following and preceding free ranges.
  auto next = std::next(it);
  if (next != ranges.end() && it->first + it->second == next->first) {
    it->second += next->second;
    ranges.erase(next);
  }
  if (it != ranges.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      ranges.erase(it);
    }
  }
  count(*blocks_.at(a.block), -static_cast<int64_t>(a.size));
}

} // namespace helios::vk
