#pragma once
// A tuning run: every target searched in turn (GEMM shapes, then each attention shape's forward and
// backward) under one time budget split by each search's share of the step's FLOPs (budgetShares), with a
// progress bar, and the winners written as the device's tuning file (or `out`). helios-tune and
// helios-train --tune call this.
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "attention_tuner.hpp"
#include "gemm_tuner.hpp"
#include "targets.hpp"

namespace helios::tune {

struct TuneOptions {
  double budgetSeconds = 300;
  uint32_t maxEvaluations = 60; // per target
  uint64_t seed = 1;
  TimingOptions timing;
  std::filesystem::path out; // empty: the device's tuning file in the cache directory
  std::ostream* progress = nullptr;
};

struct TuneReport {
  std::filesystem::path file; // where the record went
  nlohmann::json summary;     // per target: default and tuned time, choice, evaluations, rejections
  double seconds = 0;         // the whole run
};

// Each search's share of the budget from its FLOPs per step: 80% in proportion, 20% evenly (every search
// times the policy's choice and a few candidates, however small its shape). Sums to 1.
std::vector<double> budgetShares(const std::vector<double>& flops);

// Tunes `targets` on `ctx`'s device, writes the file (keeping its other entries when it already belongs to
// this device) and reloads the device's record so the process uses it at once.
TuneReport tuneTargets(vk::Context& ctx, const Targets& targets, const TuneOptions& options);

} // namespace helios::tune
