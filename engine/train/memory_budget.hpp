#pragma once
// What a training run's steps ask of the step arena, known before any step runs: dry runs of the training
// step and of the evaluation at a micro-batch size (graph::planStep: nothing is dispatched, temporaries are
// not allocated). helios-train --max-memory picks the micro-batch from it; --plan-only prints it.
#include "engine/graph/step_plan.hpp"
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

// The largest micro-batch that divides `batch` and whose step fits: fixedBytes + stepBytes(b) <= budget
// (stepBytes asked for candidates from the largest down); nullopt when even 1 does not fit.
std::optional<uint32_t> chooseMicroBatch(uint32_t batch, uint64_t budget, uint64_t fixedBytes,
                                         const std::function<uint64_t(uint32_t)>& stepBytes);

// "22GiB", "512MiB", "24GB", "1.5GiB", "1000000" (bytes): throws std::invalid_argument naming the text.
uint64_t parseByteSize(const std::string& text);

} // namespace helios::train
