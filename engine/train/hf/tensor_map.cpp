#include "engine/train/hf/tensor_map.hpp"

#include <fmt/format.h>

namespace helios::train::hf {

namespace {

using model::Family;
using model::LinearGroup;

std::vector<MappedTensor> gpt2Map(const model::GptConfig& c) {
  const uint64_t C = c.dim, hid = c.mlpWidth(), V = c.vocab;
  std::vector<MappedTensor> m;
  const auto add = [&](std::string hf, std::vector<uint64_t> shape, std::string helios, bool transpose) {
    m.push_back({"transformer." + hf, std::move(shape), std::move(helios), 0, transpose});
  };
  add("wte.weight", {V, C}, "wte.weight", false);
  add("wpe.weight", {c.context, C}, "wpe.weight", false);
  for (uint32_t l = 0; l < c.layers; ++l) {
    const std::string h = fmt::format("h.{}.", l), b = fmt::format("blocks.{}.", l);
    add(h + "ln_1.weight", {C}, b + "ln1.weight", false);
    add(h + "ln_1.bias", {C}, b + "ln1.bias", false);
    add(h + "attn.c_attn.weight", {C, 3 * C}, b + "attn.qkv.weight", true);
    add(h + "attn.c_attn.bias", {3 * C}, b + "attn.qkv.bias", false);
    add(h + "attn.c_proj.weight", {C, C}, b + "attn.proj.weight", true);
    add(h + "attn.c_proj.bias", {C}, b + "attn.proj.bias", false);
    add(h + "ln_2.weight", {C}, b + "ln2.weight", false);
    add(h + "ln_2.bias", {C}, b + "ln2.bias", false);
    add(h + "mlp.c_fc.weight", {C, hid}, b + "mlp.fc.weight", true);
    add(h + "mlp.c_fc.bias", {hid}, b + "mlp.fc.bias", false);
    add(h + "mlp.c_proj.weight", {hid, C}, b + "mlp.proj.weight", true);
    add(h + "mlp.c_proj.bias", {C}, b + "mlp.proj.bias", false);
  }
  add("ln_f.weight", {C}, "ln_f.weight", false);
  add("ln_f.bias", {C}, "ln_f.bias", false);
  return m;
}

std::vector<MappedTensor> llamaMap(const model::GptConfig& c) {
  const uint64_t C = c.dim, D = c.headSize(), H = c.heads, G = c.kvHeadCount(), hid = c.mlpWidth();
  std::vector<MappedTensor> m;
  const auto add = [&](std::string hf, std::vector<uint64_t> shape, std::string helios, uint64_t row = 0) {
    m.push_back({std::move(hf), std::move(shape), std::move(helios), row, false});
  };
  // A linear layer: its weight [out, in] and, where the family places one, its bias.
  const auto linear = [&](const std::string& hf, uint64_t out, uint64_t in, const std::string& helios,
                          LinearGroup group, uint64_t row = 0) {
    add(hf + ".weight", {out, in}, helios + ".weight", row);
    if (c.biased(group)) add(hf + ".bias", {out}, helios + ".bias", row);
  };
  add("model.embed_tokens.weight", {c.vocab, C}, "wte.weight");
  for (uint32_t l = 0; l < c.layers; ++l) {
    const std::string h = fmt::format("model.layers.{}.", l), b = fmt::format("blocks.{}.", l);
    add(h + "input_layernorm.weight", {C}, b + "ln1.weight");
    linear(h + "self_attn.q_proj", H * D, C, b + "attn.qkv", LinearGroup::Qkv, 0);
    linear(h + "self_attn.k_proj", G * D, C, b + "attn.qkv", LinearGroup::Qkv, H * D);
    linear(h + "self_attn.v_proj", G * D, C, b + "attn.qkv", LinearGroup::Qkv, (H + G) * D);
    linear(h + "self_attn.o_proj", C, H * D, b + "attn.proj", LinearGroup::AttentionOut);
    add(h + "post_attention_layernorm.weight", {C}, b + "ln2.weight");
    linear(h + "mlp.gate_proj", hid, C, b + "mlp.gate", LinearGroup::Mlp);
    linear(h + "mlp.up_proj", hid, C, b + "mlp.up", LinearGroup::Mlp);
    linear(h + "mlp.down_proj", C, hid, b + "mlp.proj", LinearGroup::Mlp);
  }
  add("model.norm.weight", {C}, "ln_f.weight");
  if (!c.tiedHead) add("lm_head.weight", {c.vocab, C}, "lm_head.weight");
  return m;
}

} // namespace

std::vector<MappedTensor> tensorMap(const model::GptConfig& c) {
  return c.family == Family::Gpt2 ? gpt2Map(c) : llamaMap(c);
}

bool isBuffer(Family f, const std::string& name) {
  if (f == Family::Gpt2) return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
  return name.ends_with(".rotary_emb.inv_freq");
}

std::string canonicalName(Family f, const std::string& name) {
  if (f != Family::Gpt2 || name.starts_with("transformer.") || name == "lm_head.weight") return name;
  return "transformer." + name;
}

} // namespace helios::train::hf
