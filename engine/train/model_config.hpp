#pragma once
// The architecture a training configuration asks for, as makeModel (model.hpp) takes it: the bigram, or the
// GPT with its vocabulary and context filled in from the tokenizer and the sequence length.
#include "engine/train/config.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <nlohmann/json.hpp>

namespace helios::train {

// Throws std::invalid_argument when the configured vocabulary is smaller than the tokenizer's.
nlohmann::json modelConfigJson(const TrainConfig& config, const Tokenizer& tokenizer);

// The parameters the model of `arch` (modelConfigJson's output, a LoRA model's "lora_base" included) holds,
// known before it allocates any: those it trains (a LoRA model's adapters, else all of them) and the bytes of
// those it keeps frozen (a LoRA model's base in its storage type, else none).
struct ParameterFootprint {
  uint64_t trainable = 0, frozenBytes = 0;
};
ParameterFootprint parameterFootprintOf(const nlohmann::json& arch);

} // namespace helios::train
