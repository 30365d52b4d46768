#include "timing_executor.hpp"

#include <algorithm>
#include <chrono>

namespace helios::bench {

double timeMedianUs(vk::Context& ctx, const CommonOptions& options,
                    const std::function<void(ops::Executor&)>& run) {
  TimingExecutor exec(ctx, options.repeat + 1);
  const auto start = std::chrono::steady_clock::now();
  do {
    for (uint32_t i = 0; i < std::max(options.warmup, 1u); ++i)
      run(exec);
    exec.flush();
  } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() <
           options.warmupMs);
  exec.mark();
  for (uint32_t i = 0; i < options.repeat; ++i) {
    run(exec);
    exec.mark();
  }
  exec.flush();
  return median(exec.intervalsUs());
}

} // namespace helios::bench
