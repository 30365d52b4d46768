#pragma once
// Where each tensor of a PEFT LoRA adapter lives in a Helios LoRA model (a pure mapping, as hf/tensor_map is
// for base weights): PEFT saves, for every adapted module of a Llama-style causal LM,
//   base_model.model.model.layers.N.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight
//   base_model.model.model.layers.N.mlp.{gate,up,down}_proj.lora_{A,B}.weight
// with lora_A [r, in] and lora_B [out, r]; Helios stacks the parts of one site (q, k and v of the packed
// projection) into one A and one B parameter (engine/model/lora_sites.hpp), so each PEFT tensor is a row
// block of a Helios parameter. GPT-2's attention is one Conv1D module (c_attn) in PEFT: its layout is
// refused.
#include "engine/model/gpt.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace helios::train::peft {

struct AdapterTensor {
  std::string peft;            // its name in adapter_model.safetensors
  std::vector<uint64_t> shape; // its shape there
  std::string helios;          // the Helios adapter parameter it is a row block of
  uint64_t row = 0;            // its first row there
};

// Why `c`'s adapters have no PEFT layout ("" when they have): LoRA off, or a family whose modules differ.
std::string peftIncompatibility(const model::GptConfig& c);
// Every adapter tensor of `c`, in the order PEFT saves them (layers in order; q, k, v, o, gate, up, down; A
// then B). Throws std::invalid_argument with peftIncompatibility's reason.
std::vector<AdapterTensor> adapterTensorMap(const model::GptConfig& c);

} // namespace helios::train::peft
