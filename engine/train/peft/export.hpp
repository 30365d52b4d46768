#pragma once
// helios-train export --format peft: a LoRA checkpoint's adapters as a PEFT adapter directory that
// PeftModel.from_pretrained loads over the base: adapter_config.json and adapter_model.safetensors (F32,
// PEFT's tensor names, layout.hpp). The base's hash rides along in the file's __metadata__
// (helios.lora_base), so that
// --init-adapter can tell the base it was trained on. The caller writes into a staging directory.
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train::peft {

// Returns the files written. Throws std::invalid_argument for a checkpoint without adapters or whose family
// PEFT lays out differently (GPT-2).
std::vector<std::string> exportPeft(const std::filesystem::path& checkpointDir,
                                    const std::filesystem::path& outDir);

} // namespace helios::train::peft
