#pragma once
// Records dispatches, copies and barriers into one command buffer, submits it, and waits on a fence.
// This is the simple immediate path; engine/graph builds step-level batching on top of the same calls.
#include "engine/vk/buffer.hpp"
#include "engine/vk/pipeline.hpp"
#include "engine/vk/record.hpp"

#include <array>
#include <cstring>
#include <initializer_list>
#include <span>
#include <vector>

namespace helios::vk {

class CommandStream {
public:
  // `maxTimestamps` > 0 creates a query pool for timestamp(). `reusable`: the recorded work may be submitted
  // many times over (submit(times); benchmarks' warm-up replays).
  explicit CommandStream(const Device& device, uint32_t maxTimestamps = 0, bool reusable = false);
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;
  ~CommandStream();

  void dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                size_t pushBytes, Groups groups);
  void dispatch(const Pipeline& pipeline, std::initializer_list<BufferRange> buffers, const void* push,
                size_t pushBytes, Groups groups) {
    dispatch(pipeline, std::span<const BufferRange>(buffers.begin(), buffers.size()), push, pushBytes,
             groups);
  }
  template <class Push>
  void dispatch(const Pipeline& pipeline, std::initializer_list<BufferRange> buffers, const Push& push,
                Groups groups) {
    dispatch(pipeline, buffers, &push, sizeof(Push), groups);
  }

  // Compute/transfer writes made visible to later compute/transfer reads and writes.
  void barrier();
  void copy(const BufferRange& src, const BufferRange& dst, VkDeviceSize bytes);
  void fill(const BufferRange& dst, uint32_t word);
  // Writes a GPU timestamp after all previous work; returns its index. Needs maxTimestamps > 0.
  uint32_t timestamp();

  // Submits the recorded work `times` times in a row (more than once only when reusable); recording again
  // needs reset().
  void submit(uint32_t times = 1);
  void wait();
  void submitAndWait() {
    submit();
    wait();
  }
  // Timestamp values in ns since the first one (valid after wait()).
  std::vector<double> timestampsNs() const;
  // Reuse after wait(): clears recorded work and timestamps.
  void reset();

  uint32_t dispatches() const { return dispatches_; }
  uint32_t barriers() const { return barriers_; }
  VkCommandBuffer commandBuffer() const { return cmd_; }

private:
  void ensureRecording();
  const Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t maxTimestamps_ = 0, timestamps_ = 0;
  bool reusable_ = false, recording_ = false, pending_ = false, ended_ = false;
  uint32_t dispatches_ = 0, barriers_ = 0;
};

} // namespace helios::vk
