#pragma once
// Batched pad / crop / write-back of row-major matrices (codegen/kernels/slice3d.hpp), f32, f16 or bf16.
#include "codegen/kernels/slice3d.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

using codegen::Elem;

// Shapes in elements. Row strides of 0 mean "packed" (= cols); batch strides are rows * rowStride.
struct Slice3dShape {
  uint32_t batch = 1;
  uint32_t srcRows = 0, srcCols = 0;
  uint32_t dstRows = 0, dstCols = 0;
  int32_t rowOffset = 0, colOffset = 0;
  uint32_t srcRowStride = 0, dstRowStride = 0;
};

// dst[b][i][j] = src[b][i + rowOffset][j + colOffset] inside src, else 0, for every dst element.
// Offsets >= 0 crop; negative offsets (or dst larger than src) pad with zeros.
void slice3d(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const Slice3dShape& shape,
             Elem type = Elem::F32);

// dst[b][i + rowOffset][j + colOffset] = src[b][i][j] for i < srcRows, j < srcCols; the rest of dst is
// untouched. Offsets must be >= 0 and the window must fit inside dstRows x dstCols.
void scatterSlice3d(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const Slice3dShape& shape,
                    Elem type = Elem::F32);

} // namespace helios::ops
