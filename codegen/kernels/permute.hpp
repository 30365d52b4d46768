#pragma once
// Strided 4-D copy: the building block of tensor permutes (e.g. [B, T, H, D] <-> [B, H, T, D]) and of
// splitting / re-packing a packed QKV projection.
//
// For every index (i0, i1, i2, i3) of an n0 x n1 x n2 x n3 box (flattened row-major, grid-stride over x):
//   dst[dstOffset + i0*d0 + i1*d1 + i2*d2 + i3*d3]  =  src[srcOffset + i0*s0 + i1*s1 + i2*s2 + i3*s3]
// (accumulate: += instead of =). Offsets and strides are in elements, all push constants; n0 is implied by
// total = n0*n1*n2*n3. The destination positions must be distinct (no two box indices write one element).
// Bindings: 0 src (read), 1 dst (write; accumulate: read-write).
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct PermutePush {
  uint32_t total = 0, n1 = 1, n2 = 1, n3 = 1;
  uint32_t srcOffset = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t dstOffset = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
};
static_assert(isPushBlock<PermutePush>);

struct PermuteParams {
  // Element types of src and dst: the same (copy or accumulate; 16-bit sums in f32, rounded back), or f32 to
  // a 16-bit kind (copy only, rounded to nearest even): a permute that also makes a GEMM's 16-bit operand.
  Elem src = Elem::F32, dst = Elem::F32;
  bool accumulate = false;
  uint32_t localSize = 256;
  // Four consecutive i3 per invocation, as 4-vectors (vec4 f32, f16vec4): the push constants then count
  // 4-element vectors (total, n3, offsets and strides divided by 4; s3 = d3 = 1). ops::permute takes it
  // where the innermost dimension is contiguous on both sides and everything divides by 4: a quarter of the
  // index arithmetic and 8/16-byte accesses.
  bool vec4 = false;
  std::string cacheKey() const; // "permute:f32:copy:wg256" ("f32_f16", "bf16", ...; ":v4")
};

Kernel generatePermute(const PermuteParams& p);
void registerPermute(KernelRegistry& registry);

} // namespace helios::codegen
