#pragma once
// helios-train export --format hf: a checkpoint step directory as a Hugging Face directory of its family
// (GptConfig::family: GPT-2, Llama, Qwen2, Mistral): config.json and the weights in the family's names and
// layout (engine/train/hf/tensor_map), as F32, F16 or BF16, in one model.safetensors or, above the shard
// size, in model-0000N-of-0000M.safetensors with model.safetensors.index.json. Streams from the mapped
// checkpoint: one parameter's f32 values on the host at a time. Helios' architecture and tokenizer ride
// along in each file's __metadata__ (helios.model, helios.tokenizer). The caller writes into a staging
// directory (io::StagedDirectory) so that nothing appears partially.
#include "engine/model/gpt.hpp"
#include "engine/train/hf/config.hpp"
#include "engine/train/safetensors.hpp"

#include <filesystem>

namespace helios::train::hf {

struct ExportOptions {
  StoredType dtype = StoredType::F32;
  uint64_t maxShardBytes = 5'000'000'000; // transformers' save_pretrained default, "5GB"
  TokenIds ids;                           // config.json's bos_token_id / eos_token_id
  bool merge = false; // a LoRA checkpoint: its base plus its adapters (engine/train/lora_merge.hpp)
};

// The architecture of a checkpoint step directory's model (helios.model, LoRA configuration included);
// refuses a model that is not a GPT or that its family cannot express, naming why.
model::GptConfig exportableArchitecture(const std::filesystem::path& checkpointDir);

// Writes config.json and the weights into `outDir`; returns the files written (config.json first).
std::vector<std::string> exportHf(const std::filesystem::path& checkpointDir,
                                  const std::filesystem::path& outDir, const ExportOptions& options);

} // namespace helios::train::hf
