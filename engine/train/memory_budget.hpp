#pragma once
// What a training run's steps ask of the step arena, known before any step runs: dry runs of the training
// step and of the evaluation at a micro-batch size (graph::planStep: nothing is dispatched, temporaries are
// not allocated). helios-train --max-memory picks the micro-batch from it; --plan-only prints it.
#include "engine/graph/step_plan.hpp"
#include "engine/train/config.hpp"
#include "engine/train/model.hpp"

#include <functional>
#include <optional>
#include <string>

namespace helios::train {

struct StepMemory {
  graph::StepPlan train, eval;
  // The arena's bins once both segments are recorded: per bin, the larger of the two plans' needs.
  uint64_t binBytes() const;
};

StepMemory planStepMemory(vk::Context& ctx, Model& model, uint32_t microBatch, uint32_t T);

// What the trainer allocates besides the model and the step: double-buffered tokens and targets (and the
// document positions of chat data), the evaluation's, and 1 MiB for losses, records, the optimizer's partial
// sums and the split GEMMs' counters.
uint64_t trainerBytes(const TrainConfig& cfg);

// A run's estimated peak in use: the model state (parameters, gradients, moments: the allocator's bytes in
// use once the model exists), the trainer's buffers, the step's plan bins, and the staging a checkpoint's
// copies hold at once (vk::Context::stagingBytes: 0 where device memory is host-visible).
uint64_t estimatePeakBytes(uint64_t modelStateBytes, const TrainConfig& cfg, uint64_t binBytes,
                           uint64_t stagingBytes);

// The largest micro-batch that divides `batch` and whose step fits: fixedBytes + stepBytes(b) <= budget
// (stepBytes asked for candidates from the largest down); nullopt when even 1 does not fit.
std::optional<uint32_t> chooseMicroBatch(uint32_t batch, uint64_t budget, uint64_t fixedBytes,
                                         const std::function<uint64_t(uint32_t)>& stepBytes);

// "22GiB", "512MiB", "24GB", "1.5GiB", "1000000" (bytes): throws std::invalid_argument naming the text.
uint64_t parseByteSize(const std::string& text);

} // namespace helios::train
