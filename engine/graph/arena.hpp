#pragma once
// Step-scoped temporaries. A step asks for the same sizes in the same order every time, so after the first
// step every request is served from chunks that already exist: steady-state steps allocate nothing, and the
// ranges handed out are identical from step to step (which replayed command buffers rely on).
//
// Three modes. Bump (the default): requests are packed one after another until reset(), so nothing is
// reused within a step. Recording: every request gets its own range of a virtual buffer that no kernel ever
// runs on (a dry run of the step through graph::LifetimeRecorder, which learns each request's lifetime).
// Planned: the i-th request since usePlan() gets the place a graph::MemoryPlan gave request i, in bins the
// arena owns, so temporaries whose lifetimes are disjoint share memory (engine/graph/step_plan.hpp).
#include "engine/graph/memory_plan.hpp"
#include "engine/vk/context.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace helios::graph {

class StepArena {
public:
  struct Request {
    VkDeviceSize offset = 0, bytes = 0; // offset: in the virtual buffer (recording)
    std::string what;                   // the requester's name for it (reports)
  };

  explicit StepArena(vk::Context& ctx, VkDeviceSize chunkBytes = 64ull << 20)
      : ctx_(ctx), chunkBytes_(chunkBytes) {}
  // Start handing out ranges from the beginning again (the previous step's temporaries are dead). In the
  // recording and planned modes the sequence runs on (one plan covers every micro-batch of a step).
  void reset();
  vk::BufferRange allocate(VkDeviceSize bytes, std::string_view what);
  VkDeviceSize reservedBytes() const; // bump chunks and plan bins
  VkDeviceSize peakBytes() const { return peak_; }
  VkDeviceSize alignment() const;

  // Recording: requests get ranges of virtualBuffer(), one after another, never reused.
  void beginRecording();
  std::vector<Request> endRecording();
  VkBuffer virtualBuffer() const { return reinterpret_cast<VkBuffer>(const_cast<int*>(&virtualTag_)); }

  // Planned. fits(): the bins hold `plan` as they are. provideBins() (re)allocates them to hold `plan`:
  // call it only when no recorded or queued GPU work uses the old bins.
  bool fits(const MemoryPlan& plan) const;
  void provideBins(const MemoryPlan& plan);
  // The i-th request until endPlan() must ask for sizes[i] bytes and gets plan.placements[i].
  void usePlan(const MemoryPlan& plan, std::vector<VkDeviceSize> sizes);
  void endPlan(); // throws std::logic_error when fewer requests came than were planned
  bool perRequest() const { return mode_ != Mode::Bump; } // the workspace passes every request through
  VkDeviceSize binBytes() const;

private:
  enum class Mode { Bump, Recording, Planned };
  vk::BufferRange bump(VkDeviceSize bytes, std::string_view what);
  vk::BufferRange planned(VkDeviceSize bytes);

  vk::Context& ctx_;
  VkDeviceSize chunkBytes_;
  std::vector<vk::Buffer> chunks_;
  size_t chunk_ = 0;
  VkDeviceSize offset_ = 0, used_ = 0, peak_ = 0;

  Mode mode_ = Mode::Bump;
  int virtualTag_ = 0; // its address is the virtual buffer's handle: no Vulkan object has it
  std::vector<Request> recorded_;
  std::vector<vk::Buffer> bins_;
  const MemoryPlan* plan_ = nullptr;
  std::vector<VkDeviceSize> planSizes_;
  size_t next_ = 0;
};

} // namespace helios::graph
