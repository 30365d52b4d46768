#include "engine/vk/buffer.hpp"

#include <utility>

namespace helios::vk {

Buffer::Buffer(Allocator& allocator, VkDeviceSize bytes, MemoryKind kind, std::string_view what)
    : allocator_(&allocator), allocation_(allocator.allocate(bytes, kind, what)), bytes_(bytes) {}

Buffer::Buffer(Buffer&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)), allocation_(std::exchange(other.allocation_, {})),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    allocation_ = std::exchange(other.allocation_, {});
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Buffer::~Buffer() {
  release();
}

void Buffer::release() {
  if (allocator_ && allocation_) allocator_->free(allocation_);
  allocator_ = nullptr;
  allocation_ = {};
}

} // namespace helios::vk
