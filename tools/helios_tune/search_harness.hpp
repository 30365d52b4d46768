#pragma once
// The search both tuners run (gemm_tuner, attention_tuner): tuning::evolve over a candidate space from the
// policy's choice (index 0 on every axis), every candidate behind the same gates before it is timed (its
// tuner's checks: parameters that cannot be built, spirv-val, a kernel already timed; then pipeline creation,
// no register spills, the maximum error against float64 on sampled outputs, bit-identical outputs over 3
// runs), its cost helios-bench's sustained time penalised by its error, and the winner kept only where it
// beats the policy's choice again when both are timed anew (pickWinner).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/tuning/search.hpp"
#include "gates.hpp"

namespace helios::tune {

// What the tuner's own gates say of a candidate before it runs.
struct Checked {
  std::string gate, why; // gate "": it passes
  // The kernel it plans (a key naming all that decides the GPU work): a candidate whose kernel was already
  // timed is not timed again (counted as a duplicate). "": not compared.
  std::string kernel;
};

// One candidate made concrete by its tuner.
struct Trial {
  std::string name;                        // its spelling in rejections ("<name>: <gate>: <why>")
  std::function<Checked()> check;          // may throw for parameters that cannot be built
  std::function<void(ops::Executor&)> run; // the op(s) the candidate times
};
// Makes candidate c concrete and returns body(trial), with whatever the trial needs in place meanwhile (a
// device record, for the ops that read it there).
using TrialMaker =
    std::function<double(const tuning::Candidate& c, const std::function<double(const Trial&)>& body)>;

// The outputs every candidate writes, and the error gate on them.
struct GatedOutputs {
  std::function<void()> poison;                          // NaN where a candidate must write
  std::function<std::vector<std::vector<float>>()> read; // each output as f32
  std::function<double(const std::vector<std::vector<float>>&)> error;
  double maxError = 0;       // the gate: error <= maxError (NaN fails)
  double errorWeight = 0.01; // cost = time * (1 + errorWeight * error / maxError)
};

// The settings every search takes (GemmTuneOptions and AttentionTuneOptions add their own).
struct HarnessOptions {
  TimingOptions timing;
  double minGain = 0.02; // a candidate replaces the policy's choice only when this much faster
  uint32_t maxEvaluations = 60;
  uint64_t seed = 1;
  std::function<bool()> stop; // the budget
  std::function<void(uint32_t evaluated, double bestUs)> progress;
};

// What every search reports (GemmTuneResult and AttentionTuneResult add the choice in their terms).
struct SearchOutcome {
  double defaultUs = 0, bestUs = 0; // the policy's choice and the chosen one (0: not timed)
  uint32_t evaluated = 0, rejected = 0;
  uint32_t duplicates = 0;             // choices that plan an already timed kernel
  std::vector<std::string> rejections; // "<candidate>: <gate>: <why>", the first few
};

struct HarnessResult : SearchOutcome {
  std::optional<tuning::Candidate> chosen; // the winner, or the policy's choice; none when nothing passed
};

HarnessResult searchCandidates(vk::Context& ctx, const tuning::SearchSpace& space, const TrialMaker& trial,
                               const GatedOutputs& outputs, const HarnessOptions& options);

} // namespace helios::tune
