// The LM head and its cross-entropy over row chunks: the [rows, vocab] logits and their gradient exist one
// chunk at a time (GPT-2 small at B16 x T1024: 1.6 GB each in f16 at full size).
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/cross_entropy.hpp"

#include <algorithm>
#include <stdexcept>

namespace helios::autograd {

using detail::gemm;

// Chunks start at multiples of 128 rows, the GEMM tiles' height, so no chunk's GEMMs need padding where the
// whole batch's did not.
uint32_t headChunkRows(uint32_t rows, uint32_t vocab, uint64_t chunkBytes) {
  constexpr uint64_t kRowStep = 128;
  const uint64_t most = std::max(kRowStep, chunkBytes / (uint64_t{vocab} * 2) / kRowStep * kRowStep);
  const uint64_t chunks = (rows + most - 1) / most;
  const uint64_t even = (rows + chunks - 1) / chunks; // about equal chunks
  return static_cast<uint32_t>(std::min<uint64_t>(rows, (even + kRowStep - 1) / kRowStep * kRowStep));
}

Tensor headCrossEntropy(Tape& tape, const Tensor& x, const Tensor& w, vk::BufferRange targets,
                        float gradScale, const HeadLossSpec& spec) {
  if (x.dtype != w.dtype) throw std::invalid_argument("autograd::headCrossEntropy: x and W differ in type");
  if (w.shape.size() != 2 || x.elements() % w.shape[1] != 0)
    throw std::invalid_argument("autograd::headCrossEntropy: W must be [vocab, C] and x [rows, C]");
  const uint32_t V = w.shape[0], C = w.shape[1], rows = static_cast<uint32_t>(x.elements() / C);
  const bool grad = tape.needsGrad({&x, &w});
  // With gradients the logits take the operands' type (the backward GEMMs read dlogits beside W and x).
  const DType logitsType = grad ? x.dtype : spec.logits;
  const uint32_t eb = dtypeBytes(logitsType), xb = dtypeBytes(x.dtype);
  const uint32_t chunk = std::min(rows, spec.chunkRows ? spec.chunkRows : rows);
  ops::Executor& exec = tape.exec();
  Tensor loss = tape.empty({rows}, DType::F32, false, "cross-entropy loss");
  const vk::BufferRange logits = tape.allocate(uint64_t{chunk} * V * eb, "head logits (chunk)");
  const vk::BufferRange dlogits = tape.allocate(uint64_t{chunk} * V * eb, "head dlogits (chunk)");
  vk::BufferRange dx, dw; // dW only for a trainable head (a frozen LoRA base's has none)
  if (grad) dx = tape.allocate(uint64_t{rows} * C * 4, "head dx");
  if (grad && w.requiresGrad()) dw = tape.allocate(uint64_t{V} * C * 4, "head dW");
  for (uint32_t r0 = 0; r0 < rows; r0 += chunk) {
    const uint32_t n = std::min(chunk, rows - r0);
    const vk::BufferRange xc = vk::subrange(x.data, uint64_t{r0} * C * xb, uint64_t{n} * C * xb);
    const vk::BufferRange lc = vk::subrange(logits, 0, uint64_t{n} * V * eb);
    const vk::BufferRange dc = vk::subrange(dlogits, 0, uint64_t{n} * V * eb);
    gemm(exec, xc, w.data, lc, n, V, C, false, true, x.dtype, logitsType, 1.0f, 0.0f); // x W^T
    ops::crossEntropy(exec, lc, vk::subrange(targets, uint64_t{r0} * 4, uint64_t{n} * 4),
                      vk::subrange(loss.data, uint64_t{r0} * 4, uint64_t{n} * 4), dc, n, V, gradScale, {},
                      logitsType);
    if (!grad) continue;
    // dx rows = dlogits W; dW (+)= dlogits^T x: each chunk's gradient is used up before the next is made.
    gemm(exec, dc, w.data, vk::subrange(dx, uint64_t{r0} * C * 4, uint64_t{n} * C * 4), n, C, V, false, false,
         x.dtype, DType::F32, 1.0f, 0.0f);
    if (w.requiresGrad())
      gemm(exec, dc, xc, dw, V, C, n, true, false, x.dtype, DType::F32, 1.0f, r0 == 0 ? 0.0f : 1.0f);
  }
  if (grad)
    tape.push([&tape, x, w, dx, dw] {
      tape.passGrad(x, dx, true);
      if (w.requiresGrad()) tape.passGrad(w, dw, true);
    });
  return loss;
}

} // namespace helios::autograd
