#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

using codegen::ElementwiseParams;
using codegen::ElementwisePush;
using codegen::EwOp;

constexpr uint32_t kLocalSize = 256;
constexpr uint64_t kMaxElements = 1ull << 31;

void requireElements(const char* op, const char* what, const vk::BufferRange& r, uint64_t count, Elem t) {
  const uint64_t need = count * codegen::elemBytes(t);
  if (r.size != 0 && r.size < need)
    throw std::invalid_argument(std::string("ops::") + op + ": " + what + " holds " + std::to_string(r.size) +
                                " bytes, needs " + std::to_string(need) + " (" + std::to_string(count) +
                                " x " + codegen::elemName(t) + ")");
}

void requireCount(const char* op, uint64_t n) {
  if (n >= kMaxElements)
    throw std::invalid_argument(std::string("ops::") + op + ": " + std::to_string(n) +
                                " elements exceed the limit of 2^31 - 1");
}

EwOp binaryOp(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return EwOp::Add;
  case BinaryOp::Sub:
    return EwOp::Sub;
  case BinaryOp::Mul:
    return EwOp::Mul;
  }
  return EwOp::Add;
}

EwOp activationOp(Activation a, bool backward) {
  switch (a) {
  case Activation::Gelu:
    return backward ? EwOp::GeluBackward : EwOp::Gelu;
  case Activation::Silu:
    return backward ? EwOp::SiluBackward : EwOp::Silu;
  case Activation::Relu:
    return backward ? EwOp::ReluBackward : EwOp::Relu;
  }
  return EwOp::Gelu;
}

void run(Executor& exec, EwOp op, Elem type, bool broadcast, std::initializer_list<Binding> bindings,
         uint32_t n, uint32_t cols, float alpha, Elem out = Elem::F32) {
  if (n == 0) return;
  elementwise(exec, ElementwiseParams{op, type, broadcast, kLocalSize, out},
              std::span<const Binding>(bindings.begin(), bindings.size()),
              ElementwisePush{n, cols, alpha, 0});
}

} // namespace

uint32_t gridStrideGroups(const vk::Context& ctx, uint64_t n, uint32_t localSize, uint32_t maxGroups) {
  const uint64_t limit = std::min<uint64_t>(ctx.device().limits().maxComputeWorkGroupCount[0], 65535);
  const uint64_t cap = maxGroups ? std::min<uint64_t>(maxGroups, limit) : limit;
  return static_cast<uint32_t>(std::min<uint64_t>((n + localSize - 1) / localSize, cap));
}

void elementwise(Executor& exec, const ElementwiseParams& params, std::span<const Binding> bindings,
                 const ElementwisePush& push, uint32_t maxGroups) {
  const std::string what = std::string("ops::elementwise ") + codegen::toString(params.op);
  requireElem(exec.context().device(), params.type, what);
  requireElem(exec.context().device(), params.out, what);
  if (bindings.size() != codegen::ewNumBuffers(params.op))
    throw std::invalid_argument(std::string("ops::elementwise ") + codegen::toString(params.op) + " takes " +
                                std::to_string(codegen::ewNumBuffers(params.op)) + " buffers, " +
                                std::to_string(bindings.size()) + " given");
  requireCount("elementwise", push.n);
  if (push.n == 0) return;
  if (params.broadcast && (push.cols == 0 || push.n % push.cols != 0))
    throw std::invalid_argument("ops::elementwise: broadcast period " + std::to_string(push.cols) +
                                " does not divide n = " + std::to_string(push.n));
  // Whole 4-vectors everywhere (n, the broadcast period, 16-byte aligned ranges): the 4-vector kernel, whose
  // push constants count vectors.
  const bool vec4 = push.n % 4 == 0 && (!params.broadcast || push.cols % 4 == 0) &&
                    std::all_of(bindings.begin(), bindings.end(),
                                [](const Binding& b) { return b.range.offset % 16 == 0; });
  ElementwiseParams p = params;
  ElementwisePush q = push;
  if (vec4) {
    p.vec4 = true;
    q.n /= 4;
    if (params.broadcast) q.cols /= 4;
  }
  const vk::Pipeline& pipeline =
      exec.pipeline(p, [](const ElementwiseParams& x) { return codegen::generateElementwise(x); });
  const uint32_t groups = gridStrideGroups(exec.context(), q.n, p.localSize, maxGroups);
  exec.dispatch(pipeline, bindings, &q, sizeof(q), {groups, 1, 1});
}

void binary(Executor& exec, BinaryOp op, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out,
            uint32_t n, Elem type) {
  const char* name = codegen::toString(binaryOp(op));
  requireCount(name, n);
  requireElements(name, "a", a, n, type);
  requireElements(name, "b", b, n, type);
  requireElements(name, "out", out, n, type);
  run(exec, binaryOp(op), type, false, {{a, Access::Read}, {b, Access::Read}, {out, Access::Write}}, n, 1,
      0.0f);
}

void binaryBroadcast(Executor& exec, BinaryOp op, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out,
                     uint32_t rows, uint32_t cols, Elem type) {
  const char* name = codegen::toString(binaryOp(op));
  const uint64_t n = uint64_t(rows) * cols;
  requireCount(name, n);
  if (n == 0) return;
  requireElements(name, "a", a, n, type);
  requireElements(name, "b (broadcast row)", b, cols, type);
  requireElements(name, "out", out, n, type);
  run(exec, binaryOp(op), type, true, {{a, Access::Read}, {b, Access::Read}, {out, Access::Write}},
      static_cast<uint32_t>(n), cols, 0.0f);
}

void scale(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t n, float alpha, Elem type) {
  requireCount("scale", n);
  requireElements("scale", "x", x, n, type);
  requireElements("scale", "out", out, n, type);
  run(exec, EwOp::Scale, type, false, {{x, Access::Read}, {out, Access::Write}}, n, 1, alpha);
}

void axpy(Executor& exec, float alpha, vk::BufferRange x, vk::BufferRange y, uint32_t n, Elem type) {
  requireCount("axpy", n);
  requireElements("axpy", "x", x, n, type);
  requireElements("axpy", "y", y, n, type);
  run(exec, EwOp::Axpy, type, false, {{x, Access::Read}, {y, Access::ReadWrite}}, n, 1, alpha);
}

void axpySlices(Executor& exec, float alpha, vk::BufferRange x, uint32_t slices, vk::BufferRange y,
                uint32_t n, Elem type) {
  if (slices == 0) throw std::invalid_argument("axpySlices: slices is 0");
  if (uint64_t{slices} * n >= (1ull << 31))
    throw std::invalid_argument("axpySlices: slices * n must be < 2^31");
  requireCount("axpySlices", n);
  requireElements("axpySlices", "x", x, n * slices, type);
  requireElements("axpySlices", "y", y, n, type);
  run(exec, EwOp::Axpy, type, false, {{x, Access::Read}, {y, Access::ReadWrite}}, n, slices, alpha);
}

void activation(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange out, uint32_t n,
                Elem type) {
  const EwOp op = activationOp(act, false);
  requireCount(codegen::toString(op), n);
  requireElements(codegen::toString(op), "x", x, n, type);
  requireElements(codegen::toString(op), "out", out, n, type);
  run(exec, op, type, false, {{x, Access::Read}, {out, Access::Write}}, n, 1, 0.0f);
}

void activationToHalf(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange out, uint32_t n,
                      Elem half) {
  const EwOp op = activationOp(act, false);
  requireCount(codegen::toString(op), n);
  requireElements(codegen::toString(op), "x", x, n, Elem::F32);
  requireElements(codegen::toString(op), "out (16-bit)", out, n, half);
  run(exec, op, Elem::F32, false, {{x, Access::Read}, {out, Access::Write}}, n, 1, 0.0f, half);
}

void activationBackward(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange dy,
                        vk::BufferRange dx, uint32_t n, Elem type) {
  const EwOp op = activationOp(act, true);
  requireCount(codegen::toString(op), n);
  requireElements(codegen::toString(op), "x", x, n, type);
  requireElements(codegen::toString(op), "dy", dy, n, type);
  requireElements(codegen::toString(op), "dx", dx, n, type);
  run(exec, op, type, false, {{x, Access::Read}, {dy, Access::Read}, {dx, Access::Write}}, n, 1, 0.0f);
}

void activationBackwardToHalf(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange dy,
                              vk::BufferRange dxHalf, uint32_t n, Elem half) {
  const EwOp op = activationOp(act, true);
  requireCount(codegen::toString(op), n);
  requireElements(codegen::toString(op), "x", x, n, Elem::F32);
  requireElements(codegen::toString(op), "dy", dy, n, Elem::F32);
  requireElements(codegen::toString(op), "dx (16-bit)", dxHalf, n, half);
  run(exec, op, Elem::F32, false, {{x, Access::Read}, {dy, Access::Read}, {dxHalf, Access::Write}}, n, 1,
      0.0f, half);
}

void cast(Executor& exec, vk::BufferRange src, vk::BufferRange dst, uint32_t n, Elem from, Elem to) {
  if (codegen::isHalf(from) == codegen::isHalf(to))
    throw std::invalid_argument(std::string("ops::cast: ") + codegen::elemName(from) + " -> " +
                                codegen::elemName(to) + " (casts go between f32 and a 16-bit kind)");
  requireCount("cast", n);
  requireElements("cast", "src", src, n, from);
  requireElements("cast", "dst", dst, n, to);
  run(exec, EwOp::Cast, from, false, {{src, Access::Read}, {dst, Access::Write}}, n, 1, 0.0f,
      codegen::isHalf(to) ? to : Elem::F32);
}

void fill(Executor& exec, vk::BufferRange out, uint32_t n, float value, Elem type) {
  requireCount("fill", n);
  requireElements("fill", "out", out, n, type);
  run(exec, EwOp::Fill, type, false, {{out, Access::Write}}, n, 1, value);
}

void copy(Executor& exec, vk::BufferRange src, vk::BufferRange dst, uint32_t n, Elem type) {
  requireCount("copy", n);
  requireElements("copy", "src", src, n, type);
  requireElements("copy", "dst", dst, n, type);
  run(exec, EwOp::Copy, type, false, {{src, Access::Read}, {dst, Access::Write}}, n, 1, 0.0f);
}

} // namespace helios::ops
