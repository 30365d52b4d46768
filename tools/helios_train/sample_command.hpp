#pragma once
// helios-train sample: text from a checkpoint or a Hugging Face directory (KV cache by default, top-k /
// top-p, stop at end-of-text).
#include "model_source.hpp"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace helios::train_cli {

struct SampleFlags {
  ModelSourceFlags source;
  std::string prompt, device, idsOut;
  uint32_t tokens = 200, topK = 0;
  float temperature = 0.8f, topP = 1.0f;
  uint64_t seed = 1;
  bool stopAtEot = false, noKvCache = false;
};

CLI::App* addSampleCommand(CLI::App& app, SampleFlags& sf); // the subcommand, its options bound to sf
int runSample(const SampleFlags& f);

} // namespace helios::train_cli
