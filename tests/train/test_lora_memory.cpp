// A LoRA run's memory, by class: the model state's classes (engine/train/memory_classes) against sizes
// computed here from the adapter layout and the frozen tensors; the step's classes sum to what the plan holds
// at its peak; helios-train --plan-only prints the account and the largest allocation, --max-memory plans a
// LoRA run or refuses with its estimate, and --plan-binding-limit is for dry runs only.
#include "common.hpp"
#include "hf_models.hpp"

#include "engine/model/lora_sites.hpp"
#include "engine/train/memory_budget.hpp"
#include "engine/train/memory_classes.hpp"

#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using test::heliosTrain;
namespace fs = std::filesystem;

namespace {

train::TrainConfig loraConfig(model::BaseStorage base) {
  train::TrainConfig c = test::microLlamaConfig();
  c.gpt.checkpointActivations = true;
  c.gpt.lora = {4, 8.0f, 0.0f, model::parseLoraTargets("q,v,o,down"), base};
  // A 16-bit base under the precision of its kind (an f32 one under mixed).
  c.gpt.precision = base == model::BaseStorage::BF16 ? model::Precision::BF16 : model::Precision::Mixed;
  return c;
}

uint64_t classBytes(const std::vector<train::MemoryClass>& classes, const std::string& prefix) {
  uint64_t sum = 0;
  int found = 0;
  for (const train::MemoryClass& c : classes)
    if (c.name.starts_with(prefix)) sum += c.bytes, ++found;
  INFO(prefix);
  REQUIRE(found == 1);
  return sum;
}

} // namespace

TEST_CASE(
    "LoRA memory classes: the base by storage type, adapters with gradients and moments, the step's peak",
    "[train][lora][memory]") {
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  const model::BaseStorage base =
      GENERATE(model::BaseStorage::F16, model::BaseStorage::BF16, model::BaseStorage::F32);
  const train::TrainConfig cfg = loraConfig(base);
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 7);
  // The adapters' elements from the layout: per block and site, A [parts * r, in] and B [rows, r].
  uint64_t adapter = 0;
  for (const model::LoraSite& s : model::loraSites(cfg.gpt))
    adapter += uint64_t(cfg.gpt.layers) * cfg.gpt.lora.rank * (s.parts.size() * s.in + s.bRows());
  uint64_t half = 0, full = 0;
  for (const model::FrozenTensor& f : model->gpt()->frozen())
    (f.shape.size() == 2 && codegen::isHalf(base) ? half : full) +=
        uint64_t(f.elements) * (f.shape.size() == 2 && codegen::isHalf(base) ? 2 : 4);
  const auto state = train::modelStateClasses(*model);
  CHECK(classBytes(state, "adapters (f32)") == 4 * adapter);
  CHECK(classBytes(state, "adapters' gradients") == 4 * adapter);
  CHECK(classBytes(state, "adapters' AdamW moments") == 8 * adapter);
  if (codegen::isHalf(base)) {
    CHECK(classBytes(state, std::string("frozen base, ") + codegen::elemName(base)) == half);
    CHECK(classBytes(state, "frozen base, f32 (norms") == full);
  } else {
    CHECK(half == 0);
    CHECK(classBytes(state, "frozen base, f32") == full);
  }
  uint64_t stateSum = 0;
  for (const auto& c : state)
    stateSum += c.bytes;
  CHECK(stateSum <= test::trainCtx().allocator().stats().bytesInUse);
  // The step's classes partition what the plan holds at its peak; checkpointed outputs are one of them.
  const train::StepMemory m = train::planStepMemory(test::trainCtx(), *model, 2, 64);
  const auto peak = train::peakClasses(m.train);
  uint64_t peakSum = 0, live = 0;
  for (const auto& c : peak)
    peakSum += c.bytes;
  for (const auto& [name, bytes] : m.train.liveAtPeak())
    live += bytes;
  CHECK(peakSum == live);
  CHECK(live > 0);
  CHECK(live <= m.train.peakLiveBytes());
  CHECK(classBytes(peak, "checkpointed block outputs") > 0);
  for (size_t i = 1; i < peak.size(); ++i)
    CHECK(peak[i - 1].bytes >= peak[i].bytes);
}

TEST_CASE("LoRA memory classes: a full model's parameters, gradients and moments", "[train][lora][memory]") {
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  train::TrainConfig cfg = loraConfig(model::BaseStorage::F16);
  cfg.gpt.lora = {};
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 7);
  const auto state = train::modelStateClasses(*model);
  REQUIRE(state.size() == 3);
  CHECK(classBytes(state, "parameters (f32)") == 4 * model->parameterCount());
  CHECK(classBytes(state, "parameters' gradients") == 4 * model->parameterCount());
  CHECK(classBytes(state, "parameters' AdamW moments") == 8 * model->parameterCount());
}

TEST_CASE("helios-train --plan-only accounts a LoRA run by class; --max-memory plans or refuses it",
          "[train][lora][memory][cli]") {
  const fs::path out = fs::temp_directory_path() / "helios-lora-memory";
  fs::remove_all(out);
  const std::string lora =
      "--preset tiny --lora-rank 4 --precision mixed --checkpoint-activations block --batch 4 "
      "--seq-len 64 --steps 1 --eval-every 0 --out " +
      out.string();
  const auto plan = heliosTrain(lora + " --plan-only --plan-binding-limit 1GiB");
  INFO(plan.output);
  REQUIRE(plan.exitCode == 0);
  for (const char* line :
       {"account of the estimated peak", "frozen base, f16 (matrices, embeddings)",
        "frozen base, f32 (norms, biases, positions)", "adapters (f32)", "adapters' gradients",
        "adapters' AdamW moments", "checkpointed block outputs", "step plan bins",
        "largest single allocation", "maxStorageBufferRange 1.00 GiB, maxMemoryAllocationSize 1.00 GiB"})
    CHECK_THAT(plan.output, ContainsSubstring(line));
  CHECK_FALSE(fs::exists(out / "checkpoints"));
  const auto fits = heliosTrain(lora + " --max-memory 4GiB");
  INFO(fits.output);
  CHECK(fits.exitCode == 0);
  CHECK_THAT(fits.output, ContainsSubstring("--max-memory 4GiB: micro-batch 4 x accum 1"));
  const auto refused = heliosTrain(lora + " --max-memory 1MiB --overwrite"); // the run above holds `out`
  CHECK(refused.exitCode != 0);
  CHECK_THAT(refused.output,
             ContainsSubstring("--max-memory 1MiB: even a micro-batch of 1 x 64 tokens needs"));
  const auto dry = heliosTrain(lora + " --plan-binding-limit 1GiB");
  CHECK(dry.exitCode != 0);
  CHECK_THAT(dry.output, ContainsSubstring("--plan-binding-limit is for dry runs: give --plan-only"));
  const auto big = heliosTrain(lora + " --plan-only --plan-binding-limit 5GiB");
  CHECK(big.exitCode != 0);
  CHECK_THAT(big.output,
             ContainsSubstring("--plan-binding-limit 5GiB: Vulkan's maxStorageBufferRange is a 32-bit"));
}
