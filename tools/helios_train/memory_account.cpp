#include "memory_account.hpp"

#include "engine/train/memory_classes.hpp"
#include "progress.hpp"
#include "train_flags.hpp"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::train_cli {

namespace {

// One class: its name, then its size right-aligned in one column whatever the indent.
void line(const std::string& what, uint64_t bytes, int indent = 4) {
  std::printf("%*s%-*s %10s\n", indent, "", 72 - indent, what.c_str(), formatBytes(bytes).c_str());
}

} // namespace

void printMemoryAccount(vk::Context& ctx, train::Model& model, const train::TrainConfig& cfg,
                        const train::StepMemory& m) {
  const vk::MemoryPlacement placement = ctx.allocator().placement();
  const uint64_t inUse = ctx.allocator().stats().deviceBytesInUse;
  const uint64_t peak = train::estimatePeakBytes(inUse, cfg, m.binBytes(), placement);
  const auto& limits = ctx.device().limits();
  std::printf("  account of the estimated peak, %s:\n", formatBytes(peak).c_str());
  uint64_t classified = 0;
  for (const train::MemoryClass& c : train::modelStateClasses(model)) {
    line(c.name, c.bytes);
    classified += c.bytes;
  }
  line("other model buffers (RoPE table, counters, alignment)", inUse - std::min(inUse, classified));
  line("trainer (token and target buffers where they are device memory, evaluation batches, records)",
       train::trainerDeviceBytes(cfg, placement));
  line("step plan bins (training step and evaluation share them)", m.binBytes());
  std::printf("      of which live at the training step's peak:\n");
  for (const train::MemoryClass& c : train::peakClasses(m.train))
    line(c.name, c.bytes, 8);
  line("checkpoint staging (0 where device memory is host-visible or staging is host memory)",
       train::stagingDeviceBytes(placement));
  uint64_t largestBin = 0;
  for (uint64_t b : m.train.plan.binBytes)
    largestBin = std::max(largestBin, b);
  const uint64_t largest = std::max(ctx.allocator().stats().largestBlock, largestBin);
  const uint64_t limit =
      std::min<uint64_t>(limits.maxStorageBufferRange, ctx.device().maxMemoryAllocationSize());
  std::printf("  largest single allocation %s; the device allows %s (maxStorageBufferRange %s, "
              "maxMemoryAllocationSize %s)\n",
              formatBytes(largest).c_str(), formatBytes(limit).c_str(),
              formatBytes(limits.maxStorageBufferRange).c_str(),
              formatBytes(ctx.device().maxMemoryAllocationSize()).c_str());
}

uint32_t planBindingLimit(const Flags& f) {
  if (f.planBindingLimit.empty()) return 0;
  if (!f.planOnly)
    throw std::invalid_argument(
        "--plan-binding-limit is for dry runs: give --plan-only (kernels bound past the "
        "device's real limit would be invalid)");
  const uint64_t bytes = train::parseByteSize(f.planBindingLimit);
  if (bytes > 0xffffffffull)
    throw std::invalid_argument(
        fmt::format("--plan-binding-limit {}: Vulkan's maxStorageBufferRange is a 32-bit "
                    "limit (at most 4GiB minus 1 byte)",
                    f.planBindingLimit));
  return static_cast<uint32_t>(bytes);
}

} // namespace helios::train_cli
