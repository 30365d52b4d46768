#pragma once
// helios-train's data: token shards (--data-dir), a text file (--data, the default corpus) or chat examples
// (--chat-data), with the tokenizer that goes with them and what the trainer records about them.
#include "engine/train/batch_source.hpp"
#include "engine/train/config.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/stored_tokenizer.hpp"
#include "engine/train/trainer.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace helios::train_cli {

struct TrainingData {
  std::unique_ptr<train::BatchSource> loader;
  std::optional<train::Tokenizer> tokenizer;
  train::DataInfo info;
  std::string path;
  std::vector<std::string> log; // lines for the run's header (what reading chat data counted)
};

// The tokenizer: the checkpoint's when resuming, else the imported directory's (unless `tokenizerFlag`, or
// it holds none Helios reads), else cfg.tokenizer over `text` (byte, or char from the text's characters).
struct TokenizerSource {
  std::filesystem::path checkpoint; // resuming from it (empty: not)
  const train::hf::Import* imported = nullptr;
  bool tokenizerFlag = false; // --tokenizer given
  std::string initFrom;       // for the note on which tokenizer encodes the data
};

TrainingData openTrainingData(const train::TrainConfig& cfg, const TokenizerSource& source);

} // namespace helios::train_cli
