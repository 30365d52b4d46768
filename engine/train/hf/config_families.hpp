#pragma once
// Internal to engine/train/hf: each family's half of config.hpp (config_gpt2.cpp, config_llama.cpp).
#include "engine/train/hf/config.hpp"
#include "engine/train/hf/config_fields.hpp"

#include <fmt/format.h>

namespace helios::train::hf {

// Ranges a config.json field must lie in (what Helios' buffers and index arithmetic take).
constexpr uint64_t kMaxVocab = 1u << 24, kMaxWidth = 1u << 16, kMaxLayers = 1024, kMaxContext = 1u << 21;

// A float as its shortest decimal form (1e-05, not 9.999999747378752e-06).
inline double shortestDouble(float v) {
  return std::stod(fmt::format("{}", v));
}

std::string gpt2Incompatibility(const model::GptConfig& c);
model::GptConfig gpt2FromHf(const Fields& f);
nlohmann::ordered_json gpt2Config(const model::GptConfig& c, const TokenIds& ids);

// Llama, Qwen2 and Mistral share one layout; `family` says which rules apply.
std::string llamaIncompatibility(const model::GptConfig& c);
model::GptConfig llamaFromHf(const Fields& f, model::Family family);
nlohmann::ordered_json llamaConfig(const model::GptConfig& c, const TokenIds& ids);

} // namespace helios::train::hf
