#pragma once
// helios-train export: a checkpoint as a Hugging Face directory of its family (engine/train/hf/export.hpp; a
// LoRA checkpoint merged into its base with --merge), or a LoRA checkpoint's adapters as a PEFT adapter
// directory (engine/train/peft/export.hpp); written into a staging directory and renamed into place whole.
#include <CLI/CLI.hpp>

#include <string>

namespace helios::train_cli {

struct ExportFlags {
  std::string format = "hf", run, out, dtype = "f32", device, maxShardSize = "5GB";
  bool merge = false; // a LoRA checkpoint as a plain model: base + adapters
  uint32_t referenceTokens =
      0; // > 0: also write Helios' f32 logits for that many tokens (bench/device/hf-check.py)
};

CLI::App* addExportCommand(CLI::App& app, ExportFlags& flags);
int runExport(const ExportFlags& flags);

} // namespace helios::train_cli
