#include "engine/ops/softmax.hpp"

#include <stdexcept>
#include <string>

namespace helios::ops {

using namespace rows_detail;

namespace {

void checkDocuments(const SoftmaxOptions& o, uint32_t rows) {
  const uint32_t q = o.causalQueries, per = o.rowsPerSequence;
  if (q == 0) throw std::invalid_argument("softmax: documentPositions needs the causal mask (causalQueries)");
  if (per == 0 || per % q != 0 || rows % per != 0)
    throw std::invalid_argument("softmax: rowsPerSequence (" + std::to_string(per) +
                                ") must be a multiple of " + "causalQueries (" + std::to_string(q) +
                                ") that divides rows (" + std::to_string(rows) + ")");
  const uint64_t need = (per ? uint64_t(rows) / per : 0) * q * 4;
  if (o.documentPositions.size != 0 && o.documentPositions.size < need)
    throw std::invalid_argument("softmax: documentPositions holds " +
                                std::to_string(o.documentPositions.size) + " bytes, needs " +
                                std::to_string(need));
}

} // namespace

void softmax(Executor& exec, vk::BufferRange x, vk::BufferRange y, uint32_t rows, uint32_t cols,
             const SoftmaxOptions& options) {
  checkShape("softmax", rows, cols);
  const uint64_t n = uint64_t(rows) * cols;
  checkElems("softmax", "x", x, n);
  checkElems("softmax", "y", y, n);
  if (options.causalQueries > cols)
    throw std::invalid_argument("softmax: causalQueries (" + std::to_string(options.causalQueries) +
                                ") exceeds cols (" + std::to_string(cols) + ")");
  const bool documents = options.documentPositions.buffer != VK_NULL_HANDLE;
  if (documents) checkDocuments(options, rows);
  if (rows == 0) return;
  const RowKernelChoice c = resolve(exec, options.kernel, cols);
  const codegen::SoftmaxParams params{codegen::SoftmaxPass::Forward, options.causalQueries != 0, c.localSize,
                                      c.strategy, documents};
  const auto& pipe = exec.pipeline(params, codegen::generateSoftmax);
  const codegen::SoftmaxForwardPush push{rows, cols, options.scale, options.causalQueries,
                                         options.rowsPerSequence};
  if (documents)
    exec.dispatch(pipe, {{x, Access::Read}, {y, Access::Write}, {options.documentPositions, Access::Read}},
                  push, rowGrid(rows));
  else
    exec.dispatch(pipe, {{x, Access::Read}, {y, Access::Write}}, push, rowGrid(rows));
}

void softmaxBackward(Executor& exec, vk::BufferRange y, vk::BufferRange dy, vk::BufferRange dx, uint32_t rows,
                     uint32_t cols, float scale, RowKernelChoice kernel) {
  checkShape("softmaxBackward", rows, cols);
  const uint64_t n = uint64_t(rows) * cols;
  checkElems("softmaxBackward", "y", y, n);
  checkElems("softmaxBackward", "dy", dy, n);
  checkElems("softmaxBackward", "dx", dx, n);
  if (rows == 0) return;
  const RowKernelChoice c = resolve(exec, kernel, cols);
  const codegen::SoftmaxParams params{codegen::SoftmaxPass::Backward, false, c.localSize, c.strategy};
  const auto& pipe = exec.pipeline(params, codegen::generateSoftmax);
  const codegen::SoftmaxBackwardPush push{rows, cols, scale};
  exec.dispatch(pipe, {{y, Access::Read}, {dy, Access::Read}, {dx, Access::Write}}, push, rowGrid(rows));
}

} // namespace helios::ops
