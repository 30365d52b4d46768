// Autograd LayerNorm and RMSNorm (16-bit output for a GEMM operand; dx accumulated in the kernel, optionally
// with its 16-bit copy), alone or with the residual add before them in the same forward kernel.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/norm.hpp"
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

namespace {

using codegen::NormKind;

// One norm call: its kind, parameters (beta null for RMSNorm) and storage choices.
struct NormCall {
  NormKind kind = NormKind::LayerNorm;
  Tensor gamma, beta; // beta empty for RMSNorm
  float eps = 0;
  DType out = DType::F32, dxHalf = DType::F32;
};

struct Saved {
  Tensor x, y; // x: the normalized input (the sum, with a residual add)
  vk::BufferRange mean, rstd;
  uint32_t rows = 0, cols = 0;
};

void checkParams(const char* op, const NormCall& n, uint32_t cols) {
  const bool ln = n.kind == NormKind::LayerNorm;
  if (n.gamma.count() != cols || (ln && n.beta.count() != cols))
    throw std::invalid_argument(std::string("autograd::") + op + (ln ? ": gamma/beta" : ": gamma") +
                                " must hold " + std::to_string(cols) + " elements");
}

// Allocates y and the statistics and runs the forward kernel on x (+ residual.r, written to residual.sum).
Saved forward(Tape& tape, const NormCall& n, const Tensor& x, bool grad, const ops::ResidualAdd& residual) {
  const bool ln = n.kind == NormKind::LayerNorm;
  Saved s;
  s.x = x;
  s.cols = lastDim(x);
  s.rows = static_cast<uint32_t>(x.elements() / s.cols);
  s.y = tape.empty(x.shape, n.out, grad, ln ? "layerNorm" : "rmsNorm");
  if (ln) s.mean = tape.allocate(uint64_t(s.rows) * 4, "layerNorm mean");
  s.rstd = tape.allocate(uint64_t(s.rows) * 4, ln ? "layerNorm rstd" : "rmsNorm rstd");
  if (ln)
    ops::layerNorm(tape.exec(), x.data, n.gamma.data, n.beta.data, s.y.data, s.mean, s.rstd, s.rows, s.cols,
                   n.eps, {}, n.out, residual);
  else
    ops::rmsNorm(tape.exec(), x.data, n.gamma.data, s.y.data, s.rstd, s.rows, s.cols, n.eps, {}, n.out,
                 residual);
  return s;
}

// Where the backward writes dx's 16-bit copy (none unless asked for and x takes a gradient).
ops::HalfDx halfDx(Tape& tape, const Tensor& x, DType dxHalf) {
  if (!codegen::isHalf(dxHalf) || !x.requiresGrad()) return {};
  return {tape.allocate(x.elements() * 2, "norm dx 16-bit"), dxHalf};
}

// dx (accumulated into x's gradient when it already holds one, the residual stream's usually), dgamma and
// dbeta: added by the kernels' finish pass to gradients that hold values (parameters' always).
void backward(Tape& tape, const NormCall& n, const Saved& s) {
  const vk::BufferRange dy = tape.gradOf(s.y);
  const vk::BufferRange scratch =
      tape.allocate(ops::normBackwardScratchBytes(n.kind, s.rows, s.cols), "norm scratch");
  const Tape::Target tx = targetOrScratch(tape, s.x);
  const ops::HalfDx h = halfDx(tape, s.x, n.dxHalf);
  const Tape::Target tg = targetOrScratch(tape, n.gamma);
  if (n.kind == NormKind::LayerNorm) {
    const Tape::Target tb = targetOrScratch(tape, n.beta);
    ops::layerNormBackward(tape.exec(), s.x.data, n.gamma.data, dy, s.mean, s.rstd, tx.range, tg.range,
                           tb.range, scratch, s.rows, s.cols, {}, tx.accumulate, h,
                           {tg.accumulate, tb.accumulate});
  } else {
    ops::rmsNormBackward(tape.exec(), s.x.data, n.gamma.data, dy, s.rstd, tx.range, tg.range, scratch, s.rows,
                         s.cols, {}, tx.accumulate, h, {tg.accumulate});
  }
  if (codegen::isHalf(h.type)) tape.noteHalf(s.x, h.range, h.type);
}

Tensor normOp(Tape& tape, const char* op, const Tensor& x, const NormCall& n) {
  requireF32(op, x);
  checkParams(op, n, lastDim(x));
  const bool grad = tape.needsGrad({&x, &n.gamma, &n.beta});
  const Saved s = forward(tape, n, x, grad, {});
  if (grad) tape.push([&tape, n, s] { backward(tape, n, s); });
  return s.y;
}

AddNorm addNormOp(Tape& tape, const char* op, const Tensor& a, const Tensor& b, const NormCall& n) {
  requireF32(op, a);
  requireF32(op, b);
  requireSameCount(op, a, b);
  checkParams(op, n, lastDim(a));
  const bool grad = tape.needsGrad({&a, &b, &n.gamma, &n.beta});
  const Tensor sum = tape.empty(a.shape, DType::F32, grad, "add");
  const Saved s = forward(tape, n, a, grad, {b.data, sum.data});
  Saved onSum = s;
  onSum.x = sum;
  if (grad)
    tape.push([&tape, n, onSum, a, b] {
      backward(tape, n, onSum);
      tape.shareGrad(onSum.x, a); // as add(): both take the sum's gradient itself
      tape.shareGrad(onSum.x, b);
    });
  return {sum, s.y};
}

} // namespace

Tensor layerNorm(Tape& tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, DType out,
                 DType dxHalf) {
  return normOp(tape, "layerNorm", x, {NormKind::LayerNorm, gamma, beta, eps, out, dxHalf});
}

Tensor rmsNorm(Tape& tape, const Tensor& x, const Tensor& gamma, float eps, DType out, DType dxHalf) {
  return normOp(tape, "rmsNorm", x, {NormKind::RmsNorm, gamma, {}, eps, out, dxHalf});
}

AddNorm addLayerNorm(Tape& tape, const Tensor& a, const Tensor& b, const Tensor& gamma, const Tensor& beta,
                     float eps, DType out, DType dxHalf) {
  return addNormOp(tape, "addLayerNorm", a, b, {NormKind::LayerNorm, gamma, beta, eps, out, dxHalf});
}

AddNorm addRmsNorm(Tape& tape, const Tensor& a, const Tensor& b, const Tensor& gamma, float eps, DType out,
                   DType dxHalf) {
  return addNormOp(tape, "addRmsNorm", a, b, {NormKind::RmsNorm, gamma, {}, eps, out, dxHalf});
}

} // namespace helios::autograd
