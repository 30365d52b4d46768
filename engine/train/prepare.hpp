#pragma once
// `helios-train prepare`: text files -> token shards (token_shard.hpp). Each input file is one document;
// documents are tokenized in blocks of about a MiB cut after a newline, a few blocks at once on as many
// threads (so memory stays small whatever the corpus size) and each ends with the tokenizer's end-of-text
// token (byte and char tokenizers have none: their documents simply follow each other). Validation data is
// either the last `valFraction` of every document (cut after a newline) or, with `valEvery` N, every Nth
// document whole.
#include "engine/train/stored_tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace helios::train {

// The files that FILE, DIR (every regular file below it) and GLOB arguments name, sorted, each once.
// Throws std::invalid_argument naming an argument that matches nothing.
std::vector<std::filesystem::path> listDocuments(const std::vector<std::string>& inputs);

struct PrepareProgress {
  uint64_t bytesDone = 0, bytesTotal = 0, tokens = 0, documents = 0, documentsTotal = 0;
};

struct PrepareOptions {
  double valFraction = 0.1; // in (0, 1); ignored with valEvery
  uint32_t valEvery = 0;    // >= 2: every Nth document goes to validation whole
  uint64_t shardTokens = 100'000'000;
  size_t blockBytes = 1u << 20;
  uint32_t threads = 0; // blocks encoded at once, one thread each (0 = the hardware's)
  std::function<void(const PrepareProgress&)> onProgress; // after every block
};

struct PrepareResult {
  uint64_t documents = 0, bytes = 0, trainTokens = 0, valTokens = 0;
  uint32_t trainShards = 0, valShards = 0;
};

// Writes the shards, the tokenizer's files and index.json (last: a directory without it is not a shard set)
// into `out` (created when missing). Throws std::invalid_argument for bad options or when a split ends up
// empty.
PrepareResult prepareShards(const Tokenizer& tokenizer, const std::vector<std::filesystem::path>& documents,
                            const PrepareOptions& options, const std::filesystem::path& out);

} // namespace helios::train
