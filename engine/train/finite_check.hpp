#pragma once
// Whether a model's weights and AdamW moments are all finite, checked on the GPU before a checkpoint is
// written: one sum of squares per parameter group and buffer (ops::gradSumsq), into which a NaN or an
// infinity propagates. A value beyond ~1.8e19 in magnitude, whose square overflows, counts as non-finite too:
// no trained weight or moment gets there.
#include "engine/graph/graph_executor.hpp"
#include "engine/train/model.hpp"

#include <string>
#include <vector>

namespace helios::train {

// Empty when everything is finite; else what is not, by tensor ("Adam's first moment of 'table.weight'"),
// found by reading the affected kind of tensor back (only then). Waits for the GPU.
std::vector<std::string> nonFiniteState(vk::Context& ctx, graph::GraphExecutor& graph, Model& model);

} // namespace helios::train
