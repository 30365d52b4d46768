// LoRA training through the trainer on the default corpus: the loss falls; the base is bit-identical after
// training and has no gradient or moment storage (checkpoints hold the adapters and their moments only); an
// adapters-only checkpoint resumes bit-identically, dropout's step counter included.
#include "common.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/safetensors.hpp"

#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>

using namespace helios;

namespace {

train::TrainConfig loraConfig() {
  train::TrainConfig c = test::microLlamaConfig();
  c.gpt.lora = {8, 16.0f, 0.1f, model::parseLoraTargets("q,k,v,o,gate,up,down"), model::BaseStorage::F16};
  c.gpt.precision = model::Precision::F32;
  c.lr = 1e-2f;
  c.steps = 30;
  c.warmup = 3;
  c.seed = 99;
  return c;
}

std::vector<std::vector<float>> frozenValues(train::Model& m) {
  std::vector<std::vector<float>> v;
  for (const auto& f : m.gpt()->frozen()) {
    std::vector<float> bits((f.bytes() + 3) / 4);
    test::trainCtx().download(f.data, std::as_writable_bytes(std::span<float>(bits)).first(f.bytes()));
    v.push_back(bits);
  }
  return v;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

} // namespace

TEST_CASE("LoRA training: the loss falls, the base is frozen bit for bit, checkpoints hold adapters only",
          "[train][lora]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  const auto run = test::tempDir("lora");
  const train::TrainConfig cfg = loraConfig();
  test::Run r(cfg, run);
  const auto before = frozenValues(*r.model);
  r.trainer->train();
  const std::vector<float> losses = r.losses();
  REQUIRE(losses.size() == 30);
  double first = 0, last = 0;
  for (size_t i = 0; i < 5; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  INFO("losses " << losses.front() << " ... " << losses.back());
  CHECK(last < first - 5 * 0.1); // a mean drop of 0.1 nats between the first and the last five steps
  const auto after = frozenValues(*r.model);
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i)
    CHECK(sameBits(after[i], before[i]));
  // The checkpoint: adapters, their two moments, and the base by reference (its seed).
  const auto dir = r.trainer->lastCheckpoint();
  const auto model = train::readSafetensors(dir / "model.safetensors", true);
  const auto opt = train::readSafetensors(dir / "optimizer.safetensors", true);
  CHECK(model.tensors.size() == r.model->parameters().size());
  CHECK(opt.tensors.size() == 2 * model.tensors.size());
  for (const auto& t : model.tensors)
    CHECK_THAT(t.name, Catch::Matchers::ContainsSubstring(".lora_"));
  CHECK(train::checkpointModelConfig(dir).at("lora_base") == nlohmann::json{{"seed", 99}});
  CHECK(train::checkpointTrainerState(dir).at("model_state").at("lora_dropout_step") == 30);
}

TEST_CASE("LoRA training: an adapters-only checkpoint resumes bit-identically (dropout on)",
          "[train][lora]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  train::TrainConfig cfg = loraConfig();
  cfg.steps = 8;
  test::Run straight(cfg);
  straight.trainer->train();
  const auto run = test::tempDir("lora-resume");
  train::TrainConfig half = cfg;
  half.steps = 8;
  test::Run a(half, run);
  for (int s = 0; s < 4; ++s)
    a.trainer->step();
  const auto dir = a.trainer->saveCheckpoint(run);
  test::Run b(cfg, run);
  b.trainer->resume(dir);
  b.trainer->train();
  const std::vector<float> all = straight.losses(), tail = b.losses();
  REQUIRE(tail.size() == 4);
  CHECK(sameBits(std::vector<float>(all.end() - 4, all.end()), tail));
  CHECK(sameBits(straight.weights(), b.weights()));
}
