#pragma once
// --plan-only's account of every byte class of a run's estimated peak (engine/train/memory_classes.hpp): the
// model's state by store, the trainer's buffers, the step's plan bins with what is live at the training
// step's peak, checkpoint staging; and the largest single allocation against the device's limits.
// --plan-binding-limit plans as for a device with larger bindings than this one (a dry run dispatches
// nothing).
#include "engine/train/memory_budget.hpp"

#include <string>

namespace helios::train_cli {

struct Flags;

void printMemoryAccount(vk::Context& ctx, train::Model& model, const train::TrainConfig& cfg,
                        const train::StepMemory& m);

// --plan-binding-limit as bytes (0 without the flag); refused without --plan-only or above 4 GiB - 1.
uint32_t planBindingLimit(const Flags& f);

} // namespace helios::train_cli
