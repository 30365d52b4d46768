#pragma once
// Softmax along the last axis (f32, row-major), numerically stable (the row max is subtracted).
// Forward:  y[r, j] = exp(s*x[r, j] - m) / sum_k exp(s*x[r, k] - m), s = scale, m = max_k s*x[r, k].
//   Optional causal mask (params.causal): rows are blocks of `queries` rows; row r is query q = r % queries
//   and sees columns j <= q + (cols - queries) (the usual attention mask when keys = cols >= queries); the
//   masked columns get y = 0.
//   Bindings: 0 x (read), 1 y (write). Push: SoftmaxForwardPush {rows, cols, scale, queries, ...}.
//   Documents (params.documents, causal only; sequence packing): rows also come in sequences of
//   `rowsPerSequence` rows (heads x queries), sequence s = r / rowsPerSequence, and binding 2 holds each
//   sequence's query positions inside their documents (int32, s * queries + q; document_positions.hpp): query
//   q sees only columns (q + cols - queries) - pos .. q + cols - queries, its own document's keys.
//   Push: SoftmaxForwardPush's rowsPerSequence (unused without documents).
//   One pass with an online max/sum per invocation, combined across the workgroup, then one write pass.
// Backward: dx = scale * y * (dy - sum_k dy[r, k] * y[r, k]) (masked columns have y = 0, hence dx = 0).
//   Bindings: 0 y (read), 1 dy (read), 2 dx (write). Push: SoftmaxBackwardPush {rows, cols, scale}.
// Grid: one workgroup per row (2-D grid, see rowIndex()).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/kernels/row_reduce.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class SoftmaxPass : uint8_t { Forward, Backward };

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct SoftmaxForwardPush {
  uint32_t rows = 0, cols = 0;
  float scale = 1;
  uint32_t queries = 0;         // causal: query rows per block (0: dense)
  uint32_t rowsPerSequence = 0; // documents: rows per sequence (heads x queries)
};
static_assert(isPushBlock<SoftmaxForwardPush> && sizeof(SoftmaxForwardPush) == 20);
struct SoftmaxBackwardPush {
  uint32_t rows = 0, cols = 0;
  float scale = 1;
};
static_assert(isPushBlock<SoftmaxBackwardPush> && sizeof(SoftmaxBackwardPush) == 12);

struct SoftmaxParams {
  SoftmaxPass pass = SoftmaxPass::Forward;
  bool causal = false; // forward only (the backward needs no mask); must be false for Backward
  uint32_t localSize = 128;
  ReduceStrategy strategy = ReduceStrategy::Subgroup;
  bool documents = false;       // the causal mask kept inside each query's document (forward, needs causal)
  std::string cacheKey() const; // "softmax:fwd:causal[:documents]:f32:wg128:subgroup"
};

Kernel generateSoftmax(const SoftmaxParams& p);
void registerSoftmax(KernelRegistry& registry);

} // namespace helios::codegen
