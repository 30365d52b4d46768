#pragma once
// LayerNorm and RMSNorm along the last axis (f32, row-major), forward and backward. Kernels and formulas:
// codegen/kernels/norm.hpp. Forward: one workgroup per row. Backward: a rows kernel (dx, plus per-block
// partial sums of dgamma/dbeta written to a caller-provided scratch buffer), then ops::columnSum over the
// partials in block order: deterministic, no float atomics, so the same inputs give bit-identical dx, dgamma
// and dbeta on a given device.
#include <cstdint>

#include "codegen/kernels/norm.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/reduce.hpp"

namespace helios::ops {

// How the backward splits rows into blocks: numBlocks = ceil(rows / blockRows) <= 1024 workgroups.
struct NormBackwardPlan {
  uint32_t blockRows = 0, numBlocks = 0;
};
NormBackwardPlan normBackwardPlan(uint32_t rows);
// Bytes of scratch the backward needs: (LayerNorm 2, RMSNorm 1) * numBlocks * cols floats of partials.
uint64_t normBackwardScratchBytes(codegen::NormKind kind, uint32_t rows, uint32_t cols);

// The residual add before a norm, done by the norm's forward kernel: it normalizes x + r and writes that sum
// to `sum` (both rows*cols f32; bit for bit what ops::add writes). Empty r: none.
struct ResidualAdd {
  vk::BufferRange r, sum;
};

// y = (x - mean) * rstd * gamma + beta; writes mean[rows], rstd[rows]. x, y: rows*cols; gamma, beta: cols.
// yType F16 or BF16: y holds that 16-bit kind (rounded to nearest even from the f32 result), for a GEMM's
// 16-bit operand. residual: x + residual.r is normalized instead (and written to residual.sum).
void layerNorm(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange beta,
               vk::BufferRange y, vk::BufferRange mean, vk::BufferRange rstd, uint32_t rows, uint32_t cols,
               float eps, RowKernelChoice kernel = {}, codegen::Elem yType = codegen::Elem::F32,
               const ResidualAdd& residual = {});

// dx's copy in a 16-bit kind, written by the backward beside dx itself (after any accumulation; rounded to
// nearest even): the 16-bit operand of the GEMMs that read the residual stream's gradient next. Empty: none.
struct HalfDx {
  vk::BufferRange range; // rows*cols of `type`
  codegen::Elem type = codegen::Elem::F32;
};

// Whether the backward adds dgamma (and dbeta) to what their buffers hold, a parameter's gradient
// accumulating, instead of overwriting them: the finish pass adds them in (no temporary and add pass).
struct ParamGradAccumulate {
  bool gamma = false, beta = false;
};

// From x, gamma, dy and the forward's saved mean/rstd: dx (rows*cols), dgamma and dbeta (cols, overwritten
// unless `paramGrads` says to accumulate). scratch: normBackwardScratchBytes(LayerNorm, rows, cols) bytes.
// rows must be > 0. accumulateDx: dx += the gradient (dx already holds one, e.g. the residual stream's).
void layerNormBackward(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange dy,
                       vk::BufferRange mean, vk::BufferRange rstd, vk::BufferRange dx, vk::BufferRange dgamma,
                       vk::BufferRange dbeta, vk::BufferRange scratch, uint32_t rows, uint32_t cols,
                       RowKernelChoice kernel = {}, bool accumulateDx = false, const HalfDx& dxHalf = {},
                       ParamGradAccumulate paramGrads = {});

// y = x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps); writes rstd[rows]. residual as for layerNorm.
void rmsNorm(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange y,
             vk::BufferRange rstd, uint32_t rows, uint32_t cols, float eps, RowKernelChoice kernel = {},
             codegen::Elem yType = codegen::Elem::F32, const ResidualAdd& residual = {});

// dx and dgamma from x, gamma, dy and the saved rstd; scratch and options as for layerNormBackward.
void rmsNormBackward(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange dy,
                     vk::BufferRange rstd, vk::BufferRange dx, vk::BufferRange dgamma,
                     vk::BufferRange scratch, uint32_t rows, uint32_t cols, RowKernelChoice kernel = {},
                     bool accumulateDx = false, const HalfDx& dxHalf = {},
                     ParamGradAccumulate paramGrads = {});

} // namespace helios::ops
