// matmul and attention on tensors: shapes checked here, then the engine's ops (engine/ops) on the tensors'
// buffers.
#include "helios/ops.hpp"

#include "api/internal.hpp"

#include "engine/ops/operand_shapes.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios {

namespace {

std::string shapeText(const Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape(), ", "));
}

ops::MatmulDType matmulType(DType t) {
  return t == DType::F16 ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
}

// The product's sizes from the operands' shapes (2-D, or 3-D batches; a 2-D side is shared by the batch).
ops::MatmulSizes planMatmul(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument("helios::matmul: A and B must both be f32 or both f16");
  if (o.outType == DType::F16 && a.dtype() != DType::F16)
    throw std::invalid_argument("helios::matmul: an f16 output needs f16 inputs");
  ops::MatmulSizes p = ops::matmulSizes(a.shape(), b.shape(), o.transposeA, o.transposeB, "helios::matmul");
  p.args.alpha = o.alpha;
  p.args.beta = o.beta;
  p.args.aType = matmulType(a.dtype());
  p.args.outType = matmulType(o.outType);
  return p;
}

ops::AttentionShape planAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& o) {
  ops::AttentionShape s =
      ops::attentionSizes(q.shape(), k.shape(), v.shape(), o.causal, o.scale, "helios::attention");
  if (q.dtype() != DType::F32 || k.dtype() != DType::F32 || v.dtype() != DType::F32)
    throw std::invalid_argument("helios::attention: q, k and v must be f32");
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
  ops::MatmulSizes p = planMatmul(a, b, options);
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
