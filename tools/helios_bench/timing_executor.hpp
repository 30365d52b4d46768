#pragma once
// An executor for benchmarks: records every dispatch into a command stream, with a barrier only where a
// dispatch touches what an earlier one since the last barrier wrote or read (graph::HazardTracker, as the
// graph submitter places them; so an op's independent passes may overlap, as in a training step), and
// lets the benchmark place GPU timestamps (each after a barrier) between op calls, so an op that expands
// into several dispatches (padding, GEMM, crop) is timed as a whole. Calls can also be recorded once into a
// reusable warm-up stream and replayed, so the GPU stays busy however slowly the CPU records them.
#include "bench_common.hpp"
#include "engine/graph/hazards.hpp"
#include "engine/ops/executor.hpp"

#include <functional>
#include <vector>

namespace helios::bench {

class TimingExecutor final : public ops::Executor {
public:
  TimingExecutor(vk::Context& ctx, uint32_t maxMarks)
      : ctx_(ctx), stream_(ctx.device(), maxMarks), warm_(ctx.device(), 0, true) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override {
    vk::CommandStream& s = toWarm_ ? warm_ : stream_;
    graph::HazardTracker& h = toWarm_ ? warmHazards_ : hazards_;
    if (h.needsBarrier(bindings)) barrier(s, h);
    s.dispatch(pipeline, ops::bufferRanges(bindings), push, pushBytes, groups);
    h.record(bindings);
  }
  void flush() override {
    stream_.submit();
    collect();
  }
  void retain(vk::Buffer buffer) override {
    (toWarm_ ? warmRetained_ : retained_).push_back(std::move(buffer));
  }
  void mark() {
    barrier(stream_, hazards_);
    stream_.timestamp();
  }
  // Records `calls` calls of `run` into the warm-up stream (replacing what it held).
  void recordWarm(const std::function<void(ops::Executor&)>& run, uint32_t calls);
  // Submits the warm-up stream `times` times and waits.
  void replayWarm(uint32_t times);
  // Submits the warm-up stream `times` times, then the timed stream, back to back (no pause between them),
  // and waits for both; the marks of the timed stream are read as by flush().
  void replayWarmThenFlush(uint32_t times);
  // Intervals between consecutive marks of the last flush, in microseconds.
  std::vector<double> intervalsUs() const {
    std::vector<double> out;
    for (size_t i = 1; i < marksNs_.size(); ++i)
      out.push_back((marksNs_[i] - marksNs_[i - 1]) * 1e-3);
    return out;
  }

private:
  void collect(); // waits for the timed stream, reads its marks, resets it
  static void barrier(vk::CommandStream& s, graph::HazardTracker& h) {
    s.barrier();
    h.barrier();
  }

  vk::Context& ctx_;
  vk::CommandStream stream_, warm_;
  graph::HazardTracker hazards_, warmHazards_;
  bool toWarm_ = false;
  std::vector<double> marksNs_;
  std::vector<vk::Buffer> retained_, warmRetained_;
};

double median(std::vector<double> v);

// GPU time (us) of `run` (one op call, or a few): options.windows windows of options.repeat calls back to
// back (a timestamp between windows; the median window's time per call is returned), recorded in one
// stream and submitted right behind options.warmupMs of warm-up calls replayed from a reusable stream.
double timeMedianUs(vk::Context& ctx, const CommonOptions& options,
                    const std::function<void(ops::Executor&)>& run);

} // namespace helios::bench
