#include "engine/train/data.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef HELIOS_SOURCE_DIR
#define HELIOS_SOURCE_DIR "."
#endif

namespace helios::train {

namespace fs = std::filesystem;

fs::path defaultCorpusPath() {
  if (const char* env = std::getenv("HELIOS_CORPUS"); env && *env) return env;
  const fs::path repo = fs::path(HELIOS_SOURCE_DIR) / ".deps" / "corpus" / "kjv.txt";
  if (fs::exists(repo)) return repo;
  if (const char* deps = std::getenv("HELIOS_DEPS"); deps && *deps) {
    const fs::path p = fs::path(deps) / "corpus" / "kjv.txt";
    if (fs::exists(p)) return p;
  }
  return repo;
}

bool defaultCorpusAvailable() {
  std::error_code ec;
  return fs::is_regular_file(defaultCorpusPath(), ec);
}

std::string readCorpus(const fs::path& given) {
  const bool isDefault = given.empty();
  const fs::path path = isDefault ? defaultCorpusPath() : given;
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
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error(fmt::format("{}: the training text is not a regular file{}", path.string(),
                                         fs::is_directory(path, ec) ? " (it is a directory)" : ""));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error(fmt::format("{}: read failed", path.string()));
  if (ss.str().empty())
    throw std::runtime_error(fmt::format("{}: the training text is empty", path.string()));
  return ss.str();
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

DataLoader::DataLoader(std::vector<int32_t> tokens, uint32_t seqLen, uint64_t seed, double valFraction)
    : tokens_(std::move(tokens)), seqLen_(seqLen), seed_(seed) {
  if (seqLen == 0) throw std::invalid_argument("the sequence length is 0");
  if (!(valFraction > 0 && valFraction < 1))
    throw std::invalid_argument(fmt::format("validation fraction {} is not in (0, 1)", valFraction));
  split_ = tokens_.size() - static_cast<uint64_t>(static_cast<double>(tokens_.size()) * valFraction);
  const uint64_t need = uint64_t(seqLen) + 1;
  if (split_ < need || tokens_.size() - split_ < need)
    throw std::invalid_argument(fmt::format("the text has {} tokens: {} for training and {} held out for "
                                            "validation, but each split needs at least "
                                            "seq_len + 1 = {}",
                                            tokens_.size(), split_, tokens_.size() - split_, need));
  rng_.state = seed;
}

void DataLoader::fill(uint64_t start, uint32_t row, std::vector<int32_t>& tokens,
                      std::vector<int32_t>& targets) const {
  for (uint32_t t = 0; t < seqLen_; ++t) {
    tokens[size_t(row) * seqLen_ + t] = tokens_[start + t];
    targets[size_t(row) * seqLen_ + t] = tokens_[start + t + 1];
  }
}

void DataLoader::nextTrain(uint32_t rows, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                           Shard shard) {
  tokens.resize(size_t(rows) * seqLen_);
  targets.resize(size_t(rows) * seqLen_);
  const uint64_t starts = split_ - seqLen_; // start + seqLen (the last target) stays inside the split
  for (uint64_t i = 0; i < uint64_t(rows) * shard.count; ++i) {
    const uint64_t start = rng_.below(starts); // every rank draws the whole batch
    if (i % shard.count == shard.index) fill(start, static_cast<uint32_t>(i / shard.count), tokens, targets);
  }
}

void DataLoader::valBatch(uint32_t index, uint32_t rows, std::vector<int32_t>& tokens,
                          std::vector<int32_t>& targets, Shard shard) const {
  tokens.resize(size_t(rows) * seqLen_);
  targets.resize(size_t(rows) * seqLen_);
  SplitMix64 rng{seed_ ^ 0x5eed5eed5eed5eedull ^ (uint64_t(index) * 0x9e3779b97f4a7c15ull)};
  const uint64_t starts = tokens_.size() - split_ - seqLen_;
  for (uint64_t i = 0; i < uint64_t(rows) * shard.count; ++i) {
    const uint64_t start = split_ + rng.below(starts);
    if (i % shard.count == shard.index) fill(start, static_cast<uint32_t>(i / shard.count), tokens, targets);
  }
}

} // namespace helios::train
