// The memory plan on a micro GPT (lavapipe): planned steps give the same bits as the bump arena (losses,
// validation loss, weights), the plan reaches its lower bound, and the peak memory in use falls by exactly
// what the arena stops reserving. Each run has its own device context, so its allocator peak is its own.
#include "common.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace helios;

namespace {

struct Measured {
  std::vector<float> losses, weights;
  float val = 0;
  uint64_t peakInUse = 0, arenaReserved = 0;
  train::PlanSummary plan;
};

Measured trainOwnContext(train::TrainConfig cfg, bool planned) {
  cfg.memoryPlan = planned;
  auto ctx = vk::Context::create({.persistentPipelineCache = false});
  Measured m;
  {
    auto model = train::makeModel(*ctx, test::modelJsonFor(cfg), cfg.seed);
    train::DataLoader loader(*test::corpusTokens(), cfg.seqLen, cfg.seed);
    train::DataInfo info{"kjv", 42, test::corpusTokens()->size(), train::Tokenizer::byteLevel().toJson()};
    train::Trainer trainer(*ctx, *model, cfg, loader, info, {});
    trainer.train();
    m.val = trainer.evaluate();
    for (const auto& r : trainer.records())
      m.losses.push_back(r.loss);
    trainer.graph().flush();
    for (auto& p : model->parameters()) {
      const auto v = ctx->downloadVector<float>(p.data, p.elements);
      m.weights.insert(m.weights.end(), v.begin(), v.end());
    }
    m.arenaReserved = trainer.arena().reservedBytes();
    m.plan = trainer.stepPlan();
  }
  m.peakInUse = ctx->allocator().stats().peakBytesInUse;
  return m;
}

void checkPlannedEqualsBump(const train::TrainConfig& cfg) {
  const Measured bump = trainOwnContext(cfg, false), plan = trainOwnContext(cfg, true);
  REQUIRE(bump.losses.size() == cfg.steps);
  CHECK(plan.losses == bump.losses); // bit for bit
  CHECK(plan.val == bump.val);
  CHECK(plan.weights == bump.weights);

  // The plan's own arithmetic: it needs its bins and nothing else from the arena, never less than the most
  // bytes live at one dispatch, and less than the same temporaries without reuse.
  REQUIRE(plan.plan.requests > 0);
  CHECK(bump.plan.requests == 0);
  CHECK(plan.arenaReserved == plan.plan.plannedBytes);
  CHECK(plan.plan.plannedBytes >= plan.plan.peakLiveBytes);
  CHECK(plan.plan.plannedBytes * 2 < plan.plan.unplannedBytes);
  // Everything else is allocated alike, so the peak in use falls by what the arena no longer reserves.
  CHECK(bump.peakInUse - plan.peakInUse == bump.arenaReserved - plan.arenaReserved);
  CHECK(plan.peakInUse < bump.peakInUse);
}

} // namespace

TEST_CASE("memory plan: planned steps equal the bump arena's bit for bit (f32, 2 micro-batches, eval)",
          "[train][gpt][memory-plan]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  auto cfg = test::microGptConfig();
  cfg.steps = 4;
  cfg.batch = 4;
  cfg.gradAccum = 2;
  cfg.evalEvery = 2;
  cfg.evalBatches = 1;
  checkPlannedEqualsBump(cfg);
}

TEST_CASE("memory plan: planned steps equal the bump arena's bit for bit (mixed, checkpointed blocks)",
          "[train][gpt][memory-plan]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  auto cfg = test::microGptConfig();
  cfg.steps = 3;
  cfg.batch = 4;
  cfg.gpt.layers = 2;
  cfg.gpt.precision = model::Precision::Mixed;
  cfg.gpt.checkpointActivations = true;
  cfg.evalEvery = 3;
  cfg.evalBatches = 1;
  checkPlannedEqualsBump(cfg);
}
