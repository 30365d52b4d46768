#include "timing_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace helios::bench {

namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

void TimingExecutor::recordWarm(const std::function<void(ops::Executor&)>& run, uint32_t calls) {
  warm_.reset();
  warmRetained_.clear();
  warmHazards_.barrier();
  toWarm_ = true;
  for (uint32_t i = 0; i < calls; ++i)
    run(*this);
  toWarm_ = false;
  barrier(warm_, warmHazards_); // replays follow one another, and the timed stream follows the last
}

void TimingExecutor::replayWarm(uint32_t times) {
  warm_.submit(times);
  warm_.wait();
}

void TimingExecutor::replayWarmThenFlush(uint32_t times) {
  warm_.submit(times);
  stream_.submit();
  warm_.wait();
  collect();
}

void TimingExecutor::collect() {
  stream_.wait();
  hazards_.barrier();
  marksNs_ = stream_.timestampsNs();
  stream_.reset();
  retained_.clear();
}

double timeMedianUs(vk::Context& ctx, const CommonOptions& options,
                    const std::function<void(ops::Executor&)>& run) {
  const uint32_t windows = std::max(options.windows, 1u), repeat = std::max(options.repeat, 1u);
  TimingExecutor exec(ctx, windows + 1);
  // One call first: it creates the pipelines (a compile inside the warm-up would leave the GPU idle), and
  // its wall time bounds one call's GPU time.
  run(exec);
  exec.flush();
  auto start = std::chrono::steady_clock::now();
  run(exec);
  exec.flush();
  const double callMs = std::max(msSince(start), 1e-3);
  // The warm-up: about 5 ms of calls recorded once, replayed until the GPU has been kept busy for warmupMs
  // (2 s for a process's first measurement, which also wakes the GPU from idle). Replays keep the GPU busy
  // where recording each call again would not: the H100 drops to 600-1400 MHz under work that leaves it
  // idle half the time (seen with nvidia-smi), and short kernels timed that way read up to 4x slower in one
  // run than in the next.
  static bool first = true;
  const double warmupMs = first ? std::max(options.warmupMs, 2000.0) : options.warmupMs;
  first = false;
  exec.recordWarm(run, static_cast<uint32_t>(std::clamp(std::ceil(5.0 / callMs), 1.0, 1024.0)));
  // The timed windows are recorded first, so that nothing but a submission separates the last warm-up
  // replays from them. A timestamp per window, not per call: each timestamp waits for the GPU to drain, and
  // PyTorch's side is timed per graph replay of several calls too.
  exec.mark();
  for (uint32_t w = 0; w < windows; ++w) {
    for (uint32_t i = 0; i < repeat; ++i)
      run(exec);
    exec.mark();
  }
  uint32_t times = 1;
  start = std::chrono::steady_clock::now();
  while (msSince(start) < warmupMs) {
    exec.replayWarm(times);
    times = std::min(times * 2, 4096u);
  }
  exec.replayWarmThenFlush(std::max(times / 2, 1u)); // as many replays as the last batch
  std::vector<double> perCall = exec.intervalsUs();
  for (double& us : perCall)
    us /= repeat;
  return median(perCall);
}

} // namespace helios::bench
