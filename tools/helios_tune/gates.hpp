#pragma once
// What every tuner candidate shares: an executor that runs at once and remembers its pipelines (for the
// spill gate), the spill gate, and helios-bench's sustained timing.
#include <functional>
#include <set>
#include <string>

#include "engine/ops/executor.hpp"

namespace helios::tune {

struct TimingOptions {
  uint32_t windows = 5, repeat = 5;
  double warmupMs = 100;
};

// Runs each dispatch at once (ops::ImmediateExecutor) and remembers the pipelines it used.
class WatchingExecutor final : public ops::Executor {
public:
  explicit WatchingExecutor(vk::Context& ctx) : inner_(ctx) {}
  vk::Context& context() override { return inner_.context(); }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override {
    pipelines_.insert(&pipeline);
    inner_.dispatch(pipeline, bindings, push, pushBytes, groups);
  }
  void flush() override { inner_.flush(); }
  void retain(vk::Buffer buffer) override { inner_.retain(std::move(buffer)); }
  const std::set<const vk::Pipeline*>& pipelines() const { return pipelines_; }

private:
  ops::ImmediateExecutor inner_;
  std::set<const vk::Pipeline*> pipelines_;
};

// Registers spilled by any pipeline `run` used, where the driver reports the statistics
// (VK_KHR_pipeline_executable_properties); "" when none.
std::string spillGate(vk::Context& ctx, const WatchingExecutor& run);

// Median microseconds per call at sustained clocks: windows of back-to-back calls right behind replayed
// warm-up work (bench::timeMedianUs, as helios-bench times).
double timeUs(vk::Context& ctx, const TimingOptions& options, const std::function<void(ops::Executor&)>& run);

// Two sides timed alternately (time(false), time(true), time(false), ...), `rounds` times each: the best of
// each side, so neither is timed only while clocks settle.
struct PairUs {
  double first, second;
  bool same = false; // both sides run the same pipelines (timed once: the same time)
};
PairUs timeAlternately(uint32_t rounds, const std::function<double(bool second)>& time);

// Two records' sides of a before/after row: when one untimed run under each uses the same pipelines
// (`run(e, second)`), the kernels are the same and both sides get one timing, so the row reads 1.000 rather
// than the run-to-run spread of one kernel (0.95-1.03 for power-capped GEMMs on the H100,
// 2026-11-26-h100-tune.json); else timeAlternately.
PairUs timeRecords(vk::Context& ctx, const TimingOptions& timing, uint32_t rounds,
                   const std::function<void(ops::Executor&, bool second)>& run);

// Whether the search's winner replaces the policy's choice, and the times that decided it. The winner must
// beat the policy's choice by minGain in the search and again when both are timed anew, alternately, twice
// each (`time(true)` times the winner): the search timed the default first, while clocks were still
// settling, and on the H100 it read up to 4x slow (bench/results/2026-11-25-h100-tune.json). A policy's
// choice that failed its gates (searchDefaultUs 0) leaves the winner standing.
struct Pick {
  bool winner;
  double defaultUs, chosenUs;
};
Pick pickWinner(double searchDefaultUs, double searchWinnerUs, double minGain,
                const std::function<double(bool winner)>& time);

} // namespace helios::tune
