#include "timing_executor.hpp"

#include <algorithm>
#include <chrono>

namespace helios::bench {

double timeMedianUs(vk::Context& ctx, const CommonOptions& options,
                    const std::function<void(ops::Executor&)>& run) {
  TimingExecutor exec(ctx, options.repeat + 1);
  // Batches that double in size (up to 1024 calls per submit), so the GPU stays busy and its clocks reach
  // their sustained level: short kernels warmed up by a few calls per submit were timed at idle clocks (the
  // same coop attention forward read 45 us in one run and 233 us in the next).
  // The first measurement of a process also pays for the GPU waking from idle: it gets at least 2 s of
  // warm-up (the first shape of an attention run read 205 us where the same kernel reads 41 us warm).
  static bool first = true;
  const double warmupMs = first ? std::max(options.warmupMs, 2000.0) : options.warmupMs;
  first = false;
  // One call before the warm-up clock starts: it creates the pipelines, and a compile that ate the warm-up
  // left the GPU at idle clocks for the timed windows (a TN 4096^3 GEMM read 117-125 TFLOP/s right after its
  // pipeline was built, 325 at 8192^3 with the same kernel).
  run(exec);
  exec.flush();
  const auto start = std::chrono::steady_clock::now();
  uint32_t batch = std::max(options.warmup, 1u);
  do {
    for (uint32_t i = 0; i < batch; ++i)
      run(exec);
    exec.flush();
    batch = std::min(batch * 2, 1024u);
  } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() <
           warmupMs);
  // Several timed windows, back to back; the best window median is reported. The H100 drops to idle clocks
  // (345-510 MHz, seen with nvidia-smi) for stretches after any CPU-side pause, and a single window that
  // lands in one read the same 4096^3 GEMM at 88 TFLOP/s instead of 310.
  double best = 0;
  for (uint32_t w = 0; w < std::max(options.windows, 1u); ++w) {
    exec.mark();
    for (uint32_t i = 0; i < options.repeat; ++i) {
      run(exec);
      exec.mark();
    }
    exec.flush();
    const double m = median(exec.intervalsUs());
    best = w == 0 ? m : std::min(best, m);
  }
  return best;
}

} // namespace helios::bench
