#include "engine/ops/cross_entropy.hpp"

#include <stdexcept>
#include <string>

namespace helios::ops {

using namespace rows_detail;

void crossEntropy(Executor& exec, vk::BufferRange logits, vk::BufferRange targets, vk::BufferRange loss,
                  vk::BufferRange dlogits, uint32_t rows, uint32_t vocab, float gradScale,
                  RowKernelChoice kernel, bool f16) {
  checkShape("crossEntropy", rows, vocab);
  const uint64_t n = uint64_t(rows) * vocab;
  const auto checkHalf = [n](const char* name, const vk::BufferRange& r) {
    if (r.size < 2 * n)
      throw std::invalid_argument(std::string("crossEntropy: ") + name + " holds " +
                                  std::to_string(r.size / 2) + " f16 elements but needs " +
                                  std::to_string(n));
  };
  if (f16) {
    checkHalf("logits", logits);
    checkHalf("dlogits", dlogits);
  } else {
    checkElems("crossEntropy", "logits", logits, n);
    checkElems("crossEntropy", "dlogits", dlogits, n);
  }
  checkElems("crossEntropy", "targets", targets, rows);
  checkElems("crossEntropy", "loss", loss, rows);
  if (f16 && !exec.context().device().features().storageBuffer16BitAccess)
    throw std::runtime_error(
        "crossEntropy: f16 logits need storageBuffer16BitAccess, which this device lacks");
  if (rows == 0) return;
  const RowKernelChoice c = resolve(exec, kernel, vocab);
  const codegen::CrossEntropyParams params{c.localSize, c.strategy, f16};
  const auto& pipe = exec.pipeline(params, codegen::generateCrossEntropy);
  struct Push {
    uint32_t rows, vocab;
    float gradScale;
  } push{rows, vocab, gradScale};
  exec.dispatch(
      pipe,
      {{logits, Access::Read}, {targets, Access::Read}, {loss, Access::Write}, {dlogits, Access::Write}},
      push, rowGrid(rows));
}

} // namespace helios::ops
