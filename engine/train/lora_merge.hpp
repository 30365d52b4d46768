#pragma once
// A LoRA checkpoint merged into its base (helios-train export --format hf --merge): the base directory's
// parameters as Helios names them (hf::assemble), each adapted one plus scale * B A on the rows each of its
// parts covers (engine/model/lora_sites.hpp), summed in double and rounded to f32 once. The base must still
// hash to what the checkpoint recorded; a seeded base (no directory) has nothing to merge into.
#include "engine/model/gpt.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/lora_base.hpp"
#include "engine/train/safetensors.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace helios::train {

class LoraMerge {
public:
  // `c` is the checkpoint's architecture with its LoRA configuration; throws CheckpointError or
  // std::invalid_argument naming a missing or changed base.
  LoraMerge(const std::filesystem::path& checkpointDir, const model::GptConfig& c, const LoraBase& base);
  // A full model's parameter `name` (e.g. "blocks.0.attn.qkv.weight"), merged where adapted.
  std::vector<float> values(const std::string& name) const;
  const SafetensorsReader& adapters() const { return adapters_; }

private:
  hf::Import base_;
  SafetensorsReader adapters_;
  model::GptConfig config_;
};

} // namespace helios::train
