// Autograd GEMMs: matmul (f32 or f16 operands, f16 gradients where they came that way) and linear.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/matmul.hpp"
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

Tensor matmul(Tape& tape, const Tensor& a, const Tensor& b, const MatmulSpec& s, const Tensor* bias) {
  if (a.dtype != b.dtype) throw std::invalid_argument("autograd::matmul: A and B must have one storage type");
  if (s.f16Compute && a.dtype != DType::F32)
    throw std::invalid_argument("autograd::matmul: f16Compute multiplies f32 tensors as f16");
  if (bias && s.batch != 1) throw std::invalid_argument("autograd::matmul: bias needs batch == 1");
  if (bias && (bias->dtype == DType::F16) != s.outF16)
    throw std::invalid_argument("autograd::matmul: the bias is stored like C (f16 with outF16, else f32)");
  if (s.f16GradA && a.dtype != DType::F16)
    throw std::invalid_argument("autograd::matmul: f16GradA needs f16 operands");
  if (a.elements() != uint64_t(s.batch) * s.M * s.K || b.elements() != uint64_t(s.batch) * s.K * s.N)
    throw std::invalid_argument("autograd::matmul: operand sizes do not match M, N, K, batch");
  const bool grad = tape.needsGrad({&a, &b, bias});
  if (grad && s.gelu)
    throw std::logic_error("autograd::matmul: the fused GELU epilogue has no backward; use activation()");
  Tensor c = tape.empty({s.batch * s.M, s.N}, s.outF16 ? DType::F16 : DType::F32, grad, "matmul output");
  const ops::MatmulDType type = a.dtype == DType::F16 ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  ops::MatmulArgs args;
  args.a = a.data;
  args.b = b.data;
  args.c = c.data;
  if (bias) args.bias = bias->data;
  args.M = s.M;
  args.N = s.N;
  args.K = s.K;
  args.batch = s.batch;
  args.transA = s.transA;
  args.transB = s.transB;
  args.alpha = s.alpha;
  args.gelu = s.gelu;
  args.aType = type;
  args.f16Compute = s.f16Compute;
  if (s.outF16) args.outType = ops::MatmulDType::F16;
  ops::matmul(tape.exec(), args);
  if (!grad) return c;
  const Tensor biasT = bias ? *bias : Tensor{};
  tape.push([&tape, a, b, c, s, biasT, type] {
    ops::Executor& exec = tape.exec();
    // f16 operands take dC in f16: the gradient slot's f16 form (cast once, or as a producer handed it).
    const bool f16 = type == ops::MatmulDType::F16 && (a.requiresGrad() || b.requiresGrad());
    const bool halfOnly = c.gradSlot->halfOnly; // handed over in f16 only: the bias sums read that too
    const vk::BufferRange dCin = f16 ? tape.gradOfF16(c) : tape.gradOf(c);
    const auto gemm = [&](vk::BufferRange A, vk::BufferRange B, const Tape::Target& t, uint32_t M, uint32_t N,
                          uint32_t K, bool tA, bool tB, bool outF16 = false) {
      ops::MatmulArgs g;
      g.a = A;
      g.b = B;
      g.c = t.range;
      g.M = M;
      g.N = N;
      g.K = K;
      g.batch = s.batch;
      g.transA = tA;
      g.transB = tB;
      g.alpha = s.alpha;
      g.beta = t.accumulate ? 1.0f : 0.0f;
      g.aType = type;
      g.f16Compute = s.f16Compute; // dC stays f32 and is rounded with the operand it meets
      if (outF16) g.outType = ops::MatmulDType::F16;
      ops::matmul(exec, g);
    };
    if (a.requiresGrad() && s.f16GradA && !s.transA && gradStillEmpty(a)) { // dA [M, K] in f16
      const vk::BufferRange dA16 = tape.allocate(a.elements() * 2, "matmul dA f16");
      gemm(dCin, b.data, {dA16, false}, s.M, s.K, s.N, false, !s.transB, true);
      tape.passGradF16(a, dA16);
    } else if (a.requiresGrad()) {
      const Tape::Target t = tape.target(a);
      if (!s.transA) // dA [M, K] = alpha dC op(B)^T
        gemm(dCin, b.data, t, s.M, s.K, s.N, false, !s.transB);
      else // dA^T [K, M] = alpha op(B) dC^T
        gemm(b.data, dCin, t, s.K, s.M, s.N, s.transB, true);
    }
    if (b.requiresGrad()) {
      const Tape::Target t = tape.target(b);
      if (!s.transB) // dB [K, N] = alpha op(A)^T dC
        gemm(a.data, dCin, t, s.K, s.N, s.M, !s.transA, false);
      else // dB^T [N, K] = alpha dC^T op(A)
        gemm(dCin, a.data, t, s.N, s.K, s.M, true, s.transA);
    }
    if (biasT.requiresGrad()) {
      if (f16 && halfOnly)
        columnSumInto(tape, biasT, dCin, s.M, s.N, true);
      else
        columnSumInto(tape, biasT, tape.gradOf(c), s.M, s.N);
    }
  });
  return c;
}

Tensor linear(Tape& tape, const Tensor& x, const Tensor& w, const Tensor* bias,
              const LinearOptions& options) {
  if (w.shape.size() != 2) throw std::invalid_argument("autograd::linear: weight must be [out, in]");
  const uint32_t out = w.shape[0], in = w.shape[1];
  if (x.elements() % in != 0)
    throw std::invalid_argument("autograd::linear: input width does not match weight [" +
                                std::to_string(out) + ", " + std::to_string(in) + "]");
  MatmulSpec s;
  s.M = static_cast<uint32_t>(x.elements() / in);
  s.N = out;
  s.K = in;
  s.transB = true;
  s.gelu = options.gelu;
  s.f16Compute = options.f16Compute;
  s.outF16 = options.outF16;
  s.f16GradA = options.f16GradA;
  if (options.lora && options.gelu)
    throw std::invalid_argument(
        "autograd::linear: the fused GELU epilogue would come before the adapter's term");
  Tensor y;
  if (bias && options.outF16 && bias->dtype == DType::F32) {
    const Tensor bias16 = cast(tape, *bias, DType::F16);
    y = matmul(tape, x, w, s, &bias16);
  } else {
    y = matmul(tape, x, w, s, bias);
  }
  if (options.lora) addLora(tape, x, y, *options.lora);
  return y;
}

} // namespace helios::autograd
