#pragma once
// What the trainer needs from a model: the contract of engine/model/gpt.hpp behind a small interface, so that
// the trainer, checkpoints and tests do not depend on the GPT's internals (or on its implementation being
// linked). GptModel (gpt_model.hpp) adapts model::Gpt; BigramModel (bigram.hpp) is a one-table stand-in.
#include "engine/model/gpt.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace helios::train {

class Model {
public:
  virtual ~Model() = default;
  virtual std::vector<model::Parameter>& parameters() = 0;
  // The flat buffers behind parameters(): the optimizer runs per group, not per tensor.
  virtual const std::vector<model::ParameterGroup>& parameterGroups() const = 0;
  virtual uint32_t vocab() const = 0;
  virtual uint32_t context() const = 0;
  virtual std::string describe() const = 0;
  // Everything needed to rebuild the same architecture: {"kind": "gpt", ...}. Saved in checkpoints.
  virtual nlohmann::json configJson() const = 0;
  // As model::Gpt::forwardBackward / forward (engine/model/gpt.hpp): an empty logitsOut asks for the loss
  // only (the model keeps its logits in the arena); `positions`: tokens' positions inside packed documents
  // (empty: none; a model without attention may ignore them).
  virtual void forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                               const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                               const vk::BufferRange& lossOut, float gradScale,
                               const vk::BufferRange& positions = {}) = 0;
  virtual void forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                       uint32_t batch, uint32_t T, const vk::BufferRange& logitsOut,
                       const vk::BufferRange* targets = nullptr, const vk::BufferRange* lossOut = nullptr,
                       const vk::BufferRange& positions = {}) = 0;

  uint64_t parameterCount();
  // The GPT behind this model (incremental decoding, engine/model/decoder.hpp); null for other models.
  virtual model::Gpt* gpt() { return nullptr; }
  // Device state a checkpoint keeps besides the parameters (LoRA dropout's step counter), read once the GPU
  // is idle; restoreRuntimeState takes what runtimeState returned (null: nothing saved).
  virtual nlohmann::json runtimeState() { return nullptr; }
  virtual void restoreRuntimeState(const nlohmann::json&) {}
};

// Builds the model a configJson() describes ("gpt" or "bigram"), initialised from `seed`. "gpt" throws when
// this build has no GPT implementation linked (see gptAvailable()).
std::unique_ptr<Model> makeModel(vk::Context& ctx, const nlohmann::json& config, uint64_t seed);
bool gptAvailable();

} // namespace helios::train
