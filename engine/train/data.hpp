#pragma once
// Training data: a text file tokenized once into int32 ids, split into train (first 90%) and validation (last
// 10%), and sampled into (tokens, targets = tokens shifted by one) batches. Sampling is deterministic from a
// seed; the loader's whole state is one 64-bit RNG word, saved in checkpoints.
#include "engine/train/tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train {

// The default corpus: $HELIOS_CORPUS, else <repo>/.deps/corpus/kjv.txt (written by third_party/bootstrap.sh
// from the Debian packages bible-kjv + bible-kjv-text), else $HELIOS_DEPS/corpus/kjv.txt. Returns the first
// that exists, or the repository path when none does (so that messages name where it was expected).
std::filesystem::path defaultCorpusPath();
bool defaultCorpusAvailable();

// Reads a whole file (throws std::runtime_error naming it when missing or unreadable). An empty `path` means
// the default corpus, with a message naming the bootstrap when it is missing.
std::string readCorpus(const std::filesystem::path& path);

uint64_t fnv1a64(std::string_view bytes);

// splitmix64: the loader's random source (tiny state, good enough to pick batch offsets).
struct SplitMix64 {
  uint64_t state = 0;
  uint64_t next();
  uint64_t below(uint64_t n) { return next() % n; } // n > 0; the modulo bias is irrelevant here
};

// One rank's part of every batch in data-parallel training: rows index, index + count, ... of the batch one
// process would draw. N ranks at batch B/N together see exactly the rows of one process at batch B, and the
// loader's state after a step does not depend on the rank count (resume may change it).
struct Shard {
  uint32_t index = 0, count = 1;
};

class DataLoader {
public:
  // `valFraction` of the tokens (at the end) are held out. Throws std::invalid_argument when either split is
  // shorter than seqLen + 1 tokens.
  DataLoader(std::vector<int32_t> tokens, uint32_t seqLen, uint64_t seed, double valFraction = 0.1);

  uint64_t trainTokens() const { return split_; }
  uint64_t valTokens() const { return tokens_.size() - split_; }
  uint32_t seqLen() const { return seqLen_; }

  // `rows` sequences of seqLen tokens from the training split (random offsets) into tokens/targets
  // (rows*seqLen each); advances the state past rows * shard.count draws.
  void nextTrain(uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                 Shard shard = {});
  // Validation batch `index` (0, 1, ...): the same rows every time for a given seed, whatever the state.
  void valBatch(uint32_t index, uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                Shard shard = {}) const;

  uint64_t state() const { return rng_.state; }
  void setState(uint64_t s) { rng_.state = s; }

private:
  void fill(uint64_t start, uint32_t row, std::vector<int32_t>& tokens, std::vector<int32_t>& targets) const;
  std::vector<int32_t> tokens_;
  uint64_t split_ = 0;
  uint32_t seqLen_ = 0;
  uint64_t seed_ = 0;
  SplitMix64 rng_;
};

} // namespace helios::train
