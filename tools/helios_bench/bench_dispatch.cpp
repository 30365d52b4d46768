// 1,000 small dependent dispatches: through the graph (one submit) vs one submit + wait per dispatch.
#include "bench_dispatch.hpp"

#include "engine/graph/graph_executor.hpp"
#include "engine/ops/elementwise.hpp"
#include "timing_executor.hpp"

#include <chrono>
#include <fmt/format.h>

namespace helios::bench {

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
  auto result = header(ctx, options, "dispatch");
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
