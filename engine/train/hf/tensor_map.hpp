#pragma once
// Where each tensor of a Hugging Face checkpoint lives in Helios' parameters, per family (a pure mapping):
//   GPT-2    transformer.wte/wpe, transformer.h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
//   mlp.c_proj},
//            transformer.ln_f; Conv1D weights stored [in, out], transposed from Helios' [out, in]
//   Llama,   model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
//   Qwen2,   post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head (untied heads); [out,
//   in] Mistral  as Helios. q_proj, k_proj and v_proj are the rows [0, H D), [H D, (H + Hkv) D) and
//            [(H + Hkv) D, (H + 2 Hkv) D) of Helios' packed attn.qkv: an import packs them (one GEMM for
//            the three projections, and the packed attention path), an export unpacks them.
// The map is written for packed QKV (imports always build it; exports pack a checkpoint's separate q, k, v).
#include "engine/model/gpt.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace helios::train::hf {

struct MappedTensor {
  std::string hf;              // its name in the Hugging Face file
  std::vector<uint64_t> shape; // its shape there
  std::string helios;          // the Helios parameter it is, or is a row block of
  uint64_t row = 0;            // its first row in that parameter (q, k, v in attn.qkv)
  bool transpose = false;      // stored transposed (GPT-2's Conv1D)
};

// Every tensor of `c` as its family's checkpoint holds it, in save_pretrained's order (blocks in order).
std::vector<MappedTensor> tensorMap(const model::GptConfig& c);

// A name the family's checkpoints may hold that is no parameter: attention-mask and rotary buffers, which
// an import skips. GPT-2's names are also accepted without the "transformer." prefix (hfName adds it).
bool isBuffer(model::Family f, const std::string& name);
std::string canonicalName(model::Family f, const std::string& name);

} // namespace helios::train::hf
