#pragma once
// Row reductions along the last axis: out[r] = sum / max / mean of x[r, :] (f32, row-major).
// Bindings: 0 x (rows*cols, read), 1 out (rows, write). Push: ReducePush {rows, cols}.
// Grid: one workgroup per row (2-D grid, see rowIndex()).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/kernels/row_reduce.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class RowReduceOp : uint8_t { Sum, Max, Mean };
const char* toString(RowReduceOp op);

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct ReducePush {
  uint32_t rows = 0, cols = 0;
};
static_assert(isPushBlock<ReducePush> && sizeof(ReducePush) == 8);

struct ReduceRowsParams {
  RowReduceOp op = RowReduceOp::Sum;
  uint32_t localSize = 128;
  ReduceStrategy strategy = ReduceStrategy::Subgroup;
  std::string cacheKey() const; // "reduce_rows:sum:f32:wg128:subgroup"
};

Kernel generateReduceRows(const ReduceRowsParams& p);
void registerReduce(KernelRegistry& registry);

} // namespace helios::codegen
