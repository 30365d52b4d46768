#pragma once
// adapter_config.json, the PEFT LoRA configuration beside adapter_model.safetensors: written with the keys a
// current PEFT's LoraConfig.save_pretrained writes (sorted, two-space indent), read with every key that
// changes the adapter's function checked: a configuration Helios cannot train exactly (DoRA, rsLoRA's scale,
// per-module ranks or alphas, layer subsets, biases, modules_to_save, a regular expression for
// target_modules) is refused by name.
#include "engine/model/lora_config.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace helios::train::peft {

nlohmann::ordered_json adapterConfigJson(const model::LoraConfig& c, const std::string& baseModel);

struct AdapterConfig {
  model::LoraConfig lora; // rank, alpha, dropout, targets (base storage left at its default)
  std::string baseModel;  // base_model_name_or_path ("" when null)
};
// Throws std::invalid_argument naming the file and the key.
AdapterConfig parseAdapterConfig(const nlohmann::json& j, const std::filesystem::path& path);
AdapterConfig readAdapterConfig(const std::filesystem::path& path);

} // namespace helios::train::peft
