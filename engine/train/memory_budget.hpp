#pragma once
// What a training run's steps ask of the step arena, known before any step runs: dry runs of the training
// step and of the evaluation at a micro-batch size (graph::planStep: nothing is dispatched, temporaries are
// not allocated). helios-train --max-memory picks the micro-batch from it; --plan-only prints it.
#include "engine/graph/step_plan.hpp"
#include "engine/train/config.hpp"
#include "engine/train/model.hpp"
#include "engine/vk/memory.hpp"

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

// What the trainer allocates besides the model and the step: double-buffered tokens and targets, the
// evaluation's, and 1 MiB for losses, records, the optimizer's partial sums and the split GEMMs' counters.
uint64_t trainerBytes(const TrainConfig& cfg);
// The part of it in device memory on a device whose buffers lie as `placement` says: the tokens and targets
// are Upload buffers (host memory on a discrete GPU), the rest is within the 1 MiB.
uint64_t trainerDeviceBytes(const TrainConfig& cfg, const vk::MemoryPlacement& placement);
// The staging a checkpoint's copies hold at once in device memory: none where device-local buffers are mapped
// (no staging) or where the staging is host memory (a discrete GPU), else vk::Context::kStagingChunk.
uint64_t stagingDeviceBytes(const vk::MemoryPlacement& placement);

// A run's estimated peak of device memory in use (what vk::MemoryStats::devicePeakBytesInUse measures):
// the model state (parameters, gradients, moments: the allocator's device bytes in use once the model
// exists), the trainer's buffers, the step's plan bins, and the checkpoint staging, each where `placement`
// puts it in device memory.
uint64_t estimatePeakBytes(uint64_t modelStateBytes, const TrainConfig& cfg, uint64_t binBytes,
                           const vk::MemoryPlacement& placement);

// The largest micro-batch that divides `batch` and whose step fits: fixedBytes + stepBytes(b) <= budget
// (stepBytes asked for candidates from the largest down); nullopt when even 1 does not fit.
std::optional<uint32_t> chooseMicroBatch(uint32_t batch, uint64_t budget, uint64_t fixedBytes,
                                         const std::function<uint64_t(uint32_t)>& stepBytes);

// "22GiB", "512MiB", "24GB", "1.5GiB", "1000000" (bytes): throws std::invalid_argument naming the text.
uint64_t parseByteSize(const std::string& text);

} // namespace helios::train
