#pragma once
#include "bench_common.hpp"
#include "engine/ops/matmul.hpp"

#include <string>
#include <vector>

namespace helios::bench {

struct GemmBenchOptions {
  std::vector<std::string> shapes{"4096x4096x4096"}; // MxNxK
  std::vector<std::string> layouts{"nn"};            // nn, nt, tn
  std::vector<std::string> tiles{"auto"};            // "auto" or GemmTile strings (tiled kernel only)
  std::string dtype = "f32";                         // storage of A and B: f32 | f16 | bf16
  std::string out = "f32";                           // storage of C: f32 | f16
  std::string kernel = "auto";                       // auto | tiled | coop
  uint32_t samples = 256;                            // output elements checked against a float64 dot product
  float beta =
      0.0f; // C = A*B + beta*C: times the accumulating epilogue (the spot check is skipped: C drifts)
};

nlohmann::json benchGemm(vk::Context& ctx, const CommonOptions& common, const GemmBenchOptions& options);

} // namespace helios::bench
