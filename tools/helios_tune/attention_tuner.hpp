#pragma once
// Tuning the coop attention forward pass of one shape: key tile, subgroups, prefetch and padding, behind
// the same gates as the GEMMs (spirv-val, pipeline creation, maximum error against float64 on sampled
// rows, bit-identical over 3 runs, no spills) and timed as helios-bench times. The backward passes keep
// their defaults (not searched yet).
#include <functional>
#include <string>
#include <vector>

#include "gates.hpp"
#include "targets.hpp"

namespace helios::tune {

struct AttentionTuneOptions {
  TimingOptions timing;
  double maxError = 2e-3; // |got - ref| / (sum_j p_j |v_j| + 1e-6) over the sampled rows
  uint32_t samples = 32;  // (batch, head, row) triples checked
  uint32_t maxEvaluations = 40;
  uint64_t seed = 1;
  double minGain = 0.02; // a candidate replaces the policy's choice only when this much faster
  std::function<bool()> stop;
  std::function<void(uint32_t evaluated, double bestUs)> progress;
};

struct AttentionTuneResult {
  bool available = false; // coop attention runs here at this head dimension
  tuning::AttentionChoice best;
  double defaultUs = 0, bestUs = 0;
  uint32_t evaluated = 0, rejected = 0;
  std::vector<std::string> rejections;
};

// Searches the forward pass of `target` from the default choice; the device's record is `base` again
// afterwards.
AttentionTuneResult tuneAttention(vk::Context& ctx, const AttentionTarget& target, const tuning::Tuning& base,
                                  const AttentionTuneOptions& options);

} // namespace helios::tune
