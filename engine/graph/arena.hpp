#pragma once
// Step-scoped temporaries. A step asks for the same sizes in the same order every time, so after the first
// step every request is served from chunks that already exist: steady-state steps allocate nothing, and the
// ranges handed out are identical from step to step (which replayed command buffers rely on).
#include "engine/vk/context.hpp"

#include <string_view>
#include <vector>

namespace helios::graph {

class StepArena {
public:
  explicit StepArena(vk::Context& ctx, VkDeviceSize chunkBytes = 64ull << 20)
      : ctx_(ctx), chunkBytes_(chunkBytes) {}
  // Start handing out ranges from the beginning again (the previous step's temporaries are dead).
  void reset();
  vk::BufferRange allocate(VkDeviceSize bytes, std::string_view what);
  VkDeviceSize reservedBytes() const;
  VkDeviceSize peakBytes() const { return peak_; }

private:
  vk::Context& ctx_;
  VkDeviceSize chunkBytes_;
  std::vector<vk::Buffer> chunks_;
  size_t chunk_ = 0;
  VkDeviceSize offset_ = 0, used_ = 0, peak_ = 0;
};

} // namespace helios::graph
