#pragma once
// The base a LoRA model adapts, as its configuration names it (the "lora_base" key of a checkpoint's model
// JSON): a checkpoint of adapters holds no base weights, so resuming, sampling and exporting load the base
// again and refuse one that changed.
//   {"path": "/abs/dir", "hash": "crc32c:0123abcd"}  a Hugging Face directory (--init-from): its path and the
//                                                    CRC-32C of config.json and every weights file
//   {"seed": 1337}                                   Helios' own deterministic initialisation (no directory)
#include "engine/model/gpt.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace helios::train {

struct LoraBase {
  std::filesystem::path dir; // empty: the seeded initialisation
  std::string hash;          // empty: not computed yet (loadLoraBase fills it in)
  uint64_t seed = 0;
};

nlohmann::json loraBaseToJson(const LoraBase& b);
// Throws std::invalid_argument for a malformed entry.
LoraBase loraBaseFromJson(const nlohmann::json& j);

// "crc32c:xxxxxxxx" over config.json, model.safetensors.index.json and every *.safetensors file of `dir`, in
// name order (each file's name, size and bytes). Computed once per process for files of the same size and
// modification time.
std::string hashHfDirectory(const std::filesystem::path& dir);

// Throws CheckpointError naming both hashes when base.dir no longer hashes to base.hash; an empty hash is
// filled in. Nothing to check for a seeded base.
void verifyLoraBase(LoraBase& base);

// Fills gpt's frozen tensors from base.dir (nothing to do for a seeded base), after checking that the
// directory holds gpt's architecture and, when base.hash is set, that it still hashes to it (else
// CheckpointError naming both); an empty hash is filled in.
void loadLoraBase(vk::Context& ctx, model::Gpt& gpt, LoraBase& base);

} // namespace helios::train
