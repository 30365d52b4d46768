#pragma once
// Where a run's device memory goes, by class, for helios-train --plan-only's account: the model's state as
// its stores hold it (a LoRA model's frozen base by storage type; the trainable parameters, their gradients
// and AdamW moments) and what a step's plan holds at its peak (checkpointed activations, logits chunks,
// gradients, the rest), from the dry run's names.
#include "engine/graph/step_plan.hpp"
#include "engine/train/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace helios::train {

struct MemoryClass {
  std::string name;
  uint64_t bytes = 0;
};

std::vector<MemoryClass> modelStateClasses(Model& model);
// The temporaries live at the plan's peak, summed by class (largest first).
std::vector<MemoryClass> peakClasses(const graph::StepPlan& plan);

} // namespace helios::train
