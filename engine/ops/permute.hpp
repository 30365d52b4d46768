#pragma once
// Strided 4-D copies (codegen/kernels/permute.hpp): tensor permutes and (re)packing of slices.
#include "codegen/kernels/permute.hpp"
#include "engine/ops/executor.hpp"

#include <array>
#include <cstdint>

namespace helios::ops {

using codegen::Elem;

// For every (i0, i1, i2, i3) < shape:
//   dst[dstOffset + sum ik * dstStrides[k]] (+)= src[srcOffset + sum ik * srcStrides[k]]
// Offsets and strides in elements. The op checks that every addressed element lies inside its range (a
// range of size 0 means "whole buffer", unchecked) and that the element count is < 2^31; it does not check
// that destination positions are distinct (the caller's layouts guarantee it).
struct PermuteArgs {
  std::array<uint32_t, 4> shape{1, 1, 1, 1};
  uint32_t srcOffset = 0, dstOffset = 0;
  std::array<uint32_t, 4> srcStrides{0, 0, 0, 0}, dstStrides{0, 0, 0, 0};
  bool accumulate = false;
  // Element types of src and dst (the same, or f32 to a 16-bit kind: copies only; codegen::PermuteParams).
  Elem src = Elem::F32, dst = Elem::F32;
};
void permute(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const PermuteArgs& args);

// Dense row-major strides of a 4-D shape.
std::array<uint32_t, 4> denseStrides(const std::array<uint32_t, 4>& shape);

} // namespace helios::ops
