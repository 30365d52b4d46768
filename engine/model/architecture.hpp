#pragma once
// The axes along which open models' architectures differ (GptConfig, engine/model/gpt.hpp): where the
// linear layers carry biases, how RoPE's frequencies are rescaled, and which Hugging Face family a model is.
#include "engine/core/enum_names.hpp"

#include <cstdint>

namespace helios::model {

// Which linear layers carry a bias, as each family places them: GPT-2 every one (All); Llama none, q/k/v/o
// (attention_bias: Attention), gate/up/down (mlp_bias: Mlp) or both (All); Qwen2 q/k/v only (Qkv).
enum class BiasPlacement { All, None, Qkv, Attention, Mlp };
// The linear layers of a block, as far as their biases go.
enum class LinearGroup { Qkv, AttentionOut, Mlp };
// Whether `group` carries a bias under `placement`.
constexpr bool hasBias(BiasPlacement placement, LinearGroup group) {
  switch (placement) {
  case BiasPlacement::All:
    return true;
  case BiasPlacement::None:
    return false;
  case BiasPlacement::Qkv:
    return group == LinearGroup::Qkv;
  case BiasPlacement::Attention:
    return group != LinearGroup::Mlp;
  case BiasPlacement::Mlp:
    return group == LinearGroup::Mlp;
  }
  return true;
}

inline constexpr EnumName<BiasPlacement> kBiasPlacementNames[] = {{BiasPlacement::All, "all"},
                                                                  {BiasPlacement::None, "none"},
                                                                  {BiasPlacement::Qkv, "qkv"},
                                                                  {BiasPlacement::Attention, "attention"},
                                                                  {BiasPlacement::Mlp, "mlp"}};
constexpr const char* biasPlacementName(BiasPlacement b) {
  return enumName(kBiasPlacementNames, b);
}

// How RoPE's inverse frequencies base^(-2i/D) are rescaled (transformers' rope_type): None is "default";
// Llama3 divides the low frequencies by `factor` and blends the middle band (engine/model/rope_frequencies).
enum class RopeScalingKind { None, Llama3 };
struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::None;
  double factor = 8, lowFreqFactor = 1, highFreqFactor = 4;
  uint32_t originalContext = 8192; // original_max_position_embeddings
  bool operator==(const RopeScaling&) const = default;
};

// The Hugging Face architecture the model is, for export (engine/train/hf): GPT2LMHeadModel,
// LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM. It changes nothing in how the model computes.
enum class Family { Gpt2, Llama, Qwen2, Mistral };
inline constexpr EnumName<Family> kFamilyNames[] = {
    {Family::Gpt2, "gpt2"}, {Family::Llama, "llama"}, {Family::Qwen2, "qwen2"}, {Family::Mistral, "mistral"}};
constexpr const char* familyName(Family f) {
  return enumName(kFamilyNames, f);
}

} // namespace helios::model
