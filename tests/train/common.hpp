#pragma once
// Shared setup of the trainer tests: one device context, the default corpus tokenized once, and a run
// (model + loader + trainer) built from a config.
#include "engine/graph/graph_executor.hpp"
#include "engine/train/bigram.hpp"
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/trainer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <filesystem>
#include <memory>

namespace helios::test {

inline vk::Context& trainCtx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

// The default corpus, byte-level (nullptr when the bootstrap has not written it).
inline const std::vector<int32_t>* corpusTokens() {
  static std::unique_ptr<std::vector<int32_t>> tokens = [] {
    if (!train::defaultCorpusAvailable()) return std::unique_ptr<std::vector<int32_t>>();
    const std::string text = train::readCorpus({});
    return std::make_unique<std::vector<int32_t>>(train::Tokenizer::byteLevel().encode(text));
  }();
  return tokens.get();
}

#define HELIOS_REQUIRE_CORPUS()                                                                              \
  if (!::helios::test::corpusTokens()) SKIP("default corpus missing: run third_party/bootstrap.sh")

// A bigram run on the default corpus: small, fast on lavapipe.
inline train::TrainConfig bigramConfig() {
  train::TrainConfig c;
  c.model = "bigram";
  c.batch = 8;
  c.seqLen = 64;
  c.lr = 0.1f;
  c.warmup = 5;
  c.steps = 20;
  c.evalEvery = 0;
  c.evalBatches = 2;
  c.timeEvery = 0;
  c.weightDecay = 0.0f;
  return c;
}

// A GPT small enough for lavapipe in a few seconds.
inline train::TrainConfig microGptConfig() {
  train::TrainConfig c = bigramConfig();
  c.model = "gpt";
  c.gpt.vocab = 256;
  c.gpt.layers = 1;
  c.gpt.dim = 64;
  c.gpt.heads = 2;
  c.gpt.context = 64;
  c.seqLen = 64;
  c.lr = 3e-3f;
  return c;
}

// The micro GPT in Llama's layout (RMSNorm, SwiGLU, RoPE, one KV head), two layers: LoRA's tests.
inline train::TrainConfig microLlamaConfig() {
  train::TrainConfig c = microGptConfig();
  c.gpt.layers = 2;
  c.gpt.norm = model::NormKind::RMSNorm;
  c.gpt.mlp = model::MlpKind::SwiGLU;
  c.gpt.rope = true;
  c.gpt.kvHeads = 1;
  return c;
}

inline nlohmann::json modelJsonFor(const train::TrainConfig& c) {
  if (c.model == "bigram") return {{"kind", "bigram"}, {"vocab", 256}};
  nlohmann::json j = train::toJson(c.gpt);
  j["kind"] = "gpt";
  if (c.gpt.lora.enabled()) j["lora_base"] = {{"seed", c.seed}}; // a LoRA model over the seeded base
  return j;
}

struct Run {
  std::unique_ptr<train::Model> model;
  std::unique_ptr<train::DataLoader> loader;
  std::unique_ptr<train::Trainer> trainer;

  Run(const train::TrainConfig& cfg, const std::filesystem::path& out = {}) {
    model = train::makeModel(trainCtx(), modelJsonFor(cfg), cfg.seed);
    loader = std::make_unique<train::DataLoader>(*corpusTokens(), cfg.seqLen, cfg.seed);
    train::DataInfo info{"kjv", 42, corpusTokens()->size(), train::Tokenizer::byteLevel().toJson()};
    trainer = std::make_unique<train::Trainer>(trainCtx(), *model, cfg, *loader, info, out);
  }
  std::vector<float> losses() const {
    std::vector<float> l;
    for (const auto& r : trainer->records())
      l.push_back(r.loss);
    return l;
  }
  std::vector<float> weights() {
    std::vector<float> all;
    trainer->graph().flush();
    for (auto& p : model->parameters()) {
      auto v = model::downloadValues(trainCtx(), p); // bf16 parameters widened
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
};

// The model's f32 logits for `ids` (batch rows of ids.size() / batch tokens), from a poisoned output buffer.
inline std::vector<float> modelLogits(train::Model& m, const std::vector<int32_t>& ids, uint32_t batch) {
  vk::Context& ctx = trainCtx();
  const uint32_t T = static_cast<uint32_t>(ids.size() / batch);
  vk::Buffer tok = ctx.buffer(4ull * ids.size(), "tokens"),
             logits = ctx.buffer(4ull * ids.size() * m.vocab(), "logits");
  ctx.uploadVector(tok, ids);
  ctx.uploadVector(logits, std::vector<float>(ids.size() * m.vocab(), std::nanf("")));
  graph::GraphExecutor exec(ctx);
  graph::StepArena arena(ctx);
  m.forward(exec, arena, tok.range(), batch, T, logits.range());
  exec.flush();
  return ctx.downloadVector<float>(logits, ids.size() * m.vocab());
}

inline std::filesystem::path tempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("helios-train-test-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace helios::test
