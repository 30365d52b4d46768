#include "engine/ops/norm.hpp"

#include "engine/ops/column_sum.hpp"
#include "engine/ops/elem_support.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::ops {

using namespace rows_detail;
using codegen::NormKind;
using codegen::NormParams;
using codegen::NormPass;

namespace {

// Blocks of rows for pass 1: enough workgroups to fill a GPU several times over (256 left the H100's
// LayerNorm backward at 159 us for 16384 x 384, 5x its bandwidth time); bounds the scratch.
constexpr uint32_t kMaxBlocks = 1024;

void checkForward(const char* op, uint32_t rows, uint32_t cols, const vk::BufferRange& x,
                  const vk::BufferRange& gamma, const vk::BufferRange& y, codegen::Elem yType) {
  checkShape(op, rows, cols);
  checkElems(op, "x", x, uint64_t(rows) * cols);
  checkElems(op, "gamma", gamma, cols);
  checkElemsOf(op, "y", y, uint64_t(rows) * cols, yType);
}

void checkBackward(const char* op, NormKind kind, uint32_t rows, uint32_t cols, const vk::BufferRange& x,
                   const vk::BufferRange& gamma, const vk::BufferRange& dy, const vk::BufferRange& dx,
                   const vk::BufferRange& dgamma, const vk::BufferRange& scratch) {
  if (rows == 0) throw std::invalid_argument(std::string(op) + ": rows is 0");
  checkShape(op, rows, cols);
  const uint64_t n = uint64_t(rows) * cols;
  checkElems(op, "x", x, n);
  checkElems(op, "gamma", gamma, cols);
  checkElems(op, "dy", dy, n);
  checkElems(op, "dx", dx, n);
  checkElems(op, "dgamma", dgamma, cols);
  checkElems(op, "scratch", scratch, normBackwardScratchBytes(kind, rows, cols) / 4);
}

NormParams params(NormKind kind, NormPass pass, const RowKernelChoice& c,
                  codegen::Elem out = codegen::Elem::F32, bool accumulate = false, bool vec4 = false,
                  bool residual = false) {
  return {kind, pass, c.localSize, c.strategy, out, accumulate, vec4, residual};
}

bool hasResidual(const ResidualAdd& r) {
  return r.r.buffer != VK_NULL_HANDLE;
}

void checkResidual(const char* op, const ResidualAdd& r, uint64_t n) {
  if (!hasResidual(r)) return;
  checkElems(op, "residual", r.r, n);
  checkElems(op, "residual sum", r.sum, n);
}

// The forward kernel over `bindings` (r and sum appended when there is a residual).
void dispatchForward(Executor& exec, const vk::Pipeline& pipe, std::vector<Binding> bindings,
                     const ResidualAdd& residual, const codegen::NormPush& push, uint32_t rows) {
  if (hasResidual(residual)) {
    bindings.push_back({residual.r, Access::Read});
    bindings.push_back({residual.sum, Access::Write});
  }
  exec.dispatch(pipe, bindings, &push, sizeof(push), rowGrid(rows));
}

// 4-vector loads and stores: whole vectors per row and 16-byte-aligned bindings (8-byte for f16 ones).
bool useVec4(uint32_t cols, std::initializer_list<vk::BufferRange> f32Ranges,
             std::initializer_list<vk::BufferRange> f16Ranges = {}) {
  if (cols % 4) return false;
  for (const vk::BufferRange& r : f32Ranges)
    if (r.offset % 16) return false;
  for (const vk::BufferRange& r : f16Ranges)
    if (r.offset % 8) return false;
  return true;
}

// The backward rows kernel over `bindings` (dx16 appended when there is one).
void dispatchRows(Executor& exec, const vk::Pipeline& pipe, std::vector<Binding> bindings, const HalfDx& h,
                  const codegen::NormBackwardPush& push, const NormBackwardPlan& plan) {
  if (codegen::isHalf(h.type)) bindings.push_back({h.range, Access::Write});
  exec.dispatch(pipe, bindings, &push, sizeof(push), {plan.numBlocks, 1, 1});
}

void checkHalfDx(Executor& exec, const char* op, const HalfDx& h, uint64_t n) {
  if (!codegen::isHalf(h.type)) return;
  requireElem(exec.context().device(), h.type, op);
  checkElemsOf(op, "dx16", h.range, n, h.type);
}

} // namespace

NormBackwardPlan normBackwardPlan(uint32_t rows) {
  if (rows == 0) return {};
  const uint32_t blockRows = (rows + kMaxBlocks - 1) / kMaxBlocks;
  return {blockRows, (rows + blockRows - 1) / blockRows};
}

namespace {

uint64_t partialBytes(uint32_t rows, uint32_t cols) {
  return uint64_t(normBackwardPlan(rows).numBlocks) * cols * 4;
}

// dgamma (and dbeta) from the block partials: one finish pass over each [numBlocks, cols] plane (they are
// already block sums; a two-pass column sum spent a dispatch and a barrier re-blocking them).
struct ParamOut {
  vk::BufferRange range;
  bool accumulate = false;
};

// dgamma then dbeta at a fixed distance in one buffer (a norm's parameters, added one after the other), both
// accumulating or both not: one finish dispatch takes both planes. Pure.
bool sideBySide(const ParamOut& g, const ParamOut& b, uint32_t cols) {
  return g.range.buffer == b.range.buffer && g.accumulate == b.accumulate &&
         b.range.offset > g.range.offset && (b.range.offset - g.range.offset) % 4 == 0 &&
         (b.range.offset - g.range.offset) / 4 >= cols &&
         (b.range.offset - g.range.offset) / 4 <= uint64_t(cols) + 256; // at most alignment padding between
}

void sumPartials(Executor& exec, vk::BufferRange scratch, uint32_t rows, uint32_t cols,
                 std::initializer_list<ParamOut> outs) {
  const uint32_t blocks = normBackwardPlan(rows).numBlocks;
  const uint64_t plane = partialBytes(rows, cols);
  if (outs.size() == 2 && sideBySide(outs.begin()[0], outs.begin()[1], cols)) {
    const ParamOut &g = outs.begin()[0], &b = outs.begin()[1];
    const uint64_t stride = (b.range.offset - g.range.offset) / 4;
    const vk::BufferRange both = {g.range.buffer, g.range.offset, (stride + cols) * 4};
    columnSumRowsPlanes(exec, vk::subrange(scratch, 0, 2 * plane), both, 2, blocks, cols, uint32_t(stride),
                        g.accumulate ? 1.0f : 0.0f);
    return;
  }
  uint64_t p = 0;
  for (const ParamOut& out : outs)
    columnSumRows(exec, vk::subrange(scratch, p++ * plane, plane), out.range, blocks, cols,
                  out.accumulate ? 1.0f : 0.0f);
}

} // namespace

uint64_t normBackwardScratchBytes(NormKind kind, uint32_t rows, uint32_t cols) {
  const uint64_t parts = kind == NormKind::LayerNorm ? 2 : 1;
  return parts * partialBytes(rows, cols);
}

void layerNorm(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange beta,
               vk::BufferRange y, vk::BufferRange mean, vk::BufferRange rstd, uint32_t rows, uint32_t cols,
               float eps, RowKernelChoice kernel, codegen::Elem yType, const ResidualAdd& residual) {
  checkForward("layerNorm", rows, cols, x, gamma, y, yType);
  checkResidual("layerNorm", residual, uint64_t(rows) * cols);
  requireElem(exec.context().device(), yType, "layerNorm");
  const bool yHalf = codegen::isHalf(yType);
  checkElems("layerNorm", "beta", beta, cols);
  checkElems("layerNorm", "mean", mean, rows);
  checkElems("layerNorm", "rstd", rstd, rows);
  if (rows == 0) return;
  const bool v4 = useVec4(cols, {x, gamma, beta, residual.r, residual.sum}, {}) &&
                  (yHalf ? useVec4(cols, {}, {y}) : useVec4(cols, {y}));
  const auto& pipe = exec.pipeline(params(NormKind::LayerNorm, NormPass::Forward,
                                          resolve(exec, kernel, v4 ? cols / 4 : cols), yType, false, v4,
                                          hasResidual(residual)),
                                   codegen::generateNorm);
  dispatchForward(exec, pipe,
                  {{x, Access::Read},
                   {gamma, Access::Read},
                   {beta, Access::Read},
                   {y, Access::Write},
                   {mean, Access::Write},
                   {rstd, Access::Write}},
                  residual, codegen::NormPush{rows, cols, eps}, rows);
}

void layerNormBackward(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange dy,
                       vk::BufferRange mean, vk::BufferRange rstd, vk::BufferRange dx, vk::BufferRange dgamma,
                       vk::BufferRange dbeta, vk::BufferRange scratch, uint32_t rows, uint32_t cols,
                       RowKernelChoice kernel, bool accumulateDx, const HalfDx& dxHalf,
                       ParamGradAccumulate paramGrads) {
  checkBackward("layerNormBackward", NormKind::LayerNorm, rows, cols, x, gamma, dy, dx, dgamma, scratch);
  checkHalfDx(exec, "layerNormBackward", dxHalf, uint64_t(rows) * cols);
  checkElems("layerNormBackward", "dbeta", dbeta, cols);
  checkElems("layerNormBackward", "mean", mean, rows);
  checkElems("layerNormBackward", "rstd", rstd, rows);
  const NormBackwardPlan plan = normBackwardPlan(rows);
  const bool v4 = useVec4(cols, {x, gamma, dy, dx, scratch}, {dxHalf.range});
  const RowKernelChoice c = resolve(exec, kernel, v4 ? cols / 4 : cols); // invocations per row: vectors
  const auto& rowsPipe =
      exec.pipeline(params(NormKind::LayerNorm, NormPass::BackwardRows, c, dxHalf.type, accumulateDx, v4),
                    codegen::generateNorm);
  dispatchRows(exec, rowsPipe,
               {{x, Access::Read},
                {gamma, Access::Read},
                {dy, Access::Read},
                {mean, Access::Read},
                {rstd, Access::Read},
                {dx, accumulateDx ? Access::ReadWrite : Access::Write},
                {scratch, Access::ReadWrite}},
               dxHalf, codegen::NormBackwardPush{rows, cols, plan.blockRows}, plan);
  sumPartials(exec, scratch, rows, cols, {{dgamma, paramGrads.gamma}, {dbeta, paramGrads.beta}});
}

void rmsNorm(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange y,
             vk::BufferRange rstd, uint32_t rows, uint32_t cols, float eps, RowKernelChoice kernel,
             codegen::Elem yType, const ResidualAdd& residual) {
  checkForward("rmsNorm", rows, cols, x, gamma, y, yType);
  checkResidual("rmsNorm", residual, uint64_t(rows) * cols);
  requireElem(exec.context().device(), yType, "rmsNorm");
  const bool yHalf = codegen::isHalf(yType);
  checkElems("rmsNorm", "rstd", rstd, rows);
  if (rows == 0) return;
  const bool v4 = useVec4(cols, {x, gamma, residual.r, residual.sum}, {}) &&
                  (yHalf ? useVec4(cols, {}, {y}) : useVec4(cols, {y}));
  const auto& pipe =
      exec.pipeline(params(NormKind::RmsNorm, NormPass::Forward, resolve(exec, kernel, v4 ? cols / 4 : cols),
                           yType, false, v4, hasResidual(residual)),
                    codegen::generateNorm);
  dispatchForward(exec, pipe,
                  {{x, Access::Read}, {gamma, Access::Read}, {y, Access::Write}, {rstd, Access::Write}},
                  residual, codegen::NormPush{rows, cols, eps}, rows);
}

void rmsNormBackward(Executor& exec, vk::BufferRange x, vk::BufferRange gamma, vk::BufferRange dy,
                     vk::BufferRange rstd, vk::BufferRange dx, vk::BufferRange dgamma,
                     vk::BufferRange scratch, uint32_t rows, uint32_t cols, RowKernelChoice kernel,
                     bool accumulateDx, const HalfDx& dxHalf, ParamGradAccumulate paramGrads) {
  checkBackward("rmsNormBackward", NormKind::RmsNorm, rows, cols, x, gamma, dy, dx, dgamma, scratch);
  checkHalfDx(exec, "rmsNormBackward", dxHalf, uint64_t(rows) * cols);
  checkElems("rmsNormBackward", "rstd", rstd, rows);
  const NormBackwardPlan plan = normBackwardPlan(rows);
  const bool v4 = useVec4(cols, {x, gamma, dy, dx, scratch}, {dxHalf.range});
  const RowKernelChoice c = resolve(exec, kernel, v4 ? cols / 4 : cols); // invocations per row: vectors
  const auto& rowsPipe =
      exec.pipeline(params(NormKind::RmsNorm, NormPass::BackwardRows, c, dxHalf.type, accumulateDx, v4),
                    codegen::generateNorm);
  dispatchRows(exec, rowsPipe,
               {{x, Access::Read},
                {gamma, Access::Read},
                {dy, Access::Read},
                {rstd, Access::Read},
                {dx, accumulateDx ? Access::ReadWrite : Access::Write},
                {scratch, Access::ReadWrite}},
               dxHalf, codegen::NormBackwardPush{rows, cols, plan.blockRows}, plan);
  sumPartials(exec, scratch, rows, cols, {{dgamma, paramGrads.gamma}});
}

} // namespace helios::ops
