// The memory plan on a micro GPT (lavapipe): planned steps give the same bits as the bump arena (losses,
// validation loss, weights), the plan reaches its lower bound, the peak memory in use falls by exactly
// what the arena stops reserving, the planned step has no more barriers than the bump arena's, and
// --max-memory's estimate covers the measured peak of device memory (the pure estimate on a discrete, an
// integrated and a CPU device's placement of staging and token buffers). Each run has its own device context,
// so its allocator peak is its own.
#include "common.hpp"

#include "engine/train/memory_budget.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cmath>

using namespace helios;

namespace {

struct Measured {
  std::vector<float> losses, weights;
  float val = 0;
  uint64_t peakInUse = 0, arenaReserved = 0;
  uint64_t estimate = 0; // train::estimatePeakBytes from dry runs before the trainer existed
  uint32_t barriers = 0; // of the last step (forward, backward and optimizer segments)
  train::PlanSummary plan;
};

Measured trainOwnContext(train::TrainConfig cfg, bool planned) {
  cfg.memoryPlan = planned;
  auto ctx = vk::Context::create({.persistentPipelineCache = false});
  Measured m;
  {
    auto model = train::makeModel(*ctx, test::modelJsonFor(cfg), cfg.seed);
    const uint64_t modelState = ctx->allocator().stats().deviceBytesInUse;
    const uint64_t bins = train::planStepMemory(*ctx, *model, cfg.batch, cfg.seqLen).binBytes();
    m.estimate = train::estimatePeakBytes(modelState, cfg, bins, ctx->allocator().placement());
    train::DataLoader loader(*test::corpusTokens(), cfg.seqLen, cfg.seed);
    train::DataInfo info{"kjv", 42, test::corpusTokens()->size(), train::Tokenizer::byteLevel().toJson()};
    train::Trainer trainer(*ctx, *model, cfg, loader, info, {});
    trainer.train();
    m.val = trainer.evaluate();
    for (const auto& r : trainer.records())
      m.losses.push_back(r.loss);
    m.barriers = trainer.records().back().stats.barriers;
    trainer.graph().flush();
    for (auto& p : model->parameters()) {
      const auto v = ctx->downloadVector<float>(p.data, p.elements);
      m.weights.insert(m.weights.end(), v.begin(), v.end());
    }
    m.arenaReserved = trainer.arena().reservedBytes();
    m.plan = trainer.stepPlan();
  }
  m.peakInUse = ctx->allocator().stats().devicePeakBytesInUse;
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

  // Reuse adds no barrier: the plan keeps the dry run's barriers (every temporary in its own range), and the
  // bump arena has at least those (more where micro-batches reuse its ranges).
  CHECK(plan.plan.plannedBarriers == plan.plan.barriers);
  CHECK(plan.barriers <= bump.barriers);
  CHECK(plan.barriers > 0);

  // The estimate --max-memory and --plan-only give covers the planned run's measured peak of device memory,
  // by at most its 1 MiB margin for small buffers (the micro GPT's evaluation allocates nothing beyond its
  // plan), on whatever kind of device this is.
  INFO("estimate " << plan.estimate << ", measured peak " << plan.peakInUse);
  CHECK(plan.estimate >= plan.peakInUse);
  CHECK(plan.estimate - plan.peakInUse <= (1u << 20));
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

TEST_CASE("memory plan: recomputing each block's attention half gives the same bits as keeping it",
          "[train][gpt][memory-plan]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  auto cfg = test::microGptConfig();
  cfg.steps = 3;
  cfg.batch = 4;
  cfg.gpt.layers = 2;
  cfg.gpt.precision = model::Precision::Mixed;
  const Measured kept = trainOwnContext(cfg, true);
  cfg.gpt.checkpointAttention = true; // --checkpoint-activations attention
  const Measured recomputed = trainOwnContext(cfg, true);
  CHECK(recomputed.losses == kept.losses);
  CHECK(recomputed.weights == kept.weights);
  CHECK(recomputed.plan.peakLiveBytes < kept.plan.peakLiveBytes);
}

TEST_CASE("memory budget: the largest dividing micro-batch that fits, or none", "[train][memory-plan]") {
  // A step costing 1000 bytes per sequence beside 5000 fixed bytes.
  std::vector<uint32_t> asked;
  const auto bytes = [&](uint32_t b) {
    asked.push_back(b);
    return uint64_t{1000} * b;
  };
  CHECK(train::chooseMicroBatch(16, 21000, 5000, bytes) == 16u);
  CHECK(train::chooseMicroBatch(16, 20999, 5000, bytes) == 8u); // 12 fits but does not divide 16
  CHECK(train::chooseMicroBatch(12, 11000, 5000, bytes) == 6u);
  CHECK(train::chooseMicroBatch(7, 11999, 5000, bytes) == 1u); // a prime: all or one
  CHECK_FALSE(train::chooseMicroBatch(16, 5999, 5000, bytes).has_value());
  CHECK_FALSE(train::chooseMicroBatch(16, 4000, 5000, bytes).has_value());
  asked.clear();
  train::chooseMicroBatch(16, 13000, 5000, bytes);
  CHECK(asked == std::vector<uint32_t>{16, 8}); // only divisors, from the largest down, until one fits
}

TEST_CASE("memory budget: the estimate counts device memory where the device puts each kind of buffer",
          "[train][memory-plan]") {
  train::TrainConfig cfg;
  cfg.seqLen = 1024;
  cfg.batch = 16;
  cfg.gradAccum = 2;
  cfg.evalBatches = 3;
  const uint64_t model = 500'000'000, bins = 3'000'000'000, small = 1 << 20;
  // Tokens and targets: 4-byte ids, two sets of batch x accum rows for training, one set of batch x
  // evalBatches rows for the evaluation.
  const uint64_t tokens = 4 * (4ull * 1024 * 16 * 2) + 2 * (4ull * 1024 * 16 * 3);
  const uint64_t chunk = vk::Context::kStagingChunk;
  // A discrete GPU: device-local memory is not mapped, its staging and token buffers are host memory.
  const vk::MemoryPlacement discrete{
      .deviceLocalMapped = false, .uploadOnDevice = false, .readbackOnDevice = false};
  CHECK(train::estimatePeakBytes(model, cfg, bins, discrete) == model + bins + small);
  CHECK(train::stagingDeviceBytes(discrete) == 0);
  // A CPU device (lavapipe): everything is one mapped heap; copies need no staging.
  const vk::MemoryPlacement cpu{.deviceLocalMapped = true, .uploadOnDevice = true, .readbackOnDevice = true};
  CHECK(train::estimatePeakBytes(model, cfg, bins, cpu) == model + bins + tokens + small);
  CHECK(train::trainerDeviceBytes(cfg, cpu) == train::trainerBytes(cfg));
  // An integrated GPU whose device-local type is not mapped: its staging comes out of the same heap.
  const vk::MemoryPlacement integrated{
      .deviceLocalMapped = false, .uploadOnDevice = true, .readbackOnDevice = true};
  CHECK(train::estimatePeakBytes(model, cfg, bins, integrated) == model + bins + tokens + small + chunk);
  // Readback in a device-local heap but uploads in host memory: a download's staging is device memory.
  const vk::MemoryPlacement readbackOnly{
      .deviceLocalMapped = false, .uploadOnDevice = false, .readbackOnDevice = true};
  CHECK(train::estimatePeakBytes(model, cfg, bins, readbackOnly) == model + bins + small + chunk);
}

TEST_CASE("memory budget: this device's placement and its device counts", "[train][memory-plan]") {
  auto ctx = vk::Context::create({.persistentPipelineCache = false});
  vk::Allocator& alloc = ctx->allocator();
  const vk::MemoryPlacement p = alloc.placement();
  // Mapped device-local memory is one heap with the host-visible kinds wherever Helios has run (lavapipe, a
  // CPU device; integrated GPUs): then every byte is device memory.
  if (p.deviceLocalMapped) CHECK((p.uploadOnDevice && p.readbackOnDevice));
  const uint64_t before = alloc.stats().deviceBytesInUse, beforeAll = alloc.stats().bytesInUse;
  {
    vk::Buffer device = ctx->buffer(3 << 20, "device bytes"),
               up = ctx->buffer(1 << 20, "upload bytes", vk::MemoryKind::Upload);
    CHECK(alloc.stats().bytesInUse - beforeAll >= (4u << 20));
    CHECK(alloc.stats().deviceBytesInUse - before >= (p.uploadOnDevice ? 4u << 20 : 3u << 20));
    CHECK(alloc.stats().deviceBytesInUse - before < (p.uploadOnDevice ? 5u << 20 : 4u << 20));
    CHECK(alloc.stats().devicePeakBytesInUse >= alloc.stats().deviceBytesInUse);
  }
  CHECK(alloc.stats().deviceBytesInUse == before);
  CHECK(alloc.stats().bytesInUse == beforeAll);
}

TEST_CASE("memory budget: sizes with units", "[train][memory-plan]") {
  CHECK(train::parseByteSize("22GiB") == 22ull << 30);
  CHECK(train::parseByteSize("512MiB") == 512ull << 20);
  CHECK(train::parseByteSize("1.5GiB") == 3ull << 29);
  CHECK(train::parseByteSize("24GB") == 24000000000ull);
  CHECK(train::parseByteSize("4096") == 4096u);
  for (const char* bad : {"", "GiB", "12 GiB", "-1GiB", "0", "1TiB", "nan", "1e30GB"})
    CHECK_THROWS_AS(train::parseByteSize(bad), std::invalid_argument);
}

TEST_CASE("memory budget: micro-batches under gradient accumulation follow the full batch's loss",
          "[train][gpt][memory-plan]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  auto cfg = test::microGptConfig();
  cfg.steps = 4;
  cfg.batch = 4;
  const Measured full = trainOwnContext(cfg, true);
  cfg.batch = 2;
  cfg.gradAccum = 2; // what --max-memory makes of batch 4 when 2 sequences fit
  const Measured split = trainOwnContext(cfg, true);
  REQUIRE(full.losses.size() == 4);
  REQUIRE(split.losses.size() == 4);
  // Same sequences, same weights: step 1's loss is the mean of the two halves' means (f32 rounding only);
  // later steps differ by the order in which the gradient sums were rounded: 1e-4 relative over 4 steps.
  CHECK(std::abs(split.losses[0] - full.losses[0]) <= 1e-6f * full.losses[0]);
  for (size_t i = 1; i < 4; ++i) {
    INFO("step " << i + 1 << ": full " << full.losses[i] << ", micro-batched " << split.losses[i]);
    CHECK(std::abs(split.losses[i] - full.losses[i]) <= 1e-4f * full.losses[i]);
  }
}
