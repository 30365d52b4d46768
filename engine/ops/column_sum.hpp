#pragma once
// Column sums of a row-major f32 matrix (codegen/kernels/column_sum.hpp): out[j] = sum_r x[r, j], plus
// beta * out[j] when beta != 0. Deterministic: block partial sums in row order, then their sum in block
// order.
#include <cstdint>

#include "codegen/elem.hpp"
#include "engine/ops/executor.hpp"

namespace helios::ops {

struct ColumnSumPlan {
  uint32_t blockRows = 0, numBlocks = 0;
};
// At most 256 blocks of consecutive rows, each at least one row.
ColumnSumPlan columnSumPlan(uint32_t rows);
// Bytes of scratch columnSum() needs (the block partial sums).
uint64_t columnSumScratchBytes(uint32_t rows, uint32_t cols);

// x: rows*cols of xType (f32, or a 16-bit kind; the sums stay f32); out: cols f32; scratch:
// columnSumScratchBytes(rows, cols). rows == 0: out = beta * out.
void columnSum(Executor& exec, vk::BufferRange x, vk::BufferRange out, vk::BufferRange scratch, uint32_t rows,
               uint32_t cols, float beta = 0.0f, codegen::Elem xType = codegen::Elem::F32);

// Lanes per column of the finish pass over `rows` rows: 8 up to 256 rows, then doubled up to 32 (one lane's
// serial walk stays at most 32 rows where the device allows 32 x lanes invocations). Pure policy.
uint32_t columnSumFinishLanes(uint32_t rows, uint32_t maxInvocations);

// The finish pass alone, for a matrix that already is a few block partials (the norm backwards' dgamma and
// dbeta planes): out[j] = sum_r x[r, j] (+ beta * out[j]) in one dispatch, no scratch. Each lane sums every
// lanes-th row in order, then the lanes' sums are added in lane order (deterministic).
void columnSumRows(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t rows, uint32_t cols,
                   float beta = 0.0f);

// columnSumRows over `planes` stacked [rows, cols] planes of x in one dispatch: plane p's sums go to
// out[p * outStride + j] (+ beta * that), out spanning them all: parameters side by side in one buffer, such
// as a norm's dgamma and dbeta. outStride >= cols.
void columnSumRowsPlanes(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t planes,
                         uint32_t rows, uint32_t cols, uint32_t outStride, float beta = 0.0f);

} // namespace helios::ops
