#pragma once
// helios-train's memory options: --plan-only prints what a step asks for (dry runs, nothing trained) and
// --max-memory splits the batch into gradient-accumulation micro-batches that fit the budget.
#include "engine/train/config.hpp"
#include "engine/train/model.hpp"

#include <string>

namespace helios::train_cli {

// Prints the dry-run plans of the training step and the evaluation at cfg's micro-batch.
void printStepMemory(vk::Context& ctx, train::Model& model, const train::TrainConfig& cfg);

// Rewrites cfg.batch / cfg.gradAccum so the estimated peak (model state + trainer + the step's plan) stays
// within `budget`; prints the choice. Throws std::runtime_error when a micro-batch of 1 does not fit.
void fitMemory(vk::Context& ctx, train::Model& model, train::TrainConfig& cfg, const std::string& budget);

} // namespace helios::train_cli
