#pragma once
// GptConfig::lora as JSON (the "lora" key of a model configuration; absent for full training, so every
// earlier configuration and checkpoint keeps its JSON):
//   {"rank": 16, "alpha": 32, "dropout": 0.05, "targets": "q,k,v,o,gate,up,down", "base_dtype": "f16"}
#include "engine/model/lora_config.hpp"

#include <nlohmann/json.hpp>

namespace helios::train {

nlohmann::json loraToJson(const model::LoraConfig& c);
// Throws std::invalid_argument naming a bad or unknown key.
model::LoraConfig loraFromJson(const nlohmann::json& j);

} // namespace helios::train
