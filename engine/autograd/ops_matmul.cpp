// Autograd GEMMs: matmul (f32 or 16-bit operands, 16-bit gradients where they came that way) and linear.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/matmul.hpp"
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

Tensor matmul(Tape& tape, const Tensor& a, const Tensor& b, const MatmulSpec& s, const Tensor* bias) {
  if (a.dtype != b.dtype) throw std::invalid_argument("autograd::matmul: A and B must have one storage type");
  if (s.roundTo != DType::F32 && a.dtype != DType::F32)
    throw std::invalid_argument("autograd::matmul: roundTo multiplies f32 tensors as a 16-bit kind");
  if (bias && s.batch != 1) throw std::invalid_argument("autograd::matmul: bias needs batch == 1");
  if (bias && bias->dtype != s.out)
    throw std::invalid_argument("autograd::matmul: the bias is stored like C (" +
                                std::string(codegen::elemName(s.out)) + ")");
  if (s.halfGradA && !codegen::isHalf(a.dtype))
    throw std::invalid_argument("autograd::matmul: halfGradA needs 16-bit operands");
  if (a.elements() != uint64_t(s.batch) * s.M * s.K || b.elements() != uint64_t(s.batch) * s.K * s.N)
    throw std::invalid_argument("autograd::matmul: operand sizes do not match M, N, K, batch");
  const bool grad = tape.needsGrad({&a, &b, bias});
  if (grad && s.gelu)
    throw std::logic_error("autograd::matmul: the fused GELU epilogue has no backward; use activation()");
  Tensor c = tape.empty({s.batch * s.M, s.N}, s.out, grad, "matmul output");
  const ops::MatmulDType type = a.dtype;
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
  args.roundTo = s.roundTo;
  args.outType = s.out;
  ops::matmul(tape.exec(), args);
  if (!grad) return c;
  const Tensor biasT = bias ? *bias : Tensor{};
  tape.push([&tape, a, b, c, s, biasT, type] {
    ops::Executor& exec = tape.exec();
    // 16-bit operands take dC in their type: the gradient slot's 16-bit form (cast once, or as a producer
    // handed it).
    const bool half = codegen::isHalf(type) && (a.requiresGrad() || b.requiresGrad());
    const bool halfOnly = c.gradSlot->halfOnly; // handed over in 16 bits only: the bias sums read that too
    const vk::BufferRange dCin = half ? tape.gradOfHalf(c, type) : tape.gradOf(c);
    const auto gemm = [&](vk::BufferRange A, vk::BufferRange B, const Tape::Target& t, uint32_t M, uint32_t N,
                          uint32_t K, bool tA, bool tB, DType out = DType::F32) {
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
      g.roundTo = s.roundTo; // dC stays f32 and is rounded with the operand it meets
      g.outType = out;
      ops::matmul(exec, g);
    };
    if (a.requiresGrad() && s.halfGradA && !s.transA && gradStillEmpty(a)) { // dA [M, K] in 16 bits
      const vk::BufferRange dA16 = tape.allocate(a.elements() * 2, "matmul dA 16-bit");
      gemm(dCin, b.data, {dA16, false}, s.M, s.K, s.N, false, !s.transB, type);
      tape.passGradHalf(a, dA16, type);
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
      if (half && halfOnly)
        columnSumInto(tape, biasT, dCin, s.M, s.N, type);
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
  s.roundTo = options.roundTo;
  s.out = options.out;
  s.halfGradA = options.halfGradA;
  if (options.lora && options.gelu)
    throw std::invalid_argument(
        "autograd::linear: the fused GELU epilogue would come before the adapter's term");
  Tensor y;
  if (bias && codegen::isHalf(options.out) && bias->dtype == DType::F32) {
    const Tensor bias16 = cast(tape, *bias, options.out);
    y = matmul(tape, x, w, s, &bias16);
  } else {
    y = matmul(tape, x, w, s, bias);
  }
  if (options.lora) addLora(tape, x, y, *options.lora);
  return y;
}

} // namespace helios::autograd
