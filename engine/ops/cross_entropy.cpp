#include "engine/ops/cross_entropy.hpp"

#include "engine/ops/elem_support.hpp"

namespace helios::ops {

using namespace rows_detail;

void crossEntropy(Executor& exec, vk::BufferRange logits, vk::BufferRange targets, vk::BufferRange loss,
                  vk::BufferRange dlogits, uint32_t rows, uint32_t vocab, float gradScale,
                  RowKernelChoice kernel, codegen::Elem logitsType) {
  checkShape("crossEntropy", rows, vocab);
  const uint64_t n = uint64_t(rows) * vocab;
  checkElemsOf("crossEntropy", "logits", logits, n, logitsType);
  checkElemsOf("crossEntropy", "dlogits", dlogits, n, logitsType);
  requireElem(exec.context().device(), logitsType, "crossEntropy");
  checkElems("crossEntropy", "targets", targets, rows);
  checkElems("crossEntropy", "loss", loss, rows);
  if (rows == 0) return;
  const RowKernelChoice c = resolve(exec, kernel, vocab);
  // Whole 4-vectors per row (and aligned ranges): the 4-vector kernel.
  const bool vec4 = vocab % 4 == 0 && logits.offset % 16 == 0 && dlogits.offset % 16 == 0;
  const codegen::CrossEntropyParams params{c.localSize, c.strategy, logitsType, vec4};
  const auto& pipe = exec.pipeline(params, codegen::generateCrossEntropy);
  const codegen::CrossEntropyPush push{rows, vocab, gradScale};
  exec.dispatch(
      pipe,
      {{logits, Access::Read}, {targets, Access::Read}, {loss, Access::Write}, {dlogits, Access::Write}},
      push, rowGrid(rows));
}

} // namespace helios::ops
