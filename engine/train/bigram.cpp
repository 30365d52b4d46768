#include "engine/train/bigram.hpp"

#include "engine/ops/cross_entropy.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/embedding.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/train/data.hpp"

#include <cmath>
#include <fmt/format.h>

namespace helios::train {

uint64_t Model::parameterCount() {
  uint64_t n = 0;
  for (const auto& p : parameters())
    n += p.elements;
  return n;
}

BigramModel::BigramModel(vk::Context& ctx, uint32_t vocab, uint64_t seed) : vocab_(vocab) {
  model::Parameter p;
  p.name = "table.weight";
  p.shape = {vocab, vocab};
  p.elements = vocab * vocab;
  p.decay = false;
  params_.push_back(std::move(p));
  store_.build(ctx, params_);
  // N(0, 0.02) from a Box-Muller transform of the seeded splitmix64 stream.
  SplitMix64 rng{seed};
  std::vector<float> init(params_[0].elements);
  for (auto& x : init) {
    const double u1 = (double(rng.next() >> 11) + 1.0) / 9007199254740993.0;
    const double u2 = double(rng.next() >> 11) / 9007199254740992.0;
    x = static_cast<float>(0.02 * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  ctx.uploadVector(params_[0].data, init);
}

std::string BigramModel::describe() const {
  return fmt::format("bigram V{} ({} parameters)", vocab_, uint64_t(vocab_) * vocab_);
}

void BigramModel::forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                          uint32_t batch, uint32_t T, const vk::BufferRange& logitsOut,
                          const vk::BufferRange* targets, const vk::BufferRange* lossOut,
                          const vk::BufferRange&) {
  const uint32_t rows = batch * T;
  const vk::BufferRange logits =
      logitsOut.buffer != VK_NULL_HANDLE ? logitsOut : arena.allocate(4ull * rows * vocab_, "bigram logits");
  ops::embedding(exec, params_[0].data.range(), tokens, logits, rows, vocab_, vocab_);
  if (targets && lossOut) {
    const vk::BufferRange loss = arena.allocate(4ull * rows, "bigram loss rows");
    const vk::BufferRange dlogits = arena.allocate(4ull * rows * vocab_, "bigram dlogits (unused)");
    ops::crossEntropy(exec, logits, *targets, loss, dlogits, rows, vocab_, 0.0f);
    ops::reduceRows(exec, loss, *lossOut, 1, rows, codegen::RowReduceOp::Mean);
  }
}

void BigramModel::forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                                  const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                                  const vk::BufferRange& lossOut, float gradScale, const vk::BufferRange&) {
  const uint32_t rows = batch * T;
  const vk::BufferRange logits = arena.allocate(4ull * rows * vocab_, "bigram logits");
  const vk::BufferRange dlogits = arena.allocate(4ull * rows * vocab_, "bigram dlogits");
  const vk::BufferRange loss = arena.allocate(4ull * rows, "bigram loss rows");
  const vk::BufferRange workspace =
      arena.allocate(ops::embeddingBackwardWorkspaceBytes(rows, vocab_, vocab_), "bigram workspace");
  ops::embedding(exec, params_[0].data.range(), tokens, logits, rows, vocab_, vocab_);
  ops::crossEntropy(exec, logits, targets, loss, dlogits, rows, vocab_, gradScale / static_cast<float>(rows));
  ops::reduceRows(exec, loss, lossOut, 1, rows, codegen::RowReduceOp::Mean);
  ops::embeddingBackward(exec, tokens, dlogits, params_[0].grad.range(), workspace, rows, vocab_, vocab_,
                         true);
}

} // namespace helios::train
