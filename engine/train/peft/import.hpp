#pragma once
// --init-adapter DIR: a PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors, F32,
// F16 or BF16) as the starting point of a LoRA run. openAdapter reads and checks the configuration and the
// file's header before any device work; loadAdapter checks every tensor against the model's adapter layout
// (layout.hpp: present, no extra, shapes) and uploads them, one Helios parameter at a time.
#include "engine/train/model.hpp"
#include "engine/train/peft/adapter_config.hpp"
#include "engine/train/safetensors.hpp"

#include <filesystem>
#include <memory>

namespace helios::train::peft {

struct Adapter {
  std::filesystem::path dir;
  AdapterConfig config;
  std::string baseHash; // a Helios export's base hash (its metadata), else empty
  std::shared_ptr<SafetensorsReader> weights;
};

Adapter openAdapter(const std::filesystem::path& dir);

// Why `adapter` cannot start `lora` over the base at `baseDir` with hash `baseHash` ("" when it can): a rank,
// alpha or targets that flags set otherwise, a base other than the one it was trained on.
std::string adapterMismatch(const Adapter& adapter, const model::LoraConfig& lora,
                            const std::string& baseHash);

// Uploads the adapter into `model`'s LoRA parameters. Throws CheckpointError naming a missing, extra or
// misshapen tensor (a different base's widths show as shapes).
void loadAdapter(vk::Context& ctx, Model& model, const Adapter& adapter);

} // namespace helios::train::peft
