#pragma once
// Column sums of a row-major f32 (or f16) matrix x [rows, cols] (bias gradients: db = sum over tokens of dy),
// in two deterministic passes (fixed order, no atomics):
//   Blocks: partial[b, j] = sum over rows r of block b (blockRows consecutive rows, in order) of x[r, j].
//     Bindings: 0 x (read), 1 partial (write). Push ColumnSumPush{rows, cols, blockRows, beta unused}.
//     Grid: {ceil(cols / localSize), numBlocks, 1}; invocation j of a workgroup column owns column j.
//   Finish: out[j] = the sum over blocks of partial[b, j], plus beta * out[j] when beta != 0 (beta == 0 never
//     reads out); 32 columns per workgroup, localSize / 32 lanes per column each summing every
//     (localSize/32)-th block in order, then the lanes' sums in lane order. Bindings: 0 partial (read), 1 out
//     (read-write). Push {numBlocks, cols, 0, beta}. Grid: {ceil(cols / 32), 1, 1}.
//   Finish over planes (planes = true): `in` holds P stacked [numBlocks, cols] planes (a norm backward's
//     dgamma and dbeta partials); plane p's sums go to out[p * outStride + j] with beta as above, so one
//     dispatch finishes parameters that lie side by side in one buffer. Push {numBlocks, cols, outStride,
//     beta}. Grid: {ceil(cols / 32), P, 1}.
// One invocation per column keeps every load coalesced across the workgroup; the block pass gives a GPU
// numBlocks x cols / localSize workgroups where a single 1 x rows x cols GEMM gave it one row of tiles.
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class ColumnSumPass : uint8_t { Blocks, Finish };

struct ColumnSumParams {
  ColumnSumPass pass = ColumnSumPass::Blocks;
  uint32_t localSize = 256;
  Elem in = Elem::F32;          // Blocks: x in f32 or a 16-bit kind (mixed-precision gradients); sums in f32
  bool planes = false;          // Finish: several planes of partials at once (grid y), outStride apart
  std::string cacheKey() const; // "column_sum:blocks:f32:wg256" (":f16", ":bf16" for 16-bit x; ":planes")
  std::string name() const;     // "column_sum_blocks_f32_wg256" ("column_sum_blocks_bf16_wg256",
                                // "column_sum_finish_planes_f32_wg256")
};

struct ColumnSumPush {
  uint32_t rows = 0, cols = 0, blockRows = 0; // Finish: rows = numBlocks, blockRows = outStride (planes)
  float beta = 0.0f;                          // Finish only
};
static_assert(isPushBlock<ColumnSumPush> && sizeof(ColumnSumPush) == 16);

Kernel generateColumnSum(const ColumnSumParams& p);
void registerColumnSum(KernelRegistry& registry);

} // namespace helios::codegen
