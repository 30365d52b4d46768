#pragma once
// Row reductions along the last axis, and the pieces every row-wise op (softmax, norm, cross_entropy)
// shares: the kernel-variant choice, the row grid and the size checks.
//
// Grid choice for all row-wise ops: one workgroup per row (or, for the norm backward, per block of rows).
// GPT shapes have long rows (C = 768..., V = 50304) and many of them (B*T), so one workgroup per row keeps
// every invocation busy with a coalesced column stride and needs no cross-row logic. Short rows waste
// lanes, which is why the workgroup size follows the row length (64 up to 256 invocations).
#include <cstdint>

#include "codegen/elem.hpp"
#include "codegen/kernels/reduce.hpp"
#include "engine/ops/executor.hpp"

namespace helios::ops {

// Which kernel variant a row-wise op dispatches. localSize 0: chosen from the row length. The strategy
// Subgroup falls back to SharedTree on a device without subgroup arithmetic in compute shaders.
struct RowKernelChoice {
  uint32_t localSize = 0;
  codegen::ReduceStrategy strategy = codegen::ReduceStrategy::Subgroup;
};

namespace rows_detail {
// Workgroup size and strategy for a row of `cols` elements.
RowKernelChoice resolve(Executor& exec, RowKernelChoice choice, uint32_t cols);
// 2-D grid of `rows` workgroups (x at most 65535), matching codegen::rowIndex().
vk::Groups rowGrid(uint32_t rows);
// Throws std::invalid_argument("<op>: cols is 0") / ("<op>: rows*cols = N exceeds 2^32-1").
void checkShape(const char* op, uint32_t rows, uint32_t cols);
// Throws std::invalid_argument when `range` holds fewer than `count` 4-byte elements, naming the operand.
void checkElems(const char* op, const char* name, const vk::BufferRange& range, uint64_t count);
// The same for a tensor of `count` 16-bit elements.
void checkHalfElems(const char* op, const char* name, const vk::BufferRange& range, uint64_t count,
                    codegen::Elem kind = codegen::Elem::F16);
// The same for `count` elements of type `e`.
void checkElemsOf(const char* op, const char* name, const vk::BufferRange& range, uint64_t count,
                  codegen::Elem e);
} // namespace rows_detail

// out[r] = op(x[r, :]) for r < rows; x holds rows*cols f32, out rows f32. rows == 0 dispatches nothing.
void reduceRows(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t rows, uint32_t cols,
                codegen::RowReduceOp op, RowKernelChoice choice = {});

} // namespace helios::ops
