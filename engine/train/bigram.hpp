#pragma once
// The smallest language model: logits[t] = table[token[t]] (a vocab x vocab table). Trains with the same ops,
// optimizer and checkpoints as the GPT; the trainer's tests use it as a stand-in, and it is a useful baseline
// (the bigram entropy of a corpus is the loss it converges to).
#include "engine/train/model.hpp"

namespace helios::train {

class BigramModel final : public Model {
public:
  BigramModel(vk::Context& ctx, uint32_t vocab, uint64_t seed);
  std::vector<model::Parameter>& parameters() override { return params_; }
  const std::vector<model::ParameterGroup>& parameterGroups() const override { return store_.groups(); }
  uint32_t vocab() const override { return vocab_; }
  uint32_t context() const override { return 1u << 20; }
  std::string describe() const override;
  nlohmann::json configJson() const override { return {{"kind", "bigram"}, {"vocab", vocab_}}; }
  void forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                       const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                       const vk::BufferRange& lossOut, float gradScale,
                       const vk::BufferRange& positions = {}) override; // positions: unused
  void forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t batch,
               uint32_t T, const vk::BufferRange& logitsOut, const vk::BufferRange* targets = nullptr,
               const vk::BufferRange* lossOut = nullptr, const vk::BufferRange& positions = {}) override;

private:
  uint32_t vocab_;
  std::vector<model::Parameter> params_;
  model::ParameterStore store_;
};

} // namespace helios::train
