#pragma once
// Where ops send their dispatches. An op knows math (which kernel, which buffers it reads and writes, how
// many workgroups); an executor knows Vulkan synchronisation. The immediate executor below puts a full
// barrier after every dispatch; the graph submitter (engine/graph) implements the same interface with
// inferred, minimal barriers and batched submission.
#include "engine/vk/command_stream.hpp"
#include "engine/vk/context.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace helios::ops {

enum class Access { Read, Write, ReadWrite };

struct Binding {
  vk::BufferRange range;
  Access access = Access::Read;
};
// The buffer ranges of `bindings`, in order (what vk::CommandStream::dispatch takes).
std::vector<vk::BufferRange> bufferRanges(std::span<const Binding> bindings);

class Executor {
public:
  virtual ~Executor() = default;
  virtual vk::Context& context() = 0;
  virtual void dispatch(const vk::Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                        size_t pushBytes, vk::Groups groups) = 0;
  // Makes all recorded work complete and visible to the host.
  virtual void flush() = 0;
  // Keeps a temporary alive until the GPU work recorded so far has finished with it, so that an op never has
  // to wait for the GPU before releasing its scratch buffers.
  virtual void retain(vk::Buffer buffer) = 0;
  // A range for an op's temporaries (split-K partials, padded copies), valid for the work recorded next: by
  // default a buffer of its own kept by retain(); the graph serves it from the step arena while it records a
  // planned or arena-backed step (graph::GraphExecutor::setScratchArena), so replays share that memory.
  virtual vk::BufferRange scratch(VkDeviceSize bytes, std::string_view what);

  template <class Push>
  void dispatch(const vk::Pipeline& pipeline, std::initializer_list<Binding> bindings, const Push& push,
                vk::Groups groups) {
    dispatch(pipeline, std::span<const Binding>(bindings.begin(), bindings.size()), &push, sizeof(Push),
             groups);
  }
  // Pipeline for `params` (any generator parameter struct with cacheKey()), generated on first use only.
  template <class Params, class Generator>
  const vk::Pipeline& pipeline(const Params& params, Generator&& gen) {
    return context().pipelines().get(params.cacheKey(), [&] { return gen(params); });
  }
};

// Records into one command stream, a barrier after each dispatch; flush() submits and waits.
class ImmediateExecutor final : public Executor {
public:
  explicit ImmediateExecutor(vk::Context& ctx) : ctx_(ctx), stream_(ctx.device()) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override;
  void flush() override;
  void retain(vk::Buffer buffer) override { retained_.push_back(std::move(buffer)); }
  uint32_t dispatches() const { return total_; }

private:
  vk::Context& ctx_;
  vk::CommandStream stream_;
  std::vector<vk::Buffer> retained_; // released by flush()
  uint32_t total_ = 0;
};

} // namespace helios::ops
