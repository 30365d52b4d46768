// GPT2LMHeadModel's config.json (GPT2Config) <-> GptConfig: Helios' default GPT is GPT-2.
#include "engine/train/hf/config_families.hpp"

#include <fmt/format.h>

namespace helios::train::hf {

std::string gpt2Incompatibility(const model::GptConfig& c) {
  if (c.rope) return "it uses rotary position embeddings (GPT-2 learns absolute positions)";
  if (c.norm != model::NormKind::LayerNorm) return "it uses RMSNorm (GPT-2 uses LayerNorm with a bias)";
  if (c.mlp != model::MlpKind::Gelu) return "its MLP is SwiGLU (GPT-2's is GELU)";
  if (c.kvHeads != 0 && c.kvHeads != c.heads)
    return fmt::format("it uses grouped-query attention ({} kv heads for {} heads)", c.kvHeads, c.heads);
  if (c.headSize() * c.heads != c.dim) return "its heads do not split its width (head_dim * heads != dim)";
  if (c.bias != model::BiasPlacement::All) return "not every linear layer has a bias (GPT-2's all do)";
  if (!c.tiedHead) return "its head is not tied to the token embedding";
  if (c.mlpWidth() % c.dim != 0) return "its MLP width is not a multiple of its width";
  return "";
}

model::GptConfig gpt2FromHf(const Fields& f) {
  const auto refuse = [&](const char* key, const std::string& why) {
    f.refuse(key, why + ": Helios builds GPT-2 as GPT2LMHeadModel defines it");
  };
  const std::string act = f.text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    refuse("activation_function", "is '" + act + "' (Helios' GELU is the tanh form, gelu_new)");
  if (!f.flag("tie_word_embeddings", true))
    refuse("tie_word_embeddings", "is false (Helios ties GPT-2's head)");
  if (!f.flag("scale_attn_weights", true)) refuse("scale_attn_weights", "is false");
  if (f.flag("scale_attn_by_inverse_layer_idx", false)) refuse("scale_attn_by_inverse_layer_idx", "is true");
  model::GptConfig c;
  c.vocab = f.count("vocab_size", 1, kMaxVocab);
  c.context = f.count("n_positions", 1, kMaxContext);
  c.dim = f.count("n_embd", 1, kMaxWidth);
  c.layers = f.count("n_layer", 1, kMaxLayers);
  c.heads = f.count("n_head", 1, c.dim);
  c.normEps = static_cast<float>(f.number("layer_norm_epsilon", 1e-5, 0, 1));
  if (c.dim % c.heads != 0) refuse("n_head", fmt::format("({}) does not divide n_embd {}", c.heads, c.dim));
  const uint32_t inner = f.count("n_inner", 4 * c.dim, 1, kMaxWidth);
  if (inner % c.dim != 0) refuse("n_inner", fmt::format("({}) is not a multiple of n_embd {}", inner, c.dim));
  c.mlpMult = inner / c.dim;
  return c;
}

nlohmann::ordered_json gpt2Config(const model::GptConfig& c, const TokenIds& ids) {
  const nlohmann::json eos = ids.eos.empty() ? nlohmann::json(nullptr) : nlohmann::json(ids.eos[0]);
  const nlohmann::json bos = ids.bos ? nlohmann::json(*ids.bos) : eos;
  return {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", c.vocab},
      {"n_positions", c.context},
      {"n_ctx", c.context},
      {"n_embd", c.dim},
      {"n_layer", c.layers},
      {"n_head", c.heads},
      {"n_inner", c.mlpWidth()},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", shortestDouble(c.normEps)},
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"bos_token_id", bos},
      {"eos_token_id", eos},
  };
}

} // namespace helios::train::hf
