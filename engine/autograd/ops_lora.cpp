// LoRA adapters on linear layers, as small GEMMs around the frozen layer's own (its output is accumulated
// into):
//   forward   u = dropout(x) A^T                  [rows, R]     (R = parts * rank: every part at once)
//             y += scale u Bblock^T               (beta = 1 into the layer's output)
//   backward  dU = scale dy Bblock                [rows, R]
//             dA += dU^T dropout(x)               dB += scale (dy^T u) on the parts' blocks
//             dx += dropout'(dU A)
// Bblock [out, R] is B itself when one part covers every row; otherwise the parts' B rows placed at their
// output rows and their rank columns, zeros elsewhere (q, k and v of a packed projection: one GEMM for the
// three, 3x the few FLOPs of the rank-wide product, instead of a GEMM per part into column ranges that the
// GEMMs cannot address). The fused alternative, y = [x | u] [W | Bblock]^T in one GEMM, would replace this
// file's forward; the term it takes would not change.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/dropout.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/permute.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::autograd::detail {

namespace {

struct Shape {
  uint32_t rows = 0, in = 0, out = 0, R = 0;
};

Shape checkTerm(const Tensor& x, const Tensor& y, const LoraTerm& t) {
  if (t.a.shape.size() != 2 || t.b.shape.size() != 2 || t.rank == 0 || t.parts.empty())
    throw std::invalid_argument("autograd::linear: a LoRA term needs A [R, in], B [rows, r] and parts");
  Shape s{0, t.a.shape[1], lastDim(y), t.a.shape[0]};
  s.rows = static_cast<uint32_t>(x.elements() / s.in);
  uint32_t bRows = 0;
  for (const LoraPartRows& p : t.parts) {
    if (p.row + p.rows > s.out || p.bRow != bRows)
      throw std::invalid_argument(
          "autograd::linear: a LoRA part's rows lie outside the layer or out of order");
    bRows += p.rows;
  }
  if (s.R != t.parts.size() * t.rank || t.b.shape[0] != bRows || t.b.shape[1] != t.rank)
    throw std::invalid_argument(
        fmt::format("autograd::linear: LoRA A [{}, {}] and B [{}, {}] do not match {} "
                    "parts of rank {}",
                    t.a.shape[0], t.a.shape[1], t.b.shape[0], t.b.shape[1], t.parts.size(), t.rank));
  if (t.a.dtype != x.dtype || t.b.dtype != x.dtype)
    throw std::invalid_argument("autograd::linear: LoRA A and B are stored like the layer's input");
  return s;
}

bool whole(const LoraTerm& t, uint32_t out) {
  return t.parts.size() == 1 && t.parts[0].rows == out;
}

// The parts' B rows as the block matrix [out, R] (zeros outside the parts' blocks).
vk::BufferRange blockB(Tape& tape, const LoraTerm& t, const Shape& s) {
  const uint64_t bytes = uint64_t(s.out) * s.R * dtypeBytes(t.b.dtype);
  const vk::BufferRange block = tape.allocate((bytes + 3) / 4 * 4, "lora B block");
  ops::fill(tape.exec(), block, static_cast<uint32_t>((bytes + 3) / 4), 0.0f); // zero bits in every type
  for (size_t p = 0; p < t.parts.size(); ++p) {
    ops::PermuteArgs a;
    a.shape = {1, 1, t.parts[p].rows, t.rank};
    a.srcOffset = t.parts[p].bRow * t.rank;
    a.srcStrides = {0, 0, t.rank, 1};
    a.dstOffset = t.parts[p].row * s.R + uint32_t(p) * t.rank;
    a.dstStrides = {0, 0, s.R, 1};
    a.src = a.dst = t.b.dtype;
    ops::permute(tape.exec(), t.b.data, block, a);
  }
  return block;
}

// B's gradient from the block matrix's [out, R] f32 gradient: each part's block into its rows of dB.
void scatterBlockGrad(Tape& tape, const LoraTerm& t, const Shape& s, vk::BufferRange dBlock) {
  const Tape::Target tg = tape.target(t.b);
  for (size_t p = 0; p < t.parts.size(); ++p) {
    ops::PermuteArgs a;
    a.shape = {1, 1, t.parts[p].rows, t.rank};
    a.srcOffset = t.parts[p].row * s.R + uint32_t(p) * t.rank;
    a.srcStrides = {0, 0, s.R, 1};
    a.dstOffset = t.parts[p].bRow * t.rank;
    a.dstStrides = {0, 0, t.rank, 1};
    a.accumulate = tg.accumulate;
    ops::permute(tape.exec(), dBlock, tg.range, a);
  }
}

ops::DropoutArgs dropoutOf(const LoraTerm& t) {
  return {t.counter, t.stream, t.dropout};
}

} // namespace

void addLora(Tape& tape, const Tensor& x, Tensor& y, const LoraTerm& t) {
  const Shape s = checkTerm(x, y, t);
  const DType type = x.dtype;
  const uint32_t eb = dtypeBytes(type);
  ops::Executor& exec = tape.exec();
  const bool grad = tape.needsGrad({&x, &t.a, &t.b});
  if (grad && !y.gradSlot) y.gradSlot = std::make_shared<GradSlot>(); // a frozen layer on a frozen input
  vk::BufferRange xd = x.data;
  if (t.dropout > 0) {
    xd = tape.allocate(x.bytes(), "lora dropout(x)");
    ops::dropoutForward(exec, dropoutOf(t), x.data, xd, x.count(), type);
  }
  const vk::BufferRange u = tape.allocate(uint64_t(s.rows) * s.R * eb, "lora u");
  gemm(exec, xd, t.a.data, u, s.rows, s.R, s.in, false, true, type, type);
  const vk::BufferRange bBlock = whole(t, s.out) ? t.b.data : blockB(tape, t, s);
  gemm(exec, u, bBlock, y.data, s.rows, s.out, s.R, false, true, type, y.dtype, t.scale, 1.0f);
  if (!grad) return;
  tape.push([&tape, x, y, t, s, xd, u, bBlock, type, eb] {
    ops::Executor& ex = tape.exec();
    const vk::BufferRange dy = codegen::isHalf(type) ? tape.gradOfHalf(y, type) : tape.gradOf(y);
    const vk::BufferRange dU = tape.allocate(uint64_t(s.rows) * s.R * eb, "lora dU");
    gemm(ex, dy, bBlock, dU, s.rows, s.R, s.out, false, false, type, type, t.scale);
    if (t.a.requiresGrad()) {
      const Tape::Target ta = tape.target(t.a);
      gemm(ex, dU, xd, ta.range, s.R, s.in, s.rows, true, false, type, DType::F32, 1.0f,
           ta.accumulate ? 1 : 0);
    }
    if (t.b.requiresGrad() && whole(t, s.out)) {
      const Tape::Target tb = tape.target(t.b);
      gemm(ex, dy, u, tb.range, s.out, s.R, s.rows, true, false, type, DType::F32, t.scale,
           tb.accumulate ? 1 : 0);
    } else if (t.b.requiresGrad()) {
      const vk::BufferRange dBlock = tape.allocate(uint64_t(s.out) * s.R * 4, "lora dB block");
      gemm(ex, dy, u, dBlock, s.out, s.R, s.rows, true, false, type, DType::F32, t.scale);
      scatterBlockGrad(tape, t, s, dBlock);
    }
    if (!x.requiresGrad()) return;
    if (t.dropout > 0) {
      const vk::BufferRange dxd = tape.allocate(x.elements() * 4, "lora d dropout(x)");
      gemm(ex, dU, t.a.data, dxd, s.rows, s.in, s.R, false, false, type, DType::F32);
      const Tape::Target tx = tape.target(x);
      ops::dropoutBackward(ex, dropoutOf(t), dxd, tx.range, x.count(), tx.accumulate);
    } else {
      const Tape::Target tx = tape.target(x);
      gemm(ex, dU, t.a.data, tx.range, s.rows, s.in, s.R, false, false, type, DType::F32, 1.0f,
           tx.accumulate ? 1 : 0);
    }
  });
}

} // namespace helios::autograd::detail
