#include "engine/autograd/workspace.hpp"

#include <algorithm>

namespace helios::autograd {

vk::BufferRange Workspace::allocate(VkDeviceSize bytes, std::string_view what) {
  if (arena_.perRequest()) return arena_.allocate(bytes, what); // a planned step: the plan places each one
  const VkDeviceSize size = (std::max<VkDeviceSize>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  // First fit in chunk order; chunks too small for this request are skipped (deterministically).
  while (chunk_ < chunks_.size() && offset_ + size > chunks_[chunk_].size) {
    ++chunk_;
    offset_ = 0;
  }
  if (chunk_ == chunks_.size()) {
    vk::BufferRange c = arena_.allocate(std::max(size, chunkBytes_), what);
    c.size = std::max(size, chunkBytes_);
    chunks_.push_back(c);
    offset_ = 0;
  }
  vk::BufferRange r = chunks_[chunk_];
  r.offset += offset_;
  r.size = bytes;
  offset_ += size;
  VkDeviceSize live = offset_;
  for (size_t i = 0; i < chunk_; ++i)
    live += chunks_[i].size;
  peak_ = std::max(peak_, live);
  return r;
}

} // namespace helios::autograd
