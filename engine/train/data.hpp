#pragma once
// Training data: a text file tokenized once into int32 ids, split into train (first 90%) and validation (last
// 10%), or token shards mapped from disk (token_shard.hpp), sampled into (tokens, targets = tokens shifted by
// one) batches. Sampling is deterministic from a seed; the loader's whole state is one 64-bit RNG word, saved
// in checkpoints.
#include "engine/train/batch_source.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace helios::train {

// The default corpus: $HELIOS_CORPUS, else <prefix>/share/helios/corpus/kjv.txt beside the binary running
// (io::installedDataDir: an installed Helios, or the build tree, which mirrors that layout), else the
// build-time option HELIOS_DEFAULT_CORPUS (default: the kjv.txt that third_party/bootstrap.sh writes into the
// dependency prefix from the Debian packages bible-kjv + bible-kjv-text). Returns the first that exists, or
// the installed path when none does (so that messages name where it was expected).
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

struct ShardSet;

// A run of tokens the loader samples windows from: in memory (int32) or a mapped shard (uint16/uint32).
struct TokenPart {
  const void* data = nullptr;
  uint64_t count = 0;
  uint32_t width = 4; // bytes per token
  uint32_t vocab = 0; // tokens must be below this (0: unchecked)
  std::string name;   // for messages
  uint32_t at(uint64_t i) const;
};

class DataLoader : public BatchSource {
public:
  // `valFraction` of the tokens (at the end) are held out. Throws std::invalid_argument when either split is
  // shorter than seqLen + 1 tokens.
  DataLoader(std::vector<int32_t> tokens, uint32_t seqLen, uint64_t seed, double valFraction = 0.1);
  // Token shards (token_shard.hpp): windows come from any train (val) shard with at least seqLen + 1 tokens,
  // with probability proportional to the windows it holds. Throws std::invalid_argument when a split has no
  // such shard.
  DataLoader(std::shared_ptr<const ShardSet> shards, uint32_t seqLen, uint64_t seed);
  DataLoader(const DataLoader&) = delete; // its parts point into its own tokens
  DataLoader& operator=(const DataLoader&) = delete;

  uint64_t trainTokens() const override { return total(train_); }
  uint64_t valTokens() const override { return total(val_); }
  uint32_t seqLen() const override { return seqLen_; }
  // BatchSource: the two calls below, every target trained.
  void nextTrain(uint32_t rows, Batch& out, Shard shard) override;
  void valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard) const override;

  // `rows` sequences of seqLen tokens from the training split (random offsets) into tokens/targets
  // (rows*seqLen each): this rank's rows of rows / shard.count micro-batches, drawn as one process draws them
  // (the state advances past rows / shard.count * shard.batch draws). A token at or above the shard's
  // vocabulary throws std::runtime_error naming the shard and offset.
  void nextTrain(uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                 Shard shard = {});
  // Validation batch `index` (0, 1, ...): the same rows every time for a given seed, whatever the state.
  void valBatch(uint32_t index, uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                Shard shard = {}) const;

  // The loader's position: the training batches it draws next follow from this one word.
  uint64_t state() const override { return rng_.state; }
  void setState(uint64_t s) override { rng_.state = s; }

private:
  struct Split {
    std::vector<TokenPart> parts;
    std::vector<uint64_t> startsBefore; // windows in the parts before each one
    uint64_t starts = 0;
  };
  void index(Split& split, const char* name) const;
  static uint64_t total(const Split& s);
  void draw(const Split& split, SplitMix64& rng, uint32_t rows, Shard shard, std::vector<int32_t>& tokens,
            std::vector<int32_t>& targets) const;
  // Window `k` of `split` into row `row`.
  void fill(const Split& split, uint64_t k, uint32_t row, std::vector<int32_t>& tokens,
            std::vector<int32_t>& targets) const;
  std::vector<int32_t> tokens_;            // in-memory data
  std::shared_ptr<const ShardSet> shards_; // keeps the maps alive
  Split train_, val_;
  uint32_t seqLen_ = 0;
  uint64_t seed_ = 0;
  SplitMix64 rng_;
};

} // namespace helios::train
