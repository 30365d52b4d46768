// 1,000 small dependent dispatches: through the graph (one submit) vs one submit + wait per dispatch.
#include "bench_dispatch.hpp"

#include "engine/graph/graph_executor.hpp"
#include "engine/ops/elementwise.hpp"
#include "timing_executor.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <functional>
#include <vector>

namespace helios::bench {

namespace {

// Records dispatches into one command buffer with a chosen barrier after each, for the GPU time per
// dependent dispatch: the engine's barrier (compute and transfer stages), a compute-only one, one naming only
// the written buffer ranges, an execution dependency without memory access (not enough for correctness: it
// shows what the memory part costs), or none.
enum class Barrier { Full, Compute, Buffers, Execution, None };

class ChainExecutor final : public ops::Executor {
public:
  ChainExecutor(vk::Context& ctx, Barrier barrier) : ctx_(ctx), stream_(ctx.device(), 2), barrier_(barrier) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override {
    stream_.dispatch(pipeline, ops::bufferRanges(bindings), push, pushBytes, groups);
    if (barrier_ == Barrier::Full) stream_.barrier();
    if (barrier_ == Barrier::Full || barrier_ == Barrier::None) return;
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
    mb.srcStageMask = mb.dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
    std::vector<VkBufferMemoryBarrier2> bbs;
    if (barrier_ == Barrier::Compute) {
      mb.srcAccessMask = VK_ACCESS_2_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_WRITE_BIT;
    }
    if (barrier_ == Barrier::Buffers) {
      for (const ops::Binding& b : bindings) {
        if (b.access == ops::Access::Read) continue;
        VkBufferMemoryBarrier2 bb{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2};
        bb.srcStageMask = bb.dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
        bb.srcAccessMask = VK_ACCESS_2_SHADER_WRITE_BIT;
        bb.dstAccessMask = VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_WRITE_BIT;
        bb.srcQueueFamilyIndex = bb.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        bb.buffer = b.range.buffer;
        bb.offset = b.range.offset;
        bb.size = b.range.size;
        bbs.push_back(bb);
      }
      dep.bufferMemoryBarrierCount = static_cast<uint32_t>(bbs.size());
      dep.pBufferMemoryBarriers = bbs.data();
    } else {
      dep.memoryBarrierCount = 1;
      dep.pMemoryBarriers = &mb;
    }
    vkCmdPipelineBarrier2(stream_.commandBuffer(), &dep);
  }
  void flush() override {}
  void retain(vk::Buffer) override {}
  // GPU microseconds per call of `run`, `count` calls between two timestamps.
  double usPerCall(const std::function<void(ops::Executor&)>& run, uint32_t count) {
    stream_.reset();
    stream_.timestamp();
    for (uint32_t i = 0; i < count; ++i)
      run(*this);
    stream_.timestamp();
    stream_.submitAndWait();
    const auto ns = stream_.timestampsNs();
    return (ns[1] - ns[0]) * 1e-3 / count;
  }

private:
  vk::Context& ctx_;
  vk::CommandStream stream_;
  Barrier barrier_;
};

} // namespace

nlohmann::json benchDispatch(vk::Context& ctx, const CommonOptions& options, uint32_t count,
                             uint32_t elements) {
  auto x = ctx.buffer(elements * 4, "bench x"), one = ctx.buffer(elements * 4, "bench one");
  using Clock = std::chrono::steady_clock;
  auto usPer = [&](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / count;
  };

  ops::ImmediateExecutor init(ctx);
  ops::fill(init, x.range(), elements, 0.0f);
  ops::fill(init, one.range(), elements, 1.0f);
  init.flush();

  std::vector<double> graphUs, replayUs, perSubmitUs;
  for (uint32_t r = 0; r < options.warmup + options.repeat; ++r) {
    const bool keep = r >= options.warmup;
    {
      graph::GraphExecutor g(ctx);
      auto t0 = Clock::now();
      g.beginStep();
      for (uint32_t i = 0; i < count; ++i)
        ops::axpy(g, 1.0f, one.range(), x.range(), elements);
      g.endStep();
      g.flush();
      if (keep) graphUs.push_back(usPer(t0));
      // The same chain replayed: no recording at all on the CPU.
      g.replayable("chain", [&] {
        for (uint32_t i = 0; i < count; ++i)
          ops::axpy(g, 1.0f, one.range(), x.range(), elements);
      });
      g.flush();
      auto t1 = Clock::now();
      g.beginStep();
      g.replayable("chain", [] {});
      g.endStep();
      g.flush();
      if (keep) replayUs.push_back(usPer(t1));
    }
    {
      ops::ImmediateExecutor e(ctx);
      auto t0 = Clock::now();
      for (uint32_t i = 0; i < count; ++i) {
        ops::axpy(e, 1.0f, one.range(), x.range(), elements);
        e.flush(); // one submit and one wait per dispatch: what the earlier engine did
      }
      if (keep) perSubmitUs.push_back(usPer(t0));
    }
  }
  // GPU time per dispatch in one command buffer, by barrier kind (best of the repeats, after warm-up chains).
  const auto chain = [&](Barrier kind) {
    ChainExecutor e(ctx, kind);
    const auto run = [&](ops::Executor& ex) { ops::axpy(ex, 1.0f, one.range(), x.range(), elements); };
    double best = 1e30;
    for (uint32_t r = 0; r < options.warmup + options.repeat; ++r)
      best = std::min(best, e.usPerCall(run, count));
    return best;
  };
  const double fullUs = chain(Barrier::Full), computeUs = chain(Barrier::Compute),
               buffersUs = chain(Barrier::Buffers), executionUs = chain(Barrier::Execution),
               noneUs = chain(Barrier::None);
  auto result = header(ctx, options, "dispatch");
  result["gpu_us_per_dispatch_full_barrier"] = fullUs;
  result["gpu_us_per_dispatch_compute_barrier"] = computeUs;
  result["gpu_us_per_dispatch_buffer_barrier"] = buffersUs;
  result["gpu_us_per_dispatch_execution_only_barrier"] = executionUs;
  result["gpu_us_per_dispatch_no_barrier"] = noneUs;
  fmt::print(
      "GPU time per dispatch in one command buffer: engine barrier {:.2f} us, compute-only barrier {:.2f}, "
      "buffer barriers {:.2f}, execution only {:.2f}, no barrier {:.2f}\n",
      fullUs, computeUs, buffersUs, executionUs, noneUs);
  result["dispatches"] = count;
  result["elements_per_dispatch"] = elements;
  result["graph_us_per_dispatch"] = median(graphUs);
  result["graph_replay_us_per_dispatch"] = median(replayUs);
  result["submit_per_dispatch_us_per_dispatch"] = median(perSubmitUs);
  result["speedup_graph_vs_submit_per_dispatch"] = median(perSubmitUs) / median(graphUs);
  fmt::print("dispatch chain of {} ({} floats each): graph {:.2f} us/dispatch, replayed {:.2f}, "
             "one submit per dispatch {:.2f} ({:.1f}x)\n",
             count, elements, median(graphUs), median(replayUs), median(perSubmitUs),
             median(perSubmitUs) / median(graphUs));
  return result;
}

} // namespace helios::bench
