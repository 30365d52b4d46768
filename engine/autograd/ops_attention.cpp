// Autograd softmax and fused attention, and the cross-entropy loss.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/cross_entropy.hpp"
#include "engine/ops/softmax.hpp"
#include <array>
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

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
  // 16-bit q, k, v go to the coop kernels as they are (ops::AttentionShape::halfQkv); gradients stay f32.
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    throw std::invalid_argument("autograd::attention: q, k and v must have one storage type");
  ops::AttentionShape shape = shapeIn;
  shape.halfQkv = codegen::isHalf(q.dtype);
  if (shape.halfQkv) shape.half = q.dtype;
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

Tensor attentionPacked(Tape& tape, const Tensor& qkv, const ops::AttentionShape& shapeIn, bool halfOut) {
  ops::AttentionShape s = shapeIn;
  const uint32_t B = s.batch, H = s.heads, G = s.kvHeads, T = s.Tq, D = s.headDim, W = (H + 2 * G) * D,
                 C = H * D;
  if (s.Tk != T) throw std::invalid_argument("autograd::attentionPacked: Tq and Tk must match");
  if (qkv.elements() != uint64_t(B) * T * W)
    throw std::invalid_argument("autograd::attentionPacked: qkv is not [B T, (H + 2 Hkv) D]");
  s.kernel = ops::AttentionKernel::Coop;
  s.halfQkv = codegen::isHalf(qkv.dtype);
  if (s.halfQkv) s.half = qkv.dtype;
  s.halfOut = halfOut;
  s.qLayout = s.kvLayout = {W, D, T * W};
  s.oLayout = {C, D, T * C};
  const VkDeviceSize inBytes = s.halfQkv ? 2 : 4, outBytes = halfOut ? 2 : 4;
  // Bindings of q, k and v (or their gradients) inside one packed buffer: from the first column of each.
  const auto parts = [k = VkDeviceSize(C), v = VkDeviceSize(C + G * D)](vk::BufferRange r,
                                                                        VkDeviceSize bytes) {
    std::array<vk::BufferRange, 3> p{r, r, r};
    p[1].offset += k * bytes;
    p[1].size -= k * bytes;
    p[2].offset += v * bytes;
    p[2].size -= v * bytes;
    return p;
  };
  const bool grad = tape.needsGrad({&qkv});
  Tensor o = tape.empty({B * T, C}, halfOut ? s.half : DType::F32, grad, "attention output");
  const uint64_t rows = uint64_t(B) * H * T;
  const vk::BufferRange lse = tape.allocate(rows * 4, "attention lse");
  const auto in = parts(qkv.data, inBytes);
  ops::attentionForward(tape.exec(), in[0], in[1], in[2], o.data, lse, s);
  if (grad)
    tape.push([&tape, qkv, o, lse, s, rows, in, parts, outBytes, halfOut] {
      const vk::BufferRange dO = tape.gradOf(o);
      const vk::BufferRange delta = tape.allocate(rows * 4, "attention delta");
      const vk::BufferRange dqkv = tape.allocate(qkv.elements() * outBytes, "attention dqkv");
      const auto d = parts(dqkv, outBytes);
      ops::attentionBackward(tape.exec(), in[0], in[1], in[2], o.data, lse, dO, d[0], d[1], d[2], delta, s);
      if (halfOut)
        tape.passGradHalf(qkv, dqkv, s.half);
      else
        tape.passGrad(qkv, dqkv, true);
    });
  return o;
}

Tensor crossEntropy(Tape& tape, const Tensor& logits, vk::BufferRange targets, float gradScale) {
  const uint32_t vocab = lastDim(logits), rows = static_cast<uint32_t>(logits.elements() / vocab);
  const bool grad = tape.needsGrad({&logits});
  const bool half = codegen::isHalf(logits.dtype);
  Tensor loss = tape.empty({rows}, DType::F32, false, "cross-entropy loss");
  const vk::BufferRange dlogits = tape.allocate(logits.bytes(), "dlogits");
  ops::crossEntropy(tape.exec(), logits.data, targets, loss.data, dlogits, rows, vocab, gradScale, {},
                    logits.dtype);
  if (grad)
    tape.push([&tape, logits, dlogits, half] {
      if (half)
        tape.passGradHalf(logits, dlogits, logits.dtype);
      else
        tape.passGrad(logits, dlogits, true);
    });
  return loss;
}

} // namespace helios::autograd
