#include "engine/train/chat_loader.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/train/data.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace helios::train {

namespace {

void copyRow(const PackedChat& p, size_t sequence, uint32_t row, Batch& out) {
  const size_t T = p.T, from = sequence * T, to = size_t(row) * T;
  std::copy_n(p.tokens.begin() + from, T, out.tokens.begin() + to);
  std::copy_n(p.targets.begin() + from, T, out.targets.begin() + to);
  std::copy_n(p.positions.begin() + from, T, out.positions.begin() + to);
}

void shape(Batch& out, uint32_t rows, uint32_t T) {
  for (auto* v : {&out.tokens, &out.targets, &out.positions})
    v->resize(size_t(rows) * T);
  out.trainedTargets = 0;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the chat data", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read failed", path));
  return ss.str();
}

// A seeded permutation of 0 .. n-1.
std::vector<size_t> shuffled(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng{seed};
  for (size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

// The held-out examples: round(fraction * n) of them (at least 1, at most n - 1), drawn by a seeded shuffle;
// the rest stay in `examples`.
std::vector<ChatExample> holdOut(std::vector<ChatExample>& examples, double fraction, uint64_t seed,
                                 const std::string& path) {
  const size_t n = examples.size();
  if (n < 2)
    throw std::invalid_argument(fmt::format("{}: {} example, too few to hold out an evaluation split "
                                            "(--eval-fraction {}): give --eval-data FILE, "
                                            "or --eval-fraction 0 with --eval-every 0",
                                            path, n, fraction));
  const size_t held = std::clamp<size_t>(size_t(std::llround(fraction * double(n))), 1, n - 1);
  std::vector<bool> eval(n, false);
  const std::vector<size_t> order = shuffled(n, seed ^ 0xe7a1e7a1e7a1e7a1ull);
  for (size_t i = 0; i < held; ++i)
    eval[order[i]] = true;
  std::vector<ChatExample> train, out;
  for (size_t i = 0; i < n; ++i)
    (eval[i] ? out : train).push_back(std::move(examples[i]));
  examples = std::move(train);
  return out;
}

uint64_t hashPacked(const PackedChat& p, uint64_t h) {
  for (const auto* v : {&p.tokens, &p.targets, &p.positions})
    h = helios::fnv1a64(std::string_view(reinterpret_cast<const char*>(v->data()), v->size() * 4), h);
  return h;
}

} // namespace

ChatLoader::ChatLoader(PackedChat train, PackedChat eval, uint64_t seed)
    : train_(std::move(train)), eval_(std::move(eval)), seed_(seed) {
  if (train_.count() == 0) throw std::invalid_argument("chat data: no training sequence");
}

size_t ChatLoader::sequence(uint64_t k) {
  const uint64_t n = train_.count(), epoch = k / n;
  if (epoch != epoch_) {
    order_ = shuffled(n, seed_ ^ ((epoch + 1) * 0x9e3779b97f4a7c15ull));
    epoch_ = epoch;
  }
  return order_[k % n];
}

void ChatLoader::nextTrain(uint32_t rows, Batch& out, Shard shard) {
  const ShardDraws draws(rows, shard, "ChatLoader");
  shape(out, rows, train_.T);
  for (uint64_t i = 0; i < draws.count(); ++i) { // every rank draws the whole batch
    const size_t s = sequence(drawn_++);
    out.trainedTargets += train_.trained[s];
    if (const int64_t row = draws.row(i); row >= 0) copyRow(train_, s, static_cast<uint32_t>(row), out);
  }
}

void ChatLoader::valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard) const {
  if (eval_.count() == 0) throw std::invalid_argument("chat data: no evaluation sequence");
  const ShardDraws draws(rows, shard, "ChatLoader");
  shape(out, rows, eval_.T);
  for (uint64_t i = 0; i < draws.count(); ++i) {
    const size_t s = (uint64_t(index) * draws.count() + i) % eval_.count();
    out.trainedTargets += eval_.trained[s];
    if (const int64_t row = draws.row(i); row >= 0) copyRow(eval_, s, static_cast<uint32_t>(row), out);
  }
}

nlohmann::ordered_json ChatData::toJson() const {
  nlohmann::ordered_json j{{"train", trainFile.toJson()},
                           {"train_examples", trainExamples},
                           {"train_sequences", loader->train().count()},
                           {"eval_examples", evalExamples},
                           {"eval_sequences", loader->eval().count()}};
  if (!evalFile.path.empty()) j["eval"] = evalFile.toJson();
  return j;
}

ChatData openChatData(const ChatDataConfig& c, const ChatRenderer& renderer, int32_t padId) {
  ChatData d;
  const ChatReadOptions read{c.seqLen, c.skipBadLines};
  std::vector<ChatExample> train = readChatExamples(c.train, readFile(c.train), renderer, read, d.trainFile);
  std::vector<ChatExample> eval;
  if (!c.eval.empty())
    eval = readChatExamples(c.eval, readFile(c.eval), renderer, read, d.evalFile);
  else if (c.evalFraction > 0)
    eval = holdOut(train, c.evalFraction, c.seed, c.train);
  d.trainExamples = train.size();
  d.evalExamples = eval.size();
  PackedChat packedTrain = packChat(train, c.seqLen, padId), packedEval = packChat(eval, c.seqLen, padId);
  d.hash = hashPacked(packedEval, hashPacked(packedTrain, helios::fnv1a64("chat")));
  d.loader = std::make_unique<ChatLoader>(std::move(packedTrain), std::move(packedEval), c.seed);
  return d;
}

} // namespace helios::train
