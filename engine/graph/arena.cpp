#include "engine/graph/arena.hpp"

#include <algorithm>

namespace helios::graph {

void StepArena::reset() {
  chunk_ = 0;
  offset_ = 0;
  used_ = 0;
}

vk::BufferRange StepArena::allocate(VkDeviceSize bytes, std::string_view what) {
  const VkDeviceSize align = ctx_.allocator().alignment();
  const VkDeviceSize size = (std::max<VkDeviceSize>(bytes, 1) + align - 1) / align * align;
  // First fit in chunk order; a chunk that is too small for this request is skipped for the rest of the step.
  while (chunk_ < chunks_.size() && offset_ + size > chunks_[chunk_].size()) {
    ++chunk_;
    offset_ = 0;
  }
  if (chunk_ == chunks_.size()) {
    chunks_.push_back(ctx_.buffer(std::max(size, chunkBytes_), what));
    offset_ = 0;
  }
  vk::BufferRange range = chunks_[chunk_].range();
  range.offset += offset_;
  range.size = bytes;
  offset_ += size;
  used_ += size;
  peak_ = std::max(peak_, used_);
  return range;
}

VkDeviceSize StepArena::reservedBytes() const {
  VkDeviceSize total = 0;
  for (const auto& c : chunks_)
    total += c.size();
  return total;
}

} // namespace helios::graph
