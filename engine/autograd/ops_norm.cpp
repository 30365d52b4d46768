// Autograd LayerNorm and RMSNorm (16-bit output for a GEMM operand; dx accumulated in the kernel).
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/norm.hpp"
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

Tensor layerNorm(Tape& tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, DType out) {
  requireF32("layerNorm", x);
  const uint32_t cols = lastDim(x), rows = static_cast<uint32_t>(x.elements() / cols);
  if (gamma.count() != cols || beta.count() != cols)
    throw std::invalid_argument("autograd::layerNorm: gamma/beta must hold " + std::to_string(cols) +
                                " elements");
  const bool grad = tape.needsGrad({&x, &gamma, &beta});
  Tensor y = tape.empty(x.shape, out, grad, "layerNorm");
  const vk::BufferRange mean = tape.allocate(uint64_t(rows) * 4, "layerNorm mean");
  const vk::BufferRange rstd = tape.allocate(uint64_t(rows) * 4, "layerNorm rstd");
  ops::layerNorm(tape.exec(), x.data, gamma.data, beta.data, y.data, mean, rstd, rows, cols, eps, {}, out);
  if (grad)
    tape.push([&tape, x, gamma, beta, y, mean, rstd, rows, cols] {
      const vk::BufferRange dy = tape.gradOf(y);
      const vk::BufferRange scratch = tape.allocate(
          ops::normBackwardScratchBytes(codegen::NormKind::LayerNorm, rows, cols), "norm scratch");
      // dx accumulates in the kernel when x already has a gradient (the residual stream's, usually).
      const Tape::Target tx = targetOrScratch(tape, x);
      const MaybeSink sg = sinkOrScratch(tape, gamma), sb = sinkOrScratch(tape, beta);
      ops::layerNormBackward(tape.exec(), x.data, gamma.data, dy, mean, rstd, tx.range, sg.sink.range,
                             sb.sink.range, scratch, rows, cols, {}, tx.accumulate);
      finish(tape, gamma, sg);
      finish(tape, beta, sb);
    });
  return y;
}

Tensor rmsNorm(Tape& tape, const Tensor& x, const Tensor& gamma, float eps, DType out) {
  requireF32("rmsNorm", x);
  const uint32_t cols = lastDim(x), rows = static_cast<uint32_t>(x.elements() / cols);
  if (gamma.count() != cols)
    throw std::invalid_argument("autograd::rmsNorm: gamma must hold " + std::to_string(cols) + " elements");
  const bool grad = tape.needsGrad({&x, &gamma});
  Tensor y = tape.empty(x.shape, out, grad, "rmsNorm");
  const vk::BufferRange rstd = tape.allocate(uint64_t(rows) * 4, "rmsNorm rstd");
  ops::rmsNorm(tape.exec(), x.data, gamma.data, y.data, rstd, rows, cols, eps, {}, out);
  if (grad)
    tape.push([&tape, x, gamma, y, rstd, rows, cols] {
      const vk::BufferRange dy = tape.gradOf(y);
      const vk::BufferRange scratch = tape.allocate(
          ops::normBackwardScratchBytes(codegen::NormKind::RmsNorm, rows, cols), "norm scratch");
      const Tape::Target tx = targetOrScratch(tape, x);
      const MaybeSink sg = sinkOrScratch(tape, gamma);
      ops::rmsNormBackward(tape.exec(), x.data, gamma.data, dy, rstd, tx.range, sg.sink.range, scratch, rows,
                           cols, {}, tx.accumulate);
      finish(tape, gamma, sg);
    });
  return y;
}

} // namespace helios::autograd
