#pragma once
#include "bench_common.hpp"

#include <string>
#include <vector>

namespace helios::bench {

struct CompileOptions {
  // What to record: the GPT-2-small mixed-precision training step and/or the attention benchmark's shapes.
  std::vector<std::string> workloads{"gpt2-small", "attention"};
  std::vector<std::string> attentionShapes{"1x8x512x64", "2x8x256x64", "4x12x1024x64", "8x16x2048x128"};
  bool gateNoSpills = false; // fail when a GEMM or attention kernel spills
};

// Compile-only: records the workloads into an executor that runs nothing (ops::RecordingExecutor), so the
// pipelines are exactly those the ops' policies pick on this device, and reports each one's driver
// statistics (VK_KHR_pipeline_executable_properties: instructions, registers, spills, fills, scratch).
// result["spilling"] lists the GEMM and attention kernels that spill.
nlohmann::json benchCompile(vk::Context& ctx, const CommonOptions& common, const CompileOptions& options);

} // namespace helios::bench
