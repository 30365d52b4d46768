// Autograd ops that move data: embedding lookup, permutes (and a packed projection split into views), RoPE.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/embedding.hpp"
#include "engine/ops/permute.hpp"
#include "engine/ops/rope.hpp"
#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

namespace {

// The type a permute of x writes: `to` where x is f32 and `to` 16-bit, else x's own.
DType outputType(const Tensor& x, DType to) {
  return codegen::isHalf(to) ? to : x.dtype;
}

// The view (shape at offset with strides) of x gathered into a dense tensor of type `dst`.
ops::PermuteArgs gather(const std::array<uint32_t, 4>& shape, uint32_t offset,
                        const std::array<uint32_t, 4>& strides, DType src, DType dst) {
  ops::PermuteArgs a;
  a.shape = shape;
  a.srcOffset = offset;
  a.srcStrides = strides;
  a.dstStrides = ops::denseStrides(shape);
  a.src = src;
  a.dst = dst;
  return a;
}

// A dense gradient scattered back into that view of dx (written, or added to what dx holds).
ops::PermuteArgs scatter(const std::array<uint32_t, 4>& shape, uint32_t offset,
                         const std::array<uint32_t, 4>& strides, bool accumulate, DType dst = DType::F32) {
  ops::PermuteArgs a;
  a.shape = shape;
  a.srcStrides = ops::denseStrides(shape);
  a.dstOffset = offset;
  a.dstStrides = strides;
  a.accumulate = accumulate;
  a.dst = dst;
  return a;
}

} // namespace

Tensor embedding(Tape& tape, const Tensor& table, vk::BufferRange ids, uint32_t tokens) {
  if (table.dtype == DType::F16 && table.requiresGrad())
    throw std::invalid_argument("autograd::embedding: an f16 table is a frozen one (no gradient)");
  if (table.shape.size() != 2) throw std::invalid_argument("autograd::embedding: table must be [vocab, dim]");
  const uint32_t vocab = table.shape[0], dim = table.shape[1];
  const bool grad = tape.needsGrad({&table});
  Tensor y = tape.empty({tokens, dim}, DType::F32, grad, "embedding");
  ops::embedding(tape.exec(), table.data, ids, y.data, tokens, vocab, dim, table.dtype);
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
               const std::array<uint32_t, 4>& srcStrides, DType to) {
  if (codegen::isHalf(to)) requireF32("permute (to 16 bits)", x);
  const bool grad = tape.needsGrad({&x});
  const DType out = outputType(x, to);
  Tensor y = tape.empty({shape[0], shape[1], shape[2], shape[3]}, out, grad, "permute");
  ops::permute(tape.exec(), x.data, y.data, gather(shape, srcOffset, srcStrides, x.dtype, out));
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
      ops::permute(tape.exec(), dy, g, scatter(shape, srcOffset, srcStrides, accumulate));
    });
  return y;
}

std::vector<Tensor> permuteSplit(Tape& tape, const Tensor& x, const std::vector<PermuteView>& views, DType to,
                                 bool halfGrad) {
  if (codegen::isHalf(to)) requireF32("permuteSplit (to 16 bits)", x);
  if (halfGrad && !codegen::isHalf(to))
    throw std::invalid_argument("autograd::permuteSplit: halfGrad hands x's gradient back in `to`'s kind");
  uint64_t covered = 0;
  for (const PermuteView& v : views)
    covered += uint64_t(v.shape[0]) * v.shape[1] * v.shape[2] * v.shape[3];
  if (covered != x.elements())
    throw std::invalid_argument("autograd::permuteSplit: the views hold " + std::to_string(covered) +
                                " elements, x " + std::to_string(x.elements()) + " (they must partition x)");
  const bool grad = tape.needsGrad({&x});
  const DType out = outputType(x, to);
  std::vector<Tensor> ys;
  for (const PermuteView& v : views) {
    Tensor y = tape.empty({v.shape[0], v.shape[1], v.shape[2], v.shape[3]}, out, grad, "permute split");
    ops::permute(tape.exec(), x.data, y.data, gather(v.shape, v.srcOffset, v.srcStrides, x.dtype, out));
    ys.push_back(std::move(y));
  }
  if (grad)
    tape.push([&tape, x, ys, views, halfGrad, to] {
      GradSlot& slot = *x.gradSlot;
      bool accumulate = slot.written || slot.persistent;
      const bool allParts =
          std::all_of(ys.begin(), ys.end(), [](const Tensor& y) { return y.gradSlot->written; });
      if (halfGrad && allParts && gradStillEmpty(x)) {
        const vk::BufferRange g16 = tape.allocate(x.elements() * 2, "permute split gradient 16-bit");
        for (size_t i = 0; i < ys.size(); ++i)
          ops::permute(tape.exec(), tape.gradOf(ys[i]), g16,
                       scatter(views[i].shape, views[i].srcOffset, views[i].srcStrides, false, to));
        tape.passGradHalf(x, g16, to);
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
        ops::permute(tape.exec(), tape.gradOf(ys[i]), g,
                     scatter(views[i].shape, views[i].srcOffset, views[i].srcStrides, accumulate));
      }
    });
  return ys;
}

Tensor rope(Tape& tape, const Tensor& x, vk::BufferRange table, uint32_t headDim, uint32_t T,
            const ops::RopePositions& given) {
  requireF32("rope", x);
  const uint32_t rows = static_cast<uint32_t>(x.elements() / headDim);
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, DType::F32, grad, "rope");
  ops::rope(tape.exec(), x.data, table, y.data, rows, headDim, T, false, given);
  if (grad)
    tape.push([&tape, x, y, table, rows, headDim, T, given] {
      const vk::BufferRange dy = tape.gradOf(y);
      const Tape::Sink s = tape.sink(x);
      ops::rope(tape.exec(), dy, table, s.range, rows, headDim, T, true, given);
      tape.commit(x, s);
    });
  return y;
}

} // namespace helios::autograd
