#include "engine/train/data.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/io/input_file.hpp"
#include "engine/io/install_dir.hpp"
#include "engine/train/host_memory.hpp"
#include "engine/train/token_shard.hpp"

#include <algorithm>

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef HELIOS_DEFAULT_CORPUS
#define HELIOS_DEFAULT_CORPUS ""
#endif

namespace helios::train {

namespace fs = std::filesystem;

fs::path defaultCorpusPath() {
  if (const char* env = std::getenv("HELIOS_CORPUS"); env && *env) return env;
  const fs::path installed = io::installedDataDir() / "corpus" / "kjv.txt";
  std::error_code ec;
  if (!installed.parent_path().empty() && fs::is_regular_file(installed, ec)) return installed;
  const fs::path configured = HELIOS_DEFAULT_CORPUS;
  if (!configured.empty() && fs::is_regular_file(configured, ec)) return configured;
  return installed.parent_path().empty() ? configured : installed;
}

bool defaultCorpusAvailable() {
  std::error_code ec;
  return fs::is_regular_file(defaultCorpusPath(), ec);
}

std::string readCorpus(const fs::path& given) {
  const bool isDefault = given.empty();
  const fs::path path = isDefault ? defaultCorpusPath() : given;
  io::requireRegularFile(path, "training text"); // before open(): a FIFO would block it
  std::error_code sizeError;
  if (const uint64_t bytes = fs::file_size(path, sizeError); !sizeError)
    requireHostMemory(textHostNeed(bytes), availableHostMemory(), "reading " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (isDefault)
      throw std::runtime_error(fmt::format(
          "no --data given and the default corpus {} is missing: run third_party/bootstrap.sh (it installs "
          "the "
          "Debian packages bible-kjv and bible-kjv-text and writes the King James Bible there), set "
          "HELIOS_CORPUS, or pass --data FILE",
          path.string()));
    throw std::runtime_error(fmt::format("{}: cannot open the training text", path.string()));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error(fmt::format("{}: read failed", path.string()));
  if (ss.str().empty())
    throw std::runtime_error(fmt::format("{}: the training text is empty", path.string()));
  return ss.str();
}

uint64_t fnv1a64(std::string_view bytes) {
  return helios::fnv1a64(bytes);
}

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t TokenPart::at(uint64_t i) const {
  const uint32_t v =
      width == 2 ? static_cast<const uint16_t*>(data)[i] : static_cast<const uint32_t*>(data)[i];
  if (vocab && v >= vocab)
    throw std::runtime_error(fmt::format(
        "{}: token {} at position {} is outside the vocabulary {} (a corrupt shard?)", name, v, i, vocab));
  return v;
}

DataLoader::DataLoader(std::vector<int32_t> tokens, uint32_t seqLen, uint64_t seed, double valFraction)
    : tokens_(std::move(tokens)), seqLen_(seqLen), seed_(seed) {
  if (seqLen == 0) throw std::invalid_argument("the sequence length is 0");
  if (!(valFraction > 0 && valFraction < 1))
    throw std::invalid_argument(fmt::format("validation fraction {} is not in (0, 1)", valFraction));
  const uint64_t split =
      tokens_.size() - static_cast<uint64_t>(static_cast<double>(tokens_.size()) * valFraction);
  const uint64_t need = uint64_t(seqLen) + 1;
  if (split < need || tokens_.size() - split < need)
    throw std::invalid_argument(fmt::format("the text has {} tokens: {} for training and {} held out for "
                                            "validation, but each split needs at least "
                                            "seq_len + 1 = {}",
                                            tokens_.size(), split, tokens_.size() - split, need));
  train_.parts.push_back({tokens_.data(), split, 4, 0, "training text"});
  val_.parts.push_back({tokens_.data() + split, tokens_.size() - split, 4, 0, "validation text"});
  index(train_, "training");
  index(val_, "validation");
  rng_.state = seed;
}

DataLoader::DataLoader(std::shared_ptr<const ShardSet> shards, uint32_t seqLen, uint64_t seed)
    : shards_(std::move(shards)), seqLen_(seqLen), seed_(seed) {
  if (seqLen == 0) throw std::invalid_argument("the sequence length is 0");
  auto add = [&](const auto& list, Split& split) {
    for (const auto& s : list)
      split.parts.push_back({s->tokens(), s->size(), s->header().tokenBytes, s->header().vocab, s->name()});
  };
  add(shards_->train, train_);
  add(shards_->val, val_);
  index(train_, "training");
  index(val_, "validation");
  rng_.state = seed;
}

void DataLoader::index(Split& split, const char* name) const {
  for (const auto& p : split.parts) {
    split.startsBefore.push_back(split.starts);
    split.starts += p.count > seqLen_ ? p.count - seqLen_ : 0; // the last target stays inside the part
  }
  if (split.starts == 0)
    throw std::invalid_argument(fmt::format("the {} data has no run of seq_len + 1 = {} tokens ({} tokens in "
                                            "{} parts)",
                                            name, seqLen_ + 1, total(split), split.parts.size()));
}

uint64_t DataLoader::total(const Split& s) {
  uint64_t n = 0;
  for (const auto& p : s.parts)
    n += p.count;
  return n;
}

void DataLoader::fill(const Split& split, uint64_t k, uint32_t row, std::vector<int32_t>& tokens,
                      std::vector<int32_t>& targets) const {
  const size_t p =
      static_cast<size_t>(std::upper_bound(split.startsBefore.begin(), split.startsBefore.end(), k) -
                          split.startsBefore.begin() - 1);
  const TokenPart& part = split.parts[p];
  const uint64_t start = k - split.startsBefore[p];
  for (uint32_t t = 0; t < seqLen_; ++t) {
    tokens[size_t(row) * seqLen_ + t] = static_cast<int32_t>(part.at(start + t));
    targets[size_t(row) * seqLen_ + t] = static_cast<int32_t>(part.at(start + t + 1));
  }
}

// Draws every rank's rows of rows / shard.count micro-batches (ShardDraws) and keeps this rank's.
void DataLoader::draw(const Split& split, SplitMix64& rng, uint32_t rows, Shard shard,
                      std::vector<int32_t>& tokens, std::vector<int32_t>& targets) const {
  const ShardDraws draws(rows, shard, "DataLoader");
  tokens.resize(size_t(rows) * seqLen_);
  targets.resize(size_t(rows) * seqLen_);
  for (uint64_t i = 0; i < draws.count(); ++i) {
    const uint64_t k = rng.below(split.starts);
    if (const int64_t row = draws.row(i); row >= 0)
      fill(split, k, static_cast<uint32_t>(row), tokens, targets);
  }
}

void DataLoader::nextTrain(uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                           Shard shard) {
  draw(train_, rng_, rows, shard, tokens, targets);
}

void DataLoader::nextTrain(uint32_t rows, Batch& out, Shard shard) {
  nextTrain(rows, out.tokens, out.targets, shard);
  out.trainedTargets = ShardDraws(rows, shard, "DataLoader").count() * seqLen_;
}

void DataLoader::valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard) const {
  valBatch(index, rows, out.tokens, out.targets, shard);
  out.trainedTargets = ShardDraws(rows, shard, "DataLoader").count() * seqLen_;
}

void DataLoader::valBatch(uint32_t index, uint32_t rows, std::vector<int32_t>& tokens,
                          std::vector<int32_t>& targets, Shard shard) const {
  SplitMix64 rng{seed_ ^ 0x5eed5eed5eed5eedull ^ (uint64_t(index) * 0x9e3779b97f4a7c15ull)};
  draw(val_, rng, rows, shard, tokens, targets);
}

} // namespace helios::train
