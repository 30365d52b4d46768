#pragma once
// An executor for benchmarks: records every dispatch into one command stream (barrier after each, like the
// immediate executor) and lets the benchmark place GPU timestamps between op calls, so an op that expands
// into several dispatches (padding, GEMM, crop) is timed as a whole.
#include "bench_common.hpp"
#include "engine/ops/executor.hpp"

#include <functional>
#include <vector>

namespace helios::bench {

class TimingExecutor final : public ops::Executor {
public:
  TimingExecutor(vk::Context& ctx, uint32_t maxMarks) : ctx_(ctx), stream_(ctx.device(), maxMarks) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override {
    std::vector<vk::BufferRange> ranges;
    for (const auto& b : bindings)
      ranges.push_back(b.range);
    stream_.dispatch(pipeline, ranges, push, pushBytes, groups);
    stream_.barrier();
  }
  void flush() override {
    stream_.submitAndWait();
    marksNs_ = stream_.timestampsNs();
    stream_.reset();
    retained_.clear();
  }
  void retain(vk::Buffer buffer) override { retained_.push_back(std::move(buffer)); }
  void mark() { stream_.timestamp(); }
  // Intervals between consecutive marks of the last flush, in microseconds.
  std::vector<double> intervalsUs() const {
    std::vector<double> out;
    for (size_t i = 1; i < marksNs_.size(); ++i)
      out.push_back((marksNs_[i] - marksNs_[i - 1]) * 1e-3);
    return out;
  }

private:
  vk::Context& ctx_;
  vk::CommandStream stream_;
  std::vector<double> marksNs_;
  std::vector<vk::Buffer> retained_;
};

double median(std::vector<double> v);

// GPU time (us) of `run` (one op call, or a few): warm-up batches until options.warmupMs of wall time has
// passed, then options.windows windows of options.repeat timed calls (one submission each, a timestamp
// between calls); the smallest window median.
double timeMedianUs(vk::Context& ctx, const CommonOptions& options,
                    const std::function<void(ops::Executor&)>& run);

} // namespace helios::bench
