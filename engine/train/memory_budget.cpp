#include "engine/train/memory_budget.hpp"

#include "engine/graph/arena.hpp"
#include "engine/train/host_memory.hpp"
#include "engine/train/model_config.hpp"
#include "engine/vk/context.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

uint64_t StepMemory::binBytes() const {
  const auto& a = train.plan.binBytes;
  const auto& b = eval.plan.binBytes;
  uint64_t total = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
    total += std::max(i < a.size() ? a[i] : 0, i < b.size() ? b[i] : 0);
  return total;
}

StepMemory planStepMemory(vk::Context& ctx, Model& model, uint32_t microBatch, uint32_t T) {
  // The dry runs read no token and write no loss; the ranges only have to be well-formed.
  const VkDeviceSize rows = 4ull * microBatch * T;
  vk::Buffer tokens = ctx.buffer(rows, "dry-run tokens"), targets = ctx.buffer(rows, "dry-run targets");
  vk::Buffer loss = ctx.buffer(4, "dry-run loss");
  graph::StepArena arena(ctx);
  StepMemory m;
  m.train = graph::planStep(ctx, arena, [&](ops::Executor& exec) {
    model.forwardBackward(exec, arena, tokens.range(), targets.range(), microBatch, T, loss.range(), 1.0f);
  });
  const vk::BufferRange tgt = targets.range(), out = loss.range();
  m.eval = graph::planStep(ctx, arena, [&](ops::Executor& exec) {
    model.forward(exec, arena, tokens.range(), microBatch, T, {}, &tgt, &out);
  });
  return m;
}

namespace {

// The trainer's small buffers (losses, step records, partial sums, counters), a margin over all of them.
constexpr uint64_t kTrainerSmallBytes = 1ull << 20;

// Tokens and targets (and document positions with chat data): two training sets of gradAccum
// micro-batches, and the evaluation's (Upload buffers).
uint64_t tokenBytes(const TrainConfig& cfg) {
  const uint64_t rows = 4ull * cfg.seqLen, buffers = cfg.chat() ? 3 : 2;
  return 2 * buffers * rows * cfg.batch * cfg.gradAccum +
         buffers * rows * cfg.batch * std::max(cfg.evalBatches, 1u);
}

} // namespace

uint64_t trainerBytes(const TrainConfig& cfg) {
  return tokenBytes(cfg) + kTrainerSmallBytes;
}

uint64_t trainerDeviceBytes(const TrainConfig& cfg, const vk::MemoryPlacement& placement) {
  return (placement.uploadOnDevice ? tokenBytes(cfg) : 0) + kTrainerSmallBytes;
}

uint64_t stagingDeviceBytes(const vk::MemoryPlacement& placement) {
  const bool stagingOnDevice = placement.uploadOnDevice || placement.readbackOnDevice;
  return !placement.deviceLocalMapped && stagingOnDevice ? vk::Context::kStagingChunk : 0;
}

void requireTrainingHostMemory(vk::Context& ctx, const TrainConfig& cfg, const nlohmann::json& arch) {
  const ParameterFootprint p = parameterFootprintOf(arch);
  // A CPU device (lavapipe) or an integrated GPU allocates its "device" memory from the host's.
  const auto type = ctx.device().properties().deviceType;
  const bool deviceIsHost =
      type == VK_PHYSICAL_DEVICE_TYPE_CPU || type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  requireHostMemory(
      trainingHostNeed(p.trainable, p.frozenBytes, deviceIsHost, trainerBytes(cfg), ctx.stagingBytes()),
      availableHostMemory(),
      fmt::format("a {} model of {} trained parameters{}", arch.value("kind", "?"), p.trainable,
                  p.frozenBytes ? fmt::format(" over a {} frozen base", formatHostBytes(p.frozenBytes))
                                : ""));
}

uint64_t estimatePeakBytes(uint64_t modelStateBytes, const TrainConfig& cfg, uint64_t binBytes,
                           const vk::MemoryPlacement& placement) {
  return modelStateBytes + trainerDeviceBytes(cfg, placement) + binBytes + stagingDeviceBytes(placement);
}

std::optional<uint32_t> chooseMicroBatch(uint32_t batch, uint64_t budget, uint64_t fixedBytes,
                                         const std::function<uint64_t(uint32_t)>& stepBytes) {
  for (uint32_t b = batch; b >= 1; --b)
    if (batch % b == 0 && fixedBytes <= budget && stepBytes(b) <= budget - fixedBytes) return b;
  return std::nullopt;
}

uint64_t parseByteSize(const std::string& text) {
  const auto bad = [&] {
    return std::invalid_argument(
        fmt::format("'{}' is not a memory size (a number with KiB, MiB, GiB, KB, MB, GB or no unit)", text));
  };
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string unit = text.substr(used);
  double mul = 0;
  if (unit.empty() || unit == "B")
    mul = 1;
  else if (unit == "KiB")
    mul = 1024.0;
  else if (unit == "MiB")
    mul = 1024.0 * 1024;
  else if (unit == "GiB")
    mul = 1024.0 * 1024 * 1024;
  else if (unit == "KB")
    mul = 1e3;
  else if (unit == "MB")
    mul = 1e6;
  else if (unit == "GB")
    mul = 1e9;
  if (mul == 0 || !std::isfinite(value) || value <= 0 || value * mul > 1.8e19) throw bad();
  return static_cast<uint64_t>(value * mul);
}

} // namespace helios::train
