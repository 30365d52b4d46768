#pragma once
// helios-train's data subcommands:
//   helios-train tokenizer --data DIR --vocab 8192 --type bpe --out tok.model   (train a SentencePiece model)
//   helios-train prepare --data DIR --tokenizer tok.model --out shards/          (text -> token shards)
// Both print a progress line (redrawn on a terminal, every 10% otherwise) and a summary.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace helios::train_cli {

struct DataCommands {
  CLI::App* tokenizer = nullptr;
  CLI::App* prepare = nullptr;
  // tokenizer
  std::vector<std::string> tokData;
  uint32_t vocab = 8192;
  std::string type = "bpe", tokOut;
  uint64_t maxSentences = 2000000;
  bool quiet = false;
  // prepare
  std::vector<std::string> prepData;
  std::string prepTokenizer = "byte", prepOut;
  double valFraction = 0.1;
  uint32_t valEvery = 0;
  uint64_t shardTokens = 100000000;
};

void addDataCommands(CLI::App& app, DataCommands& d);
int runTokenizerCommand(const DataCommands& d);
int runPrepareCommand(const DataCommands& d);

} // namespace helios::train_cli
