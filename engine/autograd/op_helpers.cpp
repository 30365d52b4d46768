#include "engine/autograd/op_helpers.hpp"

#include <stdexcept>
#include <string>

#include "engine/ops/column_sum.hpp"
#include "engine/ops/matmul.hpp"

namespace helios::autograd::detail {

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

MaybeSink sinkOrScratch(Tape& tape, const Tensor& t) {
  if (t.requiresGrad()) return {tape.sink(t), true};
  return {{tape.allocate(t.elements() * 4, "unused gradient"), true}, false};
}

void finish(Tape& tape, const Tensor& t, const MaybeSink& s) {
  if (s.commit) tape.commit(t, s.sink);
}

Tape::Target targetOrScratch(Tape& tape, const Tensor& t) {
  if (t.requiresGrad()) return tape.target(t);
  return {tape.allocate(t.elements() * 4, "unused gradient"), false};
}

void columnSumInto(Tape& tape, const Tensor& t, vk::BufferRange dy, uint32_t rows, uint32_t cols,
                   DType dyType) {
  const Tape::Target tg = tape.target(t);
  const vk::BufferRange scratch =
      tape.allocate(ops::columnSumScratchBytes(rows, cols), "column partial sums");
  ops::columnSum(tape.exec(), dy, tg.range, scratch, rows, cols, tg.accumulate ? 1.0f : 0.0f, dyType);
}

bool gradStillEmpty(const Tensor& x) {
  return x.gradSlot && !x.gradSlot->written && !x.gradSlot->persistent;
}

void gemm(ops::Executor& exec, vk::BufferRange a, vk::BufferRange b, vk::BufferRange c, uint32_t M,
          uint32_t N, uint32_t K, bool transA, bool transB, DType type, DType out, float alpha, float beta) {
  ops::MatmulArgs g;
  g.a = a;
  g.b = b;
  g.c = c;
  g.M = M;
  g.N = N;
  g.K = K;
  g.transA = transA;
  g.transB = transB;
  g.alpha = alpha;
  g.beta = beta;
  g.aType = type;
  g.outType = out;
  ops::matmul(exec, g);
}

} // namespace helios::autograd::detail
