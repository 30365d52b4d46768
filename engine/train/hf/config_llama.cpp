// LlamaForCausalLM, Qwen2ForCausalLM and MistralForCausalLM configs <-> GptConfig: pre-norm RMSNorm blocks,
// RoPE in the rotate-half form, a SiLU-gated MLP down(silu(gate(x)) * up(x)), grouped-query attention.
#include "engine/train/hf/config_families.hpp"

#include <fmt/format.h>

namespace helios::train::hf {

namespace {

using model::Family;

// transformers' defaults for the optional fields, per family (LlamaConfig, Qwen2Config, MistralConfig).
struct Defaults {
  uint32_t kvHeads; // 0: num_attention_heads
  uint32_t maxPositions;
  uint32_t slidingWindow; // Mistral's sliding_window when absent (0: none)
};

Defaults defaultsOf(Family f) {
  switch (f) {
  case Family::Qwen2:
    return {32, 32768, 0};
  case Family::Mistral:
    return {8, 4096 * 32, 4096};
  default:
    return {0, 2048, 0};
  }
}

// The RoPE settings: rope_scaling (transformers 4) or rope_parameters (5) for the type and its parameters,
// rope_theta there or at the top.
void readRope(const Fields& f, model::GptConfig& c) {
  const char* key = f.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  nlohmann::json rope = f.has(key) ? f.raw(key) : nlohmann::json::object();
  if (!rope.is_object()) f.refuse(key, "is not an object");
  const Fields r(rope, f.file() + ": " + key);
  c.ropeTheta =
      r.has("rope_theta") ? r.number("rope_theta", 0, 1, 1e12) : f.number("rope_theta", 10000, 1, 1e12);
  if (r.number("partial_rotary_factor", 1, 0, 1) != 1)
    r.refuse("partial_rotary_factor", "is not 1 (not supported)");
  const std::string type = r.text("rope_type", r.text("type", "default"));
  if (type == "default") return;
  if (type != "llama3")
    r.refuse("rope_type", fmt::format("is '{}': Helios implements the default and llama3 RoPE only", type));
  c.ropeScaling.kind = model::RopeScalingKind::Llama3;
  c.ropeScaling.factor = r.number("factor", 0, 0, 1e6);
  c.ropeScaling.lowFreqFactor = r.number("low_freq_factor", 0, 0, 1e6);
  c.ropeScaling.highFreqFactor = r.number("high_freq_factor", 0, 0, 1e6);
  c.ropeScaling.originalContext = r.count("original_max_position_embeddings", 1, kMaxContext);
  if (!r.has("factor") || !r.has("low_freq_factor") || !r.has("high_freq_factor"))
    r.refuse("factor", "low_freq_factor and high_freq_factor are required for llama3");
  if (!(c.ropeScaling.highFreqFactor > c.ropeScaling.lowFreqFactor))
    r.refuse("high_freq_factor", "must exceed low_freq_factor");
}

model::BiasPlacement biasOf(const Fields& f, Family family) {
  if (family == Family::Qwen2) return model::BiasPlacement::Qkv;
  if (family == Family::Mistral) return model::BiasPlacement::None;
  const bool attention = f.flag("attention_bias", false), mlp = f.flag("mlp_bias", false);
  return attention && mlp ? model::BiasPlacement::All
         : attention      ? model::BiasPlacement::Attention
         : mlp            ? model::BiasPlacement::Mlp
                          : model::BiasPlacement::None;
}

// Mistral's window (absent: 4096; null: none); Qwen2's sliding layers are refused.
uint32_t slidingWindowOf(const Fields& f, Family family, uint32_t layers) {
  if (family == Family::Mistral) {
    if (!f.present("sliding_window")) return defaultsOf(family).slidingWindow;
    return f.has("sliding_window") ? f.count("sliding_window", 1, kMaxContext) : 0;
  }
  if (family == Family::Qwen2 && f.flag("use_sliding_window", false) &&
      f.count("max_window_layers", 28, 0, kMaxLayers) < layers)
    f.refuse("use_sliding_window", "is true: Qwen2's sliding-window layers are not supported");
  if (f.has("layer_types"))
    for (const auto& t : f.raw("layer_types"))
      if (t != "full_attention")
        f.refuse("layer_types", fmt::format("names {}: only full_attention layers are supported", t.dump()));
  return 0;
}

} // namespace

model::GptConfig llamaFromHf(const Fields& f, Family family) {
  const std::string act = f.text("hidden_act", "silu");
  if (act != "silu") f.refuse("hidden_act", fmt::format("is '{}': Helios' gated MLP uses silu", act));
  if (f.number("pretraining_tp", 1, 0, 1024) != 1 && family == Family::Llama)
    f.refuse("pretraining_tp", "is not 1 (sliced projections are not supported)");
  const Defaults d = defaultsOf(family);
  model::GptConfig c;
  c.family = family;
  c.norm = model::NormKind::RMSNorm;
  c.mlp = model::MlpKind::SwiGLU;
  c.rope = true;
  c.vocab = f.count("vocab_size", 1, kMaxVocab);
  c.dim = f.count("hidden_size", 1, kMaxWidth);
  c.hidden = f.count("intermediate_size", 1, 4 * kMaxWidth);
  c.layers = f.count("num_hidden_layers", 1, kMaxLayers);
  c.heads = f.count("num_attention_heads", 1, kMaxWidth);
  c.kvHeads = f.count("num_key_value_heads", d.kvHeads ? d.kvHeads : c.heads, 1, c.heads);
  if (c.heads % c.kvHeads != 0)
    f.refuse("num_key_value_heads",
             fmt::format("({}) does not divide num_attention_heads {}", c.kvHeads, c.heads));
  if (!f.has("head_dim") && c.dim % c.heads != 0)
    f.refuse("num_attention_heads",
             fmt::format("({}) does not divide hidden_size {} and no head_dim is given", c.heads, c.dim));
  c.headDim = f.count("head_dim", c.dim / c.heads, 2, 1024);
  if (c.headDim % 2 != 0) f.refuse("head_dim", fmt::format("is {}: RoPE needs an even head dim", c.headDim));
  if (c.headDim * c.heads == c.dim) c.headDim = 0; // the derived value: one spelling
  c.context = f.count("max_position_embeddings", d.maxPositions, 1, kMaxContext);
  c.normEps = static_cast<float>(f.number("rms_norm_eps", 1e-6, 0, 1));
  c.tiedHead = f.flag("tie_word_embeddings", false);
  c.bias = biasOf(f, family);
  c.slidingWindow = slidingWindowOf(f, family, c.layers);
  readRope(f, c);
  return c;
}

std::string llamaIncompatibility(const model::GptConfig& c) {
  const char* name = model::familyName(c.family);
  if (!c.rope || c.norm != model::NormKind::RMSNorm || c.mlp != model::MlpKind::SwiGLU)
    return fmt::format("{} needs RoPE, RMSNorm and the SwiGLU MLP", name);
  if (c.pack) return "it was trained with packed documents";
  const bool biasOk = c.family == Family::Llama   ? c.bias != model::BiasPlacement::Qkv
                      : c.family == Family::Qwen2 ? c.bias == model::BiasPlacement::Qkv
                                                  : c.bias == model::BiasPlacement::None;
  if (!biasOk)
    return fmt::format("its biases ({}) are not where {} places them", model::biasPlacementName(c.bias),
                       name);
  if (c.slidingWindow != 0 && c.family != Family::Mistral) return "only Mistral has a sliding window";
  return "";
}

nlohmann::ordered_json llamaConfig(const model::GptConfig& c, const TokenIds& ids) {
  nlohmann::ordered_json rope{{"rope_type", "default"}, {"rope_theta", c.ropeTheta}};
  nlohmann::json scaling = nullptr;
  if (c.ropeScaling.kind == model::RopeScalingKind::Llama3) {
    scaling = {{"rope_type", "llama3"},
               {"factor", c.ropeScaling.factor},
               {"low_freq_factor", c.ropeScaling.lowFreqFactor},
               {"high_freq_factor", c.ropeScaling.highFreqFactor},
               {"original_max_position_embeddings", c.ropeScaling.originalContext}};
    rope.update(nlohmann::ordered_json(scaling));
  }
  nlohmann::ordered_json j{{"architectures", {architectureName(c.family)}},
                           {"model_type", model::familyName(c.family)},
                           {"vocab_size", c.vocab},
                           {"hidden_size", c.dim},
                           {"intermediate_size", c.mlpWidth()},
                           {"num_hidden_layers", c.layers},
                           {"num_attention_heads", c.heads},
                           {"num_key_value_heads", c.kvHeadCount()},
                           {"head_dim", c.headSize()},
                           {"hidden_act", "silu"},
                           {"max_position_embeddings", c.context},
                           {"initializer_range", 0.02},
                           {"rms_norm_eps", shortestDouble(c.normEps)},
                           {"use_cache", true},
                           {"tie_word_embeddings", c.tiedHead},
                           {"rope_theta", c.ropeTheta},
                           {"rope_scaling", scaling},
                           {"rope_parameters", rope},
                           {"attention_dropout", 0.0}};
  if (c.family == Family::Llama) {
    j["attention_bias"] = c.biased(model::LinearGroup::Qkv);
    j["mlp_bias"] = c.biased(model::LinearGroup::Mlp);
    j["pretraining_tp"] = 1;
  }
  if (c.family == Family::Qwen2) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = c.layers;
  }
  if (c.family == Family::Mistral)
    j["sliding_window"] = c.slidingWindow ? nlohmann::json(c.slidingWindow) : nlohmann::json(nullptr);
  j["bos_token_id"] = ids.bos ? nlohmann::json(*ids.bos) : nlohmann::json(nullptr);
  j["eos_token_id"] = ids.eos.empty()       ? nlohmann::json(nullptr)
                      : ids.eos.size() == 1 ? nlohmann::json(ids.eos[0])
                                            : nlohmann::json(ids.eos);
  return j;
}

} // namespace helios::train::hf
