#pragma once
// LayerNorm and RMSNorm along the last axis (f32, row-major), forward and backward.
//
// LayerNorm forward: mean = mean(x), rstd = 1/sqrt(mean((x - mean)^2) + eps) (two-pass variance),
//   y = (x - mean) * rstd * gamma + beta; also writes mean[r] and rstd[r] for the backward.
//   Bindings: 0 x, 1 gamma, 2 beta, 3 y, 4 mean, 5 rstd. Push: NormPush {rows, cols, eps}.
// RMSNorm forward: rstd = 1/sqrt(mean(x^2) + eps), y = x * rstd * gamma; writes rstd[r].
//   Bindings: 0 x, 1 gamma, 2 y, 3 rstd. Push: NormPush {rows, cols, eps}.
// Residual forward (either kind): x above is s = x + r, computed in the kernel and written to s in its first
//   pass over the row; bindings r and s follow rstd (LayerNorm 6 r, 7 s; RMSNorm 4 r, 5 s).
//   Grid: one workgroup per row (2-D grid, see rowIndex()).
//
// Backward, deterministic (no float atomics): this kernel, then ops::columnSum over its partials:
//  BackwardRows: one workgroup per block of `blockRows` consecutive rows, rows in order. Per row: the row
//   sums by a workgroup reduction, dx written, and the row's contributions to dgamma (and dbeta) added, in
//   row order, to the block's partial row in `partials` (invocation t owns columns t, t+localSize, ...
//   of its block for every row, so the read-modify-write needs no synchronisation).
//   LayerNorm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, xhat = (x - mean) * rstd;
//     partials: dgamma += dy * xhat, dbeta += dy. Bindings: 0 x, 1 gamma, 2 dy, 3 mean, 4 rstd, 5 dx,
//     6 partials [2][numBlocks][cols].
//   RMSNorm: dx = rstd * (g - x * rstd^2 * mean(g * x)); partials: dgamma += dy * x * rstd.
//     Bindings: 0 x, 1 gamma, 2 dy, 3 rstd, 4 dx, 5 partials [1][numBlocks][cols].
//   Push: NormBackwardPush {rows, cols, blockRows}; grid numBlocks = ceil(rows / blockRows) workgroups.
//   out = F16 or BF16: the final dx (after accumulate) is also written rounded to nearest even to that kind,
//   one binding after partials (dx16, rows*cols): the residual stream's gradient as the 16-bit operand of
//   the GEMMs before it, without a cast pass.
//  dgamma (and dbeta) are then the column sums of partials[p] (codegen/kernels/column_sum.hpp, two passes:
//   one invocation per column summing all blocks was latency-bound, 67 us for 1024 blocks x 384 columns).
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/kernels/row_reduce.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class NormKind : uint8_t { LayerNorm, RmsNorm };
enum class NormPass : uint8_t { Forward, BackwardRows };
const char* toString(NormKind k);
const char* toString(NormPass p);

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct NormPush {
  uint32_t rows = 0, cols = 0;
  float eps = 0;
};
static_assert(isPushBlock<NormPush> && sizeof(NormPush) == 12);
struct NormBackwardPush {
  uint32_t rows = 0, cols = 0, blockRows = 0;
};
static_assert(isPushBlock<NormBackwardPush> && sizeof(NormBackwardPush) == 12);

struct NormParams {
  NormKind kind = NormKind::LayerNorm;
  NormPass pass = NormPass::Forward;
  uint32_t localSize = 128;
  ReduceStrategy strategy = ReduceStrategy::Subgroup;
  // Forward: y in f32, or a 16-bit kind rounded to nearest even (a GEMM's operand written directly; no cast
  // pass; bf16 held as uint16 bits). BackwardRows: a 16-bit kind adds dx's 16-bit copy (binding after
  // partials).
  Elem out = Elem::F32;
  bool accumulate = false; // BackwardRows: dx += (reads dx; a gradient that already holds a value)
  // Every per-column tensor (x, gamma, beta, y, dy, dx, partials) read and written as 4-vectors: needs
  // cols % 4 == 0 and 16-byte-aligned bindings (8-byte for a 16-bit y).
  bool vec4 = false;
  // Forward: normalizes s = x + r (the residual add before a norm) and writes s too (two bindings after
  // rstd: 6/4 r, 7/5 s, both rows*cols f32); s bit for bit what a separate add writes.
  bool residual = false;
  std::string cacheKey() const; // "norm:layernorm:fwd:f32:wg128:subgroup" ("fwd:f32:f16out:...", "bf16out",
                                // ":acc", ":v4", ":res")
};

Kernel generateNorm(const NormParams& p);
void registerNorm(KernelRegistry& registry);

} // namespace helios::codegen
