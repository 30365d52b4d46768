#include "engine/ops/column_sum.hpp"
#include "engine/ops/elem_support.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "codegen/kernels/column_sum.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/reduce.hpp"

namespace helios::ops {

namespace {

constexpr uint32_t kMaxBlocks = 256; // fills a GPU with the block pass; bounds the finish's serial sum
constexpr uint32_t kLocalSize = 256;

vk::Groups columnGroups(uint32_t cols, uint32_t blocks) {
  return {(cols + kLocalSize - 1) / kLocalSize, blocks, 1};
}

} // namespace

ColumnSumPlan columnSumPlan(uint32_t rows) {
  if (rows == 0) return {};
  const uint32_t blockRows = (rows + kMaxBlocks - 1) / kMaxBlocks;
  return {blockRows, (rows + blockRows - 1) / blockRows};
}

uint64_t columnSumScratchBytes(uint32_t rows, uint32_t cols) {
  return uint64_t(columnSumPlan(rows).numBlocks) * cols * 4;
}

uint32_t columnSumFinishLanes(uint32_t rows, uint32_t maxInvocations) {
  const uint32_t cap = std::max(8u, std::min(32u, maxInvocations / 32));
  uint32_t lanes = 8;
  while (lanes < cap && uint64_t(lanes) * 32 < rows)
    lanes *= 2;
  return lanes;
}

void columnSumRows(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t rows, uint32_t cols,
                   float beta) {
  using rows_detail::checkElems;
  if (cols == 0) throw std::invalid_argument("columnSumRows: cols is 0"); // rows == 0: out = beta * out
  checkElems("columnSumRows", "x", x, uint64_t(rows) * cols);
  checkElems("columnSumRows", "out", out, cols);
  const auto& limits = exec.context().device().limits();
  const uint32_t lanes = columnSumFinishLanes(
      rows, std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]));
  using codegen::ColumnSumParams, codegen::ColumnSumPass, codegen::ColumnSumPush;
  exec.dispatch(exec.pipeline(ColumnSumParams{ColumnSumPass::Finish, 32 * lanes}, codegen::generateColumnSum),
                {{x, Access::Read}, {out, beta != 0.0f ? Access::ReadWrite : Access::Write}},
                ColumnSumPush{rows, cols, 0, beta}, vk::Groups{(cols + 31) / 32, 1, 1});
}

void columnSumRowsPlanes(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t planes,
                         uint32_t rows, uint32_t cols, uint32_t outStride, float beta) {
  using rows_detail::checkElems;
  if (cols == 0 || planes == 0) throw std::invalid_argument("columnSumRowsPlanes: cols or planes is 0");
  if (outStride < cols) throw std::invalid_argument("columnSumRowsPlanes: outStride is below cols");
  checkElems("columnSumRowsPlanes", "x", x, uint64_t(planes) * rows * cols);
  checkElems("columnSumRowsPlanes", "out", out, uint64_t(planes - 1) * outStride + cols);
  const auto& limits = exec.context().device().limits();
  const uint32_t lanes = columnSumFinishLanes(
      rows, std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]));
  using codegen::ColumnSumParams, codegen::ColumnSumPass, codegen::ColumnSumPush;
  exec.dispatch(exec.pipeline(ColumnSumParams{ColumnSumPass::Finish, 32 * lanes, codegen::Elem::F32, true},
                              codegen::generateColumnSum),
                {{x, Access::Read}, {out, beta != 0.0f ? Access::ReadWrite : Access::Write}},
                ColumnSumPush{rows, cols, outStride, beta}, vk::Groups{(cols + 31) / 32, planes, 1});
}

void columnSum(Executor& exec, vk::BufferRange x, vk::BufferRange out, vk::BufferRange scratch, uint32_t rows,
               uint32_t cols, float beta, codegen::Elem xType) {
  using rows_detail::checkElems;
  if (cols == 0) throw std::invalid_argument("columnSum: cols is 0");
  if (uint64_t(rows) * cols >= (1ull << 32))
    throw std::invalid_argument("columnSum: rows*cols = " + std::to_string(uint64_t(rows) * cols) +
                                " exceeds 2^32-1");
  requireElem(exec.context().device(), xType, "columnSum");
  rows_detail::checkElemsOf("columnSum", "x", x, uint64_t(rows) * cols, xType);
  checkElems("columnSum", "out", out, cols);
  checkElems("columnSum", "scratch", scratch, columnSumScratchBytes(rows, cols) / 4);
  if (rows == 0) {
    if (beta == 0.0f)
      fill(exec, out, cols, 0.0f);
    else
      scale(exec, out, out, cols, beta);
    return;
  }
  const ColumnSumPlan plan = columnSumPlan(rows);
  using codegen::ColumnSumParams, codegen::ColumnSumPass, codegen::ColumnSumPush;
  exec.dispatch(
      exec.pipeline(ColumnSumParams{ColumnSumPass::Blocks, kLocalSize, xType}, codegen::generateColumnSum),
      {{x, Access::Read}, {scratch, Access::Write}}, ColumnSumPush{rows, cols, plan.blockRows, 0.0f},
      columnGroups(cols, plan.numBlocks));
  exec.dispatch(exec.pipeline(ColumnSumParams{ColumnSumPass::Finish, kLocalSize}, codegen::generateColumnSum),
                {{scratch, Access::Read}, {out, beta != 0.0f ? Access::ReadWrite : Access::Write}},
                ColumnSumPush{plan.numBlocks, cols, 0, beta}, vk::Groups{(cols + 31) / 32, 1, 1});
}

} // namespace helios::ops
