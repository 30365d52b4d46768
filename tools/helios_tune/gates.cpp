#include "gates.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>

#include "tools/helios_bench/bench_common.hpp"
#include "tools/helios_bench/timing_executor.hpp"

namespace helios::tune {

std::string spillGate(vk::Context& ctx, const WatchingExecutor& run) {
  for (const vk::Pipeline* p : run.pipelines())
    for (const vk::ExecutableStat& st : ctx.pipelines().executableStats(*p)) {
      std::string name = st.name;
      for (char& ch : name)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      // "Spill Count", "Fill Count" (NVIDIA, ANV), "Spilled VGPRs/SGPRs" (RADV): helios-bench compile's
      // names.
      const bool spills = name.find("spill") != std::string::npos || name == "fill count";
      if (spills && std::strtoll(st.value.c_str(), nullptr, 10) > 0)
        return st.executable + " " + st.name + " = " + st.value;
    }
  return "";
}

double timeUs(vk::Context& ctx, const TimingOptions& options,
              const std::function<void(ops::Executor&)>& run) {
  bench::CommonOptions timing;
  timing.windows = options.windows;
  timing.repeat = options.repeat;
  timing.warmupMs = options.warmupMs;
  return bench::timeMedianUs(ctx, timing, run);
}

PairUs timeAlternately(uint32_t rounds, const std::function<double(bool second)>& time) {
  PairUs best{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (uint32_t round = 0; round < std::max(rounds, 1u); ++round) {
    best.first = std::min(best.first, time(false));
    best.second = std::min(best.second, time(true));
  }
  return best;
}

PairUs timeRecords(vk::Context& ctx, const TimingOptions& timing, uint32_t rounds,
                   const std::function<void(ops::Executor&, bool second)>& run) {
  const auto pipelinesOf = [&](bool second) {
    WatchingExecutor e(ctx);
    run(e, second);
    e.flush();
    return e.pipelines();
  };
  if (pipelinesOf(false) == pipelinesOf(true)) {
    const double us = timeUs(ctx, timing, [&](ops::Executor& e) { run(e, false); });
    return {us, us, true};
  }
  return timeAlternately(
      rounds, [&](bool second) { return timeUs(ctx, timing, [&](ops::Executor& e) { run(e, second); }); });
}

Pick pickWinner(double searchDefaultUs, double searchWinnerUs, double minGain,
                const std::function<double(bool winner)>& time) {
  if (!(searchDefaultUs > 0)) return {true, searchDefaultUs, searchWinnerUs};
  if (searchWinnerUs > searchDefaultUs * (1.0 - minGain)) return {false, searchDefaultUs, searchDefaultUs};
  const PairUs t = timeAlternately(2, time);
  const double def = t.first, win = t.second;
  const bool wins = win <= def * (1.0 - minGain);
  return {wins, def, wins ? win : def};
}

} // namespace helios::tune
