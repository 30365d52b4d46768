#pragma once
// Memory plans for recorded steps: planStep() dry-runs a step's recording through a LifetimeRecorder (the
// arena hands out virtual ranges, nothing is allocated or dispatched), takes each temporary's lifetime and
// places them with planMemory(); recordPlanned() then runs the same recording for real with the arena serving
// the planned places. A step asks for the same sizes in the same order every time (the arena checks), so the
// plan is computed once per recorded segment and every replay uses it.
//
// The plan is made in barrier epochs (graph::inEpochs over the dry run's graph::barrierEpochs): reuse never
// orders two dispatches that the step without reuse leaves unordered, so the planned step has the same
// barriers (reuse that needed its own barriers cost GPT-2 small 1.1% of its tokens/s on the H100). Where
// that plan is over 3% and 16 MiB larger than reuse as soon as a temporary is dead, the latter is
// taken (graph::preferEpochPlan).
#include "engine/graph/arena.hpp"
#include "engine/graph/hazards.hpp"
#include "engine/graph/memory_plan.hpp"
#include "engine/graph/step_census.hpp"
#include "engine/ops/executor.hpp"

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace helios::graph {

using StepRecording = std::function<void(ops::Executor&)>;

struct StepPlan {
  std::vector<Lifetime> lifetimes; // one per arena request, in order
  std::vector<std::string> names;  // the requesters' names, in the same order
  MemoryPlan plan;
  uint64_t dispatches = 0;
  uint64_t alignment = 256; // the arena's: every place starts at a multiple of it
  StepCensus census;        // dispatches and barriers per kernel family, temporaries at their places
  // Barriers between the segment's dispatches (its opening and closing ones not counted), as the graph
  // infers them: with every temporary in its own range (no reuse), and in the places the plan gives.
  uint32_t barriers = 0, plannedBarriers = 0;
  uint64_t dispatchPlanBytes = 0;  // the plan in dispatches (reuse as soon as dead), whichever was taken
  bool inEpochs = true;            // the plan taken is the one in barrier epochs
  uint64_t unplannedBytes() const; // every request its own range, as the bump arena lays them out
  uint64_t peakLiveBytes() const;  // the lower bound no plan beats
  // What is live at the dispatch where the most bytes are: (name, bytes) summed per name, largest first.
  std::vector<std::pair<std::string, uint64_t>> liveAtPeak() const;
};

// The largest bin a plan uses on this device: one kernel binding spans at most maxStorageBufferRange.
uint64_t planBinCap(const vk::Context& ctx, const StepArena& arena);

// The dry run's log with the virtual buffer's ranges (requests: as StepArena::endRecording gave them) moved
// to the places `plan` gives them, bin i standing for binHandles[i]: what the planned recording binds.
DispatchLog placedLog(const DispatchLog& log, VkBuffer virtualBuffer,
                      const std::vector<StepArena::Request>& requests, const MemoryPlan& plan,
                      std::span<const VkBuffer> binHandles);

StepPlan planStep(vk::Context& ctx, StepArena& arena, const StepRecording& record);

// Records `record` into `exec` with the arena serving `plan` (whose bins StepArena::provideBins made).
void recordPlanned(ops::Executor& exec, StepArena& arena, const StepPlan& plan, const StepRecording& record);

} // namespace helios::graph
