#pragma once
// Hugging Face interop: a Helios GPT checkpoint as a `transformers` GPT-2 directory and back.
//   config.json        GPT2Config (model_type "gpt2", architectures ["GPT2LMHeadModel"], tied embeddings)
//   model.safetensors  GPT-2's names and layout: transformer.wte/wpe, transformer.h.N.{ln_1, attn.c_attn,
//                      attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, transformer.ln_f; Conv1D weights stored
//                      [in, out] (transposed from Helios' [out, in] Linear layout); no lm_head.weight (tied
//                      to wte, as save_pretrained writes it). Helios' architecture and tokenizer ride along
//                      in __metadata__ (helios.model, helios.tokenizer).
// Helios' default GPT is GPT-2: learned positions, LayerNorm with biases, biases in every linear layer,
// GELU in its tanh form (gelu_new), packed Q|K|V heads in GPT-2's order, the head tied to wte. RoPE, RMSNorm,
// SwiGLU and grouped-query attention have no GPT-2 equivalent: exporting them is refused with the reason.
#include "engine/model/gpt.hpp"
#include "engine/train/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace helios::train {

// Why `c` cannot be written as GPT-2 ("" when it can).
std::string hfIncompatibility(const model::GptConfig& c);

// GPT2Config fields for `c` (which must be compatible). eos: the tokenizer's end-of-text id, written as
// bos_token_id and eos_token_id (null without one).
nlohmann::json hfConfig(const model::GptConfig& c, StoredType dtype, std::optional<int64_t> eos = {});
// The architecture a GPT2Config describes; throws std::invalid_argument naming the field Helios cannot
// build (another model_type, activation, untied head, ...).
model::GptConfig gptConfigFromHf(const nlohmann::json& hf);

// Helios-named tensors (a checkpoint's model.safetensors) -> GPT-2 names and layout, stored as `dtype`.
// Throws CheckpointError for a missing tensor or a wrong shape.
SafeTensorsFile toHfTensors(const model::GptConfig& c, const SafeTensorsFile& helios, StoredType dtype);
// GPT-2-named tensors -> Helios' names and layout (packed QKV; f32). Accepts names with or without the
// "transformer." prefix, ignores the attention-mask buffers (attn.bias, attn.masked_bias) and an
// lm_head.weight equal to wte. Throws CheckpointError naming a missing, unexpected or misshapen tensor.
SafeTensorsFile fromHfTensors(const model::GptConfig& c, const SafeTensorsFile& hf);

// Writes DIR/config.json and DIR/model.safetensors from a checkpoint step directory (no device needed).
// eos: as for hfConfig. Returns the exported configuration.
model::GptConfig exportHf(const std::filesystem::path& checkpointDir, const std::filesystem::path& outDir,
                          StoredType dtype, std::optional<int64_t> eos = {});

struct HfImport {
  model::GptConfig config;
  SafeTensorsFile tensors;  // Helios names, f32
  nlohmann::json tokenizer; // helios.tokenizer from the metadata when an export put it there, else null
};
// Reads DIR/config.json and DIR/model.safetensors (F32, F16 or BF16).
HfImport importHf(const std::filesystem::path& dir);

} // namespace helios::train
