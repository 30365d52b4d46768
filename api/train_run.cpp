// Sets up a run as helios-train does (preset < overrides, data, tokenizer, model) and runs train::Trainer.
#include "api/train_run.hpp"

#include "api/internal.hpp"
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/memory_budget.hpp"
#include "engine/train/model_config.hpp"
#include "engine/train/run_dir.hpp"
#include "engine/train/trainer.hpp"

#include <optional>
#include <stdexcept>

namespace helios::api {

namespace {

train::TrainConfig engineConfig(const TrainConfig& c) {
  train::TrainConfig cfg;
  if (!c.preset.empty()) train::applyPreset(cfg, c.preset);
  const nlohmann::json overrides =
      nlohmann::json::parse(c.overrides.empty() ? "{}" : c.overrides, nullptr, false);
  if (overrides.is_discarded() || !overrides.is_object())
    throw std::invalid_argument("helios::train: overrides must be a JSON object");
  train::fromJson(overrides, cfg);
  cfg.validate();
  return cfg;
}

StepMetrics toMetrics(const train::StepRecord& r) {
  StepMetrics m;
  m.step = r.step;
  m.loss = r.loss;
  m.gradNorm = r.gradNorm;
  m.lr = r.lr;
  m.skipped = r.skipped;
  m.ms = r.ms;
  m.valLoss = r.valLoss;
  return m;
}

} // namespace

TrainResult runTraining(const Device& device, const TrainConfig& c) {
  const train::TrainConfig cfg = engineConfig(c);
  const std::string text = train::readCorpus(cfg.data);
  const train::Tokenizer tok = train::Tokenizer::make(cfg.tokenizer, text);
  std::vector<int32_t> ids = tok.encode(text);
  const std::string dataPath = cfg.data.empty() ? train::defaultCorpusPath().string() : cfg.data;
  train::DataInfo info{dataPath, train::fnv1a64(text), ids.size(), tok.toJson()};
  train::DataLoader loader(std::move(ids), cfg.seqLen, cfg.seed);

  // The run directory's owner for the whole run: a second trainer there, or one that already holds a run, is
  // refused (engine/train/run_dir.hpp).
  std::optional<train::RunDirectory> owner;
  if (!c.outDir.empty()) owner = train::RunDirectory::claim(c.outDir, train::RunStart::Fresh);
  vk::Context& ctx = *device.impl()->ctx;
  const nlohmann::json arch = train::modelConfigJson(cfg, tok);
  train::requireTrainingHostMemory(ctx, cfg, arch); // refused with the numbers, not by the OOM killer
  auto model = train::makeModel(ctx, arch, cfg.seed);
  train::Trainer trainer(ctx, *model, cfg, loader, info, c.outDir);
  train::TrainHooks hooks;
  if (c.onStep) hooks.onStep = [&](const train::StepRecord& r) { c.onStep(toMetrics(r)); };
  trainer.train(hooks);

  TrainResult result;
  for (const train::StepRecord& r : trainer.records())
    result.steps.push_back(toMetrics(r));
  result.parameters = model->parameterCount();
  result.model = model->describe();
  result.config = train::toJson(cfg).dump();
  result.data = dataPath;
  return result;
}

} // namespace helios::api
