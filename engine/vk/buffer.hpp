#pragma once
// A buffer is a sub-allocation: (block VkBuffer, offset, size). RAII returns the range to the allocator.
#include "engine/vk/memory.hpp"

#include <string_view>

namespace helios::vk {

// What a descriptor or a copy needs to name a region of GPU memory.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
};

// Bytes [offset, offset + size) of r.
inline BufferRange subrange(BufferRange r, VkDeviceSize offset, VkDeviceSize size) {
  r.offset += offset;
  r.size = size;
  return r;
}

class Buffer {
public:
  Buffer() = default;
  Buffer(Allocator& allocator, VkDeviceSize bytes, MemoryKind kind, std::string_view what);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  VkDeviceSize size() const { return bytes_; }
  BufferRange range() const { return {allocation_.buffer, allocation_.offset, bytes_}; }
  std::byte* mapped() const { return allocation_.mapped; } // null unless host-visible
  MemoryKind kind() const { return allocation_.kind; }
  explicit operator bool() const { return static_cast<bool>(allocation_); }

private:
  void release();
  Allocator* allocator_ = nullptr;
  Allocation allocation_;
  VkDeviceSize bytes_ = 0;
};

// A region of a Buffer someone else owns (one parameter inside a flat parameter buffer, say). The owner must
// outlive the slice and stay where it is.
struct BufferSlice {
  const Buffer* owner = nullptr;
  VkDeviceSize offset = 0, size = 0;
  BufferRange range() const { return subrange(owner->range(), offset, size); }
};

} // namespace helios::vk
