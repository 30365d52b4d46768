#pragma once
// Softmax along the last axis (f32, row-major) and its backward. See codegen/kernels/softmax.hpp for the
// kernels; one workgroup per row (see engine/ops/reduce.hpp for the grid choice).
#include <cstdint>

#include "codegen/kernels/softmax.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/reduce.hpp"

namespace helios::ops {

struct SoftmaxOptions {
  float scale = 1.0f;         // y = softmax(scale * x)
  uint32_t causalQueries = 0; // 0: no mask. Else rows come in blocks of causalQueries rows; row r (query
                              // q = r % causalQueries) sees columns j <= q + cols - causalQueries, the rest
                              // get y = 0. Needs causalQueries <= cols.
  RowKernelChoice kernel = {};
  // Sequence packing (needs causalQueries): rows come in sequences of rowsPerSequence rows (a multiple of
  // causalQueries), and documentPositions holds each sequence's causalQueries query positions inside their
  // documents (int32; ops::documentPositions); a query sees only its own document's columns.
  vk::BufferRange documentPositions = {};
  uint32_t rowsPerSequence = 0;
};

// y = softmax(scale * x) per row; x and y hold rows*cols f32 (may not alias).
void softmax(Executor& exec, vk::BufferRange x, vk::BufferRange y, uint32_t rows, uint32_t cols,
             const SoftmaxOptions& options = {});

// dx = scale * y * (dy - sum(dy * y)) per row, from the forward output y (masked entries of y are 0, so a
// causal forward needs nothing more here). y, dy, dx hold rows*cols f32.
void softmaxBackward(Executor& exec, vk::BufferRange y, vk::BufferRange dy, vk::BufferRange dx, uint32_t rows,
                     uint32_t cols, float scale = 1.0f, RowKernelChoice kernel = {});

} // namespace helios::ops
