#pragma once
// An executor that runs nothing: it notes which pipelines the ops request, in first-use order, with how
// often each is dispatched. Recording a model step or an op into it lists exactly the kernels the policies
// pick for those shapes on this device, which is what compile-only checks need on devices that cannot
// execute (Mesa's no-op DRM shims, tools/vendor-env.sh).
#include "engine/ops/executor.hpp"

#include <unordered_map>
#include <vector>

namespace helios::ops {

class RecordingExecutor final : public Executor {
public:
  struct Use {
    const vk::Pipeline* pipeline = nullptr;
    uint32_t dispatches = 0;
    vk::Groups firstGroups; // the grid of the first dispatch
  };

  explicit RecordingExecutor(vk::Context& ctx) : ctx_(ctx) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override;
  void flush() override {}
  // Nothing will ever read the buffer: it may go at once.
  void retain(vk::Buffer) override {}
  const std::vector<Use>& uses() const { return uses_; }

private:
  vk::Context& ctx_;
  std::vector<Use> uses_;
  std::unordered_map<const vk::Pipeline*, size_t> index_;
};

} // namespace helios::ops
