#pragma once
// Where to cut a recorded step so that the host can act on some of its results before the rest has run:
// a dry run (nothing allocated or dispatched) finds the last dispatch that writes each watched range, and
// planCuts turns those into the cut points GraphExecutor::replayable takes (graph_executor.hpp: Cuts).
// Data parallelism watches the gradient buckets: each is final, and can be exchanged, once the backward
// has passed its last write.
#include "engine/graph/arena.hpp"
#include "engine/graph/step_plan.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace helios::graph {

// For each range, the count of dispatches (1-based, empty grids skipped as the graph skips them) up to and
// including the last one that writes any of its bytes; 0 where no dispatch writes it.
std::vector<uint64_t> findLastWrites(vk::Context& ctx, StepArena& arena, const StepRecording& record,
                                     std::span<const vk::BufferRange> ranges);

struct CutPlan {
  std::vector<uint64_t> after;                // strictly increasing dispatch counts (Cuts::after)
  std::vector<std::vector<uint32_t>> members; // per cut: the ranges final there, in their input order
};

// Groups ranges by their last write; a range never written is final from the start and joins the first cut
// (after dispatch 1, so that the cut lies inside the recording).
CutPlan planCuts(std::span<const uint64_t> lastWrites);

} // namespace helios::graph
