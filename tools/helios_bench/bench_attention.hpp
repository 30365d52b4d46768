#pragma once
#include "bench_common.hpp"

#include <string>
#include <vector>

namespace helios::bench {

struct AttentionBenchOptions {
  std::vector<std::string> shapes{"1x8x512x64"}; // BxHxSxD (kv heads = H) or BxHxHkvxSxD
  std::vector<std::string> masks{"causal", "dense"};
  std::vector<std::string> modes{"fwd", "fwdbwd"}; // forward, or forward + backward
  uint32_t passes = 1;             // times over the whole shape list; only the last pass is recorded
  std::string kernel = "fallback"; // fallback (f32) | coop (16-bit inputs)
  std::string qkv = "f32";         // storage of q, k, v: f32 | f16 | bf16 (coop only; what SDPA reads)
  std::string half = "f16";        // the coop passes' 16-bit kind (f16 | bf16); a 16-bit --qkv sets it
};

// Fused attention (ops::attentionForward / attentionBackward) time and TFLOP/s per shape, mask and mode,
// with FlashAttention's FLOP count (4 B H S^2 D forward, 2.5x that backward; halved when causal) so the
// numbers compare with bench/torch/attention.py. Output rows are spot-checked against float64.
nlohmann::json benchAttention(vk::Context& ctx, const CommonOptions& common,
                              const AttentionBenchOptions& options);

} // namespace helios::bench
