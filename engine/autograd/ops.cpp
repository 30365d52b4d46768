#include "engine/autograd/ops.hpp"

#include <algorithm>

#include "engine/ops/column_sum.hpp"
#include "engine/ops/cross_entropy.hpp"
#include "engine/ops/embedding.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/norm.hpp"
#include "engine/ops/permute.hpp"
#include "engine/ops/rope.hpp"

#include <stdexcept>
#include <string>

namespace helios::autograd {

namespace {

void requireF32(const char* op, const Tensor& t) {
  if (t.dtype != DType::F32)
    throw std::invalid_argument(std::string("autograd::") + op + ": expects f32 tensors");
}

void requireSameCount(const char* op, const Tensor& a, const Tensor& b) {
  if (a.elements() != b.elements())
    throw std::invalid_argument(std::string("autograd::") + op + ": element counts differ (" +
                                std::to_string(a.elements()) + " vs " + std::to_string(b.elements()) + ")");
}

uint32_t lastDim(const Tensor& t) {
  if (t.shape.empty()) throw std::invalid_argument("autograd: tensor has no shape");
  return t.shape.back();
}

// A sink when the tensor needs a gradient, else a throwaway temporary (ops that always write every output).
struct MaybeSink {
  Tape::Sink sink;
  bool commit = false;
};
MaybeSink sinkOrScratch(Tape& tape, const Tensor& t) {
  if (t.requiresGrad()) return {tape.sink(t), true};
  return {{tape.allocate(t.elements() * 4, "unused gradient"), true}, false};
}
void finish(Tape& tape, const Tensor& t, const MaybeSink& s) {
  if (s.commit) tape.commit(t, s.sink);
}
// For kernels that can accumulate: t's target, or a throwaway temporary when t needs no gradient.
Tape::Target targetOrScratch(Tape& tape, const Tensor& t) {
  if (t.requiresGrad()) return tape.target(t);
  return {tape.allocate(t.elements() * 4, "unused gradient"), false};
}

// Column sums of dy [rows, cols] into t's gradient (bias gradients), deterministic: ops::columnSum. A
// 1 x rows x cols GEMM with a ones vector did this before and ran a 128x128 tile for one row of output (9% of
// a char-model step on the H100).
void columnSumInto(Tape& tape, const Tensor& t, vk::BufferRange dy, uint32_t rows, uint32_t cols,
                   bool dyF16 = false) {
  const Tape::Target tg = tape.target(t);
  const vk::BufferRange scratch =
      tape.allocate(ops::columnSumScratchBytes(rows, cols), "column partial sums");
  ops::columnSum(tape.exec(), dy, tg.range, scratch, rows, cols, tg.accumulate ? 1.0f : 0.0f, dyF16);
}

// x has no gradient yet: a producer may hand it over in f16 (Tape::passGradF16).
bool gradStillEmpty(const Tensor& x) {
  return x.gradSlot && !x.gradSlot->written && !x.gradSlot->persistent;
}

} // namespace

Tensor cast(Tape& tape, const Tensor& x, DType to) {
  if (x.dtype == to) return x;
  Tensor y;
  y.shape = x.shape;
  y.dtype = to;
  y.data = tape.allocate(y.bytes(), "cast");
  if (to == DType::F16)
    ops::castF32ToF16(tape.exec(), x.data, y.data, x.count());
  else
    ops::castF16ToF32(tape.exec(), x.data, y.data, x.count());
  if (tape.recording()) y.gradSlot = x.gradSlot;
  return y;
}

Tensor matmul(Tape& tape, const Tensor& a, const Tensor& b, const MatmulSpec& s, const Tensor* bias) {
  if (a.dtype != b.dtype) throw std::invalid_argument("autograd::matmul: A and B must have one storage type");
  if (s.f16Compute && a.dtype != DType::F32)
    throw std::invalid_argument("autograd::matmul: f16Compute multiplies f32 tensors as f16");
  if (bias && s.batch != 1) throw std::invalid_argument("autograd::matmul: bias needs batch == 1");
  if (bias && s.outF16) throw std::invalid_argument("autograd::matmul: an f16 output takes no bias");
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
                          uint32_t K, bool tA, bool tB) {
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
      ops::matmul(exec, g);
    };
    if (a.requiresGrad()) {
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

Tensor linear(Tape& tape, const Tensor& x, const Tensor& w, const Tensor* bias, bool gelu, bool f16Compute) {
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
  s.gelu = gelu;
  s.f16Compute = f16Compute;
  return matmul(tape, x, w, s, bias);
}

Tensor add(Tape& tape, const Tensor& a, const Tensor& b) {
  requireF32("add", a);
  requireF32("add", b);
  requireSameCount("add", a, b);
  const bool grad = tape.needsGrad({&a, &b});
  Tensor y = tape.empty(a.shape, DType::F32, grad, "add");
  ops::add(tape.exec(), a.data, b.data, y.data, a.count());
  if (grad)
    tape.push([&tape, a, b, y] {
      tape.shareGrad(y, a); // both take dy itself; a later writer copies first if it must
      tape.shareGrad(y, b);
    });
  return y;
}

Tensor addBroadcast(Tape& tape, const Tensor& x, const Tensor& b) {
  requireF32("addBroadcast", x);
  requireF32("addBroadcast", b);
  const uint32_t cols = b.count();
  if (cols == 0 || x.elements() % cols != 0)
    throw std::invalid_argument("autograd::addBroadcast: x is not a whole number of rows of b");
  const uint32_t rows = static_cast<uint32_t>(x.elements() / cols);
  const bool grad = tape.needsGrad({&x, &b});
  Tensor y = tape.empty(x.shape, DType::F32, grad, "addBroadcast");
  ops::biasAdd(tape.exec(), x.data, b.data, y.data, rows, cols);
  if (grad)
    tape.push([&tape, x, b, y, rows, cols] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (b.requiresGrad()) columnSumInto(tape, b, dy, rows, cols);
      tape.passGrad(x, dy, true);
    });
  return y;
}

Tensor mul(Tape& tape, const Tensor& a, const Tensor& b) {
  requireF32("mul", a);
  requireF32("mul", b);
  requireSameCount("mul", a, b);
  const bool grad = tape.needsGrad({&a, &b});
  Tensor y = tape.empty(a.shape, DType::F32, grad, "mul");
  ops::mul(tape.exec(), a.data, b.data, y.data, a.count());
  if (grad)
    tape.push([&tape, a, b, y] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (a.requiresGrad()) {
        const Tape::Sink s = tape.sink(a);
        ops::mul(tape.exec(), dy, b.data, s.range, a.count());
        tape.commit(a, s);
      }
      if (b.requiresGrad()) {
        const Tape::Sink s = tape.sink(b);
        ops::mul(tape.exec(), dy, a.data, s.range, b.count());
        tape.commit(b, s);
      }
    });
  return y;
}

Tensor activation(Tape& tape, ops::Activation act, const Tensor& x, DType out, bool f16Grad) {
  requireF32("activation", x);
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, out, grad, "activation");
  if (out == DType::F16)
    ops::activationToF16(tape.exec(), act, x.data, y.data, x.count());
  else
    ops::activation(tape.exec(), act, x.data, y.data, x.count());
  if (grad)
    tape.push([&tape, act, x, y, f16Grad] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (f16Grad && gradStillEmpty(x)) {
        const vk::BufferRange dx16 = tape.allocate(x.elements() * 2, "activation gradient f16");
        ops::activationBackwardToF16(tape.exec(), act, x.data, dy, dx16, x.count());
        tape.passGradF16(x, dx16);
        return;
      }
      const Tape::Sink s = tape.sink(x);
      ops::activationBackward(tape.exec(), act, x.data, dy, s.range, x.count());
      tape.commit(x, s);
    });
  return y;
}

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
  ops::layerNorm(tape.exec(), x.data, gamma.data, beta.data, y.data, mean, rstd, rows, cols, eps, {},
                 out == DType::F16);
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
  ops::rmsNorm(tape.exec(), x.data, gamma.data, y.data, rstd, rows, cols, eps, {}, out == DType::F16);
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

Tensor embedding(Tape& tape, const Tensor& table, vk::BufferRange ids, uint32_t tokens) {
  requireF32("embedding", table);
  if (table.shape.size() != 2) throw std::invalid_argument("autograd::embedding: table must be [vocab, dim]");
  const uint32_t vocab = table.shape[0], dim = table.shape[1];
  const bool grad = tape.needsGrad({&table});
  Tensor y = tape.empty({tokens, dim}, DType::F32, grad, "embedding");
  ops::embedding(tape.exec(), table.data, ids, y.data, tokens, vocab, dim);
  if (grad)
    tape.push([&tape, table, ids, y, tokens, vocab, dim] {
      const vk::BufferRange dy = tape.gradOf(y);
      const vk::BufferRange ws =
          tape.allocate(ops::embeddingBackwardWorkspaceBytes(tokens, vocab, dim), "embedding workspace");
      const Tape::Target t = tape.target(table);
      ops::embeddingBackward(tape.exec(), ids, dy, t.range, ws, tokens, vocab, dim, t.accumulate);
    });
  return y;
}

Tensor permute(Tape& tape, const Tensor& x, const std::array<uint32_t, 4>& shape, uint32_t srcOffset,
               const std::array<uint32_t, 4>& srcStrides, bool toF16) {
  if (toF16) requireF32("permute (to f16)", x);
  const bool grad = tape.needsGrad({&x});
  Tensor y =
      tape.empty({shape[0], shape[1], shape[2], shape[3]}, toF16 ? DType::F16 : x.dtype, grad, "permute");
  const ops::PermuteType type = toF16                   ? ops::PermuteType::F32ToF16
                                : x.dtype == DType::F16 ? ops::PermuteType::F16
                                                        : ops::PermuteType::F32;
  ops::PermuteArgs args;
  args.shape = shape;
  args.srcOffset = srcOffset;
  args.srcStrides = srcStrides;
  args.dstStrides = ops::denseStrides(shape);
  args.type = type;
  ops::permute(tape.exec(), x.data, y.data, args);
  if (grad)
    tape.push([&tape, x, y, shape, srcOffset, srcStrides] {
      const vk::BufferRange dy = tape.gradOf(y);
      GradSlot& slot = *x.gradSlot;
      const bool hasValue = slot.written || slot.persistent;
      const vk::BufferRange g = tape.gradForWrite(x);
      bool accumulate = hasValue;
      if (!hasValue && y.elements() != x.elements()) { // a partial view: the rest of dx is zero
        ops::fill(tape.exec(), g, x.count(), 0.0f);
        accumulate = true;
      }
      slot.written = true;
      ops::PermuteArgs back;
      back.shape = shape;
      back.srcStrides = ops::denseStrides(shape);
      back.dstOffset = srcOffset;
      back.dstStrides = srcStrides;
      back.accumulate = accumulate;
      ops::permute(tape.exec(), dy, g, back);
    });
  return y;
}

std::vector<Tensor> permuteSplit(Tape& tape, const Tensor& x, const std::vector<PermuteView>& views,
                                 bool toF16, bool f16Grad) {
  if (toF16) requireF32("permuteSplit (to f16)", x);
  uint64_t covered = 0;
  for (const PermuteView& v : views)
    covered += uint64_t(v.shape[0]) * v.shape[1] * v.shape[2] * v.shape[3];
  if (covered != x.elements())
    throw std::invalid_argument("autograd::permuteSplit: the views hold " + std::to_string(covered) +
                                " elements, x " + std::to_string(x.elements()) + " (they must partition x)");
  const bool grad = tape.needsGrad({&x});
  const ops::PermuteType type = toF16                   ? ops::PermuteType::F32ToF16
                                : x.dtype == DType::F16 ? ops::PermuteType::F16
                                                        : ops::PermuteType::F32;
  std::vector<Tensor> ys;
  for (const PermuteView& v : views) {
    Tensor y = tape.empty({v.shape[0], v.shape[1], v.shape[2], v.shape[3]}, toF16 ? DType::F16 : x.dtype,
                          grad, "permute split");
    ops::PermuteArgs args;
    args.shape = v.shape;
    args.srcOffset = v.srcOffset;
    args.srcStrides = v.srcStrides;
    args.dstStrides = ops::denseStrides(v.shape);
    args.type = type;
    ops::permute(tape.exec(), x.data, y.data, args);
    ys.push_back(std::move(y));
  }
  if (grad)
    tape.push([&tape, x, ys, views, f16Grad] {
      GradSlot& slot = *x.gradSlot;
      bool accumulate = slot.written || slot.persistent;
      const bool allParts =
          std::all_of(ys.begin(), ys.end(), [](const Tensor& y) { return y.gradSlot->written; });
      if (f16Grad && allParts && gradStillEmpty(x)) {
        const vk::BufferRange g16 = tape.allocate(x.elements() * 2, "permute split gradient f16");
        for (size_t i = 0; i < ys.size(); ++i) {
          ops::PermuteArgs back;
          back.shape = views[i].shape;
          back.srcStrides = ops::denseStrides(views[i].shape);
          back.dstOffset = views[i].srcOffset;
          back.dstStrides = views[i].srcStrides;
          back.type = ops::PermuteType::F32ToF16;
          ops::permute(tape.exec(), tape.gradOf(ys[i]), g16, back);
        }
        tape.passGradF16(x, g16);
        return;
      }
      const vk::BufferRange g = tape.gradForWrite(x);
      if (!accumulate && !allParts) { // some part has no gradient: it must read as zero
        ops::fill(tape.exec(), g, x.count(), 0.0f);
        accumulate = true;
      }
      slot.written = true;
      for (size_t i = 0; i < ys.size(); ++i) {
        if (!ys[i].gradSlot->written) continue;
        ops::PermuteArgs back;
        back.shape = views[i].shape;
        back.srcStrides = ops::denseStrides(views[i].shape);
        back.dstOffset = views[i].srcOffset;
        back.dstStrides = views[i].srcStrides;
        back.accumulate = accumulate;
        ops::permute(tape.exec(), tape.gradOf(ys[i]), g, back);
      }
    });
  return ys;
}

Tensor rope(Tape& tape, const Tensor& x, vk::BufferRange table, uint32_t headDim, uint32_t T) {
  requireF32("rope", x);
  const uint32_t rows = static_cast<uint32_t>(x.elements() / headDim);
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, DType::F32, grad, "rope");
  ops::rope(tape.exec(), x.data, table, y.data, rows, headDim, T);
  if (grad)
    tape.push([&tape, x, y, table, rows, headDim, T] {
      const vk::BufferRange dy = tape.gradOf(y);
      const Tape::Sink s = tape.sink(x);
      ops::rope(tape.exec(), dy, table, s.range, rows, headDim, T, true);
      tape.commit(x, s);
    });
  return y;
}

Tensor softmax(Tape& tape, const Tensor& x, uint32_t rows, uint32_t cols,
               const ops::SoftmaxOptions& options) {
  requireF32("softmax", x);
  if (x.elements() != uint64_t(rows) * cols)
    throw std::invalid_argument("autograd::softmax: x is not rows x cols");
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, DType::F32, grad, "softmax");
  ops::softmax(tape.exec(), x.data, y.data, rows, cols, options);
  if (grad)
    tape.push([&tape, x, y, rows, cols, scale = options.scale] {
      const vk::BufferRange dy = tape.gradOf(y);
      const Tape::Sink s = tape.sink(x);
      ops::softmaxBackward(tape.exec(), y.data, dy, s.range, rows, cols, scale);
      tape.commit(x, s);
    });
  return y;
}

Tensor attention(Tape& tape, const Tensor& q, const Tensor& k, const Tensor& v,
                 const ops::AttentionShape& shapeIn) {
  // f16 q, k, v go to the coop kernels as they are (ops::AttentionShape::halfQkv); gradients stay f32.
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    throw std::invalid_argument("autograd::attention: q, k and v must have one storage type");
  ops::AttentionShape shape = shapeIn;
  shape.halfQkv = q.dtype == DType::F16;
  const uint64_t rows = uint64_t(shape.batch) * shape.heads * shape.Tq;
  if (q.elements() != rows * shape.headDim ||
      k.elements() != uint64_t(shape.batch) * shape.kvHeads * shape.Tk * shape.headDim ||
      v.elements() != k.elements())
    throw std::invalid_argument("autograd::attention: q, k, v do not match the attention shape");
  const bool grad = tape.needsGrad({&q, &k, &v});
  Tensor o = tape.empty(q.shape, DType::F32, grad, "attention output");
  const vk::BufferRange lse = tape.allocate(rows * 4, "attention lse");
  ops::attentionForward(tape.exec(), q.data, k.data, v.data, o.data, lse, shape);
  if (grad)
    tape.push([&tape, q, k, v, o, lse, shape, rows] {
      const vk::BufferRange dO = tape.gradOf(o);
      const vk::BufferRange delta = tape.allocate(rows * 4, "attention delta");
      // Inputs without a gradient still need somewhere to write theirs (the kernels write all three).
      const auto sinkOf = [&tape](const Tensor& t) {
        return t.gradSlot ? tape.sink(t)
                          : Tape::Sink{tape.allocate(t.elements() * 4, "unused gradient"), true};
      };
      const Tape::Sink sq = sinkOf(q), sk = sinkOf(k), sv = sinkOf(v);
      ops::attentionBackward(tape.exec(), q.data, k.data, v.data, o.data, lse, dO, sq.range, sk.range,
                             sv.range, delta, shape);
      for (const auto& [t, s] : {std::pair{&q, &sq}, {&k, &sk}, {&v, &sv}})
        if (t->gradSlot) tape.commit(*t, *s);
    });
  return o;
}

Tensor crossEntropy(Tape& tape, const Tensor& logits, vk::BufferRange targets, float gradScale) {
  const uint32_t vocab = lastDim(logits), rows = static_cast<uint32_t>(logits.elements() / vocab);
  const bool grad = tape.needsGrad({&logits});
  const bool f16 = logits.dtype == DType::F16;
  Tensor loss = tape.empty({rows}, DType::F32, false, "cross-entropy loss");
  const vk::BufferRange dlogits = tape.allocate(logits.elements() * (f16 ? 2 : 4), "dlogits");
  ops::crossEntropy(tape.exec(), logits.data, targets, loss.data, dlogits, rows, vocab, gradScale, {}, f16);
  if (grad)
    tape.push([&tape, logits, dlogits, f16] {
      if (f16)
        tape.passGradF16(logits, dlogits);
      else
        tape.passGrad(logits, dlogits, true);
    });
  return loss;
}

Tensor checkpoint(Tape& tape, const Tensor& x, const std::function<Tensor(Tape&, const Tensor&)>& fn) {
  if (!tape.recording()) return fn(tape, x);
  Workspace& ws = tape.workspace();
  Tensor y = tape.empty(x.shape, DType::F32, true, "checkpoint output");
  {
    const Workspace::Mark mark = ws.mark();
    Tape inner(tape.exec(), ws, false);
    const Tensor yi = fn(inner, Tensor::constant(x.data, x.shape, x.dtype));
    if (yi.elements() != x.elements() || yi.dtype != DType::F32)
      throw std::logic_error("autograd::checkpoint: fn must return an f32 tensor shaped like its input");
    ops::copy(tape.exec(), yi.data, y.data, y.count());
    ws.rewind(mark);
  }
  tape.push([&tape, x, y, fn] {
    if (x.requiresGrad()) tape.gradStorage(x); // outlives the recomputation below
    const vk::BufferRange dy = tape.gradOf(y);
    Workspace& w = tape.workspace();
    const Workspace::Mark mark = w.mark();
    {
      Tape inner(tape.exec(), w, true);
      const Tensor yi = fn(inner, x);
      if (!yi.requiresGrad())
        throw std::logic_error("autograd::checkpoint: the recomputed output has no gradient");
      inner.seedGrad(yi, dy);
      inner.backward();
    }
    w.rewind(mark);
  });
  return y;
}

} // namespace helios::autograd
