#pragma once
// A Hugging Face causal LM's config.json <-> GptConfig, for the architectures Helios builds:
//   GPT2LMHeadModel      learned positions, LayerNorm, GELU (tanh), biases everywhere, tied head
//   LlamaForCausalLM     RoPE (rope_type default or llama3), RMSNorm, SwiGLU, GQA, biases per attention_bias
//                        and mlp_bias, tied or untied head (Llama 2 and 3.x, SmolLM2)
//   Qwen2ForCausalLM     as Llama with q/k/v biases only; sliding-window layers refused
//   MistralForCausalLM   as Llama without biases; sliding_window kept (a longer training sequence is refused)
// Reading validates before any work: an unknown architecture, a missing required field, a value out of range
// or a feature Helios does not implement is refused naming the file and the field. Optional fields take
// transformers' defaults for the family. Both forms of the RoPE settings are read: rope_theta + rope_scaling
// (transformers 4) and rope_parameters (transformers 5); export writes both.
#include "engine/model/gpt.hpp"
#include "engine/train/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace helios::train::hf {

// The token ids config.json names (bos_token_id; eos_token_id, one id or a list).
struct TokenIds {
  std::optional<int64_t> bos;
  std::vector<int64_t> eos;
};

const char* architectureName(model::Family f); // "LlamaForCausalLM", ...

// The architecture `cfg` (the contents of `file`) describes; throws std::invalid_argument naming the file and
// field. The result has packed QKV and nothing about how it computes (precision etc. stay defaults).
model::GptConfig configFromHf(const nlohmann::json& cfg, const std::string& file);

// Why `c` cannot be written as its family ("" when it can).
std::string exportIncompatibility(const model::GptConfig& c);

// config.json for `c` (compatible), its tensors stored as `dtype`.
nlohmann::ordered_json hfConfig(const model::GptConfig& c, StoredType dtype, const TokenIds& ids);

} // namespace helios::train::hf
