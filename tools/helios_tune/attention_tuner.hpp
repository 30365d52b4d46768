#pragma once
// Tuning the coop attention passes of one shape: key tile, subgroups, prefetch and padding of the forward,
// or of the two backward passes together (dQ and dK/dV, timed as the whole backward the training step runs),
// behind the same gates as the GEMMs (spirv-val, pipeline creation, maximum error against float64 on sampled
// rows of every output, bit-identical over 3 runs, no spills) and timed as helios-bench times.
#include <functional>
#include <string>
#include <vector>

#include "engine/tuning/search.hpp"
#include "gates.hpp"
#include "search_harness.hpp"
#include "targets.hpp"

namespace helios::tune {

struct AttentionTuneOptions : HarnessOptions {
  AttentionTuneOptions() { maxEvaluations = 40; }
  double maxError =
      2e-3;              // |got - ref| / (sum of |terms| + 1e-6) over the sampled rows (2.5x on the backward)
  uint32_t samples = 32; // (batch, head, row) triples checked
  // Runs the op with the record in place (tests plant wrong candidates here); null: the op itself.
  std::function<void(ops::Executor&, const std::vector<tuning::AttentionChoice>&,
                     const std::function<void(ops::Executor&)>& op)>
      runner;
};

// Which passes one search covers.
enum class AttentionStage : uint8_t { Forward, Backward }; // "forward"; "backward": dq and dkv together
const char* stageName(AttentionStage stage);

struct AttentionTuneResult : SearchOutcome {
  bool available = false;                    // coop attention runs here at this head dimension
  std::vector<tuning::AttentionChoice> best; // one per pass of the stage
};

// Searches `stage`'s passes of `target` from the default choice; the device's record is `base` again
// afterwards.
AttentionTuneResult tuneAttention(vk::Context& ctx, const AttentionTarget& target, AttentionStage stage,
                                  const tuning::Tuning& base, const AttentionTuneOptions& options);

// The search space of `stage`: tile, subgroups, prefetch and pad per pass ("dq.tile", ... on the backward).
tuning::SearchSpace attentionSpace(AttentionStage stage);
// The choices a candidate stands for, one per pass of the stage.
std::vector<tuning::AttentionChoice> attentionChoices(const tuning::SearchSpace& space,
                                                      const tuning::Candidate& c, AttentionStage stage,
                                                      const AttentionTarget& target);

// `stage` of `target` timed with record `first` and with `second` on the device, alternately (timeRecords:
// once, where both run the same pipelines); the device's record is what it was again afterwards.
PairUs timeAttentionRecords(vk::Context& ctx, const AttentionTarget& target, AttentionStage stage,
                            const tuning::Tuning& first, const tuning::Tuning& second,
                            const TimingOptions& timing, uint32_t rounds);

} // namespace helios::tune
