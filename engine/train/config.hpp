#pragma once
// Everything a training run is configured by, with JSON in/out (--config FILE, checkpoints) and the presets.
// Precedence in helios-train: defaults < --preset < --config FILE < command-line flags.
#include "engine/model/gpt.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace helios::train {

struct TrainConfig {
  // model
  std::string model = "gpt";      // gpt | bigram
  model::GptConfig gpt;           // gpt.vocab 0 = the tokenizer's vocabulary; gpt.context = seqLen when 0
  std::string tokenizer = "byte"; // byte | char
  // data
  std::string data;    // "" = the default corpus (data.hpp)
  std::string dataDir; // token shards from `helios-train prepare` (token_shard.hpp); overrides data/tokenizer
  uint32_t batch = 16, seqLen = 128, gradAccum = 1;
  // optimisation
  uint64_t steps = 200;
  float lr = 1e-3f, minLrFrac = 0.1f; // cosine decay from lr to lr * minLrFrac over [warmup, steps]
  uint32_t warmup = 20;               // linear warmup steps
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weightDecay = 0.1f;
  float gradClip = 1.0f; // global-norm clip (0 = off)
  float lossScale = 0;   // initial loss scale; 0 = 65536 with --precision mixed, no scaling with f32
  uint32_t scaleGrowthInterval = 2000; // good steps before the loss scale doubles
  uint64_t seed = 1337;
  // evaluation, checkpoints, logging
  uint32_t evalEvery = 100, evalBatches = 4; // 0 = never
  uint32_t checkpointEvery = 0;              // 0 = only at the end
  uint32_t keepCheckpoints = 2;              // "keep": complete checkpoints kept in RUN/checkpoints (>= 1)
  uint32_t nonFiniteLimit = 3;               // consecutive non-finite losses that stop training (>= 1)
  uint32_t logEvery = 10;                    // progress lines when stderr is not a terminal
  uint32_t timeEvery = 50;                   // a synchronised, phase-timed step every N steps (0 = never)
  uint32_t syncEvery = 0;                    // debugging: wait for the GPU every N steps
  bool profile = false;                      // per-kernel GPU timestamps
  // Step temporaries placed by a memory plan (engine/graph/step_plan.hpp): reused within the step as soon as
  // they are dead. false: the bump arena (nothing reused within a step; kept for comparison).
  bool memoryPlan = true;

  bool dynamicLossScale() const { return lossScale > 0 || gpt.precision == model::Precision::Mixed; }
  float initialLossScale() const { return lossScale > 0 ? lossScale : dynamicLossScale() ? 65536.0f : 1.0f; }
  uint64_t tokensPerStep() const { return uint64_t(batch) * seqLen * gradAccum; }
  // Throws std::invalid_argument naming the first bad value.
  void validate() const;
};

// Applies a preset by name (tiny | char | gpt2-small); throws std::invalid_argument for others.
void applyPreset(TrainConfig& cfg, const std::string& name);
const char* presetNames(); // "tiny, char, gpt2-small"

// "f32", "mixed", "bf16" and back (std::invalid_argument naming the choices otherwise).
const char* precisionName(model::Precision p);
model::Precision parsePrecision(const std::string& name);
// "f32" or "bf16" (GptConfig::paramDtype; throws std::invalid_argument otherwise).
codegen::Elem parseParamDtype(const std::string& name);

nlohmann::json toJson(const model::GptConfig& c);
// Reads the keys present in `j` into `c` (others unchanged); throws std::invalid_argument on bad values.
void fromJson(const nlohmann::json& j, model::GptConfig& c);
nlohmann::json toJson(const TrainConfig& c);
void fromJson(const nlohmann::json& j, TrainConfig& c); // keys present only; unknown keys are refused

// One line: "4L 128d 4h T128 V256 layernorm gelu f32" (without needing the model library).
std::string describeGpt(const model::GptConfig& c);

} // namespace helios::train
