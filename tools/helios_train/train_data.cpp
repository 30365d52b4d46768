#include "train_data.hpp"

#include "engine/train/chat_loader.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/data.hpp"
#include "engine/train/token_shard.hpp"

#include <cstdio>
#include <fmt/format.h>

namespace helios::train_cli {

namespace {

train::Tokenizer tokenizerFor(const train::TrainConfig& cfg, const TokenizerSource& s,
                              std::string_view text) {
  if (!s.checkpoint.empty()) return train::loadCheckpointTokenizer(s.checkpoint);
  if (s.imported && !s.tokenizerFlag)
    if (std::optional<train::Tokenizer> imported = train::hf::importTokenizer(*s.imported)) return *imported;
  train::Tokenizer tok = train::Tokenizer::make(cfg.tokenizer, text);
  if (s.imported)
    std::printf("note: %s: the %s tokenizer (vocab %u) encodes the data; %s\n", s.initFrom.c_str(),
                tok.kindName(), tok.vocab(),
                s.tokenizerFlag ? "--tokenizer overrides the directory's"
                                : "the directory holds no tokenizer Helios reads");
  return tok;
}

// Chat examples rendered with the chosen template; the log lines say what was read, left out and held out.
void openChat(const train::TrainConfig& cfg, TrainingData& d) {
  const train::Tokenizer& tok = *d.tokenizer;
  const train::ChatRenderer renderer(train::chooseChatTemplate(cfg.chatTemplate, tok.chatTemplate()), tok);
  const train::ChatDataConfig c{cfg.chatData,     cfg.chatEvalData, cfg.evalFraction,
                                cfg.skipBadLines, cfg.seqLen,       cfg.seed};
  train::ChatData chat = train::openChatData(c, renderer, tok.endOfText().value_or(0));
  d.path = cfg.chatData;
  d.info = {d.path, chat.hash, chat.loader->trainTokens(), tok.toJson(), tok.files(), chat.toJson()};
  d.log.push_back(fmt::format("  chat data ({} template): {}",
                              train::toString(renderer.chatTemplate().format), chat.trainFile.describe()));
  d.log.push_back(fmt::format(
      "  {} training examples in {} sequences, {} evaluation examples in {} sequences ({})",
      chat.trainExamples, chat.loader->train().count(), chat.evalExamples, chat.loader->eval().count(),
      cfg.chatEvalData.empty() ? fmt::format("held out: eval_fraction {:g}", cfg.evalFraction)
                               : chat.evalFile.describe()));
  for (const auto* stats : {&chat.trainFile, &chat.evalFile})
    for (const std::string& note : stats->notes)
      d.log.push_back("    " + note);
  d.loader = std::move(chat.loader);
}

} // namespace

TrainingData openTrainingData(const train::TrainConfig& cfg, const TokenizerSource& source) {
  TrainingData d;
  if (!cfg.dataDir.empty()) {
    auto shards = train::openShardSet(cfg.dataDir);
    d.tokenizer = shards->tokenizer;
    d.path = cfg.dataDir;
    d.info = {d.path, shards->indexHash, shards->trainTokens(), d.tokenizer->toJson(), d.tokenizer->files(),
              {}};
    d.loader = std::make_unique<train::DataLoader>(std::move(shards), cfg.seqLen, cfg.seed);
    return d;
  }
  if (cfg.chat()) {
    if (source.checkpoint.empty() && !source.imported && cfg.tokenizer == "char")
      throw std::invalid_argument(
          "chat data: a char-level tokenizer has no chat template tokens; start from a "
          "model with its tokenizer (--init-from DIR)");
    d.tokenizer = tokenizerFor(cfg, source, {});
    openChat(cfg, d);
    return d;
  }
  const std::string text = train::readCorpus(cfg.data);
  d.path = cfg.data.empty() ? train::defaultCorpusPath().string() : cfg.data;
  d.tokenizer = tokenizerFor(cfg, source, text);
  std::vector<int32_t> ids = d.tokenizer->encode(text);
  d.info = {d.path, train::fnv1a64(text), ids.size(), d.tokenizer->toJson(), d.tokenizer->files(), {}};
  d.loader = std::make_unique<train::DataLoader>(std::move(ids), cfg.seqLen, cfg.seed);
  return d;
}

} // namespace helios::train_cli
