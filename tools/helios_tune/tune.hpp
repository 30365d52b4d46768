#pragma once
// A tuning run: every target searched in turn under one time budget (split evenly), with a progress bar,
// and the winners written as the device's tuning file (or `out`). helios-tune and helios-train --tune call
// this.
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "attention_tuner.hpp"
#include "gemm_tuner.hpp"
#include "targets.hpp"

namespace helios::tune {

struct TuneOptions {
  double budgetSeconds = 60;
  uint32_t maxEvaluations = 60; // per target
  uint64_t seed = 1;
  TimingOptions timing;
  std::filesystem::path out; // empty: the device's tuning file in the cache directory
  std::ostream* progress = nullptr;
};

struct TuneReport {
  std::filesystem::path file; // where the record went
  nlohmann::json summary;     // per target: default and tuned time, choice, evaluations, rejections
};

// Tunes `targets` on `ctx`'s device, writes the file (keeping its other entries when it already belongs to
// this device) and reloads the device's record so the process uses it at once.
TuneReport tuneTargets(vk::Context& ctx, const Targets& targets, const TuneOptions& options);

} // namespace helios::tune
