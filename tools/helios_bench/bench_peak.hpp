#pragma once
// helios-bench peak (and helios-probe --peak): the device's own ceilings, so every report can give a kernel's
// efficiency as a fraction of what this device measured. For every cooperative-matrix configuration it lists
// (peak_plan.hpp), the MulAdd throughput of a loop that keeps a grid of accumulators in registers and touches
// no memory (checked first against float64 at 3 iterations); and the memory bandwidth of a large 16-byte
// vector copy (bytes read + written, checked). Timed like every helios-bench result (timing_executor.hpp).
#include "bench_common.hpp"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace helios::bench {

struct PeakBenchOptions {
  uint32_t workgroups = 0; // MMA loop; 0: peakMmaWorkgroups (24 per compute unit)
  uint32_t iterations = 0; // MMA loop trips per call; 0: calibrated so a call lasts targetMs
  double targetMs = 2.0;
  uint64_t copyBytes = 0; // per copy buffer; 0: peakCopyBytes
  std::string grid;       // "RxC": this accumulator grid instead of peakAccumulatorGrid's
  std::vector<std::string> parts{"mma", "copy"};
  std::FILE* log = stdout; // one line per measurement as it completes (nullptr: none)
};

// The options above on `cmd` (helios-bench peak, helios-probe --peak: one spelling for both).
void addPeakOptions(CLI::App& cmd, PeakBenchOptions& options);

nlohmann::json benchPeak(vk::Context& ctx, const CommonOptions& common, const PeakBenchOptions& options);

} // namespace helios::bench
