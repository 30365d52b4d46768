#pragma once
// Text generation from a trained model: a fixed window of the last T tokens (right-padded while shorter; the
// model is causal, so padding never changes the logits read), one forward per new token (a replayed segment),
// temperature and top-k sampling on the host from a seeded generator.
#include "engine/train/model.hpp"
#include "engine/train/tokenizer.hpp"

#include <functional>
#include <string>

namespace helios::train {

struct SampleOptions {
  std::string prompt;       // "" starts from a newline (or token 0 when the vocabulary has none)
  uint32_t tokens = 200;    // new tokens
  float temperature = 0.8f; // 0 = greedy
  uint32_t topK = 0;        // 0 = all
  uint64_t seed = 1;
  uint32_t window = 0; // 0 = min(model context, prompt + tokens)
};

// Returns the generated continuation (without the prompt); onText, when given, receives each new piece.
std::string generate(vk::Context& ctx, Model& model, const Tokenizer& tokenizer, const SampleOptions& options,
                     const std::function<void(const std::string&)>& onText = {});

} // namespace helios::train
