#pragma once
// Batched 2-D windows: pad, crop and write back matrices in one kernel.
//
// Slice (gather): for every dst element (b, i, j), b < batch, i < dstRows, j < dstCols:
//   dst[b][i][j] = src[b][i + rowOffset][j + colOffset] if that is inside src (srcRows x srcCols), else 0.
//   Offsets are signed: >= 0 crops (skips leading rows/cols of src), < 0 pads at the top/left; dst larger
//   than the remaining src pads at the bottom/right. Every dst element is written.
// Scatter (the inverse): for every src element (b, i, j), i < srcRows, j < srcCols:
//   dst[b][i + rowOffset][j + colOffset] = src[b][i][j]; the rest of dst is untouched. Elements falling
//   outside dst (dstRows x dstCols) are skipped by the kernel; the op requires the window to fit.
// Element addresses: src[b][i][j] = src[b * srcBatchStride + i * srcRowStride + j] (same for dst), strides
// in elements, all push constants. Grid: x strides over columns, y over rows, z over batch (grid-stride).
// Bindings: 0 src (read), 1 dst (write; scatter: read-write untouched elements).
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct Slice3dPush {
  uint32_t batch = 1, srcRows = 0, srcCols = 0, dstRows = 0, dstCols = 0;
  uint32_t srcRowStride = 0, dstRowStride = 0, srcBatchStride = 0, dstBatchStride = 0;
  int32_t rowOffset = 0, colOffset = 0;
};
static_assert(isPushBlock<Slice3dPush>);

struct Slice3dParams {
  Elem type = Elem::F32; // bits are moved as they are (bf16 as uint16)
  bool scatter = false;
  uint32_t localSize = 256;
  std::string cacheKey() const; // "slice3d:f32:gather:wg256"
};

Kernel generateSlice3d(const Slice3dParams& p);
void registerSlice3d(KernelRegistry& registry);

} // namespace helios::codegen
