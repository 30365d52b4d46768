#pragma once
// helios-train sample: text from a checkpoint or a Hugging Face directory (KV cache by default, top-k /
// top-p, stop at end-of-text); with --chat the prompt is a user turn in the chat template and the answer
// stops at the turn's end; --prompts FILE answers many prompts in one run (prompts_file.hpp).
#include "model_source.hpp"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace helios::train_cli {

struct SampleFlags {
  ModelSourceFlags source;
  std::string prompt, promptsFile, device, idsOut;
  bool chat = false;
  std::string chatTemplate, system;
  uint32_t tokens = 200, topK = 0;
  float temperature = 0.8f, topP = 1.0f;
  uint64_t seed = 1;
  bool stopAtEot = false, noKvCache = false;
};

CLI::App* addSampleCommand(CLI::App& app, SampleFlags& sf); // the subcommand, its options bound to sf
int runSample(const SampleFlags& f);
// --chat's template name: --chat-template, else the one the checkpoint's run trained with (its config's
// chat_template; `trainerState` is empty for --init-from), else "" (the tokenizer's own).
std::string sampleChatTemplate(const SampleFlags& f, const nlohmann::json& trainerState);

} // namespace helios::train_cli
