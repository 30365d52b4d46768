#pragma once
// Pieces both cooperative-matrix GEMM kernels emit the same way: which C tile a workgroup owns (with the
// optional raster swizzle), the batch offsets, and the epilogue that turns an f32 accumulator into C.
// Internal to codegen/kernels (gemm_coop.cpp: subgroup scope, gemm_coop_nv2.cpp: workgroup scope).
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen::coop {

// (tile row, tile column) of this workgroup: gl_WorkGroupID.yx, or swizzled in bands of `groupM` tile rows
// so neighbouring workgroups share A and B slices in L2.
struct TileIndex {
  spv::Value m, n;
};
TileIndex tileIndex(spv::FunctionBuilder& f, uint32_t groupM);

// Element offsets of batch z (gl_WorkGroupID.z) into A, B and C from the push constants; all zero unless
// batched. pc members 5, 6, 7 hold the strides.
struct BatchOffsets {
  spv::Value a, b, c;
};
BatchOffsets batchOffsets(spv::FunctionBuilder& f, const spv::PushConstants& pc, bool batched);

// GELU (tanh form) of one f32.
spv::Value gelu(spv::FunctionBuilder& f, spv::Value x);

// alpha, beta * C (only when beta != 0), + bias[n] (a stride-0 load), GELU (tanh form), convert to C's type,
// store at C[cIndex] with row stride N. `tc` is the f32 accumulator type, `tcOut` C's matrix type.
struct Epilogue {
  const GemmCoopParams& p;
  spv::Module& m;
  spv::FunctionBuilder& f;
  spv::TypeId tc, tcOut;
  spv::Buffer c, bias;
  spv::Value N, alpha, beta;
  spv::Value tmp; // a Function variable of type tc
};
void storeC(const Epilogue& e, spv::Value acc, spv::Value cIndex, spv::Value biasIndex);
// The same maths without the store: the f32 accumulator C's element gets (alpha, beta * C read at cIndex,
// bias, GELU), for a caller that stores it its own way.
spv::Value epilogueValue(const Epilogue& e, spv::Value acc, spv::Value cIndex, spv::Value biasIndex);

} // namespace helios::codegen::coop
