#pragma once
// Text generation from a trained model, on the host from a seeded generator: temperature, then top-k, then
// top-p (nucleus) filtering of the next token's distribution; greedy at temperature 0. A GPT decodes with a
// KV cache (engine/model/decoder.hpp): the prompt in one forward, then one token per forward. Without it
// (other models, kvCache = false) every token re-runs the window of the last T tokens (right-padded
// while shorter; the model is causal, so padding never changes the logits read). Both see the same tokens:
// once more than T tokens exist, the cached path starts over from the last T, as the window does.
#include "engine/train/model.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace helios::train {

struct SampleOptions {
  std::string prompt;             // "" starts from a newline (or token 0 when the vocabulary has none)
  std::vector<int32_t> promptIds; // the prompt as ids (e.g. a chat template's rendering): replaces `prompt`
  std::vector<int32_t> stopIds;   // generation also stops at any of these (a chat turn's end, EOS ids)
  uint32_t tokens = 200;          // new tokens (at most)
  float temperature = 0.8f;       // 0 = greedy
  uint32_t topK = 0;              // 0 = all
  float topP = 1.0f; // (0, 1]: the smallest set of most likely tokens holding this much probability
  uint64_t seed = 1;
  uint32_t window = 0;    // 0 = min(model context, prompt + tokens)
  bool kvCache = true;    // decode with a KV cache where the model allows
  bool stopAtEot = false; // stop at the tokenizer's end-of-text id (refused when it has none)
};

struct SampleStats {
  uint32_t tokens = 0;       // generated (the end-of-text token that stopped it not counted)
  double seconds = 0;        // the generation loop, prompt included
  bool kvCache = false;      // the KV-cache path ran
  bool stoppedAtEot = false; // at the end-of-text token or one of the stop ids
  std::vector<int32_t> promptIds, generatedIds;
  double tokensPerSecond() const { return seconds > 0 ? tokens / seconds : 0; }
};

// The distribution the next token is drawn from: (id, probability) pairs, most likely first, summing to 1.
// Temperature 0: the arg max alone (the first on ties).
std::vector<std::pair<int32_t, double>> nextTokenDistribution(const std::vector<float>& logits,
                                                              float temperature, uint32_t topK, float topP);

// Returns the generated continuation (without the prompt); onText, when given, receives each new piece.
std::string generate(vk::Context& ctx, Model& model, const Tokenizer& tokenizer, const SampleOptions& options,
                     const std::function<void(const std::string&)>& onText = {},
                     SampleStats* stats = nullptr);

} // namespace helios::train
