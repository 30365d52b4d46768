#pragma once
// helios-train's training options: the flags, their definitions on the CLI11 app, and how the given ones
// override the preset, the checkpoint and --config (flags come last).
#include "engine/model/gpt.hpp"
#include "engine/train/config.hpp"
#include "lora_flags.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace helios::train_cli {

struct Flags {
  bool tune = false;
  double tuneBudget = 300;
  std::string preset = "tiny", config, data, dataDir, out, resume, device, precision, paramDtype, model,
              tokenizer, attention;
  std::string initFrom;
  std::string memoryPlan, checkpointActivations, maxMemory, planBindingLimit;
  bool planOnly = false;
  uint64_t steps = 0, seed = 0;
  uint32_t batch = 0, seqLen = 0, context = 0, gradAccum = 0, layers = 0, dim = 0, heads = 0, vocab = 0,
           warmup = 0;
  uint32_t evalEvery = 0, evalBatches = 0, checkpointEvery = 0, logEvery = 0, syncEvery = 0, timeEvery = 0;
  uint32_t keep = 0, nonFiniteLimit = 0, checkEvery = 100;
  double distTimeout = 900, bucketMb = 25;
  std::string distExchange = "shared", overlap = "on", overlapTrace;
  std::string share, slowRanks = "exclude", distDelay; // data parallel: the batch's split (rank_options.hpp)
  float lr = 0, minLrFrac = 0, weightDecay = 0, gradClip = 0, lossScale = 0;
  bool profile = false, pack = false, overwrite = false;
  // chat data (docs/DATA.md)
  std::string chatData, evalData, chatTemplate;
  float evalFraction = 0;
  bool skipBadLines = false;
  LoraFlags lora;
};

// Adds every training option to `app`, bound to `f`.
void addTrainOptions(CLI::App& app, Flags& f);

// Flags given on the command line override the preset / checkpoint / --config file.
void applyFlags(const CLI::App& app, const Flags& f, train::TrainConfig& c);
// The chat data's options (part of addTrainOptions and applyFlags).
void addChatOptions(CLI::App& app, Flags& f);
void applyChatFlags(const CLI::App& app, const Flags& f, train::TrainConfig& c);

// --init-from: the imported model's architecture replaces the configured one; architecture flags that say
// otherwise are refused rather than ignored.
void applyImportedArchitecture(const CLI::App& app, const Flags& f, const model::GptConfig& hf,
                               train::TrainConfig& c);

} // namespace helios::train_cli
