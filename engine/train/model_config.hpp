#pragma once
// The architecture a training configuration asks for, as makeModel (model.hpp) takes it: the bigram, or the
// GPT with its vocabulary and context filled in from the tokenizer and the sequence length.
#include "engine/train/config.hpp"
#include "engine/train/tokenizer.hpp"

#include <nlohmann/json.hpp>

namespace helios::train {

// Throws std::invalid_argument when the configured vocabulary is smaller than the tokenizer's.
nlohmann::json modelConfigJson(const TrainConfig& config, const Tokenizer& tokenizer);

// The parameters the model of `arch` (modelConfigJson's output) holds, known before it allocates any.
uint64_t parameterCountOf(const nlohmann::json& arch);

} // namespace helios::train
