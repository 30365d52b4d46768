#pragma once
// Where `sample` and `logits` take their model from: --resume RUN (a run's current checkpoint, or a step
// directory; pinned while the source lives, checkpoint_pin.hpp) or --init-from DIR (a Hugging Face directory,
// engine/train/hf/import). Opening reads and checks the configuration, the weights' headers and the tokenizer
// before any device work; loading builds the model on a device and uploads the weights.
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/model.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>

namespace helios::train_cli {

struct ModelSourceFlags {
  std::string resume, initFrom;
};

// Adds --resume and --init-from (one of them required when the command runs).
void addModelSourceOptions(CLI::App& cmd, ModelSourceFlags& f);

struct ModelSource {
  std::string name;            // the run or directory, for messages
  nlohmann::json architecture; // {"kind": "gpt", ...}
  std::optional<train::Tokenizer> tokenizer;
  train::PinnedCheckpoint pin;             // --resume: the step directory, not pruned while this lives
  std::filesystem::path checkpoint;        // --resume: the step directory (pin.dir())
  std::optional<train::hf::Import> import; // --init-from
};

ModelSource openModelSource(const ModelSourceFlags& f);
// Builds the model (with `precision` when given: "f32" | "mixed") and loads its weights.
std::unique_ptr<train::Model> loadModel(vk::Context& ctx, const ModelSource& source,
                                        const std::string& precision = "");

} // namespace helios::train_cli
