#pragma once
// The GptConfig keys of open-model architectures (head dim, MLP width, bias placement, untied head, RoPE base
// and scaling, sliding window, Hugging Face family) in the "gpt" JSON of configs and checkpoints. A key is
// written only where its value differs from the default, so the JSON of every earlier configuration, and of
// the checkpoints that hold it, is unchanged.
#include "engine/model/gpt.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace helios::train {

void architectureToJson(const model::GptConfig& c, nlohmann::json& j);
// Reads the keys present (others unchanged); throws std::invalid_argument naming a bad value.
void architectureFromJson(const nlohmann::json& j, model::GptConfig& c);
const std::set<std::string>& architectureKeys();

} // namespace helios::train
