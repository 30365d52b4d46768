#pragma once
// Where a recorded step's dispatches and barriers go, per kernel family: the dispatches as a dry run saw them
// (name and bindings), replayed through the same HazardTracker the graph submitter uses, so the barrier
// counts are the ones a real recording of the same bindings gets. Pure logic: no Vulkan calls.
#include "engine/ops/executor.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace helios::graph {

struct DispatchRecord {
  std::string name; // the pipeline's
  std::vector<ops::Binding> bindings;
};

struct FamilyCount {
  std::string family;
  uint64_t dispatches = 0;
  uint64_t barriers = 0;   // barriers recorded before this family's dispatches
  uint64_t boundBytes = 0; // bytes of every binding (an upper bound on the memory traffic)
  uint64_t kernels = 0;    // distinct pipelines
};

struct StepCensus {
  std::vector<FamilyCount> families; // most dispatches first, ties by name
  uint64_t dispatches = 0, barriers = 0, boundBytes = 0;
};

// "gemm_coop_128x128x32_..." -> "gemm_coop": the name's '_'-separated words up to the first one that holds
// a digit (the parameters), or the whole name when none does.
std::string kernelFamily(std::string_view pipelineName);

StepCensus takeCensus(const std::vector<DispatchRecord>& dispatches);

} // namespace helios::graph
