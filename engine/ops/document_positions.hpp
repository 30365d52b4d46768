#pragma once
// Positions inside packed documents (codegen/kernels/document_positions.hpp): ids and pos hold `sequences`
// sequences of T int32 each; pos restarts at 0 after every `eot` id of its sequence.
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

// Throws std::invalid_argument for a range smaller than sequences * T int32.
void documentPositions(Executor& exec, vk::BufferRange ids, vk::BufferRange pos, uint32_t sequences,
                       uint32_t T, int32_t eot);

} // namespace helios::ops
