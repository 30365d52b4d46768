#pragma once
// helios-train's memory options: --plan-only prints what a step asks for (dry runs, nothing trained) and
// --max-memory splits the batch into gradient-accumulation micro-batches that fit the budget.
#include "engine/train/config.hpp"
#include "engine/train/model.hpp"

#include <string>

namespace helios::train_cli {

// What the trainer allocates besides the model and the step: double-buffered tokens and targets, the
// evaluation's, and 1 MiB for losses, records and the optimizer's partial sums.
uint64_t trainerBytes(const train::TrainConfig& cfg);

// Prints the dry-run plans of the training step and the evaluation at cfg's micro-batch.
void printStepMemory(vk::Context& ctx, train::Model& model, const train::TrainConfig& cfg);

// Rewrites cfg.batch / cfg.gradAccum so the estimated peak (model state + trainer + the step's plan) stays
// within `budget`; prints the choice. Throws std::runtime_error when a micro-batch of 1 does not fit.
void fitMemory(vk::Context& ctx, train::Model& model, train::TrainConfig& cfg, const std::string& budget);

} // namespace helios::train_cli
