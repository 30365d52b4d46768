// matmul and attention on tensors: shapes checked here, then the engine's ops (engine/ops) on the tensors'
// buffers.
#include "helios/ops.hpp"

#include "api/internal.hpp"

#include "engine/ops/attention.hpp"
#include "engine/ops/matmul.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace helios {

namespace {

std::string shapeText(const Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape(), ", "));
}

uint32_t dim32(uint64_t v, const char* what) {
  if (v > 0x7fffffffu) throw std::invalid_argument(fmt::format("helios: {} = {} is too large", what, v));
  return static_cast<uint32_t>(v);
}

ops::MatmulDType matmulType(DType t) {
  return t == DType::F16 ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
}

// The product's sizes from the operands' shapes (2-D, or 3-D batches; a 2-D side is shared by the batch).
struct MatmulPlan {
  ops::MatmulArgs args;
  std::vector<uint64_t> outShape;
};

MatmulPlan planMatmul(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  const auto &as = a.shape(), &bs = b.shape();
  if (as.size() < 2 || as.size() > 3 || bs.size() < 2 || bs.size() > 3)
    throw std::invalid_argument(
        fmt::format("helios::matmul: A {} and B {} must have 2 or 3 dimensions", shapeText(a), shapeText(b)));
  if (a.dtype() != b.dtype())
    throw std::invalid_argument("helios::matmul: A and B must both be f32 or both f16");
  if (o.outType == DType::F16 && a.dtype() != DType::F16)
    throw std::invalid_argument("helios::matmul: an f16 output needs f16 inputs");
  const uint64_t batchA = as.size() == 3 ? as[0] : 1, batchB = bs.size() == 3 ? bs[0] : 1;
  if (batchA != batchB && batchA != 1 && batchB != 1)
    throw std::invalid_argument(
        fmt::format("helios::matmul: batch sizes differ: A {}, B {}", shapeText(a), shapeText(b)));
  const uint64_t ar = as[as.size() - 2], ac = as.back(), br = bs[bs.size() - 2], bc = bs.back();
  const uint64_t M = o.transposeA ? ac : ar, K = o.transposeA ? ar : ac;
  const uint64_t KB = o.transposeB ? bc : br, N = o.transposeB ? br : bc;
  if (K != KB)
    throw std::invalid_argument(fmt::format("helios::matmul: inner dimensions differ: op(A) is {}x{}, op(B) "
                                            "is {}x{}",
                                            M, K, KB, N));
  MatmulPlan p;
  const uint64_t batch = std::max(batchA, batchB);
  p.outShape = as.size() == 3 || bs.size() == 3 ? std::vector<uint64_t>{batch, M, N} : std::vector{M, N};
  ops::MatmulArgs& args = p.args;
  args.M = dim32(M, "M");
  args.N = dim32(N, "N");
  args.K = dim32(K, "K");
  args.batch = dim32(batch, "batch");
  args.transA = o.transposeA;
  args.transB = o.transposeB;
  args.alpha = o.alpha;
  args.beta = o.beta;
  args.aType = matmulType(a.dtype());
  args.outType = matmulType(o.outType);
  if (batch > 1) {
    args.strideA = batchA == 1 ? 0u : args.M * args.K;
    args.strideB = batchB == 1 ? 0u : args.K * args.N;
  }
  return p;
}

ops::AttentionShape planAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& o) {
  const auto &qs = q.shape(), &ks = k.shape();
  if (qs.size() != 4 || ks.size() != 4 || v.shape() != ks)
    throw std::invalid_argument(
        fmt::format("helios::attention: q {}, k {}, v {} must be [batch, heads, tokens, "
                    "headDim], with v shaped as k",
                    shapeText(q), shapeText(k), shapeText(v)));
  if (qs[0] != ks[0] || qs[3] != ks[3])
    throw std::invalid_argument(fmt::format("helios::attention: q {} and k {} differ in batch or head dim",
                                            shapeText(q), shapeText(k)));
  if (qs[1] % ks[1] != 0)
    throw std::invalid_argument(
        fmt::format("helios::attention: q's {} heads are not a multiple of k's {}", qs[1], ks[1]));
  if (q.dtype() != DType::F32 || k.dtype() != DType::F32 || v.dtype() != DType::F32)
    throw std::invalid_argument("helios::attention: q, k and v must be f32");
  ops::AttentionShape s;
  s.batch = dim32(qs[0], "batch");
  s.heads = dim32(qs[1], "heads");
  s.kvHeads = dim32(ks[1], "kv heads");
  s.Tq = dim32(qs[2], "query tokens");
  s.Tk = dim32(ks[2], "key tokens");
  s.headDim = dim32(qs[3], "head dim");
  s.causal = o.causal;
  s.scale = o.scale != 0.0f ? o.scale : static_cast<float>(1.0 / std::sqrt(double(s.headDim)));
  // f32 in, f32 arithmetic out: the coop passes would round q, k and v to f16.
  s.kernel = ops::AttentionKernel::Fallback;
  return s;
}

void requireOut(const Tensor& out, const std::vector<uint64_t>& shape, DType dtype, const char* op) {
  if (out.shape() != shape || out.dtype() != dtype)
    throw std::invalid_argument(fmt::format("helios::{}: out is {} {}, the result is [{}] {}", op,
                                            out.dtype() == DType::F16 ? "f16" : "f32", shapeText(out),
                                            fmt::join(shape, ", "), dtype == DType::F16 ? "f16" : "f32"));
}

} // namespace

void matmul(const Tensor& a, const Tensor& b, Tensor& out, const MatmulOptions& options) {
  api::requireSameDevice("matmul", {&a, &b, &out});
  MatmulPlan p = planMatmul(a, b, options);
  requireOut(out, p.outShape, options.outType, "matmul");
  p.args.a = a.impl()->buffer.range();
  p.args.b = b.impl()->buffer.range();
  p.args.c = out.impl()->buffer.range();
  api::execute(*a.device().impl(), [&](ops::Executor& exec) { ops::matmul(exec, p.args); });
}

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options) {
  api::requireNotRecording(*a.device().impl(), "matmul");
  if (options.beta != 0.0f)
    throw std::invalid_argument("helios::matmul: beta needs an output tensor to accumulate into");
  Tensor out = Tensor::empty(a.device(), planMatmul(a, b, options).outShape, options.outType);
  matmul(a, b, out, options);
  return out;
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
               const AttentionOptions& options) {
  api::requireSameDevice("attention", {&q, &k, &v, &out});
  const ops::AttentionShape s = planAttention(q, k, v, options);
  requireOut(out, q.shape(), DType::F32, "attention");
  Device::Impl& device = *q.device().impl();
  // The log-sum-exp rows the backward would read: scratch here, kept until the GPU is done with it.
  vk::Buffer lse = device.ctx->buffer(uint64_t{s.batch} * s.heads * s.Tq * 4, "helios::attention lse");
  api::execute(device, [&](ops::Executor& exec) {
    ops::attentionForward(exec, q.impl()->buffer.range(), k.impl()->buffer.range(), v.impl()->buffer.range(),
                          out.impl()->buffer.range(), lse.range(), s);
    exec.retain(std::move(lse));
  });
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options) {
  api::requireNotRecording(*q.device().impl(), "attention");
  planAttention(q, k, v, options);
  Tensor out = Tensor::empty(q.device(), q.shape(), DType::F32);
  attention(q, k, v, out, options);
  return out;
}

} // namespace helios
