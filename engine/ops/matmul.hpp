#pragma once
// matmul: C[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * C[b]) for b < batch, row-major.
//   op(A) is M x K (A stored M x K, or K x M when transA); op(B) is K x N (B stored K x N, or N x K when
//   transB); epilogue: + bias[n] when a bias range is given, then GELU (tanh form) when gelu.
//   beta == 0 never reads C (C may hold garbage, even NaN).
// Storage: A and B in aType (f32, or f16 / bf16 with f32 arithmetic), C and bias in outType. Batches are
// strided (strides in elements; unset = dense). matmul() plans (gemm_plan.hpp: coop or tiled kernel and
// the passes around it) and hands the plan to its executor (matmul_coop.hpp, matmul_tiled.hpp).
#include "codegen/kernels/gemm_tiled.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>
#include <optional>

namespace helios::ops {

using MatmulDType = codegen::Elem; // F32 | F16 | BF16

// Which kernel family runs the product. Auto = the planner's choice; Tiled and Coop force one (Coop throws
// where the coop policy would fall back).
enum class MatmulKernel { Auto, Tiled, Coop };

struct MatmulArgs {
  vk::BufferRange a, b, c;
  vk::BufferRange bias; // optional (buffer == VK_NULL_HANDLE: no bias); N elements of outType
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 0.0f;
  bool gelu = false;
  MatmulDType aType = MatmulDType::F32; // storage of A and B
  // F16 or BF16: A and B are f32 in memory (aType F32) but multiplied as that 16-bit kind, each element
  // rounded to nearest even as ops::cast would, accumulating in f32: the coop kernel rounds them as it stages
  // them, the other paths round them into 16-bit copies first. Mixed-precision training multiplies this way
  // instead of casting. F32: as stored.
  MatmulDType roundTo = MatmulDType::F32;
  MatmulDType outType = MatmulDType::F32; // storage of C and bias
  // Batch strides in elements (used when batch > 1); unset = dense (M*K, K*N, M*N). 0 broadcasts A or B;
  // strideC must be at least M*N (batches of C may not overlap).
  std::optional<uint32_t> strideA, strideB, strideC;
  MatmulKernel kernel = MatmulKernel::Auto;
  std::optional<codegen::GemmTile> tile; // force a tiling (tests, tuning); default chooseGemmTiling()
};

// Validates (std::invalid_argument naming the mismatch, before anything is dispatched) and dispatches.
void matmul(Executor& exec, const MatmulArgs& args);

// The type A and B are multiplied as: aType, or roundTo for f32 operands.
MatmulDType matmulOperands(const MatmulArgs& args);

// The checks matmul() makes on shapes, sizes, strides and overlaps (device-independent); throws
// std::invalid_argument, e.g. "matmul: A has 100 elements, M*K = 120 needed".
void checkMatmulArgs(const MatmulArgs& args);

// The device's limits as the tile heuristic sees them.
codegen::GemmDeviceLimits gemmDeviceLimits(const vk::Device& device);

// A batch stride: `s`, or the dense one when unset.
inline uint32_t batchStride(const std::optional<uint32_t>& s, uint64_t dense) {
  return s ? *s : static_cast<uint32_t>(dense);
}

} // namespace helios::ops
