#include "memory_cli.hpp"

#include "memory_account.hpp"

#include "engine/train/memory_budget.hpp"
#include "progress.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

namespace helios::train_cli {

namespace {

void printPlan(const char* what, const graph::StepPlan& p) {
  std::printf("  %s: %zu temporaries over %llu dispatches, planned %s in %zu bins (%s without reuse, %s live "
              "at most)\n",
              what, p.lifetimes.size(), static_cast<unsigned long long>(p.dispatches),
              formatBytes(p.plan.totalBytes()).c_str(), p.plan.binBytes.size(),
              formatBytes(p.unplannedBytes()).c_str(), formatBytes(p.peakLiveBytes()).c_str());
  std::string live;
  int shown = 0;
  for (const auto& [name, bytes] : p.liveAtPeak()) {
    if (shown++ == 10) break;
    live += fmt::format("{}{} {}", live.empty() ? "" : ", ", name, formatBytes(bytes));
  }
  std::printf("    live at the peak: %s\n", live.c_str());
  std::printf(
      "    barriers between dispatches: %u with every temporary in its own range, %u as planned (plan in "
      "%s; reuse as soon as dead needs %s)\n",
      p.barriers, p.plannedBarriers, p.inEpochs ? "barrier epochs" : "dispatches",
      formatBytes(p.dispatchPlanBytes).c_str());
}

void printCensus(const char* what, const graph::StepCensus& c) {
  std::printf("  %s: %llu dispatches, %llu barriers, %s bound (per kernel family; barriers before its "
              "dispatches):\n",
              what, static_cast<unsigned long long>(c.dispatches),
              static_cast<unsigned long long>(c.barriers), formatBytes(c.boundBytes).c_str());
  std::printf("    %-32s %10s %9s %8s %12s\n", "family", "dispatches", "barriers", "kernels", "bound");
  for (const auto& f : c.families)
    std::printf("    %-32s %10llu %9llu %8llu %12s\n", f.family.c_str(),
                static_cast<unsigned long long>(f.dispatches), static_cast<unsigned long long>(f.barriers),
                static_cast<unsigned long long>(f.kernels), formatBytes(f.boundBytes).c_str());
}

} // namespace

void printStepMemory(vk::Context& ctx, train::Model& model, const train::TrainConfig& cfg) {
  const uint64_t fixed = ctx.allocator().stats().deviceBytesInUse;
  const vk::MemoryPlacement placement = ctx.allocator().placement();
  const train::StepMemory m = train::planStepMemory(ctx, model, cfg.batch, cfg.seqLen);
  std::printf("memory (dry run of micro-batch %u x %u; nothing trained):\n", cfg.batch, cfg.seqLen);
  std::printf("  model state (parameters, gradients, AdamW moments): %s reserved\n",
              formatBytes(fixed).c_str());
  printPlan("training step", m.train);
  printPlan("evaluation", m.eval);
  printCensus("training step (forward + backward, without the optimizer)", m.train.census);
  printCensus("evaluation", m.eval.census);
  std::printf("  estimated peak of device memory in use: %s (model state + %s for the trainer + %s of plan "
              "bins + %s of checkpoint staging)\n",
              formatBytes(train::estimatePeakBytes(fixed, cfg, m.binBytes(), placement)).c_str(),
              formatBytes(train::trainerDeviceBytes(cfg, placement)).c_str(),
              formatBytes(m.binBytes()).c_str(), formatBytes(train::stagingDeviceBytes(placement)).c_str());
  printMemoryAccount(ctx, model, cfg, m);
}

void fitMemory(vk::Context& ctx, train::Model& model, train::TrainConfig& cfg,
               const std::string& budgetText) {
  const uint64_t budget = train::parseByteSize(budgetText);
  if (!cfg.memoryPlan) throw std::invalid_argument("--max-memory needs the memory plan (--memory-plan on)");
  const uint64_t fixed =
      train::estimatePeakBytes(ctx.allocator().stats().deviceBytesInUse, cfg, 0, ctx.allocator().placement());
  std::map<uint32_t, uint64_t> asked;
  const auto stepBytes = [&](uint32_t b) {
    return asked[b] = train::planStepMemory(ctx, model, b, cfg.seqLen).binBytes();
  };
  const auto micro = train::chooseMicroBatch(cfg.batch, budget, fixed, stepBytes);
  if (!micro) {
    if (!asked.count(1)) stepBytes(1);
    throw std::runtime_error(fmt::format(
        "--max-memory {}: even a micro-batch of 1 x {} tokens needs {} (model state and trainer {}, step {})",
        budgetText, cfg.seqLen, formatBytes(fixed + asked[1]), formatBytes(fixed), formatBytes(asked[1])));
  }
  const uint32_t split = cfg.batch / *micro;
  std::printf("--max-memory %s: micro-batch %u x accum %u (was %u x %u); estimated peak %s in use\n",
              budgetText.c_str(), *micro, cfg.gradAccum * split, cfg.batch, cfg.gradAccum,
              formatBytes(fixed + asked[*micro]).c_str());
  cfg.batch = *micro;
  cfg.gradAccum *= split;
}

} // namespace helios::train_cli
