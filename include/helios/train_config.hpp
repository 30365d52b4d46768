#pragma once
// The trainer's configuration and metrics (helios/train.hpp runs it).
#include "helios/export.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace helios {

struct StepMetrics {
  uint64_t step = 0;
  float loss = 0, gradNorm = 0, lr = 0;
  bool skipped = false;         // non-finite gradients: the update was not applied
  double ms = 0;                // host wall time of the step
  std::optional<float> valLoss; // on evaluation steps
};

struct TrainConfig {
  std::string preset = "tiny"; // tiny | char | gpt2-small | "" (the defaults)
  // Overrides on top of the preset: a JSON object with the keys of a run's config.json (helios-train
  // --config), e.g. {"steps": 20, "data": "text.txt", "batch": 4}. Unknown keys are refused.
  std::string overrides = "{}";
  std::string outDir; // "" writes nothing; else metrics.jsonl, loss.svg and checkpoints go there
  std::function<void(const StepMetrics&)> onStep; // in step order
};

struct TrainResult {
  std::vector<StepMetrics> steps;
  uint64_t parameters = 0;
  std::string model;  // "4L 128d 4h T128 V256 layernorm gelu f32"
  std::string config; // the full configuration as JSON
  std::string data;   // the training text read (the default corpus's path when config has "data": "")
};

} // namespace helios
