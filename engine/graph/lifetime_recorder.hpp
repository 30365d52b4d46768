#pragma once
// A dry run of a step: an executor that dispatches nothing and notes, for every request the step arena
// served while recording (StepArena::beginRecording), the first and last dispatch that binds any of its
// bytes. Op scratch comes from the arena too, so it is planned like any temporary. It keeps every binding
// (graph::DispatchLog), so the barriers of the step with and without a plan can be worked out.
#include "engine/graph/arena.hpp"
#include "engine/graph/hazards.hpp"
#include "engine/graph/memory_plan.hpp"
#include "engine/graph/step_census.hpp"
#include "engine/ops/executor.hpp"

#include <vector>

namespace helios::graph {

class LifetimeRecorder final : public ops::Executor {
public:
  LifetimeRecorder(vk::Context& ctx, StepArena& arena) : ctx_(ctx), arena_(arena) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override;
  void flush() override {}
  void retain(vk::Buffer) override {} // nothing runs: it may go at once
  vk::BufferRange scratch(VkDeviceSize bytes, std::string_view what) override {
    return arena_.allocate(bytes, what);
  }
  // One lifetime per request, in request order (requests: what StepArena::endRecording returned).
  std::vector<Lifetime> lifetimes(const std::vector<StepArena::Request>& requests) const;
  uint64_t dispatches() const { return dispatches_; }
  const DispatchLog& log() const { return log_; } // every binding of every dispatch that has work
  // The same dispatches with their pipelines' names (the census).
  const std::vector<DispatchRecord>& records() const { return records_; }

private:
  struct Touch {
    VkDeviceSize begin, end;
    uint64_t dispatch;
  };
  vk::Context& ctx_;
  StepArena& arena_;
  std::vector<Touch> touches_; // bindings of the virtual buffer, in dispatch order
  DispatchLog log_;            // every binding of every dispatch
  uint64_t dispatches_ = 0;
  std::vector<DispatchRecord> records_;
};

} // namespace helios::graph
