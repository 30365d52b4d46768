#pragma once
// Step temporaries for the tape, carved out of a graph::StepArena in large chunks, with mark/rewind so that a
// checkpointed block can recompute its activations into the same memory block after block. The chunks are
// requested from the arena in the same order with the same sizes every step, and a step's requests to the
// workspace are identical from step to step, so every range handed out repeats exactly (replay-safe) and
// steady-state steps allocate nothing.
#include "engine/graph/arena.hpp"

#include <string_view>
#include <vector>

namespace helios::autograd {

class Workspace {
public:
  static constexpr VkDeviceSize kAlignment = 256; // every range starts 256-byte aligned inside its chunk

  explicit Workspace(graph::StepArena& arena, VkDeviceSize chunkBytes = 32ull << 20)
      : arena_(arena), chunkBytes_(chunkBytes) {}
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A range of exactly `bytes` bytes (rounded up internally); `what` names the arena chunk on growth.
  vk::BufferRange allocate(VkDeviceSize bytes, std::string_view what);

  struct Mark {
    size_t chunk = 0;
    VkDeviceSize offset = 0;
  };
  Mark mark() const { return {chunk_, offset_}; }
  // Everything allocated after `m` is dead; later requests reuse it (its chunks stay with the workspace).
  // Under a memory plan (StepArena::perRequest) every request goes to the arena and rewinding changes
  // nothing: the plan finds the reuse from the lifetimes.
  void rewind(const Mark& m) {
    chunk_ = m.chunk;
    offset_ = m.offset;
  }

  VkDeviceSize peakBytes() const { return peak_; } // the high-water mark of live bytes

private:
  graph::StepArena& arena_;
  VkDeviceSize chunkBytes_;
  std::vector<vk::BufferRange> chunks_;
  size_t chunk_ = 0;
  VkDeviceSize offset_ = 0, peak_ = 0;
};

} // namespace helios::autograd
