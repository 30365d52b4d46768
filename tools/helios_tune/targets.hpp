#pragma once
// What helios-tune tunes: GEMM shapes and coop attention shapes, from `--shapes` or a training preset.
#include <string>
#include <vector>

#include "engine/train/config.hpp"
#include "engine/tuning/tuning.hpp"

namespace helios::tune {

struct AttentionTarget {
  uint32_t batch = 1, heads = 12, seq = 1024, headDim = 64;
  bool causal = true;
  bool operator==(const AttentionTarget&) const = default;
};

struct Targets {
  std::vector<tuning::GemmShape> gemms;
  std::vector<AttentionTarget> attention;
  // How often each runs in one step (a training preset's layers; 1 for --shapes), parallel to the lists.
  std::vector<uint32_t> gemmCounts, attentionCounts;
};

// FLOPs of one run: 2 m n k per batch; attention 4 B H T^2 D forward, 2.5 times that backward (dQ and dK/dV
// recompute the scores), halved when causal.
double gemmFlops(const tuning::GemmShape& shape);
double attentionFlops(const AttentionTarget& target, bool backward);

// "gemm:NN:1024x768x3072" (layout nn|nt|tn, optional "_bB" batch, "_f16" output) and
// "attn:B1H12S1024D64c" (c: causal, d: dense), comma-separated. Throws std::invalid_argument naming the
// entry.
Targets parseTargets(const std::string& list);
// The GEMMs (forward and both backward products of each projection) and the attention shape of a training
// configuration's step.
Targets trainingTargets(const train::TrainConfig& config);

} // namespace helios::tune
